package policy_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/policies"
	"github.com/parleyhq/parley/policy"
)

// userDocs are the pages whose fenced policies must load and check clean.
// (docs/diagnostics.md is left out: its examples are broken on purpose,
// and golden_test.go checks them.)
var userDocs = []string{"policy-language.md", "semantics.md", "trace-format.md"}

const docsDir = "../docs"

// docBlock is a fenced code block of a Markdown page.
type docBlock struct {
	page string
	line int // the line of the block's first line of content
	lang string
	src  string
}

// docBlocks returns the fenced code blocks of a page under docs/.
func docBlocks(t *testing.T, page string) []docBlock {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(docsDir, page))
	require.NoError(t, err)
	var (
		out   []docBlock
		open  *docBlock
		lines []string
	)
	for i, line := range strings.Split(string(data), "\n") {
		switch {
		case open == nil && strings.HasPrefix(line, "```"):
			open = &docBlock{page: page, line: i + 2, lang: strings.TrimSpace(strings.TrimPrefix(line, "```"))}
			lines = lines[:0]
		case open != nil && strings.TrimSpace(line) == "```":
			open.src = strings.Join(lines, "\n") + "\n"
			out = append(out, *open)
			open = nil
		case open != nil:
			lines = append(lines, line)
		}
	}
	if open != nil {
		require.Failf(t, "unclosed block", "%s:%d: a fenced block is never closed", page, open.line-1)
	}
	return out
}

var xmlPrologRE = regexp.MustCompile(`^(\s*(<\?xml[^>]*\?>|<!--(?s:.*?)-->))*\s*`)

// wholePolicy reports whether a block is a whole policy rather than a
// fragment: YAML that starts with "policy:" (after comments), or CP-XML
// whose root is <policy> (after a declaration and comments).
func wholePolicy(b docBlock) bool {
	switch b.lang {
	case "yaml":
		for _, line := range strings.Split(b.src, "\n") {
			if s := strings.TrimSpace(line); s != "" && !strings.HasPrefix(s, "#") {
				return strings.HasPrefix(line, "policy:")
			}
		}
	case "xml":
		rest := b.src[len(xmlPrologRE.FindString(b.src)):]
		return strings.HasPrefix(rest, "<policy ") || strings.HasPrefix(rest, "<policy>")
	}
	return false
}

// loadBlock loads and checks a whole-policy block. Diagnostics keep the
// positions of the block; at maps them to the page.
func loadBlock(b docBlock) (*policy.Policy, policy.Diagnostics) {
	load := policy.LoadYAML
	if b.lang == "xml" {
		load = policy.LoadXML
	}
	p, ds := load(b.page, []byte(b.src))
	if p == nil {
		return nil, ds
	}
	return p, append(ds, policy.CheckPolicy(p, policy.WithPolicies(policies.Resolve))...)
}

// at renders a diagnostic at its position in the page.
func at(b docBlock, d policy.Diagnostic) string {
	return fmt.Sprintf("docs/%s:%d:%d: %s: %s [%s]", b.page, b.line+d.Pos.Line-1, d.Pos.Col, d.Severity, d.Message, d.Code)
}

// Every whole policy the user docs show loads and checks without a single
// diagnostic, so that readers can copy any of them.
func TestDocPoliciesCheckClean(t *testing.T) {
	whole := map[string]int{}
	for _, page := range userDocs {
		for _, b := range docBlocks(t, page) {
			if !wholePolicy(b) {
				continue
			}
			whole[page]++
			t.Run(fmt.Sprintf("%s:%d", page, b.line), func(t *testing.T) {
				p, ds := loadBlock(b)
				for _, d := range ds {
					t.Errorf("%s", at(b, d))
				}
				assert.NotNil(t, p, "docs/%s:%d: the block is no policy", page, b.line)
			})
		}
	}
	assert.GreaterOrEqual(t, whole["policy-language.md"], 3, "docs/policy-language.md shows too few whole policies")
}

// A policy shown in both formats on one page is the same policy: both
// forms have one fingerprint.
func TestDocPoliciesAgreeAcrossFormats(t *testing.T) {
	pairs := 0
	for _, page := range userDocs {
		type shown struct {
			fingerprint string
			line        int
		}
		byFormat := map[string]map[string]shown{"yaml": {}, "xml": {}}
		for _, b := range docBlocks(t, page) {
			if !wholePolicy(b) {
				continue
			}
			p, ds := loadBlock(b)
			if p == nil || ds.HasErrors() {
				continue // reported by TestDocPoliciesCheckClean
			}
			byFormat[b.lang][p.Name] = shown{p.Fingerprint(), b.line}
		}
		for name, x := range byFormat["xml"] {
			y, ok := byFormat["yaml"][name]
			if !ok {
				continue
			}
			pairs++
			assert.Equal(t, y.fingerprint, x.fingerprint, "docs/%s: policy %q in YAML (line %d) and CP-XML (line %d) differ", page, name, y.line, x.line)
		}
	}
	assert.Positive(t, pairs, "the docs show no policy in both formats")
}

// schemaKeys returns every property name the JSON Schema of the YAML form
// declares, sorted.
func schemaKeys(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../schema/policy.schema.json")
	require.NoError(t, err)
	var schema any
	require.NoError(t, json.Unmarshal(data, &schema))
	seen := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if props, ok := x["properties"].(map[string]any); ok {
				for k := range props {
					seen[k] = true
				}
			}
			for _, c := range x {
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(schema)
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

var xsdNameRE = regexp.MustCompile(`<xs:(element|attribute) name="([^"]+)"`)

// The reference documents every key of the YAML form and every element
// and attribute of CP-XML, as the schemas in schema/ declare them.
func TestPolicyLanguageDocCoversSchemas(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(docsDir, "policy-language.md"))
	require.NoError(t, err)
	doc := string(data)
	keys := schemaKeys(t)
	require.NotEmpty(t, keys)
	for _, k := range keys {
		assert.True(t, strings.Contains(doc, "`"+k+"`"), "docs/policy-language.md does not document YAML key %q", k)
	}
	xsd, err := os.ReadFile("../schema/policy.xsd")
	require.NoError(t, err)
	names := xsdNameRE.FindAllStringSubmatch(string(xsd), -1)
	require.NotEmpty(t, names)
	for _, m := range names {
		if m[1] == "element" {
			element := regexp.MustCompile("`<" + regexp.QuoteMeta(m[2]) + `[ >/]`)
			assert.True(t, element.MatchString(doc), "docs/policy-language.md does not document element <%s>", m[2])
		} else {
			assert.True(t, strings.Contains(doc, m[2]+`="`), "docs/policy-language.md does not document attribute %s", m[2])
		}
	}
}

var (
	linkRE    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	headingRE = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	slugDrop  = regexp.MustCompile(`[^a-z0-9 _-]`)
)

// anchors returns the anchors GitHub gives the headings of a Markdown
// page: lower case, punctuation dropped, spaces as hyphens.
func anchors(page string) map[string]bool {
	out := map[string]bool{}
	for _, m := range headingRE.FindAllStringSubmatch(page, -1) {
		slug := slugDrop.ReplaceAllString(strings.ToLower(strings.TrimSpace(m[1])), "")
		out[strings.ReplaceAll(slug, " ", "-")] = true
	}
	return out
}

// Every relative link of the user docs (and of the index and the guide)
// leads to a file or directory of the repository, and every #anchor to a
// heading.
func TestDocLinksResolve(t *testing.T) {
	for _, page := range append([]string{"README.md", guidePage}, userDocs...) {
		data, err := os.ReadFile(filepath.Join(docsDir, page))
		require.NoError(t, err)
		for _, m := range linkRE.FindAllStringSubmatch(string(data), -1) {
			target := m[1]
			if strings.Contains(target, "://") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			file := filepath.Join(docsDir, page)
			if path != "" {
				file = filepath.Join(docsDir, path)
				if _, err := os.Stat(file); err != nil {
					t.Errorf("docs/%s: link %s: %v", page, target, err)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			linked, err := os.ReadFile(file)
			require.NoError(t, err)
			assert.True(t, anchors(string(linked))[anchor], "docs/%s: link %s: no heading has anchor #%s", page, target, anchor)
		}
	}
}

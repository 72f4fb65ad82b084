package policy_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/policy"
)

var update = flag.Bool("update", false, "rewrite golden files")

// diagDir holds one minimal bad policy per diagnostic case, named
// CPxxx-short-name.yaml (or .xml), each next to its .golden output. Its
// subdirectories hold helper policies (child policies), which the golden
// walk skips.
const diagDir = "../testdata/diagnostics"

// caseNameRE matches a case file name and captures its code.
var caseNameRE = regexp.MustCompile(`^(CP\d{3})-[a-z0-9-]+\.(yaml|xml)$`)

// renderDiagnostics renders ds the way cpvalidate's text output does:
// each diagnostic as file:line:col: severity: message [CODE], then its
// related positions and witness trace, indented by a tab.
func renderDiagnostics(ds policy.Diagnostics) string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString(d.Error())
		b.WriteByte('\n')
		for _, r := range d.Related {
			fmt.Fprintf(&b, "\t%s: %s\n", r.Pos, r.Message)
		}
		if len(d.Trace) > 0 {
			b.WriteString("\twitness:\n")
			for i, step := range d.Trace {
				fmt.Fprintf(&b, "\t  %d. %s\n", i+1, step)
			}
		}
	}
	return b.String()
}

// childPolicies resolves child policy names to the helper policies in
// diagDir/child, loaded once per test.
func childPolicies(t *testing.T) func(string) *policy.Policy {
	t.Helper()
	known := map[string]*policy.Policy{}
	paths, err := filepath.Glob(filepath.Join(diagDir, "child", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, paths, "no child policies in %s/child", diagDir)
	for _, path := range paths {
		src, err := os.ReadFile(path)
		require.NoError(t, err)
		p, ds := policy.Load("child/"+filepath.Base(path), src)
		require.NotNil(t, p, "%s: %v", path, ds)
		require.Empty(t, ds, "child policy %s must load cleanly", path)
		require.Empty(t, policy.CheckPolicy(p), "child policy %s must check cleanly", path)
		known[p.Name] = p
	}
	return func(name string) *policy.Policy { return known[name] }
}

// diagnose loads the case file name from diagDir and, when a policy was
// loaded, checks it; positions name the file by its base name.
func diagnose(t *testing.T, name string, resolve func(string) *policy.Policy) policy.Diagnostics {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(diagDir, name))
	require.NoError(t, err)
	p, ds := policy.Load(name, src)
	if p != nil {
		ds = append(ds, policy.CheckPolicy(p, policy.WithPolicies(resolve))...)
	}
	ds.Sort()
	return ds
}

// caseFiles lists the case files in diagDir, sorted.
func caseFiles(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(diagDir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if e.IsDir() || strings.HasSuffix(e.Name(), ".golden") {
			continue
		}
		out = append(out, e.Name())
	}
	require.NotEmpty(t, out)
	return out
}

func goldenPath(name string) string { return filepath.Join(diagDir, name+".golden") }

// TestGolden compares the rendered diagnostics of every case file with
// its golden file. Run with -update to rewrite them.
func TestGolden(t *testing.T) {
	resolve := childPolicies(t)
	for _, name := range caseFiles(t) {
		t.Run(name, func(t *testing.T) {
			require.Regexp(t, caseNameRE, name, "case files are named CPxxx-short-name.yaml or .xml")
			got := renderDiagnostics(diagnose(t, name, resolve))
			if *update {
				require.NoError(t, os.WriteFile(goldenPath(name), []byte(got), 0o644))
				return
			}
			want, err := os.ReadFile(goldenPath(name))
			require.NoError(t, err, "no golden file; run go test ./policy -run TestGolden -update")
			assert.Equal(t, string(want), got)
		})
	}
}

// TestGoldenFilesHaveCases reports golden files left behind when a case
// file was renamed or removed.
func TestGoldenFilesHaveCases(t *testing.T) {
	goldens, err := filepath.Glob(filepath.Join(diagDir, "*.golden"))
	require.NoError(t, err)
	for _, g := range goldens {
		_, err := os.Stat(strings.TrimSuffix(g, ".golden"))
		assert.NoError(t, err, "golden file %s has no case file", g)
	}
}

// TestEveryCodeHasACase checks that every code in policy.Codes has a case
// file named after it, that each case file reports the code it is named
// after, and that its golden output shows it — so the codes, the tests
// and the docs cannot drift apart.
func TestEveryCodeHasACase(t *testing.T) {
	resolve := childPolicies(t)
	byCode := map[policy.Code][]string{}
	for _, name := range caseFiles(t) {
		m := caseNameRE.FindStringSubmatch(name)
		require.NotNil(t, m, "badly named case file %q", name)
		code := policy.Code(m[1])
		require.True(t, slices.ContainsFunc(policy.Codes, func(ci policy.CodeInfo) bool { return ci.Code == code }),
			"case file %q is named after %s, which is not in policy.Codes", name, code)
		byCode[code] = append(byCode[code], name)

		ds := diagnose(t, name, resolve)
		assert.True(t, slices.ContainsFunc(ds, func(d policy.Diagnostic) bool { return d.Code == code }),
			"%s does not report %s; it reports:\n%s", name, code, renderDiagnostics(ds))
		golden, err := os.ReadFile(goldenPath(name))
		if assert.NoError(t, err) {
			assert.Contains(t, string(golden), "["+string(code)+"]", "golden file of %s", name)
		}
	}
	for _, ci := range policy.Codes {
		assert.NotEmpty(t, byCode[ci.Code], "no case file for %s (%s) in %s", ci.Code, ci.Name, diagDir)
	}
}

// TestCaseSeverities checks that each case reports its code with the
// severity policy.Codes documents for it.
func TestCaseSeverities(t *testing.T) {
	resolve := childPolicies(t)
	severity := map[policy.Code]policy.Severity{}
	for _, ci := range policy.Codes {
		severity[ci.Code] = ci.Severity
	}
	for _, name := range caseFiles(t) {
		code := policy.Code(caseNameRE.FindStringSubmatch(name)[1])
		for _, d := range diagnose(t, name, resolve) {
			if d.Code == code {
				assert.Equal(t, severity[code], d.Severity, "%s: %s", name, d.Error())
			}
		}
	}
}

const docPath = "../docs/diagnostics.md"

// TestDiagnosticsDoc checks that docs/diagnostics.md has a section for
// every code, headed "## CPxxx name", and mentions every static check.
func TestDiagnosticsDoc(t *testing.T) {
	src, err := os.ReadFile(docPath)
	require.NoError(t, err)
	doc := string(src)
	headings := map[string]bool{}
	for _, line := range strings.Split(doc, "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			headings[strings.TrimSpace(h)] = true
		}
	}
	for _, ci := range policy.Codes {
		heading := fmt.Sprintf("%s %s", ci.Code, ci.Name)
		assert.True(t, headings[heading], "docs/diagnostics.md has no heading %q", "## "+heading)
	}
	for _, chk := range policy.Checks {
		assert.Contains(t, doc, "`"+chk.Name+"`", "docs/diagnostics.md does not mention check %q", chk.Name)
	}
	l := policy.DefaultLimits
	for name, value := range map[string]int{"MaxBytes": l.MaxBytes, "MaxDepth": l.MaxDepth, "MaxNodes": l.MaxNodes, "MaxStates": l.MaxStates, "MaxExprBytes": l.MaxExprBytes} {
		assert.Contains(t, doc, fmt.Sprintf("| `%s` | %d", name, value), "the limits table of docs/diagnostics.md is out of date")
	}
}

var (
	docExampleRE = regexp.MustCompile(`(?s)<!-- example (\S+) -->\n.*?<!-- end example -->`)
	docChecksRE  = regexp.MustCompile(`(?s)(<!-- checks:[^\n]*-->\n).*?(<!-- end checks -->)`)
)

// docExample renders the example of case file name for the docs: the
// file and its golden output.
func docExample(t *testing.T, name string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(diagDir, name))
	require.NoError(t, err, "docs/diagnostics.md shows an example that is not in %s", diagDir)
	golden, err := os.ReadFile(goldenPath(name))
	require.NoError(t, err)
	lang := strings.TrimPrefix(filepath.Ext(name), ".")
	return fmt.Sprintf("Example ([`%s`](../testdata/diagnostics/%s)):\n\n```%s\n%s```\n\n```text\n%s```\n", name, name, lang, src, golden)
}

// docChecksTable renders policy.Checks as the docs' table of checks.
func docChecksTable() string {
	var b strings.Builder
	b.WriteString("| check | codes | what it ensures |\n|---|---|---|\n")
	for _, chk := range policy.Checks {
		codes := make([]string, len(chk.Codes))
		for i, c := range chk.Codes {
			codes[i] = string(c)
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", chk.Name, strings.Join(codes, ", "), chk.Doc)
	}
	return b.String()
}

// TestDiagnosticsDocGenerated checks the generated parts of
// docs/diagnostics.md — each example (a case file and its golden output)
// and the table of checks — against their sources. Run with -update
// (after the golden files are rewritten) to regenerate them.
func TestDiagnosticsDocGenerated(t *testing.T) {
	src, err := os.ReadFile(docPath)
	require.NoError(t, err)
	doc := string(src)
	want := docExampleRE.ReplaceAllStringFunc(doc, func(block string) string {
		name := docExampleRE.FindStringSubmatch(block)[1]
		return "<!-- example " + name + " -->\n" + docExample(t, name) + "<!-- end example -->"
	})
	require.Regexp(t, docChecksRE, want, "docs/diagnostics.md has no <!-- checks: --> table")
	want = docChecksRE.ReplaceAllString(want, "${1}"+strings.ReplaceAll(docChecksTable(), "$", "$$")+"${2}")
	if *update {
		if want != doc {
			require.NoError(t, os.WriteFile(docPath, []byte(want), 0o644))
		}
		return
	}
	assert.Equal(t, want, doc, "docs/diagnostics.md is out of date; run go test ./policy -update")
}

// TestDiagnosticsDocExamples checks that docs/diagnostics.md shows an
// example for every code, generated from one of its case files.
func TestDiagnosticsDocExamples(t *testing.T) {
	src, err := os.ReadFile(docPath)
	require.NoError(t, err)
	shown := map[policy.Code]bool{}
	for _, m := range docExampleRE.FindAllStringSubmatch(string(src), -1) {
		if c := caseNameRE.FindStringSubmatch(m[1]); c != nil {
			shown[policy.Code(c[1])] = true
		}
	}
	for _, ci := range policy.Codes {
		assert.True(t, shown[ci.Code], "docs/diagnostics.md shows no example of %s", ci.Code)
	}
}

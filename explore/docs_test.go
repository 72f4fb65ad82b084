package explore_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/explore"
)

const docPath = "../docs/diagnostics.md"

var docExampleRE = regexp.MustCompile(`(?s)<!-- explore-example (\S+) -->\n.*?<!-- end explore-example -->`)

// docExample renders the example of case file name for the docs: the
// file, its diagnostics and the first finding's witness as a diagram.
func docExample(t *testing.T, name string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(caseDir, name))
	require.NoError(t, err, "docs/diagnostics.md shows an example that is not in %s", caseDir)
	c := compile(t, name)
	r, err := explore.Explore(c)
	require.NoError(t, err)
	var b strings.Builder
	fmt.Fprintf(&b, "Example ([`%s`](../testdata/explore/%s)):\n\n```yaml\n%s```\n\n```text\n", name, name, src)
	writeDiagnostics(&b, r.Diagnostics(c.Policy()))
	b.WriteString("```\n")
	if len(r.Findings) > 0 {
		fmt.Fprintf(&b, "\nThe first witness as a sequence diagram (`-format mermaid`):\n\n```mermaid\n%s```\n", r.Findings[0].Mermaid())
	}
	return b.String()
}

// TestDiagnosticsDocExplore checks that docs/diagnostics.md has a
// section for every exploration code, headed "## CPxxx name", with an
// example generated from its case file; -update regenerates the
// examples.
func TestDiagnosticsDocExplore(t *testing.T) {
	src, err := os.ReadFile(docPath)
	require.NoError(t, err)
	doc := string(src)
	for _, ci := range explore.Codes {
		assert.Contains(t, doc, fmt.Sprintf("\n## %s %s\n", ci.Code, ci.Name), "docs/diagnostics.md has no section for %s", ci.Code)
		assert.Contains(t, doc, fmt.Sprintf("| [%s](#%s-%s) | %s | %s |", ci.Code, strings.ToLower(string(ci.Code)), ci.Name, ci.Name, ci.Severity), "the codes table of docs/diagnostics.md lacks %s", ci.Code)
		assert.Regexp(t, `<!-- explore-example `+string(ci.Code)+`-[a-z0-9-]+\.yaml -->`, doc, "docs/diagnostics.md shows no example of %s", ci.Code)
	}
	want := docExampleRE.ReplaceAllStringFunc(doc, func(block string) string {
		name := docExampleRE.FindStringSubmatch(block)[1]
		return "<!-- explore-example " + name + " -->\n" + docExample(t, name) + "<!-- end explore-example -->"
	})
	if *update {
		if want != doc {
			require.NoError(t, os.WriteFile(docPath, []byte(want), 0o644))
		}
		return
	}
	assert.Equal(t, want, doc, "docs/diagnostics.md is out of date; run go test ./explore -update")
}

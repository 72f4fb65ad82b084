package explore_test

import (
	"encoding/json"
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

	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/explore"
	"github.com/parleyhq/parley/policy"
)

var update = flag.Bool("update", false, "rewrite golden files")

// caseDir holds one policy per exploration code, named CPxxx-name.yaml,
// each next to its .golden output: the diagnostics, then each finding's
// witness as JSON and as a Mermaid sequence diagram.
const caseDir = "../testdata/explore"

var caseNameRE = regexp.MustCompile(`^(CP1\d\d)-[a-z0-9-]+\.yaml$`)

// compile loads and checks a case file; it must check clean.
func compile(t testing.TB, name string) *engine.Compiled {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(caseDir, name))
	require.NoError(t, err)
	p, ds := policy.Load(name, src)
	require.NotNil(t, p, "%v", ds)
	c, ds := engine.Check(p)
	require.NotNil(t, c, "%v", ds)
	require.Empty(t, ds, "case %s must check clean statically", name)
	return c
}

// render renders a report as the golden files hold it.
func render(t *testing.T, c *engine.Compiled, r *explore.Report) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "explored %d states, %d steps (bounds: %d instances, buffer %d, %d states); truncated: %v%s\n",
		r.States, r.Steps, r.Instances, r.Buffer, r.MaxStates, r.Truncated, strings.TrimRight(" "+r.Bound, " "))
	writeDiagnostics(&b, r.Diagnostics(c.Policy()))
	for _, f := range r.Findings {
		fmt.Fprintf(&b, "\n--- %s witness as JSON\n", f.Diagnostic.Code)
		data, err := json.MarshalIndent(f.Witness, "", "  ")
		require.NoError(t, err)
		b.Write(data)
		fmt.Fprintf(&b, "\n--- %s witness as Mermaid\n%s", f.Diagnostic.Code, f.Mermaid())
	}
	return b.String()
}

// writeDiagnostics renders ds as cpvalidate's text output does: each
// diagnostic, then its related positions and witness, indented.
func writeDiagnostics(b *strings.Builder, ds policy.Diagnostics) {
	for _, d := range ds {
		b.WriteString(d.Error() + "\n")
		for _, rel := range d.Related {
			fmt.Fprintf(b, "\t%s: %s\n", rel.Pos, rel.Message)
		}
		if len(d.Trace) > 0 {
			b.WriteString("\twitness:\n")
			for i, s := range d.Trace {
				fmt.Fprintf(b, "\t  %d. %s\n", i+1, s)
			}
		}
	}
}

func caseFiles(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(caseDir, "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	var out []string
	for _, p := range paths {
		out = append(out, filepath.Base(p))
	}
	return out
}

// TestGolden explores every case and compares the report with its
// golden file; -update rewrites them. Each case reports the code it is
// named after.
func TestGolden(t *testing.T) {
	for _, name := range caseFiles(t) {
		t.Run(name, func(t *testing.T) {
			m := caseNameRE.FindStringSubmatch(name)
			require.NotNil(t, m, "case files are named CP1xx-short-name.yaml")
			c := compile(t, name)
			r, err := explore.Explore(c)
			require.NoError(t, err)
			ds := r.Diagnostics(c.Policy())
			assert.True(t, slices.ContainsFunc(ds, func(d policy.Diagnostic) bool { return string(d.Code) == m[1] }), "%s does not report %s", name, m[1])
			got := render(t, c, r)
			golden := filepath.Join(caseDir, name+".golden")
			if *update {
				require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
				return
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "no golden file; run go test ./explore -update")
			assert.Equal(t, string(want), got)
		})
	}
}

// TestEveryCodeHasACase checks that each exploration code has a case.
func TestEveryCodeHasACase(t *testing.T) {
	names := caseFiles(t)
	for _, ci := range explore.Codes {
		assert.True(t, slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, string(ci.Code)+"-") }), "no case for %s in %s", ci.Code, caseDir)
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/policy"
)

var update = flag.Bool("update", false, "rewrite golden files")

// shipped is the directory of the policies Parley ships, as the tests
// name it on the command line (and so as it appears in the output).
const shipped = "../../policies"

// runCLI runs the program with args and returns its exit code and output.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// golden compares got with testdata/golden/name, or rewrites the file
// under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	goldenFile(t, filepath.Join("testdata", "golden", name), got)
}

// goldenFile compares got with the file at path, or rewrites the file
// under -update.
func goldenFile(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file; run go test ./cmd/cpvalidate -update")
	assert.Equal(t, string(want), got, "output differs from %s; if the change is intended, run go test ./cmd/cpvalidate -update", path)
}

func TestGolden(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		golden string
	}{
		{name: "shipped policies text", args: []string{shipped}, code: exitOK, golden: "policies.txt"},
		{name: "shipped policies json", args: []string{"-format", "json", shipped}, code: exitOK, golden: "policies.json"},
		{name: "shipped policies sarif", args: []string{"-format", "sarif", shipped}, code: exitOK, golden: "policies.sarif"},
		{name: "broken text", args: []string{"testdata/broken"}, code: exitErrors, golden: "broken.txt"},
		{name: "broken json", args: []string{"-format", "json", "testdata/broken"}, code: exitErrors, golden: "broken.json"},
		{name: "broken sarif", args: []string{"-format", "sarif", "testdata/broken"}, code: exitErrors, golden: "broken.sarif"},
		{name: "broken quiet", args: []string{"-q", "testdata/broken"}, code: exitErrors, golden: "broken-quiet.txt"},
		{name: "broken capped", args: []string{"-max", "3", "testdata/broken"}, code: exitErrors, golden: "broken-max3.txt"},
		{name: "broken capped json", args: []string{"testdata/broken", "-max", "3", "-format", "json"}, code: exitErrors, golden: "broken-max3.json"},
		{name: "usage", args: []string{"-h"}, code: exitOK, golden: "usage.txt"},
		{name: "convert usage", args: []string{"convert", "-h"}, code: exitOK, golden: "usage-convert.txt"},
		{name: "graph usage", args: []string{"help", "graph"}, code: exitOK, golden: "usage-graph.txt"},
		{name: "trace usage", args: []string{"trace", "-h"}, code: exitOK, golden: "usage-trace.txt"},
		{name: "graph mermaid", args: []string{"graph", shipped + "/fipa-request.yaml"}, code: exitOK, golden: "fipa-request.mmd"},
		{name: "graph dot", args: []string{"graph", "-format", "dot", shipped + "/fipa-request.yaml"}, code: exitOK, golden: "fipa-request.dot"},
		{name: "graph mermaid role", args: []string{"graph", shipped + "/fipa-request.yaml", "-role", "Initiator"}, code: exitOK, golden: "fipa-request-initiator.mmd"},
		{name: "graph dot role", args: []string{"graph", "-role", "Initiator", "-format", "dot", shipped + "/fipa-request.xml"}, code: exitOK, golden: "fipa-request-initiator.dot"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runCLI(t, tt.args...)
			assert.Equal(t, tt.code, code, "exit code; stderr:\n%s", stderr)
			assert.Empty(t, stderr)
			golden(t, tt.golden, stdout)
		})
	}
}

// jsonOutput decodes the -format json report.
func jsonOutput(t *testing.T, stdout string) jsonReport {
	t.Helper()
	var rep jsonReport
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep), stdout)
	return rep
}

func TestBrokenPoliciesArePositioned(t *testing.T) {
	code, stdout, stderr := runCLI(t, "-format", "json", "-max", "0", "testdata/broken")
	require.Equal(t, exitErrors, code, stderr)
	rep := jsonOutput(t, stdout)
	require.NotEmpty(t, rep.Diagnostics)
	for _, d := range rep.Diagnostics {
		assert.True(t, strings.HasPrefix(d.File, "testdata/broken/"), "file %q", d.File)
		assert.Positive(t, d.Line, "%s: %s", d.Code, d.Message)
		assert.Positive(t, d.Col, "%s: %s", d.Code, d.Message)
		for _, r := range d.Related {
			assert.Positive(t, r.Line, "related %q of %s", r.Message, d.Code)
			assert.Positive(t, r.Col, "related %q of %s", r.Message, d.Code)
		}
	}
	// Every deliberate problem of order.yaml is reported where it is.
	want := []struct{ at, code, text string }{
		{"testdata/broken/order.yaml:7:12", "CP002", `unknown key "docs" in role "Seller"; did you mean "doc"?`},
		{"testdata/broken/order.yaml:25:55", "CP010", `state "acepted" is not declared; did you mean "accepted"?`},
		{"testdata/broken/order.yaml:31:28", "CP019", `sender "Sellr" is not a declared role; did you mean "Seller"?`},
		{"testdata/broken/unparsable.yaml:3:1", "CP001", ``},
		{"testdata/broken/choice.yaml:14:7", "CP029", `role "Auditor" cannot tell`},
		{"testdata/broken/order.xml:15:57", "CP002", `unknown attribute "colour"`},
		{"testdata/broken/order.xml:18:53", "CP019", `receiver "Byer" is not a declared role; did you mean "Buyer"?`},
	}
	for _, w := range want {
		found := false
		for _, d := range rep.Diagnostics {
			pos := policy.Pos{File: d.File, Line: d.Line, Col: d.Col}.String()
			if pos == w.at && d.Code == w.code && strings.Contains(d.Message, w.text) {
				found = true
			}
		}
		assert.True(t, found, "no %s at %s containing %q", w.code, w.at, w.text)
	}
	assert.Equal(t, 4, rep.Summary.Policies)
	assert.Equal(t, 0, rep.Summary.OK)
	assert.Zero(t, rep.Summary.Omitted)
}

func TestMaxCapsDiagnostics(t *testing.T) {
	_, all, _ := runCLI(t, "-format", "json", "-max", "0", "testdata/broken")
	total := len(jsonOutput(t, all).Diagnostics)
	require.Greater(t, total, 3)

	tests := []struct {
		name  string
		max   string
		shown int
	}{
		{name: "below the count", max: "3", shown: 3},
		{name: "one", max: "1", shown: 1},
		{name: "no limit", max: "0", shown: total},
		{name: "above the count", max: "1000", shown: total},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, _ := runCLI(t, "-format", "json", "-max", tt.max, "testdata/broken")
			assert.Equal(t, exitErrors, code)
			rep := jsonOutput(t, stdout)
			assert.Len(t, rep.Diagnostics, tt.shown)
			assert.Equal(t, total-tt.shown, rep.Summary.Omitted)

			code, stdout, _ = runCLI(t, "-q", "-max", tt.max, "testdata/broken")
			assert.Equal(t, exitErrors, code)
			if tt.shown < total {
				assert.True(t, strings.HasSuffix(stdout, "... and "+plural(total-tt.shown, "more diagnostic", "more diagnostics")+"\n"), stdout)
			} else {
				assert.NotContains(t, stdout, "more diagnostic")
			}
		})
	}
}

// TestSARIF checks the fields the SARIF 2.1.0 schema requires, and the
// ones GitHub code scanning reads, on the decoded output.
func TestSARIF(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		code    int
		results bool
	}{
		// The shipped policies have no errors; conversation-setup, small
		// enough to be explored, has timeout races (CP104 warnings).
		{name: "shipped", args: []string{"-format", "sarif", shipped}, code: exitOK, results: true},
		{name: "broken", args: []string{"-format", "sarif", "testdata/broken"}, code: exitErrors, results: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tt.args...)
			require.Equal(t, tt.code, code, stderr)
			var log map[string]any
			require.NoError(t, json.Unmarshal([]byte(stdout), &log))
			assert.Equal(t, "2.1.0", log["version"])
			assert.Equal(t, "https://json.schemastore.org/sarif-2.1.0.json", log["$schema"])
			runs := list(t, log, "runs")
			require.Len(t, runs, 1)
			r := runs[0].(map[string]any)
			driver := obj(t, obj(t, r, "tool"), "driver")
			assert.Equal(t, "cpvalidate", driver["name"])
			assert.Equal(t, "https://github.com/parleyhq/parley", driver["informationUri"])
			rules := list(t, driver, "rules")
			require.Len(t, rules, len(allCodes()))
			for i, raw := range rules {
				rule := raw.(map[string]any)
				c := allCodes()[i]
				assert.Equal(t, string(c.Code), rule["id"])
				assert.Equal(t, c.Name, rule["name"])
				assert.Equal(t, c.Summary, obj(t, rule, "shortDescription")["text"])
				// GitHub code scanning requires these two.
				assert.NotEmpty(t, obj(t, rule, "fullDescription")["text"])
				assert.NotEmpty(t, obj(t, rule, "help")["text"])
				assert.Equal(t, "https://github.com/parleyhq/parley/blob/main/docs/diagnostics.md#"+strings.ToLower(string(c.Code)), rule["helpUri"])
				assert.Contains(t, []any{"error", "warning", "note"}, obj(t, rule, "defaultConfiguration")["level"])
			}
			for _, a := range list(t, r, "artifacts") {
				assert.NotEmpty(t, obj(t, a.(map[string]any), "location")["uri"])
			}
			results := list(t, r, "results")
			assert.Equal(t, tt.results, len(results) > 0)
			for _, raw := range results {
				res := raw.(map[string]any)
				id, _ := res["ruleId"].(string)
				idx, ok := res["ruleIndex"].(float64)
				require.True(t, ok, "ruleIndex of %s", id)
				assert.Equal(t, id, rules[int(idx)].(map[string]any)["id"])
				assert.Contains(t, []any{"error", "warning", "note"}, res["level"])
				assert.NotEmpty(t, obj(t, res, "message")["text"])
				locs := list(t, res, "locations")
				require.Len(t, locs, 1)
				checkLocation(t, locs[0].(map[string]any))
				if related, ok := res["relatedLocations"]; ok {
					for _, rl := range related.([]any) {
						rl := rl.(map[string]any)
						assert.GreaterOrEqual(t, rl["id"], float64(0))
						assert.NotEmpty(t, obj(t, rl, "message")["text"])
						checkLocation(t, rl)
					}
				}
			}
		})
	}
}

func checkLocation(t *testing.T, loc map[string]any) {
	t.Helper()
	pl := obj(t, loc, "physicalLocation")
	uri, _ := obj(t, pl, "artifactLocation")["uri"].(string)
	assert.NotEmpty(t, uri)
	assert.NotContains(t, uri, `\`)
	region := obj(t, pl, "region")
	assert.GreaterOrEqual(t, region["startLine"], float64(1))
	if col, ok := region["startColumn"]; ok {
		assert.GreaterOrEqual(t, col, float64(1))
	}
}

func obj(t *testing.T, m map[string]any, key string) map[string]any {
	t.Helper()
	v, ok := m[key].(map[string]any)
	require.True(t, ok, "%q is missing or not an object in %v", key, m)
	return v
}

func list(t *testing.T, m map[string]any, key string) []any {
	t.Helper()
	v, ok := m[key].([]any)
	require.True(t, ok, "%q is missing or not an array in %v", key, m)
	return v
}

func TestSARIFColumnsCountUTF16(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.yaml")
	line := "ä😀 x\n" // ä is 2 bytes and 1 unit; 😀 is 4 bytes and 2 units
	m := newColumnMapper(map[string][]byte{path: []byte("first\n" + line)})
	byteCol := 1 + len("ä😀 ")
	assert.Equal(t, 1+1+2+1, m.utf16Col(policy.Pos{File: path, Line: 2, Col: byteCol}))
	assert.Equal(t, 3, m.utf16Col(policy.Pos{File: path, Line: 1, Col: 3}))
	// Positions the file does not have are left as they are.
	assert.Equal(t, 40, m.utf16Col(policy.Pos{File: path, Line: 2, Col: 40}))
	assert.Equal(t, 7, m.utf16Col(policy.Pos{File: path, Line: 9, Col: 7}))
	assert.Equal(t, 7, m.utf16Col(policy.Pos{File: filepath.Join(dir, "missing.yaml"), Line: 1, Col: 7}))
}

func TestFileURI(t *testing.T) {
	assert.Equal(t, "policies/fipa-request.yaml", fileURI(filepath.FromSlash("policies/fipa-request.yaml")))
	assert.Equal(t, "../../policies/a%20b.yaml", fileURI(filepath.FromSlash("../../policies/a b.yaml")))
	assert.Equal(t, "./a:b.yaml", fileURI("a:b.yaml"), "a colon in the first segment must not read as a scheme")
	if filepath.Separator == '/' {
		assert.Equal(t, "file:///tmp/p.yaml", fileURI("/tmp/p.yaml"))
	}
}

func TestChildPoliciesResolve(t *testing.T) {
	// Together, purchase.yaml finds its child haggle.yaml, and fipa-request
	// among the shipped policies.
	// (Only resolution is asserted: a change to fipa-request's outcomes
	// must not fail this test.)
	_, stdout, stderr := runCLI(t, "-format", "json", "testdata/family")
	require.Empty(t, stderr)
	rep := jsonOutput(t, stdout)
	require.Len(t, rep.Policies, 2)
	for _, d := range rep.Diagnostics {
		assert.NotContains(t, []string{"CP010", "CP030"}, d.Code, "%s:%d:%d: %s", d.File, d.Line, d.Col, d.Message)
	}

	// Alone, it does not find haggle.
	code, stdout, _ := runCLI(t, "-format", "json", "testdata/family/purchase.yaml")
	assert.Equal(t, exitErrors, code)
	rep = jsonOutput(t, stdout)
	var unresolved []string
	for _, d := range rep.Diagnostics {
		if d.Code == "CP010" {
			unresolved = append(unresolved, d.Message)
		}
	}
	require.Len(t, unresolved, 1)
	assert.Contains(t, unresolved[0], `child policy "haggle" is not known`)
}

func TestUsageErrors(t *testing.T) {
	empty := t.TempDir()
	tests := []struct {
		name   string
		args   []string
		stderr []string // substrings stderr must hold
	}{
		{name: "no arguments", args: nil, stderr: []string{"no policy files or directories given", "Usage:"}},
		{name: "unknown flag", args: []string{"-frmat", "json", shipped}, stderr: []string{"flag provided but not defined: -frmat", "cpvalidate -h"}},
		{name: "bad format", args: []string{"-format", "xml", shipped}, stderr: []string{`invalid value "xml" for flag -format: must be one of text, json, sarif`}},
		{name: "bad max", args: []string{"-max", "-1", shipped}, stderr: []string{"-max must be 0 (no limit) or more"}},
		{name: "max not a number", args: []string{"-max", "ten", shipped}, stderr: []string{`invalid value "ten" for flag -max`}},
		{name: "missing file", args: []string{"testdata/nosuch.yaml"}, stderr: []string{"testdata/nosuch.yaml: no such file or directory"}},
		{name: "missing file among good ones", args: []string{shipped, "nosuch.xml"}, stderr: []string{"nosuch.xml: no such file or directory"}},
		{name: "mistyped command", args: []string{"convrt", "-to", "xml", "x.yaml"}, stderr: []string{"convrt: no such file or directory", `did you mean the command "convert"?`}},
		{name: "unknown command", args: []string{"lint", "x.yaml"}, stderr: []string{"lint: no such file or directory (commands are convert, graph, explore, trace, replay, lsp, help)"}},
		{name: "path after --", args: []string{"--", "-q"}, stderr: []string{"-q: no such file or directory"}},
		{name: "directory without policies", args: []string{empty}, stderr: []string{"no policy files (.yaml, .yml or .xml) in this directory"}},
		{name: "help for unknown command", args: []string{"help", "lint"}, stderr: []string{`unknown command "lint"`}},
		{name: "help with two commands", args: []string{"help", "graph", "convert"}, stderr: []string{"too many arguments"}},
		{name: "convert without -to", args: []string{"convert", shipped + "/fipa-request.yaml"}, stderr: []string{"-to is required"}},
		{name: "convert to json", args: []string{"convert", "-to", "json", shipped + "/fipa-request.yaml"}, stderr: []string{`invalid value "json" for flag -to: must be one of yaml, xml`}},
		{name: "convert without file", args: []string{"convert", "-to", "xml"}, stderr: []string{"no policy file given"}},
		{name: "convert two files", args: []string{"convert", "-to", "xml", "a.yaml", "b.yaml"}, stderr: []string{"converts one file at a time"}},
		{name: "convert missing file", args: []string{"convert", "-to", "xml", "nosuch.yaml"}, stderr: []string{"nosuch.yaml: no such file or directory"}},
		{name: "convert a directory", args: []string{"convert", "-to", "xml", shipped}, stderr: []string{"is a directory"}},
		{name: "convert to an unwritable file", args: []string{"convert", "-to", "xml", "-o", filepath.Join(empty, "no", "such", "dir.xml"), shipped + "/fipa-request.yaml"}, stderr: []string{"no such file or directory"}},
		{name: "graph without file", args: []string{"graph"}, stderr: []string{"no policy file given"}},
		{name: "graph bad format", args: []string{"graph", "-format", "png", shipped + "/fipa-request.yaml"}, stderr: []string{"must be one of mermaid, dot"}},
		{name: "graph unknown role", args: []string{"graph", "-role", "Initator", shipped + "/fipa-request.yaml"}, stderr: []string{`policy "fipa-request" has no role "Initator"; did you mean "Initiator"? its roles are "Initiator", "Participant"`}},
		{name: "graph unknown flag", args: []string{"graph", "-rol", "Initiator", shipped + "/fipa-request.yaml"}, stderr: []string{"flag provided but not defined: -rol", "cpvalidate graph -h"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runCLI(t, tt.args...)
			assert.Equal(t, exitUsage, code, "stderr:\n%s", stderr)
			for _, s := range tt.stderr {
				assert.Contains(t, stderr, s)
			}
			if !strings.Contains(tt.name, "among good ones") {
				assert.Empty(t, stdout)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	tests := []struct {
		name string
		args []string
		cmd  *command
	}{
		{name: "-h", args: []string{"-h"}, cmd: validateCommand},
		{name: "--help", args: []string{"--help"}, cmd: validateCommand},
		{name: "help", args: []string{"help"}, cmd: validateCommand},
		{name: "-h after paths", args: []string{shipped, "-h"}, cmd: validateCommand},
		{name: "convert -h", args: []string{"convert", "-h"}, cmd: convertCommand},
		{name: "help convert", args: []string{"help", "convert"}, cmd: convertCommand},
		{name: "graph -h", args: []string{"graph", "-h"}, cmd: graphCommand},
		{name: "help graph", args: []string{"help", "graph"}, cmd: graphCommand},
		{name: "trace -h", args: []string{"trace", "-h"}, cmd: traceCommand},
		{name: "help trace", args: []string{"help", "trace"}, cmd: traceCommand},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tt.args...)
			assert.Equal(t, exitOK, code)
			assert.Empty(t, stderr)
			for _, s := range []string{"Usage:", "Flags:", "Exit status:", "Examples:", "  0  ", "  1  ", "  2  "} {
				assert.Contains(t, stdout, s)
			}
			fs := flag.NewFlagSet("", flag.ContinueOnError)
			tt.cmd.flags(fs)
			fs.VisitAll(func(f *flag.Flag) {
				assert.Contains(t, stdout, "-"+f.Name, "usage must document every flag")
			})
		})
	}
}

func TestConvertRoundTrip(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(shipped, "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	files = append(files, "testdata/family/purchase.yaml", "testdata/broken/choice.yaml")
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			orig, ds, err := policy.LoadFile(file)
			require.NoError(t, err)
			require.False(t, ds.HasErrors(), ds.Error())
			dir := t.TempDir()
			xmlFile := filepath.Join(dir, "p.xml")
			yamlFile := filepath.Join(dir, "p.yaml")

			code, stdout, stderr := runCLI(t, "convert", "-to", "xml", "-o", xmlFile, file)
			require.Equal(t, exitOK, code, stderr)
			assert.Empty(t, stdout)
			code, _, stderr = runCLI(t, "convert", xmlFile, "-to", "yaml", "-o", yamlFile) // flags after the file
			require.Equal(t, exitOK, code, stderr)

			for _, f := range []string{xmlFile, yamlFile} {
				p, ds, err := policy.LoadFile(f)
				require.NoError(t, err)
				require.False(t, ds.HasErrors(), ds.Error())
				assert.Equal(t, orig.Fingerprint(), p.Fingerprint(), f)
				assert.Equal(t, docsOf(orig), docsOf(p), f)
			}

			// To standard output, the same bytes as the file.
			code, stdout, _ = runCLI(t, "convert", "-to", "xml", file)
			require.Equal(t, exitOK, code)
			written, err := os.ReadFile(xmlFile)
			require.NoError(t, err)
			assert.Equal(t, string(written), stdout)
		})
	}
}

func TestConvertRefusesBrokenInput(t *testing.T) {
	code, stdout, stderr := runCLI(t, "convert", "-to", "xml", "testdata/broken/order.yaml")
	assert.Equal(t, exitErrors, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, `testdata/broken/order.yaml:7:12: error: unknown key "docs" in role "Seller"; did you mean "doc"? [CP002]`)
	assert.Contains(t, stderr, "testdata/broken/order.yaml has 1 error")

	code, stdout, stderr = runCLI(t, "convert", "-to", "yaml", "testdata/broken/unparsable.yaml")
	assert.Equal(t, exitErrors, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "testdata/broken/unparsable.yaml:3:1: error:")
}

// TestVerifyConversionCatchesLoss feeds the check a file that is not what
// the writer made of the policy, as a broken writer would.
func TestVerifyConversionCatchesLoss(t *testing.T) {
	p, ds, err := policy.LoadFile(shipped + "/fipa-request.yaml")
	require.NoError(t, err)
	require.False(t, ds.HasErrors())
	good := policy.WriteYAML(p)
	require.NoError(t, verifyConversion(p, policy.FormatYAML, good))

	changed := bytes.Replace(good, []byte("default: 30s"), []byte("default: 31s"), 1)
	require.NotEqual(t, good, changed)
	err = verifyConversion(p, policy.FormatYAML, changed)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "changed the policy (fingerprint")

	undocumented := bytes.Replace(good, []byte("doc: the action to perform"), []byte("doc: something else"), 1)
	require.NotEqual(t, good, undocumented)
	err = verifyConversion(p, policy.FormatYAML, undocumented)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `changed documentation: "message request: the action to perform" became "message request: something else"`)

	err = verifyConversion(p, policy.FormatXML, []byte("<policy"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does not load")
}

func TestGraphRefusesBrokenPolicy(t *testing.T) {
	code, stdout, stderr := runCLI(t, "graph", "testdata/broken/order.yaml")
	assert.Equal(t, exitErrors, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, `testdata/broken/order.yaml:25:55: error: state "acepted" is not declared; did you mean "accepted"? [CP010]`)
	assert.NotContains(t, stderr, "warning", "graph prints only the errors")
	assert.Contains(t, stderr, "testdata/broken/order.yaml has 3 errors")

	code, _, stderr = runCLI(t, "graph", "-role", "Auditor", "testdata/broken/choice.yaml")
	assert.Equal(t, exitErrors, code)
	assert.Contains(t, stderr, "[CP029]")
	assert.Contains(t, stderr, "\twitness:\n\t  1. ")
}

func TestGraphChildAndJoinStates(t *testing.T) {
	code, stdout, stderr := runCLI(t, "graph", "testdata/family/purchase.yaml")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "    s_start : runs child policy haggle\n")
	assert.Contains(t, stdout, "    s_start --> s_ordering : child agreed\n")

	code, stdout, stderr = runCLI(t, "graph", "-format", "dot", "testdata/family/purchase.yaml")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, `  "start" [shape=box, style=rounded, label="start\nruns child policy haggle"];`)

	code, stdout, stderr = runCLI(t, "graph", "-format", "dot", "-role", "Seller", "testdata/family/purchase.yaml")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, `"thanking" -> "done" [label="?thanks\ntimeout wait"];`)
}

// TestDotOutputParses runs Graphviz on the dot output when it is
// installed.
func TestDotOutputParses(t *testing.T) {
	dot, err := exec.LookPath("dot")
	if err != nil {
		t.Skip("Graphviz dot is not installed")
	}
	for _, args := range [][]string{
		{"graph", "-format", "dot", shipped + "/fipa-request.yaml"},
		{"graph", "-format", "dot", "-role", "Participant", shipped + "/fipa-request.yaml"},
		{"graph", "-format", "dot", "testdata/family/purchase.yaml"},
	} {
		code, stdout, stderr := runCLI(t, args...)
		require.Equal(t, exitOK, code, stderr)
		cmd := exec.Command(dot, "-Tsvg")
		cmd.Stdin = strings.NewReader(stdout)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s\n%s", out, stdout)
	}
}

func TestParseInterspersed(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
		role string
	}{
		{name: "flags first", args: []string{"-role", "R", "f"}, want: []string{"f"}, role: "R"},
		{name: "flags last", args: []string{"f", "-role", "R"}, want: []string{"f"}, role: "R"},
		{name: "flags between", args: []string{"f", "-role=R", "g"}, want: []string{"f", "g"}, role: "R"},
		{name: "double dash", args: []string{"f", "--", "-role", "R"}, want: []string{"f", "-role", "R"}},
		{name: "nothing", args: nil, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("", flag.ContinueOnError)
			role := fs.String("role", "", "")
			got, err := parseInterspersed(fs, tt.args)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.role, *role)
		})
	}
}

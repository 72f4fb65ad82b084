package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/policy"
)

// huge is a name or value far longer than any output may repeat.
var huge = strings.Repeat("x", 5<<20)

// quotedPrefix is what policy.Quote shows of huge, and clippedPrefix what
// policy.Clip shows.
var (
	quotedPrefix  = `"` + strings.Repeat("x", policy.MaxQuoted) + `"…`
	clippedPrefix = strings.Repeat("x", policy.MaxQuoted) + "…"
)

// TestHugeNamesStayBounded is the regression test for cpvalidate printing
// a 5 MB policy name twice (in a diagnostic and in the summary line) and a
// 5 MB scalar in full: every format shows a prefix and an ellipsis.
func TestHugeNamesStayBounded(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(src), 0o644))
		return path
	}
	const base = "version: 1\nroles: [A, B]\nmessages: {m: inform}\nstates:\n  s:\n    - {send: m, from: A, to: B, next: done}\n  done: {terminal: done}\n"
	name := write("name.yaml", "policy: "+huge+"\n"+base)
	version := write("version.yaml", "policy: p\n"+strings.Replace(base, "version: 1", "version: "+huge, 1))
	scalar := write("scalar.yaml", "policy: p\n"+strings.Replace(base, "{m: inform}", huge, 1))
	tests := []struct {
		name   string
		args   []string
		code   int
		shows  []string // what stdout must hold
		absent bool     // stdout shows nothing of huge (SARIF has no summary line)
	}{
		{name: "name in text", args: []string{name}, code: exitErrors, shows: []string{"policy name " + quotedPrefix, "FAIL  " + clippedPrefix + " v1"}},
		{name: "name in JSON", args: []string{"-format", "json", name}, code: exitErrors, shows: []string{`"name": "` + clippedPrefix + `"`, `policy name \"` + strings.Repeat("x", policy.MaxQuoted) + `\"…`}},
		{name: "name in SARIF", args: []string{"-format", "sarif", name}, code: exitErrors, shows: []string{`policy name \"` + strings.Repeat("x", policy.MaxQuoted) + `\"…`}},
		{name: "version in text", args: []string{version}, code: exitOK, shows: []string{"ok    p v" + clippedPrefix}},
		{name: "version in JSON", args: []string{"-format", "json", version}, code: exitOK, shows: []string{`"version": "` + clippedPrefix + `"`}},
		{name: "version in SARIF", args: []string{"-format", "sarif", version}, code: exitOK, absent: true},
		{name: "scalar in text", args: []string{scalar}, code: exitErrors, shows: []string{"not " + quotedPrefix}},
		{name: "scalar in JSON", args: []string{"-format", "json", scalar}, code: exitErrors, shows: []string{`not \"` + strings.Repeat("x", policy.MaxQuoted) + `\"…`}},
		{name: "scalar in SARIF", args: []string{"-format", "sarif", scalar}, code: exitErrors, shows: []string{`not \"` + strings.Repeat("x", policy.MaxQuoted) + `\"…`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runCLI(t, tt.args...)
			assert.Equal(t, tt.code, code, stderr)
			assert.Empty(t, stderr)
			require.Less(t, len(stdout), 64<<10, "the output stays small")
			for _, s := range tt.shows {
				assert.Contains(t, stdout, s)
			}
			if tt.absent {
				assert.NotContains(t, stdout, strings.Repeat("x", policy.MaxQuoted))
			}
		})
	}
}

// TestTraceHugeFieldsStayBounded is the regression test for a trace line
// with a 5 MB sender or performative, which findings (and the binding's
// error) repeated in full.
func TestTraceHugeFieldsStayBounded(t *testing.T) {
	dir := t.TempDir()
	const open = `{"performative": "request", "sender": "alice", "receiver": "bob", "conversation_id": "c1", "reply_with": "r1"}` + "\n"
	for _, tt := range []struct {
		name, line string
	}{
		{name: "sender", line: `{"performative": "agree", "sender": "` + huge + `", "receiver": "alice", "conversation_id": "c1"}`},
		{name: "performative", line: `{"performative": "` + huge + `", "sender": "bob", "receiver": "alice", "conversation_id": "c1"}`},
		{name: "first line", line: ""},
	} {
		src := open + tt.line + "\n"
		if tt.line == "" {
			src = `{"performative": "` + huge + `", "sender": "` + huge + `", "receiver": "bob"}` + "\n" + open
		}
		path := filepath.Join(dir, tt.name+".jsonl")
		require.NoError(t, os.WriteFile(path, []byte(src), 0o644))
		for _, format := range []struct{ name, shows string }{
			{name: "text", shows: quotedPrefix},
			{name: "json", shows: `\"` + strings.Repeat("x", policy.MaxQuoted) + `\"…`},
		} {
			t.Run(tt.name+" "+format.name, func(t *testing.T) {
				t.Parallel()
				code, stdout, stderr := runCLI(t, "trace", "-format", format.name, "-bind", "Initiator=alice", "-bind", "Participant=bob", "fipa-request", path)
				assert.Equal(t, exitErrors, code)
				assert.Empty(t, stderr)
				require.Less(t, len(stdout), 8<<10, "the output stays small")
				assert.Contains(t, stdout, "TR007")
				assert.Contains(t, stdout, format.shows)
			})
		}
	}
}

// TestTraceMaxCapsFindings checks -max: the findings after the first N
// become one TR011 finding, in both formats, and the JSON keeps its
// shape.
func TestTraceMaxCapsFindings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "garbage.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(`{"performative": "request", "sender": "alice", "receiver": "bob", "conversation_id": "c1"}`+"\n"+strings.Repeat("garbage\n", 10)), 0o644))
	tests := []struct {
		name     string
		max      string
		findings int // findings printed, the TR011 one included
		omitted  string
	}{
		{name: "below the count", max: "3", findings: 4, omitted: "... and 9 more findings (raise -max, or use -max 0, to print them)"},
		{name: "no limit", max: "0", findings: 12},
		{name: "the count", max: "12", findings: 12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, js, stderr := runCLI(t, "trace", "-format", "json", "-max", tt.max, "fipa-request", path)
			assert.Equal(t, exitErrors, code, stderr)
			findings, _ := traceJSON(t, js)
			require.Len(t, findings, tt.findings)
			last := findings[len(findings)-1]
			if tt.omitted != "" {
				assert.Equal(t, traceFinding{Line: 3, Severity: "info", Code: "TR011", Message: tt.omitted}, last)
			} else {
				assert.NotEqual(t, "TR011", last.Code)
			}
			_, text, _ := runCLI(t, "trace", "-max", tt.max, "fipa-request", path)
			assert.Equal(t, tt.findings+1, strings.Count(text, "\n"), text)
			if tt.omitted != "" {
				assert.Contains(t, text, path+":3: info: "+tt.omitted+" [TR011]\n")
			}
		})
	}
	code, _, stderr := runCLI(t, "trace", "-max", "-1", "fipa-request", path)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "-max must be 0 (no limit) or more")
}

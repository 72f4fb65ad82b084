package api

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/policies"
)

func testPolicy(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("../../testdata/order.yaml")
	require.NoError(t, err)
	return string(src)
}

func TestCheck(t *testing.T) {
	order := testPolicy(t)
	xml := Examples()[0].XML
	tests := []struct {
		name        string
		format, src string
		errors      int
		code        string // of the first diagnostic
		line        int
		diagram     bool
	}{
		{name: "a clean policy is drawn", format: "yaml", src: order, diagram: true},
		{name: "CP-XML", format: "xml", src: xml, diagram: true},
		{name: "an error", format: "yaml", src: strings.Replace(order, "next: accepted}", "next: acepted}", 1), errors: 1, code: "CP010", line: 35},
		{name: "a syntax error", format: "yaml", src: "policy: [", errors: 1, code: "CP001", line: 2},
		{name: "empty", format: "yaml", src: "", errors: 1, code: "CP001", line: 1},
		{name: "YAML read as XML", format: "xml", src: order, errors: 1, code: "CP001", line: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := Check(tt.format, tt.src)
			assert.Equal(t, tt.errors, res.Errors)
			if tt.code != "" {
				require.NotEmpty(t, res.Diagnostics)
				assert.Equal(t, tt.code, res.Diagnostics[0].Code)
				assert.Equal(t, tt.line, res.Diagnostics[0].Line)
			}
			assert.Equal(t, tt.diagram, strings.Contains(res.Mermaid, "\nstateDiagram-v2\n"), res.Mermaid)
			_, err := json.Marshal(res)
			assert.NoError(t, err)
		})
	}
}

func TestCheckCapsDiagnostics(t *testing.T) {
	var b strings.Builder
	b.WriteString("policy: many\nversion: 1\nroles: [A, B]\nmessages: {m: inform}\nstates:\n  start:\n")
	for i := range MaxReported + 5 {
		fmt.Fprintf(&b, "    - {send: m, from: A, to: B, next: missing%d}\n", i)
	}
	res := Check("yaml", b.String())
	require.Len(t, res.Diagnostics, MaxReported+1)
	assert.Equal(t, "info", res.Diagnostics[MaxReported].Severity)
	assert.Contains(t, res.Diagnostics[MaxReported].Message, "more diagnostics")
	assert.Greater(t, res.Errors, MaxReported, "the counts are of all of them")
}

func TestProject(t *testing.T) {
	order := testPolicy(t)
	tests := []struct {
		name, src, role string
		want, err       string
	}{
		{name: "a role", src: order, role: "Seller", want: "s_start --> s_ordered : ?order\n"},
		{name: "no such role", src: order, role: "Auditor", err: `no role "Auditor"`},
		{name: "a policy with errors", src: "policy: x", role: "A", err: "has errors"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := Project("yaml", tt.src, tt.role)
			assert.Contains(t, res.Error, tt.err)
			assert.Contains(t, res.Mermaid, tt.want)
		})
	}
}

func TestTrace(t *testing.T) {
	order := testPolicy(t)
	good := `{"at": "2025-01-01T10:00:00Z", "performative": "request", "sender": "alice", "receiver": "bob", "conversation_id": "c1"}
{"at": "1s", "performative": "agree", "sender": "bob", "receiver": "alice", "conversation_id": "c1"}
{"at": "2s", "performative": "inform", "sender": "bob", "receiver": "alice", "conversation_id": "c1", "content": {"tracking": "T1"}}`
	bad := strings.Replace(good, `"agree"`, `"refuse"`, 1)
	tests := []struct {
		name     string
		src      string
		trace    string
		bind     string
		conforms bool
		err      string
	}{
		{name: "a conforming trace", src: order, trace: good, conforms: true},
		{name: "bound by hand", src: order, trace: good, bind: "Buyer=alice; Seller=bob", conforms: true},
		{name: "a finding", src: order, trace: bad},
		{name: "a bad binding", src: order, trace: good, bind: "Buyer", err: "must be ROLE=agent"},
		{name: "an empty agent", src: order, trace: good, bind: "Buyer=alice,", err: "empty agent name"},
		{name: "a policy with errors", src: "policy: x", trace: good, err: "has errors"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := Trace("yaml", tt.src, tt.trace, tt.bind)
			if tt.err != "" {
				assert.Contains(t, res.Error, tt.err)
				assert.Nil(t, res.Summary)
				return
			}
			require.Empty(t, res.Error)
			require.NotNil(t, res.Summary)
			assert.Equal(t, tt.conforms, res.Summary.Conforms, "%+v", res.Findings)
		})
	}
}

func TestExamplesAreTheShippedPolicies(t *testing.T) {
	ex := Examples()
	require.Len(t, ex, len(policies.Names()))
	for _, e := range ex {
		t.Run(e.Name, func(t *testing.T) {
			for format, src := range map[string]string{"yaml": e.YAML, "xml": e.XML} {
				res := Check(format, src)
				assert.Zero(t, res.Errors, "%s: %+v", format, res.Diagnostics)
				assert.Equal(t, e.Name, res.Policy.Name)
			}
		})
	}
}

package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/policy"
)

// literalsSrc has assignments of literals only, of a literal and an
// expression, and of an expression only.
const literalsSrc = `policy: literals
version: 1
roles: [Setter, Watcher]
vars: {flag: optional bool, n: optional int}
messages:
  go: request
  both: {performative: inform, fields: {n: int}}
  more: {performative: agree, fields: {n: int}}
states:
  start:
    - {send: go, from: Setter, to: Watcher, next: going, set: {flag: 'true', n: '3'}}
  going:
    - {send: both, from: Setter, to: Watcher, next: going, set: {flag: 'false', n: 'content.n'}}
    - {send: more, from: Setter, to: Watcher, next: end, set: {n: 'content.n + 1'}}
  end: {terminal: end}
`

// Compile checks a literal assignment's value against the content
// limits once (setProg.litOK), and marks the transitions whose
// assignments are all such literals (transProg.litOK), which take and
// assign then do not evaluate: only those.
func TestCompileChecksLiteralAssignmentsOnce(t *testing.T) {
	p, ds := policy.LoadYAML("literals.yaml", []byte(literalsSrc))
	require.False(t, ds.HasErrors(), "%v", ds)
	pr, ds := Compile(p, "Setter")
	require.NotNil(t, pr, "%v", ds)
	tests := []struct {
		name    string
		state   string
		send    int
		litOK   bool
		setsLit []bool
	}{
		{name: "literals only", state: "start", send: 0, litOK: true, setsLit: []bool{true, true}},
		{name: "a literal and an expression", state: "going", send: 0, litOK: false, setsLit: []bool{true, false}},
		{name: "an expression only", state: "going", send: 1, litOK: false, setsLit: []bool{false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := &pr.states[pr.stateIndex[tt.state]].sends[tt.send]
			assert.Equal(t, tt.litOK, tr.litOK)
			assert.Equal(t, tt.litOK, tr.litVars != nil)
			got := make([]bool, len(tr.sets))
			for k, set := range tr.sets {
				got[k] = set.litOK
			}
			assert.Equal(t, tt.setsLit, got)
		})
	}
}

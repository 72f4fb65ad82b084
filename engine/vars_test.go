package engine_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/policy"
)

// ratioSrc stores a quotient of the request's content in a variable.
const ratioSrc = `policy: ratio
version: 1
roles: [Asker, Teller]
vars: {ratio: number}
messages:
  ask: {performative: request, fields: {a: number, b: number}}
  tell: inform
states:
  start:
    - {send: ask, from: Asker, to: Teller, next: asked, set: {ratio: 'content.a / content.b'}}
  asked:
    - {send: tell, from: Teller, to: Asker, next: told}
  told: {terminal: told}
`

// A variable holding an infinity (a division by zero) once made every
// later Snapshot fail: an assignment whose value breaks the content
// limits is an expression error and the transition is not taken.
func TestAssignmentsThatBreakTheContentLimits(t *testing.T) {
	p, ds := policy.LoadYAML("ratio.yaml", []byte(ratioSrc))
	require.False(t, ds.HasErrors(), "%v", ds)
	progs := map[string]*engine.Program{}
	for name, role := range map[string]string{"alice": "Asker", "bob": "Teller"} {
		pr, ds := engine.Compile(p, role)
		require.NotNil(t, pr, "%v", ds)
		progs[name] = pr
	}
	c := newConvOf(t, progs,
		agent{"alice", "Asker", []engine.HandlerOption{engine.WithPeers("Teller", "bob")}},
		agent{"bob", "Teller", nil})
	c.run(t, []step{
		{do: start(), want: `
			alice: decide start [ask]`},
		{do: say("alice", "ask", content{"a": 1, "b": 0}), want: `
			alice: error PE012 [start]: setting "ratio": the value holds a number that is not finite (NaN, an infinity or out of range), which JSON cannot carry; ask was not sent`},
		{at: time.Second, do: recv("bob", msg("request", "alice", "bob", content{"a": 1, "b": 0})), want: `
			bob: error PE012 [start]: setting "ratio": the value holds a number that is not finite (NaN, an infinity or out of range), which JSON cannot carry`},
		{at: time.Second, do: say("alice", "ask", content{"a": 1, "b": 4}), want: `
			alice: send request alice->bob rw=c1/alice#1 {"a":1,"b":4}
			bob: decide asked [tell] {"a":1,"b":4}`},
	})
	for name, h := range c.handlers {
		_, err := h.Snapshot()
		require.NoError(t, err, name)
	}
}

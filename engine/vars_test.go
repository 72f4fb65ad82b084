package engine_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/decision"
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

// flagsSrc sets a variable to literals, which sessions share until one
// writes a variable, and another from content.
const flagsSrc = `policy: flags
version: 1
roles: [Setter, Watcher]
vars: {flag: optional bool, n: optional int}
messages:
  go: request
  again: agree
  flip: refuse
  more: {performative: inform, fields: {n: int}}
  stop: cancel
states:
  start:
    - {send: go, from: Setter, to: Watcher, next: going, set: {flag: 'true'}}
  going:
    - {send: again, from: Setter, to: Watcher, next: going, set: {flag: 'true'}}
    - {send: flip, from: Setter, to: Watcher, next: going, set: {flag: 'false'}}
    - {send: more, from: Setter, to: Watcher, next: going, set: {n: 'content.n'}}
    - {send: stop, from: Setter, to: Watcher, next: stopped}
  stopped: {terminal: stopped}
`

// Sessions that took the same literal assignments share their variables:
// a later assignment in one of them, a literal or not, changes only that
// one's, which the decisions it raises and its snapshot show.
func TestSharedVariablesChangeOnlyTheSessionThatWrites(t *testing.T) {
	p, ds := policy.LoadYAML("flags.yaml", []byte(flagsSrc))
	require.False(t, ds.HasErrors(), "%v", ds)
	pr, ds := engine.Compile(p, "Setter")
	require.NotNil(t, pr, "%v", ds)
	type say struct {
		choice  string
		content map[string]any
	}
	tests := []struct {
		name string
		says []say
		want map[string]any
	}{
		{"the literal alone", nil, map[string]any{"flag": true}},
		{"the same literal again", []say{{"again", nil}}, map[string]any{"flag": true}},
		{"another literal", []say{{"flip", nil}}, map[string]any{"flag": false}},
		{"another literal, then the first", []say{{"flip", nil}, {"again", nil}}, map[string]any{"flag": true}},
		{"a value of content", []say{{"more", map[string]any{"n": 3}}}, map[string]any{"flag": true, "n": 3}},
		{"a value of content, then literals", []say{{"more", map[string]any{"n": 3}}, {"flip", nil}, {"again", nil}}, map[string]any{"flag": true, "n": 3}},
	}
	// start runs a handler to going, where it decides with flag set.
	start := func(t *testing.T, id string) (*engine.Handler, *engine.Queue) {
		h, err := pr.NewHandler(id, "alice", engine.WithPeers("Watcher", "bob"))
		require.NoError(t, err)
		q := &engine.Queue{}
		require.NoError(t, h.Start(t0, q))
		answerWith(t, h, q, "go", nil)
		return h, q
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			other, otherQ := start(t, "other")
			h, q := start(t, "c1")
			for _, s := range tt.says {
				answerWith(t, h, q, s.choice, s.content)
			}
			assert.Equal(t, tt.want, raisedVars(t, q))
			assert.Equal(t, map[string]any{"flag": true}, raisedVars(t, otherQ), "the other session's")
			_, fresh := start(t, "fresh")
			assert.Equal(t, map[string]any{"flag": true}, raisedVars(t, fresh), "a new session's")
			for name, h := range map[string]*engine.Handler{"c1": h, "other": other} {
				data, err := h.Snapshot()
				require.NoError(t, err)
				restored, err := pr.Restore(data)
				require.NoError(t, err, name)
				again, err := restored.Snapshot()
				require.NoError(t, err)
				assert.Equal(t, data, again, name)
			}
		})
	}
}

// answerWith answers the decision q holds with choice, and leaves in q what
// the handler did.
func answerWith(t *testing.T, h *engine.Handler, q *engine.Queue, choice string, content map[string]any) {
	t.Helper()
	ticket := lastDecision(q)
	require.NotZero(t, ticket, "no decision to answer with %s", choice)
	q.Reset()
	require.NoError(t, h.Process(&engine.DecisionEvent{At: t0, Ticket: ticket, Answer: decision.Answer{Choice: choice, Content: content}}, q))
}

// raisedVars returns the variables of the decision q holds.
func raisedVars(t *testing.T, q *engine.Queue) map[string]any {
	t.Helper()
	for _, e := range q.Events() {
		if d, ok := e.(*engine.DecisionEvent); ok {
			return d.Request.Vars
		}
	}
	t.Fatal("no decision raised")
	return nil
}

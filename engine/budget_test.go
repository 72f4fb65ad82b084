package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
)

// pingPongYAML loops for as long as both sides choose to; its budget
// line is replaced by each test.
const pingPongYAML = `policy: ping-pong
version: 1
roles: [A, B]
messages:
  ping: {performative: inform, fields: {ping: bool}, match: '"ping" in content'}
  pong: {performative: inform, fields: {pong: bool}, match: '"pong" in content'}
  stop: cancel
BUDGET
states:
  start:
    - {send: ping, from: A, to: B, next: pinged}
  pinged:
    - {send: pong, from: B, to: A, next: start}
    - {send: stop, from: B, to: A, next: done}
  done: {terminal: done}
`

// playPingPong runs both roles on a Driver, each always choosing its
// first choice, and returns the protocol errors the handlers reported.
func playPingPong(t *testing.T, budget string) []*engine.ProtocolErrorEvent {
	t.Helper()
	src := strings.Replace(pingPongYAML, "BUDGET", budget, 1)
	first := decision.Func(func(_ context.Context, req *decision.Request) (decision.Answer, error) {
		c := req.Choices[0]
		return decision.Answer{Choice: c, Content: map[string]any{c: true}}, nil
	})
	var errs []*engine.ProtocolErrorEvent
	d := engine.NewDriver(time.Unix(0, 0), engine.WithDecider(first), engine.WithObserver(func(s engine.Step) {
		if e, ok := s.Event.(*engine.ProtocolErrorEvent); ok {
			errs = append(errs, e)
		}
	}))
	for _, role := range []string{"A", "B"} {
		h, err := mustCompile(t, src, role).NewHandler("c1", role, engine.WithPeers(other(role), other(role)))
		require.NoError(t, err)
		require.NoError(t, d.Add(h))
	}
	require.NoError(t, d.Start("B", "c1"))
	require.NoError(t, d.Start("A", "c1"))
	require.NoError(t, d.Settle())
	return errs
}

// startPingPong starts role's handler of ping-pong with budget at time 0.
func startPingPong(t *testing.T, budget, role string, opts ...engine.HandlerOption) (*engine.Handler, *engine.Queue) {
	t.Helper()
	src := strings.Replace(pingPongYAML, "BUDGET", budget, 1)
	h, err := mustCompile(t, src, role).NewHandler("c1", role, append([]engine.HandlerOption{engine.WithPeers(other(role), other(role))}, opts...)...)
	require.NoError(t, err)
	var q engine.Queue
	require.NoError(t, h.Start(time.Unix(0, 0), &q))
	return h, &q
}

func other(role string) string {
	if role == "A" {
		return "B"
	}
	return "A"
}

func TestRunBudget(t *testing.T) {
	tests := []struct {
		name   string
		budget string
		want   string // the reason of the one protocol error
	}{
		{name: "messages", budget: "budget: {messages: 4}", want: "ping was not sent: the conversation has exchanged as many messages as its budget allows (4)"},
		{name: "visits", budget: "budget: {visits: 2}", want: `pong was not sent: state "start" has been entered as many times as the budget allows (2)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := playPingPong(t, tt.budget)
			require.Len(t, errs, 1)
			assert.Equal(t, engine.CodeBudget, errs[0].Code)
			assert.Equal(t, tt.want, errs[0].Reason)
			assert.False(t, errs[0].Applied)
		})
	}
}

// A restored handler keeps the counts: a decision over the budget after
// a restore is refused, and so is a message received over it.
func TestRunBudgetRestored(t *testing.T) {
	h, q := startPingPong(t, "budget: {messages: 1}", "B")
	pr := h.Program()
	ping := msg("inform", "A", "B", map[string]any{"ping": true})
	q.Reset()
	require.NoError(t, h.Process(&engine.MessageEvent{At: time.Unix(1, 0), Message: &ping}, q))
	require.Equal(t, "pinged", h.State(""))
	var ticket uint64
	for _, ev := range q.Events() {
		if e, ok := ev.(*engine.DecisionEvent); ok {
			ticket = e.Ticket
		}
	}
	require.NotZero(t, ticket)
	snap, err := engine.JSONSnapshot(h)
	require.NoError(t, err)
	assert.Contains(t, string(snap), `"messages":1`)
	h2, err := pr.Restore(snap)
	require.NoError(t, err)
	codes := func() []engine.ErrorCode {
		var out []engine.ErrorCode
		for _, ev := range q.Events() {
			if e, ok := ev.(*engine.ProtocolErrorEvent); ok {
				out = append(out, e.Code)
			}
		}
		return out
	}
	q.Reset()
	require.NoError(t, h2.Process(&engine.DecisionEvent{At: time.Unix(2, 0), Ticket: ticket, Answer: decision.Answer{Choice: "pong", Content: map[string]any{"pong": true}}}, q))
	assert.Equal(t, []engine.ErrorCode{engine.CodeBudget}, codes())
	assert.Equal(t, "pinged", h2.State(""))

	// As a monitor, B overhears its own agent's stop: over the budget too.
	stop := msg("cancel", "B", "A", nil)
	q.Reset()
	require.NoError(t, h2.Process(&engine.MessageEvent{At: time.Unix(3, 0), Message: &stop, Sent: true}, q))
	assert.Equal(t, []engine.ErrorCode{engine.CodeBudget}, codes())
	assert.Equal(t, "pinged", h2.State(""))
}

// A received message over the budget is not applied, in either mode.
func TestRunBudgetReceived(t *testing.T) {
	for _, mode := range []engine.Mode{engine.Enforce, engine.Observe} {
		h, q := startPingPong(t, "budget: {messages: 1}", "A", engine.WithMode(mode))
		ping := msg("inform", "A", "B", map[string]any{"ping": true})
		q.Reset()
		require.NoError(t, h.Process(&engine.MessageEvent{At: time.Unix(1, 0), Message: &ping, Sent: true}, q))
		require.Equal(t, "pinged", h.State(""))
		pong := msg("inform", "B", "A", map[string]any{"pong": true})
		q.Reset()
		require.NoError(t, h.Process(&engine.MessageEvent{At: time.Unix(2, 0), Message: &pong}, q))
		var reasons []string
		for _, ev := range q.Events() {
			if e, ok := ev.(*engine.ProtocolErrorEvent); ok {
				assert.Equal(t, engine.CodeBudget, e.Code)
				assert.False(t, e.Applied)
				reasons = append(reasons, e.Reason)
			}
		}
		assert.Equal(t, []string{`pong from "B" was not applied: the conversation has exchanged as many messages as its budget allows (1)`}, reasons)
		assert.Equal(t, "pinged", h.State(""))
	}
}

func TestRestoreRefusesBadBudgetCounts(t *testing.T) {
	h, _ := startPingPong(t, "budget: {visits: 3}", "A")
	pr := h.Program()
	snap, err := engine.JSONSnapshot(h)
	require.NoError(t, err)
	require.Contains(t, string(snap), `"visits":[1,0,0]`)
	for _, tt := range []struct{ name, from, to, want string }{
		{name: "visits of another number of states", from: `"visits":[1,0,0]`, to: `"visits":[1,0]`, want: "visits of 2 states, the program has 3"},
		{name: "negative visits", from: `"visits":[1,0,0]`, to: `"visits":[1,-1,0]`, want: "a state entered -1 times"},
		{name: "negative messages", from: `"visits":[1,0,0]`, to: `"visits":[1,0,0],"messages":-2`, want: "-2 messages exchanged"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := pr.Restore([]byte(strings.Replace(string(snap), tt.from, tt.to, 1)))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// A handler of a policy without a budget counts nothing: its snapshots
// hold no count that would only date them.
func TestNoBudgetNoCounts(t *testing.T) {
	h, q := startPingPong(t, "", "B")
	ping := msg("inform", "A", "B", map[string]any{"ping": true})
	require.NoError(t, h.Process(&engine.MessageEvent{At: time.Unix(1, 0), Message: &ping}, q))
	snap, err := engine.JSONSnapshot(h)
	require.NoError(t, err)
	assert.NotContains(t, string(snap), `"messages"`)
	assert.NotContains(t, string(snap), `"visits"`)
}

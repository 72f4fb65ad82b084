package engine_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
)

// deepList returns leaf inside n lists.
func deepList(n int, leaf any) any {
	v := leaf
	for range n {
		v = []any{v}
	}
	return v
}

// Content that breaks a limit is refused before anything looks at it, in
// either mode: the state, timers and commitments stay as they were, and
// the handler can still be snapshotted.
func TestContentLimitsOfReceivedMessages(t *testing.T) {
	tests := []struct {
		name    string
		content map[string]any
		reason  string
	}{
		{"a million deep", content{"reason": "x", "n": deepList(1_000_000, 1)}, "content nests maps and lists more than 32 deep"},
		{"NaN", content{"reason": "x", "n": math.NaN()}, "content holds a number that is not finite (NaN, an infinity or out of range), which JSON cannot carry"},
		{"an infinity", content{"n": []any{math.Inf(1)}}, "content holds a number that is not finite (NaN, an infinity or out of range), which JSON cannot carry"},
		{"too many values", content{"n": make([]any, 20_000)}, "content holds more than 10000 values"},
		{"too large", content{"reason": strings.Repeat("x", 2<<20)}, "content holds more than 1048576 bytes of keys and strings"},
		// Content that holds only fields the state's message types
		// declare is checked by looking them up: the same limits hold.
		{"NaN in a declared field", content{"reason": math.NaN()}, "content holds a number that is not finite (NaN, an infinity or out of range), which JSON cannot carry"},
		{"deep in a declared field", content{"reason": deepList(100, "x")}, "content nests maps and lists more than 32 deep"},
		{"too many values in a declared field", content{"reason": make([]any, 20_000)}, "content holds more than 10000 values"},
		{"a time JSON cannot write in a declared field", content{"reason": time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, "content holds a time outside the years 0 to 9999, which JSON cannot carry"},
	}
	for _, mode := range []engine.Mode{engine.Enforce, engine.Observe} {
		for _, tt := range tests {
			name := tt.name
			if mode == engine.Observe {
				name += " observed"
			}
			t.Run(name, func(t *testing.T) {
				c := newConv(t, "fipa-request", cast("fipa-request", engine.WithMode(mode)))
				c.run(t, then(requestOpened(),
					step{at: time.Second, do: recv("alice", msg("refuse", "bob", "alice", tt.content)), want: `
						alice: error PE015 [requested]: refuse from "bob" was not applied: ` + tt.reason},
					// A repeat is refused the same way: duplicate detection
					// never compares content that breaks a limit.
					step{at: time.Second, do: recv("alice", msg("refuse", "bob", "alice", tt.content)), want: `
						alice: error PE015 [requested]: refuse from "bob" was not applied: ` + tt.reason},
				))
				_, err := c.handlers["alice"].Snapshot()
				require.NoError(t, err)
				c.run(t, []step{{at: 2 * time.Second, do: recv("alice", msg("refuse", "bob", "alice", content{"reason": "busy"})), want: `
					alice: timer cancel reply
					alice: done refused`}})
			})
		}
	}
}

// A refused message is never compared with the content last received,
// so a repeat of content nested a million deep, which once overflowed the
// stack comparing it, is refused in one step.
func TestDuplicateOfDeepContentDoesNotOverflowTheStack(t *testing.T) {
	c := newConv(t, "fipa-request", cast("fipa-request"))
	refuse := func(leaf any) action {
		return recv("alice", msg("refuse", "bob", "alice", content{"n": deepList(1_000_000, leaf)}))
	}
	c.run(t, then(requestOpened(),
		step{at: time.Second, do: recv("alice", msg("refuse", "bob", "alice", content{"n": deepList(20, 1)})), want: `
			alice: timer cancel reply
			alice: done refused`},
		step{at: time.Second, do: recv("alice", msg("refuse", "bob", "alice", content{"n": deepList(20, 1.0)})), want: `
			alice: error PE006 [refused]: refuse from "bob" repeats a message already received; the conversation has ended with outcome "refused"`},
		step{at: time.Second, do: refuse(1), want: `
			alice: error PE015 [refused]: refuse from "bob" was not applied: content nests maps and lists more than 32 deep`},
		step{at: time.Second, do: refuse(1.0), want: `
			alice: error PE015 [refused]: refuse from "bob" was not applied: content nests maps and lists more than 32 deep`},
	))
}

// A monitor refuses its own agent's overheard message the same way.
func TestContentLimitsOfSentMessages(t *testing.T) {
	h, err := program(t, "fipa-request", "Initiator").NewHandler(convID, "alice", engine.WithPeers("Participant", "bob"), engine.WithMode(engine.Observe))
	require.NoError(t, err)
	var q engine.Queue
	require.NoError(t, h.Start(t0, &q))
	q.Reset()
	m := msg("request", "alice", "bob", content{"action": math.Inf(-1)})
	require.NoError(t, h.Process(&engine.MessageEvent{At: t0, Message: &m, Sent: true}, &q))
	require.Equal(t, 1, q.Len())
	pe := q.Events()[0].(*engine.ProtocolErrorEvent)
	assert.Equal(t, engine.CodeContentLimit, pe.Code)
	assert.Equal(t, `request sent by "alice" was not applied: content holds a number that is not finite (NaN, an infinity or out of range), which JSON cannot carry`, pe.Reason)
	assert.Same(t, &m, pe.Message)
	assert.Equal(t, "start", h.State(""))
}

// A decision whose content breaks a limit sends nothing; the decision
// stays open and a good answer to the same ticket is taken.
func TestContentLimitsOfDecisions(t *testing.T) {
	t.Run("one session", func(t *testing.T) {
		c := newConv(t, "fipa-request", cast("fipa-request"))
		c.run(t, []step{
			{do: start(), want: `
				alice: decide start [request]`},
			{do: say("alice", "request", content{"action": math.NaN()}), want: `
				alice: error PE015 [start]: the decision's content breaks a limit, so "request" was not sent: content holds a number that is not finite (NaN, an infinity or out of range), which JSON cannot carry`},
			{do: say("alice", "request", content{"action": deepList(100, "paint")}), want: `
				alice: error PE015 [start]: the decision's content breaks a limit, so "request" was not sent: content nests maps and lists more than 32 deep`},
			{do: say("alice", "request", content{"action": "paint"}), want: `
				alice: send request alice->bob rw=c1/alice#1 {"action":"paint"}
				alice: timer set reply +30s
				alice: decide requested [cancel]
				bob: timer set reply +30s
				bob: decide requested [agree refuse not-understood inform-done inform-result failure] {"action":"paint"}`},
		})
	})
	t.Run("a join", func(t *testing.T) {
		c := newConv(t, "fipa-contract-net", cast("fipa-contract-net"))
		seq(start(), say("alice", "cfp", content{"task": "t"}), say("bob", "propose", content{"price": 1}), say("carol", "refuse", nil), say("dave", "refuse", nil))(c)
		c.run(t, []step{{do: answer("alice", "join", decision.Answer{Sessions: map[string]decision.SessionAnswer{
			"bob": {Choice: "reject-proposal", Content: content{"reason": math.Inf(1)}},
		}}), want: `
			alice: error PE015 [bob@proposed]: the decision's content breaks a limit, so "reject-proposal" was not sent: content holds a number that is not finite (NaN, an infinity or out of range), which JSON cannot carry`}})
		assert.Equal(t, "proposed", c.handlers["alice"].State("bob"))
	})
}

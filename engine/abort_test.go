package engine_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/engine"
)

// Abort ends a conversation whatever its state: it cancels every armed
// timer, closes open commitments with cause "aborted" and reports the
// end with outcome aborted and the reason; afterwards messages are
// PE005, timers are ignored, decisions are stale, and Abort does nothing.
func TestAbort(t *testing.T) {
	tests := []struct {
		name   string
		policy string
		setup  action // run before the steps, unchecked
		steps  []step
		// outcomes are Outcome's answers at the end, by peer ("" for a
		// handler with one session).
		outcomes map[string]string
		aborted  bool
	}{
		{name: "waiting for the first decision", policy: "fipa-request", steps: []step{
			{do: start(), want: `
				alice: decide start [request]`},
			{at: time.Second, do: abort("alice", "decision logic panicked"), want: `
				alice: done aborted: decision logic panicked`},
			{at: 2 * time.Second, do: say("alice", "request", nil), want: `
				alice: error PE008: decision for ticket 33554433 is stale: the conversation moved on before it was answered`},
			{at: 2 * time.Second, do: abort("alice", "again"), want: ``},
		}, outcomes: map[string]string{"": engine.OutcomeAborted}, aborted: true},
		{name: "with a timer and a commitment armed", policy: "fipa-request", steps: then(requestAgreed(),
			step{at: 2 * time.Second, do: abort("alice", "the send of cancel failed"), want: `
				alice: timer cancel result
				alice: timer cancel result commitment=perform
				alice: commitment perform violated bob->alice (aborted)
				alice: done aborted: the send of cancel failed`},
			step{at: 3 * time.Second, do: say("bob", "inform-done", content{"done": true}), want: `
				bob: send inform bob->alice rw=c1/bob#2 irt=c1/alice#1 {"done":true}
				bob: timer cancel result commitment=perform
				bob: commitment perform discharged bob->alice (inform-done)
				bob: timer cancel result
				bob: done done
				alice: error PE005 [agreed]: inform from "bob" arrived after the conversation was aborted`},
			step{at: 3 * time.Second, do: recv("alice", msg("junk", "bob", "alice", nil)), want: `
				alice: error PE005 [agreed]: "junk" from "bob" arrived after the conversation was aborted`},
			step{at: 6 * time.Minute, do: seq(fire("alice", "result"), fire("alice", "result commitment=perform")), want: ``},
			step{at: 6 * time.Minute, do: sent("alice", msg("cancel", "alice", "bob", nil)), want: `
				alice: error PE005 [agreed]: cancel sent by "alice" after the conversation was aborted`},
		), outcomes: map[string]string{"": engine.OutcomeAborted}, aborted: true},
		{name: "after the end", policy: "fipa-request", steps: then(requestOpened(),
			step{at: time.Second, do: say("bob", "refuse", nil), want: `
				bob: send refuse bob->alice rw=c1/bob#1 irt=c1/alice#1
				bob: timer cancel reply
				bob: done refused
				alice: timer cancel reply
				alice: done refused`},
			step{at: 2 * time.Second, do: abort("alice", "too late"), want: ``},
		), outcomes: map[string]string{"": "refused"}},
		{name: "sessions of a many role", policy: "fipa-contract-net", setup: seq(start(), say("alice", "cfp", content{"task": "t"}), say("carol", "refuse", nil), say("bob", "propose", content{"price": 1})), steps: []step{
			{at: 2 * time.Second, do: abort("alice", "the send of a reply failed"), want: `
				alice: timer cancel award/bob
				alice: timer cancel award/bob commitment=task
				alice: commitment task/bob expired bob->alice (aborted)
				alice: timer cancel proposals/dave
				alice: done aborted (bob=aborted carol=refused dave=aborted): the send of a reply failed`},
			{at: 3 * time.Second, do: say("dave", "propose", content{"price": 2}), want: `
				dave: send propose dave->alice rw=c1/dave#1 irt=c1/alice#1 {"price":2}
				dave: commitment task created dave->alice (propose)
				dave: timer set award commitment=task +2m3s
				dave: timer cancel proposals
				dave: timer set award +2m3s
				alice: error PE005 [dave@solicited]: propose from "dave" arrived after the conversation was aborted`},
		}, outcomes: map[string]string{"bob": engine.OutcomeAborted, "carol": "refused", "dave": engine.OutcomeAborted}, aborted: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newConv(t, tt.policy, cast(tt.policy))
			if tt.setup != nil {
				tt.setup(c)
			}
			c.run(t, tt.steps)
			h := c.handlers["alice"]
			assert.True(t, h.Done())
			for peer, want := range tt.outcomes {
				assert.Equal(t, want, h.Outcome(peer), "outcome of %q", peer)
			}
			assert.Equal(t, tt.aborted, h.Aborted())
		})
	}
}

func TestAbortBeforeStart(t *testing.T) {
	h, err := program(t, "fipa-request", "Initiator").NewHandler(convID, "alice", engine.WithPeers("Participant", "bob"))
	require.NoError(t, err)
	var q engine.Queue
	assert.ErrorIs(t, h.Abort(t0, "no", &q), engine.ErrNotStarted)
	assert.Zero(t, q.Len())
	assert.False(t, h.Done())
}

// A snapshot keeps that the conversation was aborted: the restored
// handler is done, reports the same outcomes and refuses messages alike.
func TestSnapshotKeepsAbort(t *testing.T) {
	for name, opening := range map[string]string{"fipa-request": "request", "fipa-contract-net": "cfp"} {
		t.Run(name, func(t *testing.T) {
			c := newConv(t, name, cast(name))
			seq(start(), say("alice", opening, content{"task": "t"}), abort("alice", "gone"))(c)
			h := c.handlers["alice"]
			require.True(t, h.Aborted())
			data, err := h.Snapshot()
			require.NoError(t, err)
			restored, err := h.Program().Restore(data)
			require.NoError(t, err)
			assert.True(t, restored.Done())
			assert.True(t, restored.Aborted())
			peers := h.Sessions()
			if peers == nil {
				peers = []string{""}
			}
			for _, p := range peers {
				assert.Equal(t, h.Outcome(p), restored.Outcome(p))
			}
			late := []engine.Event{&engine.MessageEvent{At: t0, Message: ptr(msg("refuse", "bob", "alice", nil))}}
			got := outputs(t, restored, late)
			assert.Equal(t, outputs(t, h, late), got)
			assert.Contains(t, got[0], "arrived after the conversation was aborted")
		})
	}
}

func ptr[T any](v T) *T { return &v }

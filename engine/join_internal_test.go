package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policies"
)

// undecidedByLooking counts what manyState.undecided counts, by looking
// at every session: those in a join state without a ticket.
func undecidedByLooking(h *Handler) int32 {
	var n int32
	for i := range h.sessions {
		if st := h.sessions[i].state; st >= 0 && h.prog.states[st].join && h.sessions[i].ticket == 0 {
			n++
		}
	}
	return n
}

// checkJoin counts the sessions waiting at a join without a decision
// rather than look for one (looking made a join whose answers end every
// session quadratic in the sessions): the count agrees with looking after
// every step, a restored handler's included, through joins answered in
// full, in part, and released by a timer.
func TestJoinUndecidedAgreesWithLooking(t *testing.T) {
	p, err := policies.Load("fipa-contract-net")
	require.NoError(t, err)
	prog, ds := Compile(p, "Initiator")
	require.NotNil(t, prog, ds)
	peers := []string{"p0", "p1", "p2", "p3"}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		// refuse are the peers that refuse the cfp rather than propose.
		refuse []string
		// answers are the join's answers by peer; nil fires p0's award
		// timer while it waits at the join, before the others propose.
		answers map[string]string
	}{
		{"every proposal rejected", nil, map[string]string{"p0": "reject-proposal", "p1": "reject-proposal", "p2": "reject-proposal", "p3": "reject-proposal"}},
		{"one accepted", nil, map[string]string{"p0": "accept-proposal", "p1": "reject-proposal", "p2": "reject-proposal", "p3": "reject-proposal"}},
		{"answered in part", []string{"p3"}, map[string]string{"p0": "reject-proposal", "p1": ""}},
		{"a session timing out at the join before it is released", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := prog.NewHandler("c1", "buyer", WithPeers("Participant", peers...))
			require.NoError(t, err)
			var q Queue
			check := func(what string) {
				t.Helper()
				if !h.done {
					assert.Equal(t, undecidedByLooking(h), h.many.undecided, what)
				}
			}
			require.NoError(t, h.Start(at, &q))
			check("start")
			cfp := decisionOf(t, &q)
			q.Reset()
			require.NoError(t, h.Process(&DecisionEvent{At: at, Ticket: cfp, Answer: decision.Answer{Choice: "cfp", Content: map[string]any{"task": "deliver"}}}, &q))
			check("cfp")
			var join uint64
			for _, peer := range peers {
				perf := "propose"
				for _, r := range tt.refuse {
					if r == peer {
						perf = "refuse"
					}
				}
				q.Reset()
				m := &forms.Message{Performative: perf, Sender: peer, Receivers: []string{"buyer"}, ConversationID: "c1", Content: map[string]any{"price": 10}}
				if perf == "refuse" {
					m.Content = nil
				}
				require.NoError(t, h.Process(&MessageEvent{At: at, Message: m}, &q))
				check(peer + "'s " + perf)
				if d := joinDecisionOf(&q); d != 0 {
					join = d
				}
				if tt.answers == nil && peer == "p0" {
					q.Reset()
					require.NoError(t, h.Process(&TimerEvent{At: at.Add(3 * time.Minute), Name: "award", Session: "p0", Epoch: h.sessions[0].epoch}, &q))
					require.Equal(t, "expired", h.Outcome("p0"))
					check("p0's award timer")
				}
			}
			require.NotZero(t, join, "the last answer releases the join")
			assert.Zero(t, h.many.undecided)
			if tt.answers == nil {
				return
			}
			sessions := map[string]decision.SessionAnswer{}
			for peer, choice := range tt.answers {
				sessions[peer] = decision.SessionAnswer{Choice: choice}
			}
			q.Reset()
			require.NoError(t, h.Process(&DecisionEvent{At: at, Ticket: join, Answer: decision.Answer{Sessions: sessions}}, &q))
			check("the join's answer")
			data, err := h.Snapshot()
			require.NoError(t, err)
			r, err := prog.Restore(data)
			require.NoError(t, err)
			assert.Equal(t, h.many.undecided, r.many.undecided, "restored")
		})
	}
}

// decisionOf returns the ticket of the first decision in q.
func decisionOf(t *testing.T, q *Queue) uint64 {
	t.Helper()
	for _, e := range q.Events() {
		if d, ok := e.(*DecisionEvent); ok {
			return d.Ticket
		}
	}
	t.Fatal("no decision")
	return 0
}

// joinDecisionOf returns the ticket of a join decision in q, or 0.
func joinDecisionOf(q *Queue) uint64 {
	for _, e := range q.Events() {
		if d, ok := e.(*DecisionEvent); ok && d.Request.Sessions != nil {
			return d.Ticket
		}
	}
	return 0
}

package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/policy"
)

// raise takes its event and its place in the events itself when both
// have room, and has raiseGrow make it when either has none: whichever
// it is, the decision is the session's, it follows the events emitted
// before, and it is the pool's element.
func TestRaiseEmitsWhateverRoomTheQueueHas(t *testing.T) {
	pr := &Program{
		policy:   &policy.Policy{Name: "p"},
		role:     "r",
		states:   []stateProg{{name: "s", choices: []string{"go", "stop"}}},
		manyRole: -1,
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name              string
		poolRoom, evsRoom bool
	}{
		{name: "room in both", poolRoom: true, evsRoom: true},
		{name: "no element in the pool", evsRoom: true},
		{name: "no room in the events", poolRoom: true},
		{name: "room in neither"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vars := map[string]any{"x": 1}
			h := &Handler{prog: pr, conv: "c1", sessions: []session{{state: 0, vars: vars}}}
			var q Queue
			// A first step leaves a decision a caller answered in the
			// pool's first element.
			h.raise(0, &pr.states[0], &at, &q)
			q.Events()[0].(*DecisionEvent).Answer = decision.Answer{Choice: "go"}
			q.Reset()
			if !tt.poolRoom {
				q.decisions.items = q.decisions.items[:0:0]
			}
			first := &MessageEvent{}
			q.events = append(make([]Event, 0, 2), first)
			if !tt.evsRoom {
				q.events = q.events[:1:1]
			}
			h.raise(0, &pr.states[0], &at, &q)
			require.Len(t, q.Events(), 2)
			assert.Same(t, first, q.Events()[0])
			ticket := h.sessions[0].ticket
			want := &DecisionEvent{At: at, Ticket: ticket, Request: decision.Request{
				ConversationID: "c1", Policy: "p", Role: "r", Point: "s", Ticket: ticket,
				Choices: []string{"go", "stop"}, Vars: vars,
			}}
			assert.Equal(t, want, q.Events()[1])
			require.NotEmpty(t, q.decisions.items)
			assert.Same(t, &q.decisions.items[0], q.Events()[1], "the pool's first element")
			assert.Equal(t, 1, q.decisions.n)
			assert.True(t, q.dirty)
		})
	}
}

// clearAnswer zeroes an Answer that has any field set, and leaves a
// zero one as it is.
func TestClearAnswerClearsEachField(t *testing.T) {
	tests := []struct {
		name   string
		answer decision.Answer
	}{
		{name: "zero"},
		{name: "a choice", answer: decision.Answer{Choice: "go"}},
		{name: "content", answer: decision.Answer{Content: map[string]any{}}},
		{name: "a reply-by's clock", answer: decision.Answer{ReplyBy: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}},
		{name: "a reply-by's nanoseconds alone", answer: decision.Answer{ReplyBy: time.Time{}.Add(1)}},
		{name: "a reply-by's location alone", answer: decision.Answer{ReplyBy: time.Time{}.In(time.FixedZone("X", 3600))}},
		{name: "sessions", answer: decision.Answer{Sessions: map[string]decision.SessionAnswer{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := DecisionEvent{Answer: tt.answer}
			e.clearAnswer()
			assert.Equal(t, decision.Answer{}, e.Answer)
		})
	}
}

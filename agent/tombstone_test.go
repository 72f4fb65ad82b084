package agent_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policies"
)

// sink is a transport that keeps what it is given.
type sink struct {
	mu   sync.Mutex
	sent []*forms.Message
}

func (s *sink) Send(_ context.Context, m *forms.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, m)
	return nil
}

// first waits for the first message sent and returns it.
func (s *sink) first(t *testing.T) *forms.Message {
	var m *forms.Message
	require.Eventually(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(s.sent) > 0 {
			m = s.sent[0]
		}
		return m != nil
	}, 10*time.Second, time.Millisecond)
	return m
}

// lateInput is an input for an ended conversation: a message from bob,
// or an answer to a decision (a ticket).
type lateInput struct {
	msg    *forms.Message
	ticket uint64
}

// TestATombstoneTellsLateMessagesWhatTheHandlerWould: once a conversation
// has ended, the manager keeps a tombstone instead of its handler, and
// every late, repeated or stale input still gets the protocol error the
// ended handler gives it (code, reason, session and state), as a handler
// fed the same inputs by hand shows.
func TestATombstoneTellsLateMessagesWhatTheHandlerWould(t *testing.T) {
	big := map[string]any{}
	for i := range forms.DefaultLimits.MaxNodes + 1 {
		big[fmt.Sprintf("k%d", i)] = i
	}
	from := func(perf, replyWith, inReplyTo string, content map[string]any) *forms.Message {
		return &forms.Message{Performative: perf, Sender: "bob", Receivers: []string{"alice"}, ConversationID: "c-1",
			Protocol: "fipa-request", ReplyWith: replyWith, InReplyTo: inReplyTo, Content: content}
	}
	tests := []struct {
		name string
		// replyWith is what bob's messages carry; abort ends the
		// conversation by a panicking decider instead.
		replyWith string
		abort     bool
		late      func(request string) []lateInput
		want      []engine.ErrorCode
	}{
		{
			name: "late and duplicate messages after the end", replyWith: "b-2",
			late: func(request string) []lateInput {
				return []lateInput{
					{msg: from("inform", "b-2", request, map[string]any{"result": 1})}, // the last message again
					{msg: from("inform", "b-3", request, map[string]any{"result": 1})}, // another inform
					{msg: from("agree", "b-1", request, nil)},                          // an earlier message again
					{msg: from("frobnicate", "", request, nil)},                        // a performative the policy lacks
					{msg: from(strings.Repeat("x", 200), "", "", nil)},                 // a long one
					{msg: from("inform", "b-4", request, big)},                         // content beyond the handler's limits
					{ticket: 1}, // an answer to a decision long gone
					{msg: from("inform", "b-2", "another", map[string]any{"result": 1})},                                  // not a duplicate: in reply to another
					{msg: &forms.Message{Performative: "inform", Sender: "bob", ConversationID: "c-1", ReplyWith: "b-2"}}, // no in-reply-to
				}
			},
			want: []engine.ErrorCode{engine.CodeDuplicate, engine.CodeEnded, engine.CodeEnded, engine.CodeEnded, engine.CodeEnded,
				engine.CodeContentLimit, engine.CodeStaleDecision, engine.CodeEnded, engine.CodeEnded},
		},
		{
			name: "duplicates without reply-with are told by content",
			late: func(request string) []lateInput {
				return []lateInput{
					{msg: from("inform", "", request, map[string]any{"result": 1})},
					{msg: from("inform", "", request, map[string]any{"result": 1.0})},
					{msg: from("inform", "", request, map[string]any{"result": 2})},
				}
			},
			want: []engine.ErrorCode{engine.CodeDuplicate, engine.CodeDuplicate, engine.CodeEnded},
		},
		{
			name: "messages after an abort", abort: true,
			late: func(request string) []lateInput {
				return []lateInput{
					{msg: from("agree", "b-1", request, nil)},
					{msg: from("agree", "b-1", request, nil)},
					{msg: from("inform", "b-4", request, big)},
				}
			},
			want: []engine.ErrorCode{engine.CodeEnded, engine.CodeEnded, engine.CodeContentLimit},
		},
	}
	p, err := policies.Load("fipa-request")
	require.NoError(t, err)
	compiled, ds := engine.Check(p)
	require.NotNil(t, compiled, ds)
	prog, err := compiled.Program("Initiator")
	require.NoError(t, err)

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := agent.NewFakeClock(mt0)
			rec := &recorder{}
			out := &sink{}
			var d decision.Decider = script{"start": {Choice: "request", Content: map[string]any{"action": "x"}}}
			if tt.abort {
				d = decision.Func(func(context.Context, *decision.Request) (decision.Answer, error) { panic("no") })
			}
			// Content limits looser than the handler's, so that content
			// beyond forms.DefaultLimits reaches the conversation.
			loose := forms.DefaultLimits
			loose.MaxNodes *= 2
			alice, err := agent.NewManager("alice", agent.WithClock(clock), agent.WithLogger(quiet), agent.WithObserver(rec.observe),
				agent.WithDecider(d), agent.WithTransport(out), agent.WithWorkers(1), agent.WithLimits(agent.Limits{Content: loose}))
			require.NoError(t, err)
			t.Cleanup(func() { _ = alice.Close(context.Background()) })
			require.NoError(t, alice.Register(p))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			flush := func() { require.NoError(t, alice.Flush(ctx)) }

			// The same conversation by hand: the same inputs at the same
			// times.
			h, err := prog.NewHandler("c-1", "alice", engine.WithPeers("Participant", "bob"))
			require.NoError(t, err)
			var q engine.Queue
			require.NoError(t, h.Start(mt0, &q))
			var ticket uint64
			for _, ev := range q.Events() {
				if de, ok := ev.(*engine.DecisionEvent); ok {
					ticket = de.Ticket
				}
			}
			require.NotZero(t, ticket)

			_, err = alice.Start(ctx, agent.StartRequest{ID: "c-1", Policy: "fipa-request", Role: "Initiator", Peers: map[string][]string{"Participant": {"bob"}}})
			require.NoError(t, err)
			outcome := "result"
			request := ""
			if tt.abort {
				outcome = engine.OutcomeAborted
				var got string
				require.Eventually(t, func() bool {
					st, err := alice.Status(ctx, "c-1")
					require.NoError(t, err)
					got = st.Outcome
					return st.Done
				}, 10*time.Second, time.Millisecond)
				require.Equal(t, outcome, got)
				q.Reset()
				require.NoError(t, h.Abort(mt0, "decision logic panicked: no", &q))
			} else {
				request = out.first(t).ReplyWith
				q.Reset()
				require.NoError(t, h.Process(&engine.DecisionEvent{At: mt0, Ticket: ticket, Answer: decision.Answer{Choice: "request", Content: map[string]any{"action": "x"}}}, &q))
				rw := func(s string) string {
					if tt.replyWith == "" {
						return ""
					}
					return s
				}
				for _, msg := range []*forms.Message{from("agree", rw("b-1"), request, nil), from("inform", rw("b-2"), request, map[string]any{"result": 1})} {
					require.NoError(t, alice.Deliver("bob", msg))
					flush()
					q.Reset()
					require.NoError(t, h.Process(&engine.MessageEvent{At: mt0, Message: msg}, &q))
				}
			}
			require.True(t, h.Done())
			got, err := alice.Wait(ctx, "c-1")
			if tt.abort {
				assert.ErrorIs(t, err, agent.ErrAborted)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, outcome, got)
			st, err := alice.Status(ctx, "c-1")
			require.NoError(t, err)
			assert.Equal(t, agent.Status{Conversation: "c-1", Policy: "fipa-request", Role: "Initiator", Done: true, Outcome: outcome, States: map[string]string{"": h.State("")}}, st)
			assert.Empty(t, rec.codes(), "no protocol error before the end")

			var want []engine.ProtocolErrorEvent
			for _, in := range tt.late(request) {
				q.Reset()
				if in.msg != nil {
					require.NoError(t, alice.Deliver("bob", in.msg))
					require.NoError(t, h.Process(&engine.MessageEvent{At: mt0, Message: in.msg}, &q))
				} else {
					require.NoError(t, alice.Answer("c-1", in.ticket, decision.Answer{Choice: "cancel"}))
					require.NoError(t, h.Process(&engine.DecisionEvent{At: mt0, Ticket: in.ticket, Answer: decision.Answer{Choice: "cancel"}}, &q))
				}
				for _, ev := range q.Events() {
					if pe, ok := ev.(*engine.ProtocolErrorEvent); ok {
						want = append(want, *pe)
					} else {
						t.Errorf("the ended handler output %T", ev)
					}
				}
			}
			flush()
			assert.Equal(t, tt.want, rec.codes())
			rec.mu.Lock()
			defer rec.mu.Unlock()
			require.Len(t, rec.errs, len(want))
			for i := range want {
				assert.Equal(t, want[i], *rec.errs[i], "input %d", i)
			}
		})
	}
}

// TestEndedConversationsAreSweptOldestFirst: each ended conversation is
// kept for the retention from its own end, and then forgotten: Wait and
// Status fail and a late message is for an unknown conversation.
func TestEndedConversationsAreSweptOldestFirst(t *testing.T) {
	w := newWorld(t)
	alice := w.agent("alice", script{"start": {Choice: "request"}}, agent.WithRetention(time.Minute), agent.WithWorkers(1))
	w.agent("bob", script{"requested": {Choice: "refuse"}}, agent.WithRetention(time.Minute))
	ctx := context.Background()
	var ids []string
	for range 3 {
		id, err := alice.Start(ctx, agent.StartRequest{Policy: "fipa-request", Role: "Initiator", Peers: map[string][]string{"Participant": {"bob"}}})
		require.NoError(t, err)
		w.settle()
		outcome, err := alice.Wait(ctx, id)
		require.NoError(t, err)
		require.Equal(t, "refused", outcome)
		ids = append(ids, id)
		w.clock.Advance(25 * time.Second)
	}
	// Ended at 0, 25 s and 50 s; it is 75 s now.
	w.settle()
	assert.Equal(t, 2, alice.Len(), "the first is swept")
	_, err := alice.Wait(ctx, ids[0])
	assert.ErrorIs(t, err, agent.ErrNoConversation)
	_, err = alice.Status(ctx, ids[0])
	assert.ErrorIs(t, err, agent.ErrNoConversation)
	for _, id := range ids[1:] {
		outcome, err := alice.Wait(ctx, id)
		require.NoError(t, err, "kept within its retention")
		assert.Equal(t, "refused", outcome)
	}
	late := func(id string) *forms.Message {
		return &forms.Message{Performative: "agree", Sender: "bob", Receivers: []string{"alice"}, ConversationID: id, Protocol: "fipa-request"}
	}
	require.NoError(t, alice.Deliver("bob", late(ids[0])))
	require.NoError(t, alice.Deliver("bob", late(ids[1])))
	w.settle()
	assert.Equal(t, []engine.ErrorCode{engine.CodeUnknownConversation, engine.CodeEnded}, w.rec.codes())

	w.clock.Advance(time.Minute) // 135 s: all three are past their retention
	w.settle()
	assert.Equal(t, 0, alice.Len())
	for _, id := range ids {
		_, err := alice.Wait(ctx, id)
		assert.ErrorIs(t, err, agent.ErrNoConversation)
	}
	_, err = alice.Start(ctx, agent.StartRequest{ID: ids[2], Policy: "fipa-request", Role: "Initiator", Peers: map[string][]string{"Participant": {"bob"}}})
	assert.NoError(t, err, "a swept id is free again")
}

// TestAnEndedConversationsIDStaysTaken: Start refuses the id of an ended
// conversation within its retention.
func TestAnEndedConversationsIDStaysTaken(t *testing.T) {
	w := newWorld(t)
	alice := w.agent("alice", script{"start": {Choice: "request"}})
	w.agent("bob", script{"requested": {Choice: "refuse"}})
	ctx := context.Background()
	start := agent.StartRequest{ID: "c-1", Policy: "fipa-request", Role: "Initiator", Peers: map[string][]string{"Participant": {"bob"}}}
	_, err := alice.Start(ctx, start)
	require.NoError(t, err)
	w.settle()
	_, err = alice.Wait(ctx, "c-1")
	require.NoError(t, err)
	_, err = alice.Start(ctx, start)
	assert.ErrorIs(t, err, agent.ErrConversationExists)
}

// TestTheWallClockAlarmFiresEveryTimer: on the wall clock a worker's
// alarm is one timer set again for each earliest deadline; a deadline
// earlier than the one it was set for, and later ones, all fire.
func TestTheWallClockAlarmFiresEveryTimer(t *testing.T) {
	bus := agent.NewBus()
	p, err := policies.Load("fipa-request")
	require.NoError(t, err)
	alice, err := agent.NewManager("alice", agent.WithLogger(quiet), agent.WithWorkers(1),
		agent.WithDecider(decision.Func(func(_ context.Context, req *decision.Request) (decision.Answer, error) {
			if req.Point != "start" {
				return decision.Answer{}, decision.ErrNoDecision
			}
			d, _ := time.ParseDuration(req.Content["wait"].(string))
			return decision.Answer{Choice: "request", ReplyBy: time.Now().Add(d)}, nil
		})))
	require.NoError(t, err)
	bob, err := agent.NewManager("bob", agent.WithLogger(quiet), agent.WithAsyncDecisions(func(agent.DecisionRequest) {}))
	require.NoError(t, err)
	for _, m := range []*agent.Manager{alice, bob} {
		require.NoError(t, m.Register(p))
		require.NoError(t, bus.Connect(m))
		t.Cleanup(func() { _ = m.Close(context.Background()) })
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var ids []string
	for _, wait := range []string{"300ms", "50ms", "150ms", "50ms"} {
		id, err := alice.Start(ctx, agent.StartRequest{Policy: "fipa-request", Role: "Initiator", Peers: map[string][]string{"Participant": {"bob"}}, Data: map[string]any{"wait": wait}})
		require.NoError(t, err)
		ids = append(ids, id)
	}
	for _, id := range ids {
		outcome, err := alice.Wait(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, "timeout", outcome)
	}
}

// TestAnEndedConversationWithLongStringsIsKeptAsAnyOther: a conversation
// whose id (and so its messages' reply-withs) is longer than a tombstone
// keeps (64 KiB together) is kept whole after its end, and answers Wait,
// Status, a repeated Start and a late message as a tombstone would.
func TestAnEndedConversationWithLongStringsIsKeptAsAnyOther(t *testing.T) {
	tests := []struct {
		name string
		id   string
	}{
		{"an id a tombstone keeps", "c-" + strings.Repeat("x", 1000)},
		{"an id longer than a tombstone keeps", "c-" + strings.Repeat("x", 70_000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			long := agent.WithLimits(agent.Limits{MaxField: 1 << 17})
			alice := w.agent("alice", script{"start": {Choice: "request"}}, long)
			w.agent("bob", script{"requested": {Choice: "refuse"}}, long)
			ctx := context.Background()
			start := agent.StartRequest{ID: tt.id, Policy: "fipa-request", Role: "Initiator", Peers: map[string][]string{"Participant": {"bob"}}}
			_, err := alice.Start(ctx, start)
			require.NoError(t, err)
			w.settle()
			outcome, err := alice.Wait(ctx, tt.id)
			require.NoError(t, err)
			assert.Equal(t, "refused", outcome)
			st, err := alice.Status(ctx, tt.id)
			require.NoError(t, err)
			assert.True(t, st.Done)
			assert.Equal(t, tt.id, st.Conversation)
			_, err = alice.Start(ctx, start)
			assert.ErrorIs(t, err, agent.ErrConversationExists)
			late := &forms.Message{Performative: "refuse", Sender: "bob", Receivers: []string{"alice"}, ConversationID: tt.id, Protocol: "fipa-request"}
			require.NoError(t, alice.Deliver("bob", late))
			w.settle()
			_, err = alice.Wait(ctx, tt.id)
			require.NoError(t, err, "the conversation is still kept after a late message")
		})
	}
}

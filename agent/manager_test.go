package agent_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/membership"
	"github.com/parleyhq/parley/policies"
	"github.com/parleyhq/parley/policy"
	"github.com/parleyhq/parley/trace"
)

var mt0 = time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)

// recorder is an observer that keeps what tests look at.
type recorder struct {
	mu       sync.Mutex
	sent     []*forms.Message
	errs     []*engine.ProtocolErrorEvent
	failures []error
	commits  []string
}

func (r *recorder) observe(o agent.Observation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch e := o.Event.(type) {
	case *engine.MessageEvent:
		if o.Err != nil {
			r.failures = append(r.failures, o.Err)
		} else if !o.Input {
			r.sent = append(r.sent, e.Message)
		}
	case *engine.ProtocolErrorEvent:
		c := *e
		r.errs = append(r.errs, &c)
	case *engine.CommitmentEvent:
		r.commits = append(r.commits, fmt.Sprintf("%s %s %s", o.Agent, e.Name, e.State))
	}
}

func (r *recorder) codes() []engine.ErrorCode {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []engine.ErrorCode
	for _, e := range r.errs {
		out = append(out, e.Code)
	}
	return out
}

func (r *recorder) performatives() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, m := range r.sent {
		out = append(out, m.Sender+":"+m.Performative)
	}
	return out
}

var quiet = slog.New(slog.DiscardHandler)

// world is a bus of agents sharing a fake clock and a recorder.
type world struct {
	t     *testing.T
	bus   *agent.Bus
	clock *agent.FakeClock
	rec   *recorder
	mgrs  []*agent.Manager
}

func newWorld(t *testing.T) *world {
	w := &world{t: t, bus: agent.NewBus(), clock: agent.NewFakeClock(mt0), rec: &recorder{}}
	t.Cleanup(func() {
		for _, m := range w.mgrs {
			m.Close(context.Background())
		}
	})
	return w
}

func (w *world) agent(name string, d decision.Decider, opts ...agent.Option) *agent.Manager {
	opts = append([]agent.Option{agent.WithClock(w.clock), agent.WithLogger(quiet), agent.WithObserver(w.rec.observe), agent.WithDecider(d), agent.WithResolver(policies.Resolve)}, opts...)
	m, err := agent.NewManager(name, opts...)
	require.NoError(w.t, err)
	require.NoError(w.t, w.bus.Connect(m))
	w.mgrs = append(w.mgrs, m)
	for _, name := range []string{"fipa-request", "fipa-query", "fipa-contract-net"} {
		p, err := policies.Load(name)
		require.NoError(w.t, err)
		require.NoError(w.t, m.Register(p))
	}
	return m
}

func (w *world) settle() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(w.t, w.bus.Settle(ctx))
}

// script answers decision points from a table: "policy:point" or
// "point" → answer.
type script map[string]decision.Answer

func (s script) Decide(_ context.Context, req *decision.Request) (decision.Answer, error) {
	if a, ok := s[req.Policy+":"+req.Point]; ok {
		return a, nil
	}
	if a, ok := s[req.Point]; ok {
		return a, nil
	}
	return decision.Answer{}, decision.ErrNoDecision
}

func TestManagerRunsEachFIPAPolicyEndToEnd(t *testing.T) {
	tests := []struct {
		name     string
		policy   string
		ini, par script
		data     map[string]any
		want     []string
		outcome  string
	}{
		{
			name: "request agree result", policy: "fipa-request",
			ini:  script{"start": {Choice: "request", Content: map[string]any{"action": "x"}}},
			par:  script{"requested": {Choice: "agree"}, "agreed": {Choice: "inform-result", Content: map[string]any{"result": 1}}},
			want: []string{"alice:request", "bob:agree", "bob:inform"}, outcome: "result",
		},
		{
			name: "request refused", policy: "fipa-request",
			ini:  script{"start": {Choice: "request"}},
			par:  script{"requested": {Choice: "refuse", Content: map[string]any{"reason": "busy"}}},
			want: []string{"alice:request", "bob:refuse"}, outcome: "refused",
		},
		{
			name: "query-if", policy: "fipa-query",
			ini:  script{"start": {Choice: "query-if", Content: map[string]any{"about": "rain"}}},
			par:  script{"if-queried": {Choice: "inform-tf", Content: map[string]any{"holds": true}}},
			want: []string{"alice:query-if", "bob:inform"}, outcome: "answered",
		},
		{
			name: "query-ref with agree", policy: "fipa-query",
			ini:  script{"start": {Choice: "query-ref"}},
			par:  script{"ref-queried": {Choice: "agree"}, "ref-agreed": {Choice: "inform-result", Content: map[string]any{"result": []any{"a"}}}},
			want: []string{"alice:query-ref", "bob:agree", "bob:inform"}, outcome: "answered",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			alice := w.agent("alice", tt.ini)
			w.agent("bob", tt.par)
			ctx := context.Background()
			conv, err := alice.Start(ctx, agent.StartRequest{Policy: tt.policy, Role: "Initiator", Peers: map[string][]string{"Participant": {"bob"}}, Data: tt.data})
			require.NoError(t, err)
			w.settle()
			outcome, err := alice.Wait(ctx, conv)
			require.NoError(t, err)
			assert.Equal(t, tt.outcome, outcome)
			assert.Equal(t, tt.want, w.rec.performatives())
			assert.Empty(t, w.rec.codes())
		})
	}

	t.Run("contract net", func(t *testing.T) {
		w := newWorld(t)
		group := membership.New(w.clock)
		for i, price := range []float64{30, 10, 20} {
			name := fmt.Sprintf("p%d", i+1)
			w.agent(name, decision.Func(func(_ context.Context, req *decision.Request) (decision.Answer, error) {
				switch req.Point {
				case "solicited":
					return decision.Answer{Choice: "propose", Content: map[string]any{"price": price}}, nil
				case "awarded":
					return decision.Answer{Choice: "inform-done", Content: map[string]any{"done": true}}, nil
				}
				return decision.Answer{}, nil
			}))
			require.NoError(t, group.Register(membership.Registration{Name: name, Role: "Participant", Capabilities: []string{"t"}, Capacity: 1}))
			require.NoError(t, group.Heartbeat(name))
		}
		// Members the call must leave out, none of them on the bus: one
		// that never sent a heartbeat, one without room for a task and
		// one without the capability.
		require.NoError(t, group.Register(membership.Registration{Name: "silent", Capabilities: []string{"t"}}))
		require.NoError(t, group.Register(membership.Registration{Name: "busy", Capabilities: []string{"t"}, Capacity: 1}))
		require.NoError(t, group.Heartbeat("busy"))
		require.NoError(t, group.StartTask("busy"))
		require.NoError(t, group.Register(membership.Registration{Name: "other", Capabilities: []string{"u"}}))
		require.NoError(t, group.Heartbeat("other"))
		buyer := w.agent("buyer", decision.Func(func(_ context.Context, req *decision.Request) (decision.Answer, error) {
			switch req.Point {
			case "start":
				return decision.Answer{Choice: "cfp", Content: map[string]any{"task": "t"}, ReplyBy: mt0.Add(10 * time.Second)}, nil
			case "proposed":
				a := decision.Answer{Sessions: map[string]decision.SessionAnswer{}}
				for _, s := range req.Sessions {
					choice := "reject-proposal"
					if s.Content["price"] == 10.0 {
						choice = "accept-proposal"
					}
					a.Sessions[s.Peer] = decision.SessionAnswer{Choice: choice}
				}
				return a, nil
			}
			return decision.Answer{}, nil
		}))
		ctx := context.Background()
		conv, err := buyer.Start(ctx, agent.StartRequest{Policy: "fipa-contract-net", Role: "Initiator", Peers: map[string][]string{"Participant": group.Available("t")}})
		require.NoError(t, err)
		w.settle()
		outcome, err := buyer.Wait(ctx, conv)
		require.NoError(t, err)
		assert.Equal(t, "done=1,rejected=2", outcome)
		assert.Empty(t, w.rec.codes())
	})
}

func TestManagerTimeoutsAndLateRepliesWithFakeClock(t *testing.T) {
	w := newWorld(t)
	var bobAnswer atomic.Pointer[agent.DecisionRequest]
	alice := w.agent("alice", script{"start": {Choice: "request", ReplyBy: mt0.Add(30 * time.Second)}})
	bob := w.agent("bob", nil, agent.WithAsyncDecisions(func(r agent.DecisionRequest) { bobAnswer.Store(&r) }))
	ctx := context.Background()
	conv, err := alice.Start(ctx, agent.StartRequest{Policy: "fipa-request", Role: "Initiator", Peers: map[string][]string{"Participant": {"bob"}}})
	require.NoError(t, err)
	w.settle()
	pending := bobAnswer.Load()
	require.NotNil(t, pending, "bob was asked to decide")
	assert.Equal(t, "requested", pending.Request.Point)

	w.clock.Advance(29 * time.Second)
	w.settle()
	st, err := alice.Status(ctx, conv)
	require.NoError(t, err)
	assert.False(t, st.Done, "not yet timed out")

	w.clock.Advance(time.Second) // the reply_by deadline
	w.settle()
	outcome, err := alice.Wait(ctx, conv)
	require.NoError(t, err)
	assert.Equal(t, "timeout", outcome)

	// bob's own handler timed out too, so his answer is stale.
	bob.Answer(pending.Conversation, pending.Ticket, decision.Answer{Choice: "agree"})
	w.settle()
	assert.Equal(t, []engine.ErrorCode{engine.CodeStaleDecision}, w.rec.codes())

	// A reply forged after the deadline reaches alice as late.
	require.NoError(t, alice.Deliver("bob", &forms.Message{Performative: "agree", Sender: "bob", Receivers: []string{"alice"}, ConversationID: conv, Protocol: "fipa-request"}))
	w.settle()
	assert.Equal(t, []engine.ErrorCode{engine.CodeStaleDecision, engine.CodeLate}, w.rec.codes())
}

func TestManagerRetentionAndSweep(t *testing.T) {
	w := newWorld(t)
	alice := w.agent("alice", script{"start": {Choice: "request"}}, agent.WithRetention(time.Minute))
	w.agent("bob", script{"requested": {Choice: "refuse"}})
	ctx := context.Background()
	conv, err := alice.Start(ctx, agent.StartRequest{Policy: "fipa-request", Role: "Initiator", Peers: map[string][]string{"Participant": {"bob"}}})
	require.NoError(t, err)
	w.settle()
	_, err = alice.Wait(ctx, conv)
	require.NoError(t, err)
	assert.Equal(t, 1, alice.Len())

	late := &forms.Message{Performative: "agree", Sender: "bob", Receivers: []string{"alice"}, ConversationID: conv, Protocol: "fipa-request"}
	require.NoError(t, alice.Deliver("bob", late))
	w.settle()
	assert.Equal(t, []engine.ErrorCode{engine.CodeEnded}, w.rec.codes(), "within retention: conversation ended")

	w.clock.Advance(2 * time.Minute)
	w.settle()
	assert.Equal(t, 0, alice.Len(), "swept")
	require.NoError(t, alice.Deliver("bob", late))
	w.settle()
	assert.Equal(t, []engine.ErrorCode{engine.CodeEnded, engine.CodeUnknownConversation}, w.rec.codes(), "after the sweep: unknown")
	_, err = alice.Wait(ctx, conv)
	assert.ErrorIs(t, err, agent.ErrNoConversation)
}

func TestManagerConcurrentConversations(t *testing.T) {
	w := newWorld(t)
	alice := w.agent("alice", script{"start": {Choice: "request"}})
	w.agent("bob", script{"requested": {Choice: "agree"}, "agreed": {Choice: "inform-done", Content: map[string]any{"done": true}}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const goroutines, each = 16, 25
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*each)
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				conv, err := alice.Start(ctx, agent.StartRequest{Policy: "fipa-request", Role: "Initiator", Peers: map[string][]string{"Participant": {"bob"}}})
				if err != nil {
					errs <- err
					continue
				}
				outcome, err := alice.Wait(ctx, conv)
				if err == nil && outcome != "done" {
					err = fmt.Errorf("%s ended %s", conv, outcome)
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	assert.Empty(t, w.rec.codes())
	assert.Equal(t, goroutines*each, alice.Len())
}

// parentPolicy returns the shop policy, which runs fipa-request as a
// child: the buyer first asks whether the seller is open, then requests
// inside the child policy.
func parentPolicy(t *testing.T) string {
	src, err := os.ReadFile("../testdata/policies/shop.yaml")
	require.NoError(t, err)
	return string(src)
}

func TestManagerRunsAChildPolicy(t *testing.T) {
	w := newWorld(t)
	p, ds := policy.LoadYAML("shop.yaml", []byte(parentPolicy(t)))
	require.Empty(t, ds)
	require.Empty(t, policy.CheckPolicy(p, policy.WithPolicies(policies.Resolve)))
	buyer := w.agent("buyer", script{"shop:start": {Choice: "ask"}, "fipa-request:start": {Choice: "request", Content: map[string]any{"buy": "apples"}}})
	seller := w.agent("seller", script{"asked": {Choice: "open", Content: map[string]any{"holds": true}}, "requested": {Choice: "inform-result", Content: map[string]any{"result": "apples"}}})
	require.NoError(t, buyer.Register(p))
	require.NoError(t, seller.Register(p))
	ctx := context.Background()
	conv, err := buyer.Start(ctx, agent.StartRequest{Policy: "shop", Role: "Buyer", Peers: map[string][]string{"Seller": {"seller"}}})
	require.NoError(t, err)
	w.settle()
	outcome, err := buyer.Wait(ctx, conv)
	require.NoError(t, err)
	assert.Equal(t, "bought", outcome)
	assert.Equal(t, []string{"buyer:query-if", "seller:inform", "buyer:request", "seller:inform"}, w.rec.performatives())
	child, err := buyer.Status(ctx, conv+"/fipa-request#1")
	require.NoError(t, err)
	assert.Equal(t, "result", child.Outcome)
}

func TestManagerRejectsMessagesThatOpenNothing(t *testing.T) {
	w := newWorld(t)
	alice := w.agent("alice", nil, agent.WithNotUnderstood())
	var bobGot []*forms.Message
	var mu sync.Mutex
	bob, err := agent.NewManager("bob", agent.WithLogger(quiet), agent.WithClock(w.clock), agent.WithObserver(func(o agent.Observation) {
		if pe, ok := o.Event.(*engine.ProtocolErrorEvent); ok && pe.Code == engine.CodeUnknownConversation {
			mu.Lock()
			bobGot = append(bobGot, pe.Message)
			mu.Unlock()
		}
	}))
	defer bob.Close(context.Background())
	require.NoError(t, err)
	require.NoError(t, w.bus.Connect(bob))
	require.NoError(t, alice.Deliver("bob", &forms.Message{Performative: "request", Sender: "bob", Receivers: []string{"alice"}}))
	require.NoError(t, alice.Deliver("bob", &forms.Message{Performative: "request", Sender: "bob", Receivers: []string{"alice"}, ConversationID: "x", Protocol: "no-such-protocol"}))
	w.settle()
	codes := w.rec.codes()
	assert.Equal(t, []engine.ErrorCode{engine.CodeUnknownConversation, engine.CodeUnknownConversation}, codes)
	w.rec.mu.Lock()
	reasons := w.rec.errs[0].Reason + "\n" + w.rec.errs[1].Reason // the two may come in either order
	w.rec.mu.Unlock()
	assert.Contains(t, reasons, "neither a conversation id nor a protocol")
	assert.Contains(t, reasons, `no new conversations of protocol "no-such-protocol"`)
	// alice answered both with not-understood; bob, who knows no such
	// conversations either, reported them and did not answer back.
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, bobGot, 2)
	assert.Equal(t, "not-understood", bobGot[0].Performative)
}

func TestManagerAbortsAConversationWhoseSendFails(t *testing.T) {
	w := newWorld(t)
	alice := w.agent("alice", script{"start": {Choice: "request"}})
	ctx := context.Background()
	conv, err := alice.Start(ctx, agent.StartRequest{Policy: "fipa-request", Role: "Initiator", Peers: map[string][]string{"Participant": {"nobody"}}})
	require.NoError(t, err)
	w.settle()
	outcome, err := alice.Wait(ctx, conv)
	assert.Equal(t, engine.OutcomeAborted, outcome)
	var abort *agent.AbortError
	require.ErrorAs(t, err, &abort)
	assert.ErrorIs(t, err, agent.ErrAborted)
	assert.Contains(t, abort.Reason, "send failed")
	w.rec.mu.Lock()
	defer w.rec.mu.Unlock()
	require.Len(t, w.rec.failures, 1)
	assert.ErrorIs(t, w.rec.failures[0], agent.ErrNoSuchAgent)
}

func TestManagerJournalConformsToThePolicy(t *testing.T) {
	w := newWorld(t)
	var buf strings.Builder
	j := trace.NewWriter(&buf)
	alice := w.agent("alice", script{"start": {Choice: "request", ReplyBy: mt0.Add(time.Minute)}}, agent.WithJournal(j, false))
	w.agent("bob", script{"requested": {Choice: "agree"}, "agreed": {Choice: "failure", Content: map[string]any{"reason": "out of paint"}}}, agent.WithJournal(j, false))
	ctx := context.Background()
	conv, err := alice.Start(ctx, agent.StartRequest{Policy: "fipa-request", Role: "Initiator", Peers: map[string][]string{"Participant": {"bob"}}})
	require.NoError(t, err)
	w.settle()
	_, err = alice.Wait(ctx, conv)
	require.NoError(t, err)
	entries, problems, err := trace.Read(strings.NewReader(buf.String()))
	require.NoError(t, err)
	p, err := policies.Load("fipa-request")
	require.NoError(t, err)
	res, err := trace.Check(p, entries, problems, trace.Options{})
	require.NoError(t, err)
	assert.True(t, res.Summary.Conforms, "%v", res.Findings)
	assert.Equal(t, map[string]string{"alice": "failed", "bob": "failed"}, res.Summary.Outcomes)
	// failure after agree violates bob's commitment
	w.rec.mu.Lock()
	defer w.rec.mu.Unlock()
	assert.Contains(t, w.rec.commits, "bob perform violated")
}

func TestManagerConversationSetup(t *testing.T) {
	w := newWorld(t)
	setup, err := policies.Load("conversation-setup")
	require.NoError(t, err)
	alice := w.agent("alice", script{"fipa-request:start": {Choice: "request"}}, agent.WithSetup(setup))
	w.agent("bob", script{"requested": {Choice: "refuse", Content: map[string]any{"reason": "no"}}}, agent.WithSetup(setup))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	var conv string
	done := make(chan error, 1)
	go func() {
		var err error
		conv, err = alice.Setup(ctx, "bob", "Participant", agent.StartRequest{Policy: "fipa-request", Role: "Initiator", Peers: map[string][]string{"Participant": {"bob"}}})
		done <- err
	}()
	for {
		select {
		case err := <-done:
			require.NoError(t, err)
			w.settle()
			outcome, err := alice.Wait(ctx, conv)
			require.NoError(t, err)
			assert.Equal(t, "refused", outcome)
			assert.Equal(t, []string{"alice:propose", "bob:accept-proposal", "alice:request", "bob:refuse"}, w.rec.performatives())

			_, err = alice.Setup(ctx, "bob", "Initiator", agent.StartRequest{Policy: "fipa-query", Role: "Participant", Peers: map[string][]string{"Initiator": {"bob"}}})
			require.Error(t, err, "bob does not open fipa-query as Initiator")
			assert.Contains(t, err.Error(), "declined")
			return
		default:
			w.settle()
		}
	}
}

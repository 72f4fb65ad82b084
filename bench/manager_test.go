package bench

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
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
	"github.com/parleyhq/parley/policy"
)

// The manager against the bare handlers: the same FIPA Request
// conversation (alice requests, bob agrees, then informs the result),
// with the same deciders, run (a) through two agent.Managers on an
// agent.Bus, and (b) through the two engine handlers driven by hand. Both
// copy every message a handler sends out of its reused Queue into a fresh
// forms.Message and hand that copy to the receiver; both stamp every
// event with the wall clock; both ask the decider at every decision point
// the handlers raise (alice's "not now" at the points where she may
// cancel included) and feed its answer back; both run on GOMAXPROCS
// cores: each manager has its default GOMAXPROCS workers, and the bare
// handlers run on GOMAXPROCS goroutines (b.RunParallel), each driving its
// own conversations. What is left is what the manager does on top: queue
// and route every input, run each decision on a goroutine of its own
// under a timeout, arm the policies' timers on a wall-clock alarm, send
// through an outbox and the bus, and keep ended conversations for their
// retention (a minute by default).

// Sub-benchmark names of the two sides. cmd/benchtable shows them in a
// table of their own, with the manager's cost over the bare handlers'.
const (
	libManager = "manager"
	libBare    = "bare"
)

// requestMessages is the number of messages of one Request conversation:
// request, agree, inform-result.
const requestMessages = 3

// answers is decision logic that answers by decision point; a point it
// has no entry for gets "not now" (an empty choice), which is what
// alice's cancel points get.
type answers map[string]decision.Answer

func (a answers) Decide(_ context.Context, req *decision.Request) (decision.Answer, error) {
	return a[req.Point], nil
}

// The decisions of both sides, the same for the managers and the bare
// handlers.
var (
	aliceDecides = answers{stStart: {Choice: trRequest, Content: map[string]any{"action": "x"}}}
	bobDecides   = answers{stRequested: {Choice: trAgree}, stAgreed: {Choice: trInformResult, Content: map[string]any{"result": 42}}}
)

// managers are alice (who requests) and bob (who agrees and informs the
// result) on a bus.
type managers struct {
	bus        *agent.Bus
	alice, bob *agent.Manager
}

// newManagers connects alice and bob over a bus, each with opts after its
// decider and a discarding logger. Ended conversations are kept for the
// default minute: Wait on a conversation swept after its retention fails,
// and on this shared machine a goroutine can stall for more than a second.
func newManagers(tb testing.TB, opts ...agent.Option) *managers {
	tb.Helper()
	p, err := policies.Load("fipa-request")
	require.NoError(tb, err)
	quiet := agent.WithLogger(slog.New(slog.DiscardHandler))
	ms := &managers{bus: agent.NewBus()}
	ms.alice, err = agent.NewManager("alice", append([]agent.Option{quiet, agent.WithDecider(aliceDecides)}, opts...)...)
	require.NoError(tb, err)
	ms.bob, err = agent.NewManager("bob", append([]agent.Option{quiet, agent.WithDecider(bobDecides)}, opts...)...)
	require.NoError(tb, err)
	for _, m := range []*agent.Manager{ms.alice, ms.bob} {
		require.NoError(tb, m.Register(p))
		require.NoError(tb, ms.bus.Connect(m))
		tb.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			assert.NoError(tb, m.Close(ctx))
		})
	}
	return ms
}

var requestPeers = map[string][]string{"Participant": {"bob"}}

// conversation runs one Request conversation from alice's side: Start,
// then Wait for its outcome.
func (ms *managers) conversation(ctx context.Context) error {
	id, err := ms.alice.Start(ctx, agent.StartRequest{Policy: "fipa-request", Role: "Initiator", Peers: requestPeers})
	if err != nil {
		return err
	}
	outcome, err := ms.alice.Wait(ctx, id)
	if err != nil {
		return err
	}
	if outcome != stResult {
		return fmt.Errorf("conversation %s ended with %s, want %s", policy.Quote(id), policy.Quote(outcome), stResult)
	}
	return nil
}

// bareAgent is one agent of a bare run: its program, handler options and
// decider, its handler of the current conversation, its queue, and the
// input events it reuses (a handler does not keep its input event).
type bareAgent struct {
	name    string
	prog    *engine.Program
	opts    []engine.HandlerOption
	decider decision.Decider
	h       *engine.Handler
	q       engine.Queue
	recv    engine.MessageEvent
	answer  engine.DecisionEvent
}

// bareStep is an input waiting to be fed to an agent's handler: a
// message it receives, or the answer to one of its decisions.
type bareStep struct {
	to     *bareAgent
	msg    *forms.Message
	ticket uint64
	answer decision.Answer
}

// bareRequest drives alice's and bob's handlers by hand, one conversation
// at a time, on the caller's goroutine: it feeds each handler its inputs
// in the order they arise and carries out the messages and decisions it
// outputs. It is not safe for concurrent use; each goroutine has its own.
type bareRequest struct {
	alice, bob bareAgent
	steps      []bareStep
	// fed, when set, sees every input before its handler does.
	fed func(agent string, ev engine.Event)
}

// bareProgs are the two compiled roles, shared by every bareRequest.
type bareProgs struct{ ini, par *engine.Program }

func newBareProgs(tb testing.TB) bareProgs {
	return bareProgs{ini: compileShipped(tb, "fipa-request", "Initiator"), par: compileShipped(tb, "fipa-request", "Participant")}
}

func (p bareProgs) newRequest() *bareRequest {
	return &bareRequest{
		alice: bareAgent{name: "alice", prog: p.ini, opts: []engine.HandlerOption{engine.WithPeers("Participant", "bob")}, decider: aliceDecides},
		bob:   bareAgent{name: "bob", prog: p.par, decider: bobDecides},
	}
}

// run runs one conversation under id and fails unless both handlers end
// in result.
func (r *bareRequest) run(id string) error {
	r.steps = r.steps[:0]
	for _, a := range [2]*bareAgent{&r.bob, &r.alice} { // bob first: he must exist when alice's request arrives
		h, err := a.prog.NewHandler(id, a.name, a.opts...)
		if err != nil {
			return err
		}
		a.h = h
		a.q.Reset()
		if err := h.Start(time.Now(), &a.q); err != nil {
			return err
		}
		if err := r.carry(a); err != nil {
			return err
		}
	}
	for i := 0; i < len(r.steps); i++ {
		s := r.steps[i]
		r.steps[i] = bareStep{}
		a := s.to
		var ev engine.Event
		if s.msg != nil {
			a.recv = engine.MessageEvent{At: time.Now(), Message: s.msg}
			ev = &a.recv
		} else {
			if !a.h.Awaits(s.ticket) { // as the manager does, an answer the handler no longer awaits is dropped
				continue
			}
			a.answer = engine.DecisionEvent{At: time.Now(), Ticket: s.ticket, Answer: s.answer}
			ev = &a.answer
		}
		if r.fed != nil {
			r.fed(a.name, ev)
		}
		a.q.Reset()
		if err := a.h.Process(ev, &a.q); err != nil {
			return err
		}
		if err := r.carry(a); err != nil {
			return err
		}
	}
	for _, a := range [2]*bareAgent{&r.alice, &r.bob} {
		if got := a.h.State(""); !a.h.Done() || got != stResult {
			return fmt.Errorf("%s's conversation is in %s, want it ended in %s", a.name, policy.Quote(got), stResult)
		}
	}
	return nil
}

// carry carries out a's outputs: every message is copied out of the
// queue, as the manager does, and the copy queued for each receiver;
// every decision is decided now, while its request is valid, and the
// answer queued for a. A protocol error fails the run.
func (r *bareRequest) carry(a *bareAgent) error {
	for _, ev := range a.q.Events() {
		switch e := ev.(type) {
		case *engine.MessageEvent:
			msg := new(forms.Message)
			*msg = *e.Message
			for _, name := range msg.Receivers {
				to := r.agent(name)
				if to == nil {
					return fmt.Errorf("%s sent %s to %s, who is not in the conversation", a.name, policy.Quote(msg.Performative), policy.Quote(name))
				}
				r.steps = append(r.steps, bareStep{to: to, msg: msg})
			}
		case *engine.DecisionEvent:
			answer, err := a.decider.Decide(context.Background(), &e.Request)
			if err != nil {
				return err
			}
			r.steps = append(r.steps, bareStep{to: a, ticket: e.Ticket, answer: answer})
		case *engine.ProtocolErrorEvent:
			return fmt.Errorf("%s: %s: %s", a.name, e.Code, e.Reason)
		}
	}
	return nil
}

func (r *bareRequest) agent(name string) *bareAgent {
	switch name {
	case r.alice.name:
		return &r.alice
	case r.bob.name:
		return &r.bob
	}
	return nil
}

// BenchmarkManagerRequest: one FIPA Request conversation end to end per
// op, through two managers on the bus (manager: Start and Wait from 16
// goroutines per core, so that the workers always have work), and through
// the bare handlers driven by hand (bare: one goroutine per core). Both
// report ns/message, the time of one op over its three messages.
func BenchmarkManagerRequest(b *testing.B) {
	b.Run(libManager, func(b *testing.B) {
		ms := newManagers(b)
		ctx := context.Background()
		b.ReportAllocs()
		b.SetParallelism(16)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := ms.conversation(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		})
		// bob's last steps after alice's end count too.
		if err := ms.bus.Settle(ctx); err != nil {
			b.Fatal(err)
		}
		reportPerMessage(b)
	})
	b.Run(libBare, func(b *testing.B) {
		progs := newBareProgs(b)
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			r := progs.newRequest()
			for pb.Next() {
				if err := r.run("c1"); err != nil {
					b.Error(err)
					return
				}
			}
		})
		reportPerMessage(b)
	})
}

func reportPerMessage(b *testing.B) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(requestMessages*b.N), "ns/message")
}

func TestManagerRequest(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, n int)
	}{
		{libManager, func(t *testing.T, n int) {
			ms := newManagers(t)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for range n {
				require.NoError(t, ms.conversation(ctx))
			}
		}},
		{libBare, func(t *testing.T, n int) {
			r := newBareProgs(t).newRequest()
			for i := range n { // the reused queues, events and steps stay correct
				require.NoError(t, r.run(fmt.Sprintf("c%d", i)))
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, 3) })
	}
}

// fedInput is one input a handler was fed, as the two sides are compared:
// the agent, and the message's performative or the decision's choice.
type fedInput struct {
	agent, kind, what string
}

func describeInput(agent string, ev engine.Event) (fedInput, bool) {
	switch e := ev.(type) {
	case *engine.MessageEvent:
		return fedInput{agent, "message", e.Message.Performative}, true
	case *engine.DecisionEvent:
		return fedInput{agent, "decision", e.Answer.Choice}, true
	}
	return fedInput{}, false
}

// TestManagerAndBareFeedTheSameInputs: the bare handlers are fed every
// message and every answer with a choice that the managers feed theirs,
// and every "not now" the managers feed: they do
// not do less work per conversation than the manager's handlers. (A
// manager drops a "not now" that comes back once the conversation has
// moved on; the bare run feeds every one, as its answers come back
// before the next message.)
func TestManagerAndBareFeedTheSameInputs(t *testing.T) {
	const n = 5
	var mu sync.Mutex
	var managed []fedInput
	ms := newManagers(t, agent.WithObserver(func(o agent.Observation) {
		if !o.Input {
			return
		}
		if in, ok := describeInput(o.Agent, o.Event); ok {
			mu.Lock()
			managed = append(managed, in)
			mu.Unlock()
		}
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range n {
		require.NoError(t, ms.conversation(ctx))
	}
	require.NoError(t, ms.bus.Settle(ctx))

	var bare []fedInput
	r := newBareProgs(t).newRequest()
	r.fed = func(agent string, ev engine.Event) {
		if in, ok := describeInput(agent, ev); ok {
			bare = append(bare, in)
		}
	}
	for i := range n {
		require.NoError(t, r.run(fmt.Sprintf("c%d", i)))
	}

	mu.Lock()
	defer mu.Unlock()
	chosen := func(ins []fedInput) []fedInput {
		out := slices.DeleteFunc(slices.Clone(ins), func(in fedInput) bool { return in.kind == "decision" && in.what == "" })
		slices.SortFunc(out, func(a, b fedInput) int {
			return cmp.Or(cmp.Compare(a.agent, b.agent), cmp.Compare(a.kind, b.kind), cmp.Compare(a.what, b.what))
		})
		return out
	}
	want := chosen(managed)
	require.Len(t, want, n*(requestMessages+3), "each conversation: three messages and three answers with a choice")
	assert.Equal(t, want, chosen(bare))
	notNow := func(ins []fedInput) int {
		return len(ins) - len(chosen(ins))
	}
	assert.GreaterOrEqual(t, notNow(bare), notNow(managed), "the bare run feeds every \"not now\" the managers feed")
	assert.Equal(t, 2*n, notNow(bare), "alice's two cancel points in each conversation")
}

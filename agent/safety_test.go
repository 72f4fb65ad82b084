package agent_test

import (
	"context"
	"errors"
	"fmt"
	"math"
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
	"github.com/parleyhq/parley/policy"
)

// Regression tests for the ways a misbehaving peer or plug-in could
// confuse, stall or hijack the runtime. Each names what broke.

func bobOfRequest() script {
	return script{"requested": {Choice: "agree"}, "agreed": {Choice: "inform-result", Content: map[string]any{"result": 1}}}
}

func TestMessageWithoutConversationIDOpensAConversationThatCanBeFoundAgain(t *testing.T) {
	w := newWorld(t)
	// Several workers: the conversation used to be stored on the
	// sender's worker under a new id and looked up on another.
	bob := w.agent("bob", script{"requested": {Choice: "agree"}}, agent.WithWorkers(4))
	w.agent("alice", nil)
	for i := range 8 {
		req := &forms.Message{Performative: "request", Sender: "alice", Receivers: []string{"bob"}, Protocol: "fipa-request",
			ReplyWith: "r" + string(rune('a'+i)), Content: map[string]any{"action": "x"}}
		require.NoError(t, bob.Deliver("alice", req))
		assert.Empty(t, req.ConversationID, "the delivered message is not modified")
	}
	w.settle()
	w.rec.mu.Lock()
	var ids []string
	for _, m := range w.rec.sent {
		if m.Sender == "bob" && m.Performative == "agree" {
			ids = append(ids, m.ConversationID)
		}
	}
	w.rec.mu.Unlock()
	require.Len(t, ids, 8)
	ctx := context.Background()
	for _, id := range ids {
		require.NotEmpty(t, id)
		st, err := bob.Status(ctx, id)
		require.NoError(t, err, "bob finds the conversation under the id his reply carried")
		assert.Equal(t, "agreed", st.States[""])
		// The peer's cancel, under the id it learned, reaches it.
		require.NoError(t, bob.Deliver("alice", &forms.Message{Performative: "cancel", Sender: "alice", Receivers: []string{"bob"}, ConversationID: id, Protocol: "fipa-request"}))
	}
	w.settle()
	for _, id := range ids {
		st, err := bob.Status(ctx, id)
		require.NoError(t, err)
		assert.NotEqual(t, "agreed", st.States[""], "the cancel moved the conversation on")
	}
}

func TestBroadcastWithoutConversationIDIsNotModified(t *testing.T) {
	w := newWorld(t)
	bob := w.agent("bob", script{"requested": {Choice: "agree"}})
	carol := w.agent("carol", script{"requested": {Choice: "agree"}})
	w.agent("alice", nil)
	msg := &forms.Message{Performative: "request", Sender: "alice", Receivers: []string{"bob", "carol"}, Protocol: "fipa-request", Content: map[string]any{"action": "x"}}
	var wg sync.WaitGroup
	for _, m := range []*agent.Manager{bob, carol} {
		wg.Go(func() { assert.NoError(t, m.Deliver("alice", msg)) })
	}
	wg.Wait()
	w.settle()
	assert.Empty(t, msg.ConversationID, "the shared message is not written to (the race detector checks the rest)")
	assert.Equal(t, 2, bob.Len()+carol.Len())
}

func TestConversationIDsAreUnguessableAndDoNotRepeatAcrossRestarts(t *testing.T) {
	seen := map[string]bool{}
	for range 2 { // the same agent, started twice
		w := newWorld(t)
		alice := w.agent("alice", script{"start": {Choice: "request"}})
		w.agent("bob", bobOfRequest())
		for range 5 {
			id, err := alice.Start(context.Background(), agent.StartRequest{Policy: "fipa-request", Role: "Initiator", Peers: map[string][]string{"Participant": {"bob"}}})
			require.NoError(t, err)
			assert.False(t, seen[id], "id %s repeats", id)
			seen[id] = true
			assert.True(t, strings.HasPrefix(id, "alice-"))
			assert.GreaterOrEqual(t, len(id)-len("alice-"), 26, "128 random bits")
		}
	}
	assert.NotContains(t, seen, "alice-1")
}

func TestCallerChosenIDsAreAllowedAndUnique(t *testing.T) {
	w := newWorld(t)
	alice := w.agent("alice", script{"start": {Choice: "request"}})
	w.agent("bob", bobOfRequest())
	ctx := context.Background()
	r := agent.StartRequest{ID: "order-7", Policy: "fipa-request", Role: "Initiator", Peers: map[string][]string{"Participant": {"bob"}}}
	id, err := alice.Start(ctx, r)
	require.NoError(t, err)
	assert.Equal(t, "order-7", id)
	_, err = alice.Start(ctx, r)
	assert.ErrorIs(t, err, agent.ErrConversationExists)
}

func TestAThirdAgentCannotEnterOrPreemptAConversation(t *testing.T) {
	w := newWorld(t)
	alice := w.agent("alice", script{"start": {Choice: "request"}})
	bob := w.agent("bob", nil, agent.WithAsyncDecisions(func(agent.DecisionRequest) {}))
	w.agent("mallory", nil)
	ctx := context.Background()
	conv, err := alice.Start(ctx, agent.StartRequest{Policy: "fipa-request", Role: "Initiator", Peers: map[string][]string{"Participant": {"bob"}}})
	require.NoError(t, err)
	w.settle()

	// mallory speaks into the conversation alice opened with bob: to bob
	// as if she were the Initiator, and to alice as if she were the
	// Participant.
	require.NoError(t, bob.Deliver("mallory", &forms.Message{Performative: "cancel", Sender: "mallory", Receivers: []string{"bob"}, ConversationID: conv, Protocol: "fipa-request"}))
	require.NoError(t, alice.Deliver("mallory", &forms.Message{Performative: "refuse", Sender: "mallory", Receivers: []string{"alice"}, ConversationID: conv, Protocol: "fipa-request"}))
	// and tries to open a conversation under the id already in use.
	require.NoError(t, bob.Deliver("mallory", &forms.Message{Performative: "request", Sender: "mallory", Receivers: []string{"bob"}, ConversationID: conv, Protocol: "fipa-request"}))
	w.settle()
	codes := w.rec.codes()
	require.Len(t, codes, 3, "each attempt is a protocol error")
	// alice and bob report on their own workers, so in either order; the
	// opening attempt is PE001 at bob (his state takes no request).
	assert.ElementsMatch(t, []engine.ErrorCode{engine.CodeUnknownAgent, engine.CodeUnknownAgent, engine.CodeUnexpected}, codes)
	for _, m := range []*agent.Manager{alice, bob} {
		st, err := m.Status(ctx, conv)
		require.NoError(t, err)
		assert.False(t, st.Done, "%s's conversation is unchanged", m.Name())
	}
	st, _ := bob.Status(ctx, conv)
	assert.Equal(t, "requested", st.States[""])
}

func TestTheBusRefusesAForgedSender(t *testing.T) {
	w := newWorld(t)
	alice := w.agent("alice", script{"start": {Choice: "request"}})
	bob := w.agent("bob", nil, agent.WithAsyncDecisions(func(agent.DecisionRequest) {}))
	ctx := context.Background()
	conv, err := alice.Start(ctx, agent.StartRequest{Policy: "fipa-request", Role: "Initiator", Peers: map[string][]string{"Participant": {"bob"}}})
	require.NoError(t, err)
	w.settle()
	// The transport says mallory sent a cancel that claims to be alice's.
	forged := &forms.Message{Performative: "cancel", Sender: "alice", Receivers: []string{"bob"}, ConversationID: conv, Protocol: "fipa-request"}
	err = bob.Deliver("mallory", forged)
	assert.ErrorIs(t, err, agent.ErrSender)
	w.settle()
	st, err := bob.Status(ctx, conv)
	require.NoError(t, err)
	assert.Equal(t, "requested", st.States[""], "the forged cancel changed nothing")
}

func TestADeciderThatPanicsAbortsItsConversationAndTheProcessLives(t *testing.T) {
	w := newWorld(t)
	alice := w.agent("alice", decision.Func(func(context.Context, *decision.Request) (decision.Answer, error) {
		panic("decider bug")
	}))
	w.agent("bob", bobOfRequest())
	ctx := context.Background()
	conv, err := alice.Start(ctx, agent.StartRequest{Policy: "fipa-request", Role: "Initiator", Peers: map[string][]string{"Participant": {"bob"}}})
	require.NoError(t, err)
	w.settle()
	outcome, err := alice.Wait(ctx, conv)
	assert.Equal(t, engine.OutcomeAborted, outcome)
	assert.ErrorIs(t, err, agent.ErrAborted)
	assert.Contains(t, err.Error(), "decider bug")
}

func TestADeciderThatBlocksIsBoundedByTheDecisionTimeout(t *testing.T) {
	w := newWorld(t)
	release := make(chan struct{})
	defer close(release)
	alice := w.agent("alice", decision.Func(func(ctx context.Context, _ *decision.Request) (decision.Answer, error) {
		<-release // ignores its context
		return decision.Answer{}, nil
	}), agent.WithLimits(agent.Limits{DecisionTimeout: 5 * time.Second}))
	w.agent("bob", bobOfRequest())
	ctx := context.Background()
	conv, err := alice.Start(ctx, agent.StartRequest{Policy: "fipa-request", Role: "Initiator", Peers: map[string][]string{"Participant": {"bob"}}})
	require.NoError(t, err)
	require.NoError(t, alice.Flush(ctx))
	// Other conversations of the same worker go on meanwhile.
	st, err := alice.Status(ctx, conv)
	require.NoError(t, err)
	assert.False(t, st.Done)
	w.clock.Advance(5 * time.Second)
	require.NoError(t, alice.Flush(ctx))
	outcome, err := alice.Wait(ctx, conv)
	assert.Equal(t, engine.OutcomeAborted, outcome)
	assert.ErrorContains(t, err, "did not answer within 5s")
}

func TestADecidersContextEndsAtTheDecisionTimeout(t *testing.T) {
	w := newWorld(t)
	type seen struct {
		deadline time.Time
		err      error
	}
	got := make(chan seen, 1)
	alice := w.agent("alice", decision.Func(func(ctx context.Context, _ *decision.Request) (decision.Answer, error) {
		d, _ := ctx.Deadline()
		<-ctx.Done()
		got <- seen{d, ctx.Err()}
		return decision.Answer{}, ctx.Err()
	}), agent.WithLimits(agent.Limits{DecisionTimeout: 5 * time.Second}))
	w.agent("bob", bobOfRequest())
	ctx := context.Background()
	start := w.clock.Now()
	conv, err := alice.Start(ctx, agent.StartRequest{Policy: "fipa-request", Role: "Initiator", Peers: map[string][]string{"Participant": {"bob"}}})
	require.NoError(t, err)
	require.NoError(t, alice.Flush(ctx))
	select {
	case s := <-got:
		t.Fatalf("the context ended before its time: %v", s.err)
	default:
	}
	w.clock.Advance(5 * time.Second)
	require.NoError(t, alice.Flush(ctx))
	s := <-got
	assert.ErrorIs(t, s.err, context.DeadlineExceeded)
	assert.True(t, s.deadline.Equal(start.Add(5*time.Second)), "deadline %v", s.deadline)
	outcome, err := alice.Wait(ctx, conv)
	assert.Equal(t, engine.OutcomeAborted, outcome)
	assert.ErrorContains(t, err, "did not answer within 5s")
}

// stuckTransport blocks every Send until released, ignoring its context;
// entered gets a value as each Send starts, when it has room.
type stuckTransport struct{ release, entered chan struct{} }

func (s stuckTransport) Send(context.Context, *forms.Message) error {
	select {
	case s.entered <- struct{}{}:
	default:
	}
	<-s.release
	return errors.New("released")
}

func TestCloseReturnsByItsDeadlineWhenATransportBlocks(t *testing.T) {
	p, err := policies.Load("fipa-request")
	require.NoError(t, err)
	tr := stuckTransport{release: make(chan struct{}), entered: make(chan struct{}, 1)}
	defer close(tr.release)
	alice, err := agent.NewManager("alice", agent.WithLogger(nil), agent.WithTransport(tr), agent.WithDecider(script{"start": {Choice: "request"}}))
	require.NoError(t, err)
	require.NoError(t, alice.Register(p))
	ctx := context.Background()
	_, err = alice.Start(ctx, agent.StartRequest{Policy: "fipa-request", Role: "Initiator", Peers: map[string][]string{"Participant": {"bob"}}})
	require.NoError(t, err)
	// The worker is not stalled by the stuck send.
	require.NoError(t, alice.Flush(ctx))
	_, err = alice.Start(ctx, agent.StartRequest{Policy: "fipa-request", Role: "Initiator", Peers: map[string][]string{"Participant": {"bob"}}})
	require.NoError(t, err)
	// The request leaves once decision logic, off the worker, has chosen
	// it: Close must find its send under way, or it has nothing to wait
	// for.
	select {
	case <-tr.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the request was never sent")
	}

	closeCtx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	begin := time.Now()
	err = alice.Close(closeCtx)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(begin), 2*time.Second)
}

func TestCallsAfterCloseReturnErrClosedAtOnce(t *testing.T) {
	m, err := agent.NewManager("alice", agent.WithLogger(nil))
	require.NoError(t, err)
	require.NoError(t, m.Close(context.Background()))
	ctx := context.Background() // no deadline: a hang fails the test by timing out
	_, err = m.Start(ctx, agent.StartRequest{Policy: "fipa-request", Role: "Initiator"})
	assert.ErrorIs(t, err, agent.ErrClosed)
	_, err = m.Wait(ctx, "c")
	assert.ErrorIs(t, err, agent.ErrClosed)
	_, err = m.Status(ctx, "c")
	assert.ErrorIs(t, err, agent.ErrClosed)
	assert.ErrorIs(t, m.Flush(ctx), agent.ErrClosed)
	assert.ErrorIs(t, m.Deliver("bob", &forms.Message{Performative: "inform", Sender: "bob"}), agent.ErrClosed)
	assert.ErrorIs(t, m.Answer("c", 1, decision.Answer{}), agent.ErrClosed)
	p, _ := policies.Load("fipa-request")
	assert.ErrorIs(t, m.Register(p), agent.ErrClosed)
	assert.NoError(t, m.Close(ctx), "closing twice is fine")
}

func TestStartRacingCloseNeverHangs(t *testing.T) {
	p, err := policies.Load("fipa-request")
	require.NoError(t, err)
	for range 50 {
		m, err := agent.NewManager("alice", agent.WithLogger(nil), agent.WithDecider(script{"start": {Choice: "request"}}))
		require.NoError(t, err)
		require.NoError(t, m.Register(p))
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for range 10 {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					id, err := m.Start(ctx, agent.StartRequest{Policy: "fipa-request", Role: "Initiator", Peers: map[string][]string{"Participant": {"bob"}}})
					if err == nil {
						_, err = m.Wait(ctx, id)
					}
					cancel()
					assert.False(t, errors.Is(err, context.DeadlineExceeded), "a call hung")
				}
			})
		}
		wg.Go(func() { assert.NoError(t, m.Close(context.Background())) })
		wg.Wait()
	}
}

func TestDeliverRefusesWhenTheQueueIsFull(t *testing.T) {
	w := newWorld(t)
	block, entered := make(chan struct{}), make(chan struct{}, 1)
	var once sync.Once
	// An observer that blocks holds the worker, so inputs pile up.
	bob := w.agent("bob", nil, agent.WithWorkers(1), agent.WithLimits(agent.Limits{MaxQueue: 3}), agent.WithObserver(func(agent.Observation) {
		once.Do(func() { entered <- struct{}{}; <-block })
	}))
	msg := func() *forms.Message {
		return &forms.Message{Performative: "inform", Sender: "alice", Receivers: []string{"bob"}, ConversationID: "nowhere"}
	}
	require.NoError(t, bob.Deliver("alice", msg()))
	<-entered
	for range 3 {
		require.NoError(t, bob.Deliver("alice", msg()))
	}
	assert.ErrorIs(t, bob.Deliver("alice", msg()), agent.ErrBusy)
	close(block)
	w.settle()
	assert.NoError(t, bob.Deliver("alice", msg()), "room again once the worker catches up")
}

func TestOnePeerCannotOpenUnboundedConversations(t *testing.T) {
	w := newWorld(t)
	bob := w.agent("bob", nil, agent.WithAsyncDecisions(func(agent.DecisionRequest) {}), agent.WithLimits(agent.Limits{MaxPerPeer: 3, MaxConversations: 5}))
	open := func(from, id string) {
		require.NoError(t, bob.Deliver(from, &forms.Message{Performative: "request", Sender: from, Receivers: []string{"bob"}, ConversationID: id, Protocol: "fipa-request"}))
	}
	for i := range 4 {
		open("mallory", "m"+string(rune('0'+i)))
	}
	w.settle()
	assert.Equal(t, 3, bob.Len(), "mallory's fourth is refused")
	assert.Equal(t, []engine.ErrorCode{engine.CodeRefused}, w.rec.codes())
	for i := range 3 {
		open("carol", "c"+string(rune('0'+i)))
	}
	w.settle()
	assert.Equal(t, 5, bob.Len(), "in total at most 5")
	assert.Equal(t, []engine.ErrorCode{engine.CodeRefused, engine.CodeRefused}, w.rec.codes())
}

// TestTheConversationLimitHoldsAcrossWorkers: each worker checked the
// count and added later, so workers opening conversations at the same
// moment went past MaxConversations (found by .ci/run: 6 of at most 5).
func TestTheConversationLimitHoldsAcrossWorkers(t *testing.T) {
	const limit, opens, rounds = 5, 64, 40 // the race is narrow: try it often
	for round := range rounds {
		w := newWorld(t)
		bob := w.agent("bob", nil, agent.WithAsyncDecisions(func(agent.DecisionRequest) {}), agent.WithWorkers(8),
			agent.WithLimits(agent.Limits{MaxConversations: limit, MaxPerPeer: opens}))
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range opens {
			wg.Go(func() {
				<-start
				id := fmt.Sprintf("c%d", i)
				assert.NoError(t, bob.Deliver("mallory", &forms.Message{Performative: "request", Sender: "mallory", Receivers: []string{"bob"}, ConversationID: id, Protocol: "fipa-request"}))
			})
		}
		close(start)
		wg.Wait()
		w.settle()
		require.Equal(t, limit, bob.Len(), "round %d", round)
		require.Len(t, w.rec.codes(), opens-limit, "round %d: every other opening is refused", round)
	}
}

func TestContentIsBoundedAtTheBoundary(t *testing.T) {
	deep := map[string]any{}
	for cur, i := deep, 0; i < 1_000_000; i++ {
		next := map[string]any{}
		cur["x"] = next
		cur = next
	}
	tests := []struct {
		name    string
		content map[string]any
	}{
		{"nested a million deep", deep},
		{"NaN", map[string]any{"price": math.NaN()}},
		{"infinity", map[string]any{"price": math.Inf(1)}},
		{"too large", map[string]any{"s": strings.Repeat("x", 2<<20)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			bob := w.agent("bob", bobOfRequest())
			err := bob.Deliver("alice", &forms.Message{Performative: "request", Sender: "alice", Receivers: []string{"bob"}, ConversationID: "c", Protocol: "fipa-request", Content: tt.content})
			assert.ErrorIs(t, err, agent.ErrContent)
			w.settle()
			assert.Zero(t, bob.Len())
			assert.Equal(t, []engine.ErrorCode{engine.CodeContentLimit}, w.rec.codes())
		})
	}
}

func TestTheEnvelopeIsBoundedAtTheBoundary(t *testing.T) {
	long := strings.Repeat("x", agent.DefaultLimits.MaxField+1)
	many := make([]string, agent.DefaultLimits.MaxEnvelope/1000+1)
	for i := range many {
		many[i] = fmt.Sprintf("%01000d", i)
	}
	tests := []struct {
		name   string
		edit   func(m *forms.Message)
		reason string
	}{
		{"conversation id", func(m *forms.Message) { m.ConversationID = long }, "its conversation id is 1025 bytes, more than 1024"},
		{"reply-with", func(m *forms.Message) { m.ReplyWith = long }, "its reply-with is 1025 bytes"},
		{"in-reply-to", func(m *forms.Message) { m.InReplyTo = long }, "its in-reply-to is 1025 bytes"},
		{"performative", func(m *forms.Message) { m.Performative = long }, "its performative is 1025 bytes"},
		{"ontology", func(m *forms.Message) { m.Ontology = long }, "its ontology is 1025 bytes"},
		{"a receiver", func(m *forms.Message) { m.Receivers = append(m.Receivers, long) }, "a receiver is 1025 bytes"},
		{"receivers in all", func(m *forms.Message) { m.Receivers = append(m.Receivers, many...) }, "its envelope is more than 1048576 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			bob := w.agent("bob", bobOfRequest())
			msg := &forms.Message{Performative: "request", Sender: "alice", Receivers: []string{"bob"}, ConversationID: "c", Protocol: "fipa-request", Content: map[string]any{"action": "paint"}}
			tt.edit(msg)
			err := bob.Deliver("alice", msg)
			require.ErrorIs(t, err, agent.ErrEnvelope)
			assert.Contains(t, err.Error(), tt.reason)
			assert.Less(t, len(err.Error()), 300, "nothing unbounded is echoed")
			w.settle()
			assert.Zero(t, bob.Len())
			assert.Equal(t, []engine.ErrorCode{engine.CodeContentLimit}, w.rec.codes())
		})
	}
	t.Run("a chosen id at Start", func(t *testing.T) {
		w := newWorld(t)
		alice := w.agent("alice", nil)
		_, err := alice.Start(context.Background(), agent.StartRequest{Policy: "fipa-request", Role: "Initiator", ID: long, Peers: map[string][]string{"Participant": {"bob"}}})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "the id is 1025 bytes, more than Limits.MaxField (1024)")
		assert.Zero(t, alice.Len())
	})
	t.Run("within the limits", func(t *testing.T) {
		w := newWorld(t)
		bob := w.agent("bob", nil, agent.WithLimits(agent.Limits{MaxField: 2048}))
		msg := &forms.Message{Performative: "request", Sender: "alice", Receivers: []string{"bob"}, ConversationID: long, Protocol: "fipa-request", Content: map[string]any{"action": "paint"}}
		require.NoError(t, bob.Deliver("alice", msg))
		w.settle()
		assert.Equal(t, 1, bob.Len())
	})
}

func TestRegisterRefusesBrokenPolicies(t *testing.T) {
	typo := strings.Replace(parentPolicy(t), "- {send: ask, from: Buyer, to: Seller, next: asked}", "- {send: ask, from: Buyer, to: Seller, next: asked, gaurd: 'true'}", 1)
	p, ds := policy.LoadYAML("typo.yaml", []byte(typo))
	require.True(t, ds.HasErrors(), "the loader reports the typo")
	child, ds := policy.LoadYAML("shop.yaml", []byte(parentPolicy(t)))
	require.False(t, ds.HasErrors())

	noResolver, err := agent.NewManager("alice", agent.WithLogger(nil))
	require.NoError(t, err)
	defer noResolver.Close(context.Background())
	err = noResolver.Register(p)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "gaurd")
	err = noResolver.Register(child)
	require.Error(t, err, "a child policy it cannot resolve")
	assert.Contains(t, err.Error(), "fipa-request")

	nothing, err := agent.NewManager("bob", agent.WithLogger(nil), agent.WithResolver(func(string) *policy.Policy { return nil }))
	require.NoError(t, err)
	defer nothing.Close(context.Background())
	assert.ErrorContains(t, nothing.Register(child), "fipa-request")
}

func TestNewManagerRefusesBadOptions(t *testing.T) {
	request, err := policies.Load("fipa-request")
	require.NoError(t, err)
	tests := []struct {
		name string
		self string
		opts []agent.Option
		want string
	}{
		{"empty name", "", nil, "empty agent name"},
		{"no workers", "a", []agent.Option{agent.WithWorkers(0)}, "WithWorkers"},
		{"negative limit", "a", []agent.Option{agent.WithLimits(agent.Limits{MaxQueue: -1})}, "MaxQueue"},
		{"negative retention", "a", []agent.Option{agent.WithRetention(-time.Second)}, "WithRetention"},
		{"a setup policy of the wrong shape", "a", []agent.Option{agent.WithSetup(request)}, "cannot set up conversations"},
		{"nil clock", "a", []agent.Option{agent.WithClock(nil)}, "nil clock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := agent.NewManager(tt.self, tt.opts...)
			assert.Nil(t, m)
			assert.ErrorContains(t, err, tt.want)
		})
	}
	t.Run("a nil logger discards", func(t *testing.T) {
		m, err := agent.NewManager("a", agent.WithLogger(nil))
		require.NoError(t, err)
		assert.NoError(t, m.Close(context.Background()))
	})
}

// varsPolicy keeps a counter in a conversation variable that each
// message changes, so a decider holding on to a request would see the
// worker write to it later.
const varsPolicy = `policy: counter
version: 1
roles: [A, B]
messages:
  ping: {performative: inform, fields: {n: number}}
  stop: {performative: cancel}
vars: {count: number}
timers: {wait: 30s}
states:
  start:
    - {send: ping, from: A, to: B, next: pinged, set: {count: content.n}}
  pinged:
    arm: wait
    on:
      - {send: ping, from: A, to: B, next: pinged, set: {count: vars.count + content.n}}
      - {send: stop, from: A, to: B, next: done}
      - {timeout: wait, next: done}
  done: {terminal: done}
`

func TestDecidersGetTheirOwnCopyOfTheConversationVariables(t *testing.T) {
	p, ds := policy.LoadYAML("counter.yaml", []byte(varsPolicy))
	require.False(t, ds.HasErrors(), "%v", ds)
	var mu sync.Mutex
	var kept []map[string]any
	var seen []any
	n := 0
	w := newWorld(t)
	a := w.agent("a", decision.Func(func(_ context.Context, req *decision.Request) (decision.Answer, error) {
		mu.Lock()
		defer mu.Unlock()
		if req.Vars != nil {
			seen = append(seen, req.Vars["count"])
			kept = append(kept, req.Vars)
			req.Vars["count"] = -1.0 // a decider scribbling on what it got
		}
		if n++; n > 5 {
			return decision.Answer{Choice: "stop"}, nil
		}
		return decision.Answer{Choice: "ping", Content: map[string]any{"n": 1.0}}, nil
	}))
	b := w.agent("b", nil)
	require.NoError(t, a.Register(p))
	require.NoError(t, b.Register(p))
	ctx := context.Background()
	conv, err := a.Start(ctx, agent.StartRequest{Policy: "counter", Role: "A", Peers: map[string][]string{"B": {"b"}}})
	require.NoError(t, err)
	w.settle()
	outcome, err := a.Wait(ctx, conv)
	require.NoError(t, err)
	assert.Equal(t, "done", outcome)
	mu.Lock()
	defer mu.Unlock()
	// The decider's writes did not reach the conversation: the count went
	// up by one at every ping. Each request had a map of its own, which
	// the worker never wrote to afterwards.
	var counts []any
	for _, c := range seen {
		if c != nil {
			counts = append(counts, c)
		}
	}
	assert.Equal(t, []any{1.0, 2.0, 3.0, 4.0, 5.0}, counts)
	for _, v := range kept {
		assert.Equal(t, -1.0, v["count"])
	}
	assert.Empty(t, w.rec.codes())
}

// panickyTransport panics on every Send.
type panickyTransport struct{}

func (panickyTransport) Send(context.Context, *forms.Message) error { panic("transport bug") }

// slowTransport honours its context: it fails once the context ends.
type slowTransport struct{}

func (slowTransport) Send(ctx context.Context, _ *forms.Message) error {
	<-ctx.Done()
	return ctx.Err()
}

func TestATransportThatPanicsOrTimesOutAbortsItsConversation(t *testing.T) {
	p, err := policies.Load("fipa-request")
	require.NoError(t, err)
	tests := []struct {
		name string
		tr   agent.Transport
		want string
	}{
		{"panics", panickyTransport{}, "transport panicked: transport bug"},
		{"times out", slowTransport{}, "context deadline exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			alice, err := agent.NewManager("alice", agent.WithLogger(nil), agent.WithTransport(tt.tr),
				agent.WithDecider(script{"start": {Choice: "request"}}), agent.WithLimits(agent.Limits{SendTimeout: 50 * time.Millisecond}))
			require.NoError(t, err)
			defer alice.Close(context.Background())
			require.NoError(t, alice.Register(p))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			conv, err := alice.Start(ctx, agent.StartRequest{Policy: "fipa-request", Role: "Initiator", Peers: map[string][]string{"Participant": {"bob"}}})
			require.NoError(t, err)
			outcome, err := alice.Wait(ctx, conv)
			assert.Equal(t, engine.OutcomeAborted, outcome)
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

// loopPolicy's timeout leads back to the state that arms it: with a
// deadline already past, its timer would fire for ever.
const loopPolicy = `policy: loop
version: 1
roles: [A, B]
messages:
  ping: request
  pong: inform
timers:
  wait: {deadline: ping.reply_by, default: 10s}
states:
  start:
    - {send: ping, from: A, to: B, next: waiting}
  waiting:
    arm: wait
    on:
      - {send: pong, from: B, to: A, next: done}
      - {timeout: wait, next: waiting}
  done: {terminal: done}
`

func TestATimerLoopWithoutTimePassingIsAborted(t *testing.T) {
	p, ds := policy.LoadYAML("loop.yaml", []byte(loopPolicy))
	require.False(t, ds.HasErrors(), "%v", ds)
	w := newWorld(t)
	bob := w.agent("bob", nil, agent.WithAsyncDecisions(func(agent.DecisionRequest) {}))
	require.NoError(t, bob.Register(p))
	// A peer's reply_by already in the past.
	ping := &forms.Message{Performative: "request", Sender: "alice", Receivers: []string{"bob"}, ConversationID: "c1", Protocol: "loop", ReplyBy: mt0.Add(-time.Hour)}
	require.NoError(t, bob.Deliver("alice", ping))
	w.settle()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	outcome, err := bob.Wait(ctx, "c1")
	assert.Equal(t, engine.OutcomeAborted, outcome)
	assert.ErrorContains(t, err, "without time passing")
}

const guardedOpening = `policy: guarded
version: 1
roles: {A: {}, B: {}}
messages:
  ping: {performative: request, fields: {n: number}}
  pong: {performative: inform}
timers:
  wait: {after: 10s}
states:
  start:
    - {send: ping, from: A, to: B, next: pinged, guard: content.n > 0}
  pinged:
    arm: wait
    on:
      - {send: pong, from: B, to: A, next: done}
      - {timeout: wait, next: done}
  done: {terminal: done}
`

// TestAConversationWhoseOpeningMessageIsRefusedIsNotKept: a message that
// opens a conversation but fails the guard of its first transition used
// to leave a conversation in its first state that nothing would end.
func TestAConversationWhoseOpeningMessageIsRefusedIsNotKept(t *testing.T) {
	p, ds := policy.LoadYAML("guarded.yaml", []byte(guardedOpening))
	require.False(t, ds.HasErrors(), "%v", ds)
	w := newWorld(t)
	b := w.agent("b", nil)
	require.NoError(t, b.Register(p))
	msg := &forms.Message{Performative: "request", Sender: "a", Receivers: []string{"b"}, ConversationID: "c1", Protocol: "guarded", ReplyWith: "c1/a#1", Content: map[string]any{"n": -1.0}}
	require.NoError(t, b.Deliver("a", msg))
	require.NoError(t, b.Flush(context.Background()))
	assert.NotEmpty(t, w.rec.codes(), "the refusal is reported")
	assert.Zero(t, b.Len(), "no conversation is kept")
	_, err := b.Status(context.Background(), "c1")
	assert.ErrorIs(t, err, agent.ErrNoConversation)

	// The same conversation opened properly goes ahead.
	msg = &forms.Message{Performative: "request", Sender: "a", Receivers: []string{"b"}, ConversationID: "c1", Protocol: "guarded", ReplyWith: "c1/a#2", Content: map[string]any{"n": 1.0}}
	require.NoError(t, b.Deliver("a", msg))
	st, err := b.Status(context.Background(), "c1")
	require.NoError(t, err)
	assert.Equal(t, "pinged", st.States[""])
}

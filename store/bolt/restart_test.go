package bolt_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
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
	"github.com/parleyhq/parley/store/bolt"
)

var t0 = time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)

// script answers decision points from a table ("policy:point" or
// "point").
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

// site is a directory of store files, a bus and a fake clock: agents can
// be stopped and started again on their files.
type site struct {
	t      *testing.T
	dir    string
	clock  *agent.FakeClock
	bus    *agent.Bus
	mu     sync.Mutex
	codes  []engine.ErrorCode
	extra  []*policy.Policy
	stores map[string]*bolt.Store
}

func newSite(t *testing.T) *site {
	return &site{t: t, dir: t.TempDir(), clock: agent.NewFakeClock(t0), bus: agent.NewBus(), stores: map[string]*bolt.Store{}}
}

// start runs agent name on its store file, resumed, with d deciding.
func (s *site) start(name string, d decision.Decider, opts ...agent.Option) *agent.Manager {
	st, err := bolt.Open(filepath.Join(s.dir, name+".db"))
	require.NoError(s.t, err)
	s.stores[name] = st
	opts = append([]agent.Option{agent.WithStore(st), agent.WithClock(s.clock), agent.WithLogger(nil), agent.WithResolver(policies.Resolve),
		agent.WithObserver(func(o agent.Observation) {
			if pe, ok := o.Event.(*engine.ProtocolErrorEvent); ok {
				s.mu.Lock()
				s.codes = append(s.codes, pe.Code)
				s.mu.Unlock()
			}
		})}, opts...)
	if d != nil {
		opts = append(opts, agent.WithDecider(d))
	}
	m, err := agent.NewManager(name, opts...)
	require.NoError(s.t, err)
	p, err := policies.Load("fipa-request")
	require.NoError(s.t, err)
	require.NoError(s.t, m.Register(p))
	for _, p := range s.extra {
		require.NoError(s.t, m.Register(p))
	}
	require.NoError(s.t, m.Resume(context.Background()))
	require.NoError(s.t, s.bus.Connect(m))
	s.t.Cleanup(func() { s.stop(m) })
	return m
}

// stop stops m and closes its store; stopping twice is fine.
func (s *site) stop(m *agent.Manager) {
	s.bus.Disconnect(m.Name())
	require.NoError(s.t, m.Close(context.Background()))
	if st := s.stores[m.Name()]; st != nil {
		require.NoError(s.t, st.Close())
		delete(s.stores, m.Name())
	}
}

// restart stops m and starts its agent again.
func (s *site) restart(m *agent.Manager, d decision.Decider, opts ...agent.Option) *agent.Manager {
	s.stop(m)
	return s.start(m.Name(), d, opts...)
}

func (s *site) settle() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(s.t, s.bus.Settle(ctx))
}

var (
	initiator = script{"start": {Choice: "request", Content: map[string]any{"action": "paint"}}}
	performer = script{"requested": {Choice: "agree"}, "agreed": {Choice: "inform-result", Content: map[string]any{"result": "green"}}}
	holdAll   = agent.WithAsyncDecisions(func(agent.DecisionRequest) {})
)

func request(t *testing.T, m *agent.Manager) string {
	id, err := m.Start(context.Background(), agent.StartRequest{Policy: "fipa-request", Role: "Initiator", Peers: map[string][]string{"Participant": {"bob"}}})
	require.NoError(t, err)
	return id
}

func TestRestartAsksPendingDecisionsAgain(t *testing.T) {
	s := newSite(t)
	alice := s.start("alice", initiator)
	bob := s.start("bob", nil, holdAll) // bob is asked, and dies before he answers
	conv := request(t, alice)
	s.settle()
	st, err := bob.Status(context.Background(), conv)
	require.NoError(t, err)
	require.Equal(t, "requested", st.States[""])

	// Both die; both come back.
	s.stop(bob)
	s.stop(alice)
	alice = s.start("alice", initiator)
	bob = s.start("bob", performer)
	s.settle()
	outcome, err := alice.Wait(context.Background(), conv)
	require.NoError(t, err)
	assert.Equal(t, "result", outcome)
	outcome, err = bob.Wait(context.Background(), conv)
	require.NoError(t, err)
	assert.Equal(t, "result", outcome)
	assert.Empty(t, s.codes)
}

func TestRestartFiresTimersAlreadyPastDue(t *testing.T) {
	s := newSite(t)
	alice := s.start("alice", initiator)
	s.start("bob", nil, holdAll)
	conv := request(t, alice)
	s.settle()
	s.stop(alice)
	s.clock.Advance(time.Hour) // alice is down while her reply deadline passes

	alice = s.start("alice", initiator)
	s.settle()
	outcome, err := alice.Wait(context.Background(), conv)
	require.NoError(t, err)
	assert.Equal(t, "timeout", outcome)
}

func TestRestartKeepsEndedConversationsForTheirRetention(t *testing.T) {
	s := newSite(t)
	alice := s.start("alice", initiator)
	s.start("bob", performer)
	conv := request(t, alice)
	s.settle()
	alice = s.restart(alice, initiator)
	st, err := alice.Status(context.Background(), conv)
	require.NoError(t, err)
	assert.True(t, st.Done)
	assert.Equal(t, "result", st.Outcome)
	s.clock.Advance(2 * time.Minute)
	s.settle()
	_, err = alice.Status(context.Background(), conv)
	assert.ErrorIs(t, err, agent.ErrNoConversation, "swept after the retention")
	alice = s.restart(alice, initiator)
	_, err = alice.Status(context.Background(), conv)
	assert.ErrorIs(t, err, agent.ErrNoConversation, "and gone from the store")
}

func TestRestartRelinksChildrenToTheirParents(t *testing.T) {
	s := newSite(t)
	src, err := os.ReadFile("../../testdata/policies/shop.yaml")
	require.NoError(t, err)
	p, ds := policy.LoadYAML("shop.yaml", src)
	require.False(t, ds.HasErrors())
	s.extra = []*policy.Policy{p}
	buyer := s.start("alice", script{"shop:start": {Choice: "ask"}, "fipa-request:start": {Choice: "request"}})
	// bob opens the shop, then dies with the child's request undecided.
	bob := s.start("bob", script{"asked": {Choice: "open", Content: map[string]any{"holds": true}}}, holdAll)
	conv, err := buyer.Start(context.Background(), agent.StartRequest{Policy: "shop", Role: "Buyer", Peers: map[string][]string{"Seller": {"bob"}}})
	require.NoError(t, err)
	s.settle()
	child, err := bob.Status(context.Background(), conv+"/fipa-request#1")
	require.NoError(t, err)
	require.Equal(t, "requested", child.States[""])

	s.stop(bob)
	buyer = s.restart(buyer, script{"shop:start": {Choice: "ask"}, "fipa-request:start": {Choice: "request"}})
	s.start("bob", performer)
	s.settle()
	outcome, err := buyer.Wait(context.Background(), conv)
	require.NoError(t, err)
	assert.Equal(t, "bought", outcome, "the child's end reached the parent after the restart")
}

func TestRestartReportsAChangedPolicy(t *testing.T) {
	s := newSite(t)
	alice := s.start("alice", initiator)
	s.start("bob", nil, holdAll)
	conv := request(t, alice)
	s.settle()
	s.stop(alice)

	// alice comes back with a fipa-request whose reply timer changed.
	src, err := policies.FS().Open("fipa-request.yaml")
	require.NoError(t, err)
	var b strings.Builder
	buf := make([]byte, 1<<16)
	n, _ := src.Read(buf)
	b.Write(buf[:n])
	changed, ds := policy.LoadYAML("fipa-request.yaml", []byte(strings.Replace(b.String(), "default: 30s", "default: 45s", 1)))
	require.False(t, ds.HasErrors(), "%v", ds)
	st, err := bolt.Open(filepath.Join(s.dir, "alice.db"))
	require.NoError(t, err)
	defer st.Close()
	m, err := agent.NewManager("alice", agent.WithStore(st), agent.WithClock(s.clock), agent.WithLogger(nil))
	require.NoError(t, err)
	defer m.Close(context.Background())
	require.NoError(t, m.Register(changed))
	err = m.Resume(context.Background())
	require.ErrorIs(t, err, agent.ErrFingerprint)
	assert.Contains(t, err.Error(), conv)
	orig, _ := policies.Load("fipa-request")
	assert.Contains(t, err.Error(), orig.Fingerprint())
	assert.Contains(t, err.Error(), changed.Fingerprint())
	stored, err := st.Load()
	require.NoError(t, err)
	assert.Len(t, stored.Conversations, 1, "not dropped from the store")
}

func TestAMessageDeliveredAgainIsAppliedOnce(t *testing.T) {
	s := newSite(t)
	s.start("alice", nil) // alice only listens here
	bob := s.start("bob", nil, holdAll)
	req := &forms.Message{Performative: "request", Sender: "alice", Receivers: []string{"bob"}, ConversationID: "c1",
		Protocol: "fipa-request", ReplyWith: "c1/alice#1", Content: map[string]any{"action": "paint"}}
	var acks sync.WaitGroup
	acks.Add(2)
	require.NoError(t, bob.DeliverAcked("alice", req, acks.Done))
	s.settle()
	bob = s.restart(bob, nil, holdAll)
	// alice did not hear bob's acknowledgement before she died: she sends
	// the request again.
	require.NoError(t, bob.DeliverAcked("alice", req, acks.Done))
	s.settle()
	acks.Wait()
	assert.Empty(t, s.codes, "no duplicate reported: the repeat is dropped")
	st, err := bob.Status(context.Background(), "c1")
	require.NoError(t, err)
	assert.Equal(t, "requested", st.States[""])
}

func TestResumeWithoutAStoreIsAnError(t *testing.T) {
	m, err := agent.NewManager("a", agent.WithLogger(nil))
	require.NoError(t, err)
	defer m.Close(context.Background())
	assert.Error(t, m.Resume(context.Background()))
	assert.False(t, errors.Is(m.Resume(context.Background()), agent.ErrClosed))
}

func TestAMessageWhoseReceiverIsDownIsSentAgain(t *testing.T) {
	s := newSite(t)
	alice := s.start("alice", initiator)
	bob := s.start("bob", performer)
	s.stop(bob) // bob is down when alice asks
	conv := request(t, alice)
	s.settle()
	s.start("bob", performer)
	s.clock.Advance(agent.DefaultLimits.RetryInterval) // alice sends the request again
	s.settle()
	outcome, err := alice.Wait(context.Background(), conv)
	require.NoError(t, err)
	assert.Equal(t, "result", outcome)
	assert.Empty(t, s.codes)
}

func TestAManagerWithAStoreRefusesMessagesUntilResumed(t *testing.T) {
	s := newSite(t)
	alice := s.start("alice", initiator)
	bob := s.start("bob", nil, holdAll)
	conv := request(t, alice)
	s.settle()
	s.stop(bob)

	st, err := bolt.Open(filepath.Join(s.dir, "bob.db"))
	require.NoError(t, err)
	defer st.Close()
	m, err := agent.NewManager("bob", agent.WithStore(st), agent.WithClock(s.clock), agent.WithLogger(nil), holdAll)
	require.NoError(t, err)
	defer m.Close(context.Background())
	p, err := policies.Load("fipa-request")
	require.NoError(t, err)
	require.NoError(t, m.Register(p))
	// A message that arrived before Resume used to open a new conversation
	// over the stored one.
	cancel := &forms.Message{Performative: "cancel", Sender: "alice", Receivers: []string{"bob"}, ConversationID: conv, Protocol: "fipa-request", ReplyWith: conv + "/alice#9"}
	assert.ErrorIs(t, m.Deliver("alice", cancel), agent.ErrNotResumed)
	_, err = m.Start(context.Background(), agent.StartRequest{Policy: "fipa-request", Role: "Initiator", Peers: map[string][]string{"Participant": {"alice"}}})
	assert.ErrorIs(t, err, agent.ErrNotResumed)
	require.NoError(t, m.Resume(context.Background()))
	status, err := m.Status(context.Background(), conv)
	require.NoError(t, err)
	assert.Equal(t, "requested", status.States[""], "the stored conversation, not a new one")
}

func TestAMessageThatFailedToSendIsNotOvertakenByLaterOnes(t *testing.T) {
	s := newSite(t)
	alice := s.start("alice", initiator)
	bob := s.start("bob", nil, holdAll)
	conv := request(t, alice)
	s.settle()
	// alice goes down; bob comes back and answers at once: agree, then
	// inform-result, both while alice is away.
	s.stop(alice)
	s.restart(bob, performer)
	s.settle()
	alice = s.start("alice", initiator) // connecting her makes bob try again
	s.settle()
	outcome, err := alice.Wait(context.Background(), conv)
	require.NoError(t, err)
	assert.Equal(t, "result", outcome)
	assert.Empty(t, s.codes, "the agree came before the inform")
}

// TestAStoredMessageWaitsForATransportWithoutAnError: Resume sends the
// outbox before the manager is connected to its bus, and each of those
// sends used to be reported as a failure ("no transport").
func TestAStoredMessageWaitsForATransportWithoutAnError(t *testing.T) {
	s := newSite(t)
	alice := s.start("alice", initiator)
	bob := s.start("bob", performer)
	s.stop(bob) // bob is down: alice's request stays in her outbox
	conv := request(t, alice)
	s.settle()
	var mu sync.Mutex
	var failures []error
	alice = s.restart(alice, initiator, agent.WithObserver(func(o agent.Observation) {
		if o.Err != nil {
			mu.Lock()
			failures = append(failures, o.Err)
			mu.Unlock()
		}
	}))
	s.start("bob", performer)
	s.clock.Advance(agent.DefaultLimits.RetryInterval)
	s.settle()
	outcome, err := alice.Wait(context.Background(), conv)
	require.NoError(t, err)
	assert.Equal(t, "result", outcome)
	mu.Lock()
	defer mu.Unlock()
	for _, err := range failures {
		assert.NotContains(t, err.Error(), "no transport")
	}
}

// gatedStore holds every Commit until the test opens the gate.
type gatedStore struct {
	agent.Store
	gate chan struct{}
}

func (g gatedStore) Commit(b *agent.Batch) error {
	<-g.gate
	return g.Store.Commit(b)
}

// TestStartReturnsOnceItsFirstStepIsCommitted: Start used to return the
// id before the commit, so a conversation whose id the caller had could
// be gone after a crash.
func TestStartReturnsOnceItsFirstStepIsCommitted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "alice.db")
	st, err := bolt.Open(path)
	require.NoError(t, err)
	defer st.Close()
	g := gatedStore{Store: st, gate: make(chan struct{})}
	m, err := agent.NewManager("alice", agent.WithStore(g), agent.WithLogger(nil), agent.WithDecider(initiator), agent.WithTransport(dropTransport{}))
	require.NoError(t, err)
	defer m.Close(context.Background())
	open := sync.OnceFunc(func() { close(g.gate) })
	defer open() // before Close, which waits for the commit
	p, err := policies.Load("fipa-request")
	require.NoError(t, err)
	require.NoError(t, m.Register(p))
	started := make(chan string, 1)
	go func() {
		id, err := m.Start(context.Background(), agent.StartRequest{Policy: "fipa-request", Role: "Initiator", Peers: map[string][]string{"Participant": {"bob"}}})
		assert.NoError(t, err)
		started <- id
	}()
	select {
	case <-started:
		t.Fatal("Start returned before its commit")
	case <-time.After(100 * time.Millisecond):
	}
	open()
	id := <-started
	loaded, err := st.Load()
	require.NoError(t, err)
	var ids []string
	for _, sc := range loaded.Conversations {
		ids = append(ids, sc.ID)
	}
	assert.Contains(t, ids, id)
}

// dropTransport accepts every message and delivers none.
type dropTransport struct{}

func (dropTransport) Send(context.Context, *forms.Message) error { return nil }

// TestAPeersOverlongConversationIDFailsNoCommit: a conversation id
// longer than a bbolt key may be made every group commit that held it
// fail, the other conversations' included. The manager refuses such a
// message at Deliver (Limits.MaxField), and the conversations next to it
// go on and are stored.
func TestAPeersOverlongConversationIDFailsNoCommit(t *testing.T) {
	s := newSite(t)
	alice := s.start("alice", initiator)
	bob := s.start("bob", performer)
	long := &forms.Message{Performative: "request", Sender: "alice", Receivers: []string{"bob"}, ConversationID: strings.Repeat("c", 40<<10),
		Protocol: "fipa-request", Content: map[string]any{"action": "paint"}}
	err := bob.Deliver("alice", long)
	require.ErrorIs(t, err, agent.ErrEnvelope)
	assert.NotContains(t, err.Error(), strings.Repeat("c", 100), "the id is not echoed")
	conv := request(t, alice)
	s.settle()
	out, err := alice.Wait(context.Background(), conv)
	require.NoError(t, err)
	assert.Equal(t, "result", out)
	bob = s.restart(bob, performer)
	st, err := bob.Status(context.Background(), conv)
	require.NoError(t, err, "bob's commits of the conversation next to the refused one were stored")
	assert.True(t, st.Done)
	assert.Equal(t, []engine.ErrorCode{engine.CodeContentLimit}, s.codes)
}

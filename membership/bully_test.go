package membership_test

import (
	"context"
	"log/slog"
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
	"github.com/parleyhq/parley/membership"
	"github.com/parleyhq/parley/policies"
)

// node is an agent that runs the bully algorithm with the shipped
// leader-election policy, taking its candidates from a group.
type node struct {
	t       *testing.T
	name    string
	prio    int
	m       *agent.Manager
	g       *membership.Group
	clock   *agent.FakeClock
	wg      *sync.WaitGroup
	running *atomic.Int64 // goroutines of the nodes at work, not waiting for a conversation
	crashed bool          // it hangs: it answers no decision

	mu       sync.Mutex
	leader   string
	electing bool
	owed     []decision.Request // outranked points waiting for the leader's name
	outcomes []string           // of the elections it called
	errs     []engine.ErrorCode
}

func (n *node) spawn(f func()) {
	n.wg.Add(1)
	n.running.Add(1)
	go func() {
		defer n.wg.Done()
		defer n.running.Add(-1)
		f()
	}()
}

func (n *node) Decide(_ context.Context, req *decision.Request) (decision.Answer, error) {
	if n.crashed {
		return decision.Answer{}, decision.ErrNoDecision
	}
	switch req.Point {
	case "start":
		if req.Content["announce"] == true {
			return decision.Answer{Choice: "coordinator", Content: map[string]any{"leader": n.name}}, nil
		}
		return decision.Answer{Choice: "election", Content: map[string]any{"priority": n.prio}, ReplyBy: n.clock.Now().Add(5 * time.Second)}, nil
	case "called":
		n.spawn(n.elect) // take the election over
		return decision.Answer{Choice: "alive"}, nil
	case "outranked":
		n.mu.Lock()
		defer n.mu.Unlock()
		if n.leader != "" {
			return decision.Answer{Choice: "elected", Content: map[string]any{"leader": n.leader}}, nil
		}
		n.owed = append(n.owed, *req)
	}
	return decision.Answer{}, decision.ErrNoDecision
}

// elect calls an election among the healthy members of higher priority,
// once, and leads if none of them answers.
func (n *node) elect() {
	n.mu.Lock()
	if n.electing {
		n.mu.Unlock()
		return
	}
	n.electing = true
	n.mu.Unlock()
	higher := n.g.Names(membership.WithHealth(membership.Healthy), membership.WithPriorityAbove(n.prio))
	if len(higher) == 0 {
		n.lead()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conv, err := n.m.Start(ctx, agent.StartRequest{Policy: "leader-election", Role: "Candidate", Peers: map[string][]string{"Peer": higher}, Data: map[string]any{"priority": n.prio}})
	if !assert.NoError(n.t, err, n.name) {
		return
	}
	n.running.Add(-1) // waiting: time may move on
	outcome, err := n.m.Wait(ctx, conv)
	n.running.Add(1)
	if !assert.NoError(n.t, err, n.name) {
		return
	}
	n.mu.Lock()
	n.outcomes = append(n.outcomes, outcome)
	n.mu.Unlock()
	if !strings.Contains(outcome, "led=") {
		n.lead() // no one above answered
	}
}

// lead takes the lead and announces it to every other healthy member.
func (n *node) lead() {
	n.learn(n.name)
	var others []string
	for _, name := range n.g.Names(membership.WithHealth(membership.Healthy)) {
		if name != n.name {
			others = append(others, name)
		}
	}
	_, err := n.m.Start(context.Background(), agent.StartRequest{Policy: "leader-election", Role: "Candidate", Peers: map[string][]string{"Peer": others}, Data: map[string]any{"announce": true}})
	assert.NoError(n.t, err, n.name)
}

// learn records the leader and names it in every election it owes that.
func (n *node) learn(leader string) {
	n.mu.Lock()
	if n.leader == "" {
		n.leader = leader
	}
	owed := n.owed
	n.owed = nil
	n.mu.Unlock()
	for _, r := range owed {
		assert.NoError(n.t, n.m.Answer(r.ConversationID, r.Ticket, decision.Answer{Choice: "elected", Content: map[string]any{"leader": leader}}))
	}
}

// observe learns the leader from a coordinator or elected message and
// keeps the protocol errors.
func (n *node) observe(o agent.Observation) {
	switch e := o.Event.(type) {
	case *engine.MessageEvent:
		if leader, ok := e.Message.Content["leader"].(string); ok && o.Input && e.Message.Performative == "inform" && e.Message.Sender != n.name {
			n.spawn(func() { n.learn(leader) })
		}
	case *engine.ProtocolErrorEvent:
		n.mu.Lock()
		n.errs = append(n.errs, e.Code)
		n.mu.Unlock()
	}
}

func (n *node) state() (leader string, outcomes []string, errs []engine.ErrorCode) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.leader, append([]string(nil), n.outcomes...), append([]engine.ErrorCode(nil), n.errs...)
}

// Four agents of priorities 1 to 4 on a bus; n4, the leader, hangs (its
// decision logic answers nothing) and has stopped sending heartbeats. n1 notices and calls an election: n2
// and n3 take it over, n4 stays silent, n3 wins, announces itself and
// tells those whose elections it took over, and everyone agrees on n3 —
// the leader HighestPriority elects from the group once n4 is removed.
func TestBullyElectionBetweenManagers(t *testing.T) {
	p, err := policies.Load("leader-election")
	require.NoError(t, err)
	clock := agent.NewFakeClock(t0)
	bus := agent.NewBus()
	g := membership.New(clock)
	var wg sync.WaitGroup
	var running atomic.Int64
	var nodes []*node
	quiet := slog.New(slog.DiscardHandler)
	for i := 1; i <= 4; i++ {
		n := &node{t: t, name: "n" + string(rune('0'+i)), prio: i, g: g, clock: clock, wg: &wg, running: &running, crashed: i == 4}
		m, err := agent.NewManager(n.name, agent.WithClock(clock), agent.WithLogger(quiet), agent.WithDecider(n), agent.WithObserver(n.observe),
			agent.WithLimits(agent.Limits{DecisionTimeout: time.Hour}))
		require.NoError(t, err)
		n.m = m
		require.NoError(t, m.Register(p))
		require.NoError(t, bus.Connect(m))
		require.NoError(t, g.Register(membership.Registration{Name: n.name, Priority: n.prio}))
		require.NoError(t, g.Heartbeat(n.name))
		nodes = append(nodes, n)
	}
	t.Cleanup(func() {
		wg.Wait()
		for _, n := range nodes {
			n.m.Close(context.Background())
		}
	})
	// settle waits until the nodes' goroutines are done or wait for a
	// conversation, and the bus is at rest: only then may time move on.
	// (Time used to run ahead of a goroutine that had not yet started
	// its election, which then waited for ever.)
	settle := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for {
			for running.Load() > 0 {
				require.NoError(t, ctx.Err(), "the nodes' goroutines come to rest")
				time.Sleep(time.Millisecond)
			}
			require.NoError(t, bus.Settle(ctx))
			if running.Load() == 0 { // settling spawned nothing new
				return
			}
		}
	}
	agreed := func() bool {
		for _, n := range nodes[:3] {
			if l, _, _ := n.state(); l != "n3" {
				return false
			}
		}
		return true
	}

	nodes[0].spawn(nodes[0].elect)
	// Time moves in steps of a second, the live members beating, until
	// they agree (or two minutes have passed).
	for step := 0; step < 120 && !agreed(); step++ {
		settle()
		clock.Advance(time.Second)
		for _, n := range nodes[:3] {
			require.NoError(t, g.Heartbeat(n.name))
		}
	}
	require.True(t, agreed(), "n1, n2 and n3 agree on n3")
	// Let what the last steps set off finish: the nodes' goroutines start
	// conversations (n3's announcement) whose messages spawn more (n4
	// learning the leader). Stopping after one settle used to leave n4's
	// announcement in flight now and then.
	for range 3 {
		wg.Wait()
		settle()
	}
	wg.Wait()
	_, outcomes, errs := nodes[0].state()
	assert.Equal(t, []string{"led=2,silent=1"}, outcomes, "n2 and n3 named the leader, n4 was silent")
	_, outcomes, _ = nodes[2].state()
	assert.Equal(t, []string{"silent=1"}, outcomes, "n3 called n4 only, which did not answer")
	assert.Empty(t, errs)
	for _, n := range nodes[1:] {
		_, _, errs := n.state()
		assert.Empty(t, errs, n.name)
	}
	l, _, _ := nodes[3].state()
	assert.Equal(t, "n3", l, "n4 hangs, deciding nothing, but still hears the announcement")

	// The group removes n4, 30s unhealthy after 30s without a heartbeat;
	// the strategy the bully algorithm implements agrees with it.
	for range 60 {
		clock.Advance(time.Second)
		for _, n := range nodes[:3] {
			require.NoError(t, g.Heartbeat(n.name))
		}
	}
	_, ok := g.Get("n4")
	assert.False(t, ok, "n4 removed")
	leader, ok := g.Elect(membership.HighestPriority())
	require.True(t, ok)
	assert.Equal(t, "n3", leader)
}

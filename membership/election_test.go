package membership_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/membership"
)

// electionGroup has four healthy members, joined in this order: a (one
// capability, priority 1), b (three, priority 2, one task of one), c
// (three, priority 2, no limit) and d (none, priority 7); and e, which
// registered but never sent a heartbeat.
func electionGroup(t *testing.T) *membership.Group {
	t.Helper()
	g, clock := newGroup(t)
	for _, r := range []membership.Registration{
		{Name: "a", Capabilities: []string{"x"}, Priority: 1},
		{Name: "b", Capabilities: []string{"x", "y", "z"}, Priority: 2, Capacity: 1},
		{Name: "c", Capabilities: []string{"x", "y", "z"}, Priority: 2},
		{Name: "d", Priority: 7},
		{Name: "e", Capabilities: []string{"x", "y", "z", "w"}, Priority: 9},
	} {
		require.NoError(t, g.Register(r))
		clock.Advance(time.Second)
	}
	for _, n := range []string{"a", "b", "c", "d"} {
		require.NoError(t, g.Heartbeat(n))
	}
	require.NoError(t, g.StartTask("b"))
	return g
}

func TestStrategies(t *testing.T) {
	tests := []struct {
		name     string
		strategy membership.Strategy
		filters  []membership.Filter
		want     string // "" for nobody
	}{
		{name: "first joined", strategy: membership.FirstJoined(), want: "a"},
		{name: "last joined, of the healthy", strategy: membership.LastJoined(), want: "d"},
		{name: "last joined, of any health", strategy: membership.LastJoined(), filters: []membership.Filter{membership.WithHealth(membership.Healthy, membership.Unknown)}, want: "e"},
		{name: "highest priority", strategy: membership.HighestPriority(), want: "d"},
		{name: "highest priority with a capability", strategy: membership.HighestPriority(), filters: []membership.Filter{membership.WithCapability("y")}, want: "b"},
		{name: "most capable: ties go to room for tasks", strategy: membership.MostCapable(), want: "c"},
		{name: "none", strategy: membership.None(), want: ""},
		{name: "no candidates", strategy: membership.FirstJoined(), filters: []membership.Filter{membership.WithCapability("flight")}, want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			leader, ok := electionGroup(t).Elect(tc.strategy, tc.filters...)
			assert.Equal(t, tc.want != "", ok)
			assert.Equal(t, tc.want, leader)
		})
	}
}

func TestRandomStrategyIsUniformAndRepeatable(t *testing.T) {
	g := electionGroup(t)
	draw := func(seed uint64) []string {
		s := membership.Random(rand.NewPCG(seed, 0))
		var out []string
		for range 400 {
			l, ok := g.Elect(s)
			require.True(t, ok)
			out = append(out, l)
		}
		return out
	}
	first := draw(1)
	assert.Equal(t, first, draw(1), "the same seed draws the same leaders")
	counts := map[string]int{}
	for _, l := range first {
		counts[l]++
	}
	assert.Len(t, counts, 4, "every healthy member is drawn: %v", counts)
	for l, n := range counts {
		assert.Greater(t, n, 50, "%s drawn %d times of 400", l, n)
	}
}

// The round robin keeps whose turn it was across elections and changes
// of membership: a member that left is skipped, one that joined takes its
// turn after the members that joined before it.
func TestRoundRobinKeepsItsState(t *testing.T) {
	g, clock := newGroup(t)
	for _, n := range []string{"a", "b", "c"} {
		require.NoError(t, g.Register(membership.Registration{Name: n}))
		require.NoError(t, g.Heartbeat(n))
	}
	rr := membership.NewRoundRobin()
	_, ok := rr.Last()
	assert.False(t, ok, "no election yet")
	elect := func() string {
		l, ok := g.Elect(rr)
		require.True(t, ok)
		return l
	}
	assert.Equal(t, "a", elect())
	assert.Equal(t, "b", elect())
	require.NoError(t, g.Unregister("c"))
	clock.Advance(time.Second)
	require.NoError(t, g.Register(membership.Registration{Name: "d"}))
	require.NoError(t, g.Heartbeat("d"))
	assert.Equal(t, "d", elect(), "c left")
	assert.Equal(t, "a", elect(), "wraps around")
	last, ok := rr.Last()
	assert.True(t, ok)
	assert.Equal(t, "a", last)
}

// With the fake clock: the leader stops sending heartbeats, becomes
// degraded and is no longer a candidate, and after its removal a new
// election without it gives the same leader as while it was degraded.
func TestElectionFollowsHealth(t *testing.T) {
	g, clock := newGroup(t)
	for i, n := range []string{"low", "mid", "top"} {
		require.NoError(t, g.Register(membership.Registration{Name: n, Priority: i}))
	}
	beat := func(names ...string) {
		for _, n := range names {
			require.NoError(t, g.Heartbeat(n))
		}
	}
	beat("low", "mid", "top")
	elect := func() string {
		l, _ := g.Elect(membership.HighestPriority())
		return l
	}
	assert.Equal(t, "top", elect())

	// top stops beating; the others beat every 5s.
	for range 2 {
		clock.Advance(5 * time.Second)
		beat("low", "mid")
	}
	assert.Equal(t, membership.Degraded, g.Health("top"))
	assert.Equal(t, "mid", elect(), "a degraded member is not a candidate")

	for range 8 {
		clock.Advance(5 * time.Second)
		beat("low", "mid")
	}
	_, ok := g.Get("top")
	assert.False(t, ok, "removed 30s+20s after its last heartbeat")
	assert.Equal(t, "mid", elect())
	h := g.History()
	assert.Equal(t, membership.Event{Kind: membership.Removed, Member: "top", At: t0.Add(50 * time.Second)}, h[len(h)-1])
}

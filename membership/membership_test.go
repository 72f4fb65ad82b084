package membership_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/membership"
)

var t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// newGroup returns a group on a fake clock with thresholds of 10s
// (degraded) and 30s (unhealthy) and removal 20s after.
func newGroup(t *testing.T, opts ...membership.Option) (*membership.Group, *agent.FakeClock) {
	t.Helper()
	clock := agent.NewFakeClock(t0)
	opts = append([]membership.Option{membership.WithThresholds(10*time.Second, 30*time.Second), membership.WithRemoveAfter(20 * time.Second)}, opts...)
	return membership.New(clock, opts...), clock
}

func TestHealthTransitions(t *testing.T) {
	// Each step moves the clock to at (after the start) and does what it
	// says; then bob's health is want.
	type step struct {
		at   time.Duration
		do   func(g *membership.Group) error
		want membership.Health
	}
	beat := func(g *membership.Group) error { return g.Heartbeat("bob") }
	report := func(h membership.Health) func(g *membership.Group) error {
		return func(g *membership.Group) error { return g.Report("bob", h) }
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{name: "unknown until the first heartbeat, then unhealthy", steps: []step{
			{at: 0, want: membership.Unknown},
			{at: 29 * time.Second, want: membership.Unknown},
			{at: 30 * time.Second, want: membership.Unhealthy},
		}},
		{name: "healthy, degraded, unhealthy as heartbeats stop", steps: []step{
			{at: time.Second, do: beat, want: membership.Healthy},
			{at: 10*time.Second + time.Second - time.Nanosecond, want: membership.Healthy},
			{at: 11 * time.Second, want: membership.Degraded},
			{at: 31 * time.Second, want: membership.Unhealthy},
		}},
		{name: "a heartbeat makes a degraded member healthy again", steps: []step{
			{at: 0, do: beat, want: membership.Healthy},
			{at: 15 * time.Second, want: membership.Degraded},
			{at: 16 * time.Second, do: beat, want: membership.Healthy},
		}},
		{name: "a heartbeat makes an unhealthy member healthy before its removal", steps: []step{
			{at: 0, do: beat, want: membership.Healthy},
			{at: 45 * time.Second, want: membership.Unhealthy},
			{at: 49 * time.Second, do: beat, want: membership.Healthy},
			{at: 60 * time.Second, want: membership.Degraded},
		}},
		{name: "a reported degradation lasts until a healthy heartbeat", steps: []step{
			{at: 0, do: report(membership.Degraded), want: membership.Degraded},
			{at: 5 * time.Second, do: beat, want: membership.Healthy},
		}},
		{name: "a reported unhealthiness", steps: []step{
			{at: 0, do: beat, want: membership.Healthy},
			{at: time.Second, do: report(membership.Unhealthy), want: membership.Unhealthy},
			{at: 5 * time.Second, do: report(membership.Unhealthy), want: membership.Unhealthy},
			{at: 6 * time.Second, do: report(membership.Healthy), want: membership.Healthy},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, clock := newGroup(t)
			require.NoError(t, g.Register(membership.Registration{Name: "bob"}))
			for _, s := range tc.steps {
				clock.Set(t0.Add(s.at))
				if s.do != nil {
					require.NoError(t, s.do(g))
				}
				assert.Equal(t, s.want, g.Health("bob"), "at +%s", s.at)
			}
		})
	}
}

func TestUnhealthyMembersAreRemoved(t *testing.T) {
	tests := []struct {
		name string
		// beat is when bob last beats; report, if set, is what it last
		// reports then.
		beat   time.Duration
		report membership.Health
		// removed is when bob is removed: unhealthy (30s after its last
		// heartbeat, or at once when it reports so) for 20s.
		removed time.Duration
	}{
		{name: "never beat", beat: -1, removed: 50 * time.Second},
		{name: "stopped beating", beat: 5 * time.Second, removed: 55 * time.Second},
		{name: "reported unhealthy", beat: 5 * time.Second, report: membership.Unhealthy, removed: 25 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, clock := newGroup(t)
			require.NoError(t, g.Register(membership.Registration{Name: "alice"}))
			require.NoError(t, g.Register(membership.Registration{Name: "bob"}))
			if tc.beat >= 0 {
				clock.Set(t0.Add(tc.beat))
				if tc.report != 0 {
					require.NoError(t, g.Report("bob", tc.report))
				} else {
					require.NoError(t, g.Heartbeat("bob"))
				}
			}
			for at := time.Duration(0); at < tc.removed; at += time.Second {
				clock.Set(t0.Add(at))
				require.NoError(t, g.Heartbeat("alice"), "alice keeps beating")
			}
			clock.Set(t0.Add(tc.removed - time.Nanosecond))
			_, ok := g.Get("bob")
			require.True(t, ok, "bob is there until his removal is due")
			clock.Set(t0.Add(tc.removed))
			_, ok = g.Get("bob")
			assert.False(t, ok, "bob is gone once unhealthy for the removal delay")
			assert.ErrorIs(t, g.Heartbeat("bob"), membership.ErrUnknownMember, "a heartbeat after the removal is refused")
			assert.Equal(t, []membership.Event{
				{Kind: membership.Joined, Member: "alice", At: t0},
				{Kind: membership.Joined, Member: "bob", At: t0},
				{Kind: membership.Removed, Member: "bob", At: t0.Add(tc.removed)},
			}, g.History())
			assert.Equal(t, []string{"alice"}, g.Names())
		})
	}
}

// A removal falls due whether or not anyone looks: the clock jumping well
// past it records it at the instant it fell due, in order.
func TestRemovalsRecordedWhenDue(t *testing.T) {
	g, clock := newGroup(t, membership.WithRemoveAfter(0))
	require.NoError(t, g.Register(membership.Registration{Name: "a"}))
	clock.Advance(5 * time.Second)
	require.NoError(t, g.Register(membership.Registration{Name: "b"}))
	require.NoError(t, g.Register(membership.Registration{Name: "c"}))
	require.NoError(t, g.Unregister("c"))
	clock.Advance(time.Hour)
	assert.Equal(t, []membership.Event{
		{Kind: membership.Joined, Member: "a", At: t0},
		{Kind: membership.Joined, Member: "b", At: t0.Add(5 * time.Second)},
		{Kind: membership.Joined, Member: "c", At: t0.Add(5 * time.Second)},
		{Kind: membership.Left, Member: "c", At: t0.Add(5 * time.Second)},
		{Kind: membership.Removed, Member: "a", At: t0.Add(30 * time.Second)},
		{Kind: membership.Removed, Member: "b", At: t0.Add(35 * time.Second)},
	}, g.History())
	assert.Zero(t, g.Len())
}

func TestHistoryIsBounded(t *testing.T) {
	g, _ := newGroup(t, membership.WithHistory(3))
	for i := range 5 {
		require.NoError(t, g.Register(membership.Registration{Name: fmt.Sprint("m", i)}))
	}
	var names []string
	for _, e := range g.History() {
		names = append(names, e.Member)
	}
	assert.Equal(t, []string{"m2", "m3", "m4"}, names, "the latest three")
}

func TestTasks(t *testing.T) {
	g, _ := newGroup(t)
	require.NoError(t, g.Register(membership.Registration{Name: "bob", Capacity: 2}))
	require.NoError(t, g.Register(membership.Registration{Name: "carol"})) // no limit
	require.NoError(t, g.Heartbeat("bob"))
	require.NoError(t, g.Heartbeat("carol"))

	require.NoError(t, g.StartTask("bob"))
	assert.Equal(t, []string{"bob", "carol"}, g.Available())
	require.NoError(t, g.StartTask("bob"))
	assert.ErrorIs(t, g.StartTask("bob"), membership.ErrNoRoom)
	assert.Equal(t, []string{"carol"}, g.Available(), "bob is full")
	m, ok := g.Get("bob")
	require.True(t, ok)
	assert.Equal(t, 2, m.Active)
	assert.False(t, m.HasRoom())

	require.NoError(t, g.FinishTask("bob"))
	assert.Equal(t, []string{"bob", "carol"}, g.Available())
	require.NoError(t, g.FinishTask("bob"))
	assert.ErrorIs(t, g.FinishTask("bob"), membership.ErrNoTask)

	for range 100 {
		require.NoError(t, g.StartTask("carol"))
	}
	assert.Contains(t, g.Available(), "carol")
	assert.ErrorIs(t, g.StartTask("dave"), membership.ErrUnknownMember)
	assert.ErrorIs(t, g.FinishTask("dave"), membership.ErrUnknownMember)
}

func TestQueries(t *testing.T) {
	g, clock := newGroup(t)
	regs := []membership.Registration{
		{Name: "s1", Role: "Participant", Capabilities: []string{"transport", "storage"}, Priority: 1},
		{Name: "s2", Role: "Participant", Capabilities: []string{"transport"}, Priority: 5, Capacity: 1},
		{Name: "s3", Role: "Participant", Capabilities: []string{"storage", "storage"}, Priority: 3},
		{Name: "hq", Role: "Initiator", Priority: 9},
	}
	for _, r := range regs {
		require.NoError(t, g.Register(r))
	}
	for _, n := range []string{"s1", "s2", "hq"} {
		require.NoError(t, g.Heartbeat(n))
	}
	require.NoError(t, g.StartTask("s2"))
	clock.Advance(time.Second)
	require.NoError(t, g.Register(membership.Registration{Name: "s4", Role: "Participant", Capabilities: []string{"transport"}}))

	tests := []struct {
		name    string
		filters []membership.Filter
		want    []string
	}{
		{name: "every member, in joining order", want: []string{"s1", "s2", "s3", "hq", "s4"}},
		{name: "by capability", filters: []membership.Filter{membership.WithCapability("transport")}, want: []string{"s1", "s2", "s4"}},
		{name: "by every capability", filters: []membership.Filter{membership.WithCapability("transport", "storage")}, want: []string{"s1"}},
		{name: "by role", filters: []membership.Filter{membership.WithRole("Initiator")}, want: []string{"hq"}},
		{name: "by health", filters: []membership.Filter{membership.WithHealth(membership.Unknown)}, want: []string{"s3", "s4"}},
		{name: "with room", filters: []membership.Filter{membership.WithRoom(), membership.WithCapability("transport")}, want: []string{"s1", "s4"}},
		{name: "above a priority", filters: []membership.Filter{membership.WithPriorityAbove(3)}, want: []string{"s2", "hq"}},
		{name: "nothing", filters: []membership.Filter{membership.WithCapability("flight")}, want: []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := g.Names(tc.filters...)
			assert.Equal(t, tc.want, got)
		})
	}
	// Available: healthy, with the capability and room.
	assert.Equal(t, []string{"s1"}, g.Available("transport"))
	s3, ok := g.Get("s3")
	require.True(t, ok)
	assert.Equal(t, []string{"storage"}, s3.Capabilities, "sorted, without repeats")
}

func TestRegisterRefuses(t *testing.T) {
	long := strings.Repeat("x", membership.MaxNameBytes+1)
	tests := []struct {
		name string
		reg  membership.Registration
		want error
	}{
		{name: "no name", reg: membership.Registration{}, want: membership.ErrInvalid},
		{name: "long name", reg: membership.Registration{Name: long}, want: membership.ErrInvalid},
		{name: "long role", reg: membership.Registration{Name: "a", Role: long}, want: membership.ErrInvalid},
		{name: "long capability", reg: membership.Registration{Name: "a", Capabilities: []string{long}}, want: membership.ErrInvalid},
		{name: "too many capabilities", reg: membership.Registration{Name: "a", Capabilities: make([]string, membership.MaxCapabilities+1)}, want: membership.ErrInvalid},
		{name: "negative capacity", reg: membership.Registration{Name: "a", Capacity: -1}, want: membership.ErrInvalid},
		{name: "registered", reg: membership.Registration{Name: "bob"}, want: membership.ErrRegistered},
		{name: "full", reg: membership.Registration{Name: "carol"}, want: membership.ErrFull},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, _ := newGroup(t, membership.WithMaxMembers(2))
			require.NoError(t, g.Register(membership.Registration{Name: "alice"}))
			require.NoError(t, g.Register(membership.Registration{Name: "bob"}))
			err := g.Register(tc.reg)
			assert.ErrorIs(t, err, tc.want)
			assert.LessOrEqual(t, len(err.Error()), 200, "a bounded message: %s", err)
			assert.Equal(t, 2, g.Len())
		})
	}
	g, _ := newGroup(t)
	assert.ErrorIs(t, g.Unregister("nobody"), membership.ErrUnknownMember)
	require.NoError(t, g.Register(membership.Registration{Name: "bob"}))
	assert.Error(t, g.Report("bob", membership.Unknown), "a heartbeat cannot report unknown")
}

// A Contract Net with every healthy member that has the capability and
// room for a task.
func ExampleGroup_Available() {
	clock := agent.NewFakeClock(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	g := membership.New(clock)
	for _, r := range []membership.Registration{
		{Name: "truck-1", Role: "Participant", Capabilities: []string{"transport"}, Capacity: 1},
		{Name: "truck-2", Role: "Participant", Capabilities: []string{"transport"}, Capacity: 1},
		{Name: "barn", Role: "Participant", Capabilities: []string{"storage"}},
		{Name: "truck-3", Role: "Participant", Capabilities: []string{"transport"}},
	} {
		_ = g.Register(r)
	}
	_ = g.Heartbeat("truck-1")
	_ = g.Heartbeat("truck-2")
	_ = g.Heartbeat("barn")
	_ = g.StartTask("truck-2") // busy; truck-3 has not sent a heartbeat yet
	req := agent.StartRequest{Policy: "fipa-contract-net", Role: "Initiator", Peers: map[string][]string{"Participant": g.Available("transport")}}
	fmt.Println(req.Peers)
	// Output: map[Participant:[truck-1]]
}

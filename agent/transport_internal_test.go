package agent

import (
	"context"
	"math"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/forms"
)

func TestBusEndpointSendsOnlyAsItsAgent(t *testing.T) {
	bus := NewBus()
	bob, err := NewManager("bob", WithLogger(nil))
	require.NoError(t, err)
	defer bob.Close(context.Background())
	require.NoError(t, bus.Connect(bob))
	mallory := endpoint{bus: bus, self: "mallory"}
	err = mallory.Send(context.Background(), &forms.Message{Performative: "cancel", Sender: "alice", Receivers: []string{"bob"}, ConversationID: "c"})
	assert.ErrorIs(t, err, ErrSender)
	assert.Zero(t, bob.processed(), "nothing reached bob")
}

func TestBusRefusesASecondManagerUnderOneName(t *testing.T) {
	bus := NewBus()
	a, err := NewManager("alice", WithLogger(nil))
	require.NoError(t, err)
	defer a.Close(context.Background())
	b, err := NewManager("alice", WithLogger(nil))
	require.NoError(t, err)
	defer b.Close(context.Background())
	require.NoError(t, bus.Connect(a))
	assert.Error(t, bus.Connect(b))
}

// TestABusSendAllocatesNothingADeliverDoesNot: sending a message on a
// bus costs the sender no allocation beyond what delivering it costs
// (its closure once moved the acknowledging manager to the heap, one
// allocation a message).
func TestABusSendAllocatesNothingADeliverDoesNot(t *testing.T) {
	bus := NewBus()
	alice, err := NewManager("alice", WithLogger(nil))
	require.NoError(t, err)
	defer alice.Close(context.Background())
	bob, err := NewManager("bob", WithLogger(nil), WithWorkers(1))
	require.NoError(t, err)
	defer bob.Close(context.Background())
	require.NoError(t, bus.Connect(alice))
	require.NoError(t, bus.Connect(bob))
	ctx := context.Background()
	// A message of no conversation, which bob reports and drops.
	msg := &forms.Message{Performative: "inform", Sender: "alice", Receivers: []string{"bob"}}
	ep := endpoint{bus: bus, self: "alice"}
	// The least of five rounds each, as fractions: other goroutines'
	// allocations (a timer's) only add to a round, and under the race
	// detector sync.Pool drops a random quarter of what is put back, so a
	// message costs a fraction more than its whole allocations either
	// way. testing.AllocsPerRun rounds that fraction down or up from one
	// round to the next; the regression costs a whole allocation more.
	deliver, send := math.Inf(1), math.Inf(1)
	for range 5 {
		deliver = min(deliver, mallocsPerRun(500, func() {
			_ = bob.Deliver("alice", msg)
			require.NoError(t, bob.Flush(ctx))
		}))
		send = min(send, mallocsPerRun(500, func() {
			_ = ep.Send(ctx, msg)
			require.NoError(t, bob.Flush(ctx))
		}))
	}
	assert.Less(t, send, deliver+0.5, "allocations of a Send; of a Deliver: %.2f", deliver)
}

// mallocsPerRun is testing.AllocsPerRun without rounding the mean down
// to a whole allocation.
func mallocsPerRun(runs int, f func()) float64 {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	f()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return float64(after.Mallocs-before.Mallocs) / float64(runs)
}

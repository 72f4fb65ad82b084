package agent

import (
	"context"
	"math"
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
	// The least of five rounds each: other goroutines' allocations (a
	// timer's, the race detector's) only add to a round.
	deliver, send := math.Inf(1), math.Inf(1)
	for range 5 {
		deliver = min(deliver, testing.AllocsPerRun(200, func() {
			_ = bob.Deliver("alice", msg)
			require.NoError(t, bob.Flush(ctx))
		}))
		send = min(send, testing.AllocsPerRun(200, func() {
			_ = ep.Send(ctx, msg)
			require.NoError(t, bob.Flush(ctx))
		}))
	}
	assert.LessOrEqual(t, send, deliver, "allocations of a Send; of a Deliver: %v", deliver)
}

package agent

import (
	"context"
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

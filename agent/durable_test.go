package agent_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/agent"
)

// keepingStore keeps the outbox entries of every commit as values, as
// store/natskv does, and stores nothing else.
type keepingStore struct {
	mu   sync.Mutex
	sent []agent.OutboxEntry
}

func (s *keepingStore) Load() (*agent.Stored, error) { return &agent.Stored{}, nil }

func (s *keepingStore) Commit(b *agent.Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, b.Send...)
	return nil
}

func (s *keepingStore) Close() error { return nil }

// TestAnAcknowledgementLeavesTheCommittedEntryAsItWas: a store may keep
// the outbox entries a commit hands it; when the receiver acknowledges
// the message later, the entry the store kept still lists its
// receivers. The manager removed the receiver from the entry's Pending
// in place, which the kept entry shared, leaving it an empty name.
func TestAnAcknowledgementLeavesTheCommittedEntryAsItWas(t *testing.T) {
	stores := map[string]*keepingStore{"alice": {}, "bob": {}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bus, managers := newRequestPair(t, ctx, map[string]agent.Store{"alice": stores["alice"], "bob": stores["bob"]})
	conv, err := managers["alice"].Start(ctx, agent.StartRequest{Policy: "fipa-request", Role: "Initiator",
		Peers: map[string][]string{"Participant": {"bob"}}, Data: map[string]any{"action": "x"}})
	require.NoError(t, err)
	outcome, err := managers["alice"].Wait(ctx, conv)
	require.NoError(t, err)
	require.Equal(t, "result", outcome)
	require.NoError(t, bus.Settle(ctx))

	for name, s := range stores {
		s.mu.Lock()
		require.NotEmpty(t, s.sent, name)
		for _, e := range s.sent {
			assert.Equal(t, e.Message.Receivers, e.Pending, "%s's entry %d", name, e.Seq)
		}
		s.mu.Unlock()
	}
}

package agent_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/agent"
)

// TestEachStartIsBoundToItsOwnPeers: a worker reuses the peer binding it
// made for the Start before when the next binds the same agents to the
// same role; a Start that names another agent, or changes the caller's
// slice in place, is bound to the agent it names.
func TestEachStartIsBoundToItsOwnPeers(t *testing.T) {
	w := newWorld(t)
	w.agent("bob", bobOfRequest())
	w.agent("carol", bobOfRequest())
	alice := w.agent("alice", script{"start": {Choice: "request", Content: map[string]any{"action": "x"}, ReplyBy: mt0.Add(time.Minute)}}, agent.WithWorkers(1))
	shared := []string{"bob"}
	tests := []struct {
		name   string
		peers  []string
		change string // what shared[0] becomes before the Start, if not ""
		want   string
	}{
		{"bob", []string{"bob"}, "", "bob"},
		{"bob again", []string{"bob"}, "", "bob"},
		{"carol after bob", []string{"carol"}, "", "carol"},
		{"bob after carol", shared, "", "bob"},
		{"the same slice, changed to carol", shared, "carol", "carol"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.change != "" {
				shared[0] = tt.change
			}
			conv, err := alice.Start(context.Background(), agent.StartRequest{Policy: "fipa-request", Role: "Initiator", Peers: map[string][]string{"Participant": tt.peers}})
			require.NoError(t, err)
			w.settle()
			w.rec.mu.Lock()
			defer w.rec.mu.Unlock()
			var to []string
			for _, m := range w.rec.sent {
				if m.ConversationID == conv && m.Sender == "alice" {
					to = append(to, m.Receivers...)
				}
			}
			assert.Equal(t, []string{tt.want}, to)
		})
	}
}

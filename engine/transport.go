package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/parleyhq/parley/forms"
)

// Transport carries an agent's outbound messages. Send must not block for
// long and must not call back into the sending manager synchronously;
// inbound messages reach a manager through Manager.Deliver.
type Transport interface {
	Send(ctx context.Context, m *forms.Message) error
}

// ErrNoSuchAgent is returned by a Bus asked to deliver to an agent that
// is not connected.
var ErrNoSuchAgent = errors.New("engine: no such agent")

// Bus is an in-process transport for many agents in one process: each
// agent's manager connects to it and messages go straight to the
// receivers' managers. It is safe for concurrent use.
type Bus struct {
	mu     sync.RWMutex
	agents map[string]*Manager
}

// NewBus returns an empty bus.
func NewBus() *Bus { return &Bus{agents: map[string]*Manager{}} }

// Connect attaches m to the bus under its agent name and makes the bus
// its transport.
func (b *Bus) Connect(m *Manager) {
	b.mu.Lock()
	b.agents[m.self] = m
	b.mu.Unlock()
	m.transport = b
}

// Disconnect detaches agent from the bus.
func (b *Bus) Disconnect(agent string) {
	b.mu.Lock()
	delete(b.agents, agent)
	b.mu.Unlock()
}

// Send delivers m to every receiver. A receiver that is not connected is
// an error naming it; the others still get the message.
func (b *Bus) Send(_ context.Context, m *forms.Message) error {
	var missing []string
	b.mu.RLock()
	for _, r := range m.Receivers {
		if mgr, ok := b.agents[r]; ok {
			mgr.Deliver(m)
		} else {
			missing = append(missing, r)
		}
	}
	b.mu.RUnlock()
	if len(missing) > 0 {
		return fmt.Errorf("%w: %v", ErrNoSuchAgent, missing)
	}
	return nil
}

package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policy"
)

// Transport carries an agent's outbound messages. Send gets a context
// that ends after Limits.SendTimeout and should return by then; it runs
// on a sender goroutine of the manager, never on a worker, and a panic in
// it is recovered. An error (or panic) aborts the message's conversation;
// with a store (WithStore) the message stays in the outbox instead, and
// Resume sends it again.
// Inbound messages reach a manager through Manager.Deliver, with the
// sender the transport authenticated.
type Transport interface {
	Send(ctx context.Context, m *forms.Message) error
}

var errNoTransport = errors.New("no transport: connect the manager to a bus or use WithTransport")

// failed reports a message that could not be sent and aborts its
// conversation. It may run on the worker or on its sender.
func (w *worker) failed(conv string, msg *forms.Message, err error) {
	m := w.m
	m.o.logger.Error("send failed", "agent", m.self, "conversation", clipAttr(conv), "performative", clipAttr(msg.Performative), "error", err)
	if m.o.observer != nil {
		m.observe(Observation{Agent: m.self, Conversation: conv, Event: &engine.MessageEvent{At: m.o.clock.Now(), Message: msg}, Err: err})
	}
	if conv != "" {
		_ = w.push(input{kind: inSendFailed, conv: conv, msg: msg, extra: &inputExtra{err: err}}, false) // fails only once closed
	}
}

// Bus is an in-process transport for many agents in one process: each
// agent's manager connects to it and messages go straight to the
// receivers' managers. The bus knows who sends: a manager's messages
// leave under its own name, and a message claiming another sender is
// refused. It is safe for concurrent use.
type Bus struct {
	mu     sync.RWMutex
	agents map[string]*Manager
}

// NewBus returns an empty bus.
func NewBus() *Bus { return &Bus{agents: map[string]*Manager{}} }

// Connect attaches m to the bus under its agent name and makes the bus
// its transport. It fails when another manager is connected under that
// name, or m already has a transport.
func (b *Bus) Connect(m *Manager) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if other, ok := b.agents[m.self]; ok && other != m {
		return fmt.Errorf("agent: bus: another manager is connected as %s", policy.Quote(m.self))
	}
	var t Transport = endpoint{bus: b, self: m.self, stored: m.o.store != nil}
	if !m.transport.CompareAndSwap(nil, &t) {
		return fmt.Errorf("agent: bus: %s already has a transport", policy.Quote(m.self))
	}
	b.agents[m.self] = m
	for _, other := range b.agents {
		other.retrySends() // what failed to reach m may reach it now
	}
	return nil
}

// Disconnect detaches agent from the bus.
func (b *Bus) Disconnect(agent string) {
	b.mu.Lock()
	delete(b.agents, agent)
	b.mu.Unlock()
}

// endpoint is one agent's connection to a bus: what it sends leaves under
// its name. stored says the agent's manager has a store, and so wants
// its messages acknowledged.
type endpoint struct {
	bus    *Bus
	self   string
	stored bool
}

// Send delivers m to every receiver. A message whose Sender is not the
// connected agent is refused; a receiver that is not connected, or that
// refuses the message, is an error naming it, and the others still get
// the message.
func (e endpoint) Send(_ context.Context, m *forms.Message) error {
	if m.Sender != e.self {
		return fmt.Errorf("%w: %s cannot send as %s", ErrSender, policy.Quote(e.self), policy.Quote(m.Sender))
	}
	var errs []error
	b := e.bus
	b.mu.RLock()
	defer b.mu.RUnlock()
	sender := e.acknowledged()
	for _, r := range m.Receivers {
		mgr, ok := b.agents[r]
		if !ok {
			errs = append(errs, fmt.Errorf("%w: %s", ErrNoSuchAgent, policy.Quote(r)))
			continue
		}
		var ack func()
		if sender != nil {
			// The receiver acknowledges once it has applied the message
			// (and committed it, if it has a store of its own).
			ack = func() { sender.Acknowledge(r, m) }
		}
		if err := mgr.DeliverAcked(e.self, m, ack); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", policy.Quote(r), err))
		}
	}
	return errors.Join(errs...)
}

// acknowledged returns the manager that wants the receivers'
// acknowledgements of what e sends: the sender's, while it is connected,
// when it has a store; else nil. e.bus.mu is held.
func (e endpoint) acknowledged() *Manager {
	if !e.stored {
		return nil
	}
	return e.bus.agents[e.self]
}

// Settle waits until every manager on the bus is idle: nothing is
// queued, decided or waiting to be sent, and a round of flushes processed
// nothing new. Tests use it to wait for in-process conversations to come
// to rest.
func (b *Bus) Settle(ctx context.Context) error {
	for {
		b.mu.RLock()
		mgrs := make([]*Manager, 0, len(b.agents))
		for _, m := range b.agents {
			mgrs = append(mgrs, m)
		}
		b.mu.RUnlock()
		var before uint64
		for _, m := range mgrs {
			before += m.processed()
		}
		for _, m := range mgrs {
			if err := m.Flush(ctx); err != nil {
				return err
			}
		}
		var after, flushes uint64
		idle := true
		for _, m := range mgrs {
			after += m.processed()
			flushes += uint64(len(m.workers)) // each flush is one processed input per worker
			idle = idle && m.idle()
		}
		if after-before == flushes && idle {
			return nil
		}
		if !idle {
			time.Sleep(50 * time.Microsecond) // decision logic or a sender is still at work
		}
	}
}

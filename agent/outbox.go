package agent

import (
	"context"
	"fmt"
	"sync"

	"github.com/parleyhq/parley/forms"
)

// outbox sends a worker's messages, in the order the worker produced
// them, on a goroutine of its own, so that a slow transport never stalls
// the worker. A message that fails to send aborts its conversation.
type outbox struct {
	w       *worker
	mu      sync.Mutex
	queue   []outMsg
	spare   []outMsg
	closed  bool
	wake    chan struct{}
	sending bool
}

type outMsg struct {
	conv string // "" for a message of no conversation (not-understood)
	msg  *forms.Message
}

func newOutbox(w *worker) *outbox { return &outbox{w: w, wake: make(chan struct{}, 1)} }

// send queues msg, or fails its conversation when the outbox is full.
func (o *outbox) send(conv string, msg *forms.Message) {
	m := o.w.m
	o.mu.Lock()
	if len(o.queue) >= m.o.limits.MaxOutbox {
		o.mu.Unlock()
		o.w.failed(conv, msg, fmt.Errorf("%d messages wait to be sent: the transport is stalled", m.o.limits.MaxOutbox))
		return
	}
	o.queue = append(o.queue, outMsg{conv: conv, msg: msg})
	o.mu.Unlock()
	m.inflight.Add(1)
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// close lets the sender finish what is queued and stop.
func (o *outbox) close() {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

func (o *outbox) run() {
	m := o.w.m
	defer m.wg.Done()
	for range o.wake {
		for {
			o.mu.Lock()
			batch, closed := o.queue, o.closed
			o.queue, o.spare = o.spare[:0], nil
			o.mu.Unlock()
			if len(batch) == 0 {
				if closed {
					return
				}
				break
			}
			for i := range batch {
				if err := o.deliver(batch[i].msg); err != nil {
					o.w.failed(batch[i].conv, batch[i].msg, err)
				}
				m.inflight.Add(-1)
				batch[i] = outMsg{}
			}
			o.mu.Lock()
			if o.spare == nil {
				o.spare = batch[:0]
			}
			o.mu.Unlock()
		}
	}
}

// deliver sends one message, turning a panic in the transport into an
// error.
func (o *outbox) deliver(msg *forms.Message) (err error) {
	m := o.w.m
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("transport panicked: %s", clipAttr(fmt.Sprint(r)))
		}
	}()
	t := m.transport.Load()
	if t == nil {
		return errNoTransport
	}
	if e, ok := (*t).(endpoint); ok {
		return e.Send(context.Background(), msg) // the Bus never blocks
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.o.limits.SendTimeout)
	defer cancel()
	return (*t).Send(ctx, msg)
}

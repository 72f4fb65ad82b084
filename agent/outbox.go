package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parleyhq/parley/forms"
)

// outbox sends a worker's messages, in the order the worker produced
// them, on a goroutine of its own, so that a slow transport never stalls
// the worker. A message that fails to send aborts its conversation.
type outbox struct {
	w      *worker
	mu     sync.Mutex
	queue  []outMsg
	spare  []outMsg
	closed bool
	// pending counts the messages queued for the sender and not yet
	// sent: the worker sends directly while it is zero.
	pending atomic.Int64
	wake    chan struct{}
	// parked holds, by root conversation, kept messages whose send
	// failed and those of the same conversation queued behind them; only
	// the sender touches it. retry is set when it is time to try again.
	parked  map[string][]outMsg
	nparked atomic.Int64
	retry   bool
	armed   bool
	backoff time.Duration
	// retrying counts the parked messages a retry due holds in
	// Manager.inflight: a parked message does not count otherwise, so
	// that a receiver that is down leaves the bus settled.
	retrying int64
}

type outMsg struct {
	conv string // "" for a message of no conversation (not-understood)
	msg  *forms.Message
	// keep marks a message in the store's outbox: when its send fails,
	// the conversation's later messages wait behind it, and it is sent
	// again.
	keep bool
}

func newOutbox(w *worker) *outbox {
	return &outbox{w: w, wake: make(chan struct{}, 1), parked: map[string][]outMsg{}}
}

// send sends msg, or queues it for the sender, or fails its
// conversation when the outbox is full.
func (o *outbox) send(conv string, msg *forms.Message) {
	if o.direct(conv, msg) {
		return
	}
	o.queueMsg(outMsg{conv: conv, msg: msg})
}

// direct sends msg on the worker when the transport is a Bus, whose Send
// never blocks (it queues the message with each receiver's worker), and
// nothing the worker sent before waits for the sender: the message
// leaves in the same order, without a hand-off to the sender. It reports
// whether it sent (or failed) msg.
func (o *outbox) direct(conv string, msg *forms.Message) bool {
	t := o.w.m.transport.Load()
	if t == nil {
		return false
	}
	if _, ok := (*t).(endpoint); !ok {
		return false
	}
	if o.pending.Load() != 0 {
		return false
	}
	if err := o.deliver(msg); err != nil {
		o.w.failed(conv, msg, err)
	}
	return true
}

func (o *outbox) queueMsg(om outMsg) {
	m := o.w.m
	o.mu.Lock()
	if len(o.queue)+int(o.nparked.Load()) >= m.o.limits.MaxOutbox {
		o.mu.Unlock()
		o.w.failed(om.conv, om.msg, fmt.Errorf("%d messages wait to be sent: the transport is stalled", m.o.limits.MaxOutbox))
		return
	}
	o.queue = append(o.queue, om)
	o.pending.Add(1)
	o.mu.Unlock()
	m.inflight.v.Add(1)
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
			batch, closed, retry, retrying := o.queue, o.closed, o.retry, o.retrying
			if len(batch) > 0 { // an empty queue stays, to be filled again
				o.queue, o.spare = o.spare[:0], nil
			}
			o.retry, o.retrying = false, 0
			o.mu.Unlock()
			if retry && !closed {
				o.armed = false
				o.retryParked()
			}
			m.inflight.v.Add(-retrying)
			if len(batch) == 0 {
				if closed {
					return // the parked messages stay in the store's outbox
				}
				break
			}
			for i := range batch {
				o.sendOne(batch[i])
				batch[i] = outMsg{}
				o.pending.Add(-1)
			}
			o.mu.Lock()
			if o.spare == nil {
				o.spare = batch[:0]
			}
			o.mu.Unlock()
		}
	}
}

// sendOne sends om, or parks it behind an earlier message of its
// conversation that failed.
func (o *outbox) sendOne(om outMsg) {
	m := o.w.m
	root, _, _ := strings.Cut(om.conv, "/")
	defer m.inflight.v.Add(-1)
	if om.keep && len(o.parked[root]) > 0 {
		o.parked[root] = append(o.parked[root], om)
		o.nparked.Add(1)
		return
	}
	err := o.deliver(om.msg)
	if err != nil && om.keep {
		if !errors.Is(err, errNoTransport) { // Resume before Connect: it waits for the transport
			o.w.failed(om.conv, om.msg, err) // reported; it stays in the store's outbox
		}
		o.parked[root] = append(o.parked[root], om)
		o.nparked.Add(1)
		o.scheduleRetry()
		return
	}
	if err != nil {
		o.w.failed(om.conv, om.msg, err)
	}
}

// retryParked sends the parked messages again, each conversation's in
// order, up to the first that fails again.
func (o *outbox) retryParked() {
	for root, q := range o.parked {
		for len(q) > 0 && o.deliver(q[0].msg) == nil {
			q = q[1:]
			o.nparked.Add(-1)
		}
		if len(q) == 0 {
			delete(o.parked, root)
		} else {
			o.parked[root] = q
		}
	}
	if len(o.parked) == 0 {
		o.backoff = 0
		return
	}
	o.scheduleRetry()
}

// retrySends makes the senders try the parked messages again now.
func (m *Manager) retrySends() {
	for _, w := range m.workers {
		w.out.nudge()
	}
}

func (o *outbox) nudge() {
	o.mu.Lock()
	if !o.retry {
		o.retry = true
		o.retrying = o.nparked.Load()
		o.w.m.inflight.v.Add(o.retrying)
	}
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// scheduleRetry wakes the sender to retry the parked messages after a
// backoff that doubles from 50 ms to 5 s.
func (o *outbox) scheduleRetry() {
	if o.armed {
		return
	}
	o.armed = true
	o.backoff = min(max(2*o.backoff, 50*time.Millisecond), 5*time.Second)
	o.w.m.o.clock.AfterFunc(o.backoff, o.nudge)
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

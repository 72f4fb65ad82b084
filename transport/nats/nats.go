// Package nats is an agent.Transport on NATS JetStream, for agents in
// different processes and hosts. Each agent receives on a subject of its
// own through a durable consumer; every message travels on a JetStream
// stream, so it survives the restart of the receiver (and, on file
// storage, of the server), and it is applied exactly once by a receiver
// with a store (agent.WithStore), which drops a redelivered message by
// its agent.MessageID.
//
//	nc, err := nats.Connect(url, nats.MaxReconnects(-1))
//	t, err := natstransport.New(ctx, nc, "alice")
//	m, err := agent.NewManager("alice", agent.WithTransport(t), agent.WithStore(s))
//	// register the policies, m.Resume(ctx), then
//	err = t.Attach(ctx, m)
//
// # Subjects
//
// A message from S to R is published on <prefix>.R.S (prefix
// DefaultPrefix, "parley.msg", WithPrefix), once per receiver. The
// stream (DefaultStream, "PARLEY", WithStream) holds <prefix>.>; agent R
// consumes <prefix>.R.* through the durable consumer "parley-R"
// (WithConsumer). The last token of the subject is the sender: the
// receiver takes the sender from there, never from the payload, and a
// message whose payload names another sender is refused. With NATS users
// and publish permissions (agent S may publish only on <prefix>.*.S) the
// server refuses a process that claims another agent's name; docs/nats.md
// has the configuration. Agent names are 1 to 128 ASCII letters, digits,
// '-' and '_'.
//
// # Acknowledgements
//
// Send returns once JetStream has stored the message for every receiver
// (its publish acknowledgement), and then acknowledges it to the sending
// manager (agent.Manager.Acknowledge): the stream holds it from there.
// The receiver acknowledges the JetStream message only after its manager
// has applied it and committed its effect (agent.Manager.DeliverAcked),
// so a receiver that dies before its commit gets the message again, from
// the server, when it or its replacement comes back. A stream message is
// one Parley message as JSON, or a batch of them as a JSON array (from a
// pipelined sender, WithPipelining): the receiver acknowledges a batch
// once every message of it is applied and committed, and its store drops
// those of a batch delivered again that it had applied. Publishes carry a
// Nats-Msg-Id made from the receiver and the sender and reply-with of
// each message they hold, so a message or batch published again within
// the stream's duplicate window is stored once.
//
// # Limits
//
// Everything a peer can make a receiver spend is bounded (Limits): the
// size of one message (the stream refuses a larger one, and a receiver
// terminates one larger than its own limit without reading it), the
// messages of one batch (a receiver terminates a larger batch), the
// stream messages one sender may have waiting for one receiver (the
// stream refuses more, and the sender keeps them in its outbox to send
// again), the bytes of the whole stream, and the stream messages
// delivered to a receiver and not yet acknowledged.
package nats

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	natsio "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/internal/natsname"
	"github.com/parleyhq/parley/policy"
)

// Defaults of the names the transport uses.
const (
	// DefaultPrefix is the first tokens of every message subject.
	DefaultPrefix = "parley.msg"
	// DefaultStream is the stream that holds the messages.
	DefaultStream = "PARLEY"
	// ConsumerPrefix starts the default durable consumer name of an
	// agent: "parley-" and the agent's name.
	ConsumerPrefix = "parley-"
)

// Limits bound what peers can make a transport and its stream spend. A
// zero field keeps its default (DefaultLimits).
type Limits struct {
	// MaxMessageBytes is the largest stream message, encoded with its
	// headers, that the stream stores and a receiver reads: Send refuses
	// a message of more than MaxMessageBytes less 128 bytes. Default 1 MiB
	// (the NATS server's default max_payload).
	MaxMessageBytes int
	// MaxPerSender is the most stream messages (each a message, or a
	// batch of up to MaxBatch) one sender may have stored and not yet
	// acknowledged by one receiver; the stream refuses more (Send fails
	// and the message stays in the sender's outbox). Default 10,000.
	MaxPerSender int64
	// MaxStreamBytes bounds the stream; when full it refuses new
	// messages. Default 1 GiB.
	MaxStreamBytes int64
	// MaxPending is the most stream messages delivered to the receiver
	// and not yet acknowledged (the consumer's max ack pending, and the
	// client's buffer). Default 1,024.
	MaxPending int
	// MaxPendingBytes bounds the bytes of the messages the client
	// buffers for the receiver, and those of the batches, partly applied,
	// it keeps for a busy manager. Default 64 MiB.
	MaxPendingBytes int
	// AckWait is how long the server waits for a receiver's
	// acknowledgement before it delivers the message again. Default 30 s.
	AckWait time.Duration
	// MaxInFlight is the most pipelined messages (WithPipelining) waiting
	// for the stream's acknowledgement; Send waits for a free slot until
	// its context ends. Default 4,096.
	MaxInFlight int
	// Redeliver is how long a receiver whose manager is busy
	// (agent.ErrBusy) or not yet resumed has the server wait before
	// delivering a message again or, for a batch partly applied, waits
	// before handing the manager its rest. Default 1 s.
	Redeliver time.Duration
	// MaxBatch is the most messages a pipelined sender publishes to one
	// receiver as one stream message, and the most a receiver reads from
	// one; a receiver drops a larger batch. Default 64.
	MaxBatch int
}

// DefaultLimits are the limits New uses unless WithLimits says otherwise.
var DefaultLimits = Limits{
	MaxMessageBytes: 1 << 20,
	MaxPerSender:    10_000,
	MaxStreamBytes:  1 << 30,
	MaxPending:      1024,
	MaxPendingBytes: 64 << 20,
	AckWait:         30 * time.Second,
	MaxInFlight:     4096,
	Redeliver:       time.Second,
	MaxBatch:        64,
}

// Option configures New.
type Option func(*options)

type options struct {
	prefix, stream, consumer string
	noSetup, pipeline        bool
	limits                   Limits
	fence                    <-chan struct{}
	logger                   *slog.Logger
}

// WithPrefix sets the subject prefix (default DefaultPrefix): one or
// more tokens, without wildcards.
func WithPrefix(p string) Option { return func(o *options) { o.prefix = p } }

// WithStream sets the stream's name (default DefaultStream).
func WithStream(name string) Option { return func(o *options) { o.stream = name } }

// WithConsumer sets the agent's durable consumer name (default
// ConsumerPrefix and the agent's name).
func WithConsumer(name string) Option { return func(o *options) { o.consumer = name } }

// WithoutSetup makes New use the stream as it is, without creating it;
// for users whose permissions do not allow creating streams.
func WithoutSetup() Option { return func(o *options) { o.noSetup = true } }

// WithLimits sets the limits; a zero (or negative) field keeps its
// default.
func WithLimits(l Limits) Option {
	return func(o *options) {
		d := &o.limits
		keep(&d.MaxMessageBytes, l.MaxMessageBytes)
		keep(&d.MaxPerSender, l.MaxPerSender)
		keep(&d.MaxStreamBytes, l.MaxStreamBytes)
		keep(&d.MaxPending, l.MaxPending)
		keep(&d.MaxPendingBytes, l.MaxPendingBytes)
		keep(&d.AckWait, l.AckWait)
		keep(&d.MaxInFlight, l.MaxInFlight)
		keep(&d.Redeliver, l.Redeliver)
		keep(&d.MaxBatch, l.MaxBatch)
	}
}

// keep sets *dst to v when v is positive.
func keep[T int | int64 | time.Duration](dst *T, v T) {
	if v > 0 {
		*dst = v
	}
}

// WithPipelining makes Send return once the message is queued, without
// waiting for the stream to store it, so that a manager's sender does not
// wait one round trip per message. A copy queued for a receiver with no
// publish in flight is published at once; the copies queued while one is
// in flight wait for it, unless they fill a batch, and go in one publish,
// as one stream message (a JSON array of up to Limits.MaxBatch messages
// and Limits.MaxMessageBytes bytes), so that the stream stores, delivers
// and removes one message for many. A goroutine per publish
// waits for the stream's acknowledgement, publishes again (with backoff,
// until the transport closes) what the stream did not store, and only
// then acknowledges each copy to the manager. A conversation's messages
// still reach the stream in order: a message is queued only once the
// previous one of its conversation is stored. Send fails only when
// Limits.MaxInFlight messages wait for the server. Without a store a
// message the server refuses for good (a deleted stream) is never
// reported to the manager; its conversation's timers end it.
func WithPipelining() Option { return func(o *options) { o.pipeline = true } }

// WithFence stops the transport when done is closed: it sends nothing
// more, acknowledges nothing more and stops consuming, so that the
// messages it holds go to the agent's next owner. natskv.Store.Lost is
// such a channel: hand it here so that a process that lost the agent's
// ownership does not acknowledge what it can no longer commit.
func WithFence(done <-chan struct{}) Option { return func(o *options) { o.fence = done } }

// WithLogger sets the logger (default: none).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// ErrFenced is returned by Send once the fence (WithFence) is closed.
var ErrFenced = errors.New("nats: the agent's ownership is lost")

// Transport is one agent's connection to NATS. It is safe for concurrent
// use.
type Transport struct {
	self string
	o    options
	nc   *natsio.Conn
	js   jetstream.JetStream
	cons jetstream.Consumer
	mgr  atomic.Pointer[agent.Manager]
	mu   sync.Mutex
	cc   jetstream.ConsumeContext
	// roots holds, by root conversation, the pipelined messages not yet
	// stored, oldest first: only the oldest's copies are queued for their
	// receivers. queues holds the copies waiting for each receiver.
	// slots bounds the pipelined messages.
	pmu    sync.Mutex
	roots  map[string][]pending
	queues map[string]*outQueue
	slots  chan struct{}
	// held is the bytes of the batches kept for a busy manager.
	held  atomic.Int64
	stop  chan struct{}
	stopO sync.Once
}

var _ agent.Transport = (*Transport)(nil)

// New connects agent self to NATS through nc: it creates the stream when
// it does not exist (unless WithoutSetup) and the agent's durable
// consumer. Messages are not consumed before Attach.
func New(ctx context.Context, nc *natsio.Conn, self string, opts ...Option) (*Transport, error) {
	if err := natsname.Check(self); err != nil {
		return nil, fmt.Errorf("nats: %w", err)
	}
	o := options{prefix: DefaultPrefix, stream: DefaultStream, consumer: ConsumerPrefix + self, limits: DefaultLimits, logger: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(&o)
	}
	if o.prefix == "" || strings.ContainsAny(o.prefix, "*> \t") || strings.HasPrefix(o.prefix, ".") || strings.HasSuffix(o.prefix, ".") {
		return nil, fmt.Errorf("nats: subject prefix %s: want tokens without wildcards", policy.Quote(o.prefix))
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("nats: %w", err)
	}
	t := &Transport{self: self, o: o, nc: nc, js: js, stop: make(chan struct{}), roots: map[string][]pending{}, queues: map[string]*outQueue{}, slots: make(chan struct{}, o.limits.MaxInFlight)}
	if !o.noSetup {
		if err := t.setupStream(ctx); err != nil {
			return nil, err
		}
	}
	t.cons, err = js.CreateOrUpdateConsumer(ctx, o.stream, jetstream.ConsumerConfig{
		Durable:       o.consumer,
		FilterSubject: o.prefix + "." + self + ".*",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       o.limits.AckWait,
		MaxAckPending: o.limits.MaxPending,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("nats: consumer %s on stream %s: %w", policy.Quote(o.consumer), policy.Quote(o.stream), err)
	}
	if o.fence != nil {
		go func() {
			select {
			case <-o.fence:
				t.Close()
			case <-t.stop:
			}
		}()
	}
	return t, nil
}

// StreamConfig is the configuration New gives the stream it creates:
// work-queue retention (a message is removed once its receiver
// acknowledges it), file storage, and new messages refused, not old ones
// dropped, when a limit is reached.
func StreamConfig(name, prefix string, l Limits) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:                 name,
		Subjects:             []string{prefix + ".>"},
		Retention:            jetstream.WorkQueuePolicy,
		Storage:              jetstream.FileStorage,
		Discard:              jetstream.DiscardNew,
		DiscardNewPerSubject: true,
		MaxMsgsPerSubject:    l.MaxPerSender,
		MaxBytes:             l.MaxStreamBytes,
		MaxMsgSize:           int32(min(l.MaxMessageBytes, 1<<31-1)),
		Duplicates:           2 * time.Minute,
	}
}

func (t *Transport) setupStream(ctx context.Context) error {
	_, err := t.js.Stream(ctx, t.o.stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		_, err = t.js.CreateStream(ctx, StreamConfig(t.o.stream, t.o.prefix, t.o.limits))
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			err = nil // another agent created it at the same moment
		}
	}
	if err != nil {
		return fmt.Errorf("nats: stream %s: %w", policy.Quote(t.o.stream), err)
	}
	return nil
}

// Attach starts consuming the agent's messages into m, which must be the
// manager of the agent the transport was made for, with the transport as
// its transport. Call it after m.Resume: until then m refuses messages
// and they are delivered again later.
func (t *Transport) Attach(ctx context.Context, m *agent.Manager) error {
	if m.Name() != t.self {
		return fmt.Errorf("nats: attach: the transport is %s's, the manager %s's", policy.Quote(t.self), policy.Quote(m.Name()))
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cc != nil {
		return errors.New("nats: attach: already attached")
	}
	select {
	case <-t.stop:
		return ErrFenced
	default:
	}
	t.mgr.Store(m)
	cc, err := t.cons.Consume(t.handle,
		jetstream.PullMaxMessagesWithBytesLimit(t.o.limits.MaxPending, max(t.o.limits.MaxPendingBytes, t.o.limits.MaxMessageBytes)),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			t.o.logger.Debug("nats consume", "agent", t.self, "error", err)
		}))
	if err != nil {
		return fmt.Errorf("nats: consume: %w", err)
	}
	t.cc = cc
	return nil
}

// Close stops consuming; messages not yet acknowledged are delivered
// again, to this agent's next consumer. Send fails after Close.
func (t *Transport) Close() {
	t.stopO.Do(func() { close(t.stop) })
	t.mu.Lock()
	cc := t.cc
	t.mu.Unlock()
	if cc != nil {
		cc.Stop()
	}
}

// stopped reports whether the transport is closed or its fence is: the
// fence is read directly, so an acknowledgement given right after the
// commit that lost the ownership is never sent.
func (t *Transport) stopped() bool {
	select {
	case <-t.stop:
		return true
	case <-t.o.fence:
		return true
	default:
		return false
	}
}

// handle hands the messages of one delivery to the manager: one
// message, or a batch of them (a JSON array, from a pipelined sender).
// It acknowledges the delivery once the manager has applied, and
// committed, every one.
func (t *Transport) handle(msg jetstream.Msg) {
	sender, ok := strings.CutPrefix(msg.Subject(), t.o.prefix+"."+t.self+".")
	if !ok || natsname.Check(sender) != nil {
		t.drop(msg, "a subject that names no sender")
		return
	}
	data := msg.Data()
	if len(data) > t.o.limits.MaxMessageBytes {
		t.drop(msg, fmt.Sprintf("%d bytes, over the limit of %d", len(data), t.o.limits.MaxMessageBytes))
		return
	}
	d := &delivery{t: t, msg: msg, sender: sender}
	if trimmed := bytes.TrimLeft(data, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '[' {
		if why := d.decodeBatch(trimmed); why != "" {
			t.drop(msg, why)
			return
		}
	} else {
		d.msgs = make([]forms.Message, 1)
		d.bad = []error{json.Unmarshal(data, &d.msgs[0])}
	}
	d.left.Store(int64(len(d.msgs)))
	d.run()
}

// decodeBatch decodes a batch, at once when every message of it is one,
// and otherwise each message by itself, so that only those that are not
// are dropped. It returns why the batch is dropped whole, or "".
func (d *delivery) decodeBatch(data []byte) string {
	most := d.t.o.limits.MaxBatch
	if err := json.Unmarshal(data, &d.msgs); err != nil {
		var raws []json.RawMessage
		if err := json.Unmarshal(data, &raws); err != nil {
			return "not a batch of messages: " + policy.Quote(err.Error())
		}
		if len(raws) > most {
			return fmt.Sprintf("a batch of %d messages, over the limit of %d (Limits.MaxBatch)", len(raws), most)
		}
		d.msgs = make([]forms.Message, len(raws))
		d.bad = make([]error, len(raws))
		for i, raw := range raws {
			d.bad[i] = json.Unmarshal(raw, &d.msgs[i])
		}
	}
	if len(d.msgs) == 0 || len(d.msgs) > most {
		return fmt.Sprintf("a batch of %d messages, want 1 to %d (Limits.MaxBatch)", len(d.msgs), most)
	}
	return ""
}

// delivery is one JetStream message being handed to the manager: its
// messages from next on are not handed yet, left are not yet applied.
type delivery struct {
	t      *Transport
	msg    jetstream.Msg
	sender string
	msgs   []forms.Message
	bad    []error // when not nil, why msgs[i] could not be decoded
	next   int
	left   atomic.Int64
	// kept is set while the delivery counts in Transport.held.
	kept bool
}

// applied counts one message of the delivery as applied (or refused for
// good) and acknowledges the delivery after the last.
func (d *delivery) applied() {
	if d.left.Add(-1) == 0 && !d.t.stopped() {
		_ = d.msg.Ack() // a lost ack is a redelivery, and the store drops the duplicates
	}
}

// run hands the delivery's messages to the manager from next on. When
// the manager is busy (agent.ErrBusy) or not yet resumed before it took
// any, the server delivers the message again after Limits.Redeliver. A
// batch it has taken part of is kept instead, so that its part is not
// applied twice (a receiver without a store would), and its rest handed
// again after Redeliver, the server told that the delivery is in
// progress: on a timer while the batches kept fit in
// Limits.MaxPendingBytes, and otherwise on the consumer's goroutine,
// which stops the agent's deliveries meanwhile.
func (d *delivery) run() {
	t := d.t
	m := t.mgr.Load()
	size := int64(len(d.msg.Data()))
	later := false
	defer func() {
		if !later && d.kept { // once later, d is the timer's
			t.held.Add(-size)
			d.kept = false
		}
	}()
	for d.next < len(d.msgs) {
		if t.stopped() {
			_ = d.msg.Nak() // delivered again, to the agent's next consumer
			return
		}
		if d.bad != nil && d.bad[d.next] != nil {
			d.refused("not a message: " + policy.Quote(d.bad[d.next].Error()))
			d.next++
			continue
		}
		fm := d.msgs[d.next] // the manager keeps it: not the whole batch
		err := m.DeliverAcked(d.sender, &fm, d.applied)
		switch {
		case err == nil:
		case errors.Is(err, agent.ErrBusy), errors.Is(err, agent.ErrNotResumed):
			if d.next == 0 {
				_ = d.msg.NakWithDelay(t.o.limits.Redeliver)
				return
			}
			_ = d.msg.InProgress()
			if !d.kept {
				if t.held.Add(size) > int64(t.o.limits.MaxPendingBytes) {
					t.held.Add(-size)
					select {
					case <-time.After(t.o.limits.Redeliver):
					case <-t.stop:
					}
					continue // the same message again
				}
				d.kept = true
			}
			later = true
			time.AfterFunc(t.o.limits.Redeliver, d.run)
			return
		case errors.Is(err, agent.ErrClosed):
			return // not acknowledged: delivered again after AckWait
		default:
			d.refused(err.Error()) // the manager refused it: sending it again changes nothing
		}
		d.next++
	}
}

// refused drops the delivery's current message: a message alone is
// terminated, one of a batch is counted as applied.
func (d *delivery) refused(why string) {
	if len(d.msgs) == 1 {
		d.t.drop(d.msg, why)
		return
	}
	d.t.o.logger.Warn("nats: message dropped", "agent", d.t.self, "subject", clip(d.msg.Subject()), "index", d.next, "reason", why)
	d.applied()
}

func (t *Transport) drop(msg jetstream.Msg, why string) {
	t.o.logger.Warn("nats: message dropped", "agent", t.self, "subject", clip(msg.Subject()), "reason", why)
	_ = msg.Term()
}

// Send publishes m once per receiver, on <prefix>.<receiver>.<sender>,
// and returns when JetStream has stored every copy or ctx ends. Each
// receiver whose copy is stored is acknowledged to the manager; an error
// names the receivers that were not. A message whose Sender is not the
// transport's agent is refused (agent.ErrSender).
func (t *Transport) Send(ctx context.Context, m *forms.Message) error {
	if m.Sender != t.self {
		return fmt.Errorf("%w: %s cannot send as %s", agent.ErrSender, policy.Quote(t.self), policy.Quote(m.Sender))
	}
	if t.stopped() {
		return ErrFenced
	}
	data, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("nats: encode: %w", err)
	}
	if len(data) > t.maxBatchBytes() {
		return fmt.Errorf("nats: message of %d bytes, over the limit of %d (and %d for headers)", len(data), t.maxBatchBytes(), headerRoom)
	}
	id := agent.MessageID(m)
	var errs []error
	var to []string
	for _, r := range m.Receivers {
		if err := natsname.Check(r); err != nil {
			errs = append(errs, fmt.Errorf("%w: %w", agent.ErrNoSuchAgent, err))
			continue
		}
		to = append(to, r)
	}
	if t.o.pipeline {
		return errors.Join(append(errs, t.pipelined(ctx, &outMsg{m: m, id: id, data: data}, to))...)
	}
	futs := make([]jetstream.PubAckFuture, len(to))
	perrs := make([]error, len(to))
	for i, r := range to {
		futs[i], perrs[i] = t.js.PublishMsgAsync(t.natsMsg(r, data, msgID(r, id)))
	}
	mgr := t.mgr.Load()
	for i, r := range to {
		err := perrs[i]
		if err == nil {
			select {
			case <-futs[i].Ok():
				if mgr != nil {
					mgr.Acknowledge(r, m)
				}
			case err = <-futs[i].Err():
			case <-ctx.Done():
				err = ctx.Err()
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("nats: send to %s: %w", policy.Quote(r), err))
		}
	}
	return errors.Join(errs...)
}

// natsMsg is the publish of data to receiver, with Nats-Msg-Id id when
// id is not empty.
func (t *Transport) natsMsg(receiver string, data []byte, id string) *natsio.Msg {
	nm := &natsio.Msg{Subject: t.o.prefix + "." + receiver + "." + t.self, Data: data}
	if id != "" {
		nm.Header = natsio.Header{jetstream.MsgIDHeader: []string{id}}
	}
	return nm
}

// outMsg is a pipelined message: its encoding, its agent.MessageID, and
// how many of its copies are not yet stored.
type outMsg struct {
	m    *forms.Message
	id   string
	data []byte
	root string
	left int
}

// outCopy is one receiver's copy of a pipelined message.
type outCopy struct {
	msg *outMsg
	to  string
}

// outQueue holds the copies waiting for one receiver, and their bytes
// encoded, while publishes of earlier ones to it are in flight.
type outQueue struct {
	to       string
	waiting  []outCopy
	bytes    int
	inflight int
}

// pipelined queues m's copies behind the previous message of its root
// conversation and returns: a copy is published once that message is
// stored, in one batch with the other copies waiting for the same
// receiver.
func (t *Transport) pipelined(ctx context.Context, om *outMsg, to []string) error {
	if len(to) == 0 {
		return nil
	}
	om.root, _, _ = strings.Cut(om.m.ConversationID, "/")
	om.left = len(to)
	select {
	case t.slots <- struct{}{}:
	case <-t.stop:
		return ErrFenced
	case <-ctx.Done():
		return fmt.Errorf("nats: %d messages waiting for the server: %w", cap(t.slots), ctx.Err())
	}
	t.pmu.Lock()
	q := t.roots[om.root]
	t.roots[om.root] = append(q, pending{om, to})
	var flush []*outQueue
	if len(q) == 0 {
		flush = t.release(om, to, nil)
	}
	t.pmu.Unlock()
	for _, q := range flush {
		t.flush(q)
	}
	return nil
}

// pending is a message waiting behind its root conversation's previous
// message, and its receivers.
type pending struct {
	msg *outMsg
	to  []string
}

// release queues om's copies for their receivers and appends their
// queues to flush. t.pmu is held.
func (t *Transport) release(om *outMsg, to []string, flush []*outQueue) []*outQueue {
	for _, r := range to {
		q := t.queues[r]
		if q == nil {
			q = &outQueue{to: r}
			t.queues[r] = q
		}
		q.waiting = append(q.waiting, outCopy{msg: om, to: r})
		q.bytes += len(om.data) + 1
		flush = append(flush, q)
	}
	return flush
}

// ready reports whether the copies waiting for q's receiver are to be
// published now: none is in flight, or they fill a batch. A receiver's
// copies thus wait for its publish in flight unless they are many, and
// go together. t.pmu is held.
func (t *Transport) ready(q *outQueue) bool {
	return len(q.waiting) > 0 && (q.inflight == 0 || len(q.waiting) >= t.o.limits.MaxBatch || q.bytes >= t.maxBatchBytes())
}

// maxBatchBytes is the most bytes of a batch: a stream message holds its
// headers too.
func (t *Transport) maxBatchBytes() int { return t.o.limits.MaxMessageBytes - headerRoom }

// headerRoom is the room left in a stream message for its headers.
const headerRoom = 128

// flush publishes the copies waiting for q's receiver while they are
// ready, at most Limits.MaxBatch and maxBatchBytes at a time, each batch
// waited for by a goroutine of its own.
func (t *Transport) flush(q *outQueue) {
	for {
		t.pmu.Lock()
		if !t.ready(q) {
			t.pmu.Unlock()
			return
		}
		n, size := 0, 1
		for n < len(q.waiting) && n < t.o.limits.MaxBatch {
			if size += len(q.waiting[n].msg.data) + 1; n > 0 && size > t.maxBatchBytes() {
				size -= len(q.waiting[n].msg.data) + 1
				break
			}
			n++
		}
		batch := q.waiting[:n:n]
		q.waiting = q.waiting[n:]
		q.bytes -= size - 1
		q.inflight++
		t.pmu.Unlock()
		go t.settle(q, batch)
	}
}

// settle publishes batch, waits until the stream has stored it
// (publishing it again, with backoff, when it did not), acknowledges
// each copy to the manager and releases the messages it completes and
// the next batch of q. It gives up only when the transport stops or
// its connection is closed.
func (t *Transport) settle(q *outQueue, batch []outCopy) {
	nm := t.batchMsg(q.to, batch)
	fut, err := t.js.PublishMsgAsync(nm)
	stored := false
	if err == nil {
		timer := time.NewTimer(publishWait)
		select {
		case <-fut.Ok():
			stored = true
		case <-fut.Err():
		case <-timer.C:
		case <-t.stop:
		}
		timer.Stop()
	}
	for wait := 50 * time.Millisecond; !stored && !t.stopped() && !t.nc.IsClosed(); wait = min(2*wait, time.Second) {
		ctx, cancel := context.WithTimeout(context.Background(), publishWait)
		_, err := t.js.PublishMsg(ctx, nm)
		cancel()
		if stored = err == nil; !stored {
			t.o.logger.Debug("nats: publish failed, again", "agent", t.self, "to", q.to, "error", err)
			select {
			case <-time.After(wait):
			case <-t.stop:
			}
		}
	}
	if !stored {
		return
	}
	mgr := t.mgr.Load()
	var flush []*outQueue
	t.pmu.Lock()
	if q.inflight--; q.inflight == 0 && len(q.waiting) == 0 {
		delete(t.queues, q.to)
	}
	for _, c := range batch {
		if c.msg.left--; c.msg.left > 0 {
			continue
		}
		<-t.slots
		rq := t.roots[c.msg.root][1:]
		if len(rq) == 0 {
			delete(t.roots, c.msg.root)
			continue
		}
		t.roots[c.msg.root] = rq
		flush = t.release(rq[0].msg, rq[0].to, flush)
	}
	t.pmu.Unlock()
	if mgr != nil {
		for _, c := range batch {
			mgr.Acknowledge(c.to, c.msg.m)
		}
	}
	t.flush(q)
	for _, q := range flush {
		t.flush(q)
	}
}

// batchMsg is the publish of batch to receiver: the message itself when
// it is alone, a JSON array of the messages otherwise. Its Nats-Msg-Id
// is made from its messages', so that the batch published again is
// stored once; a batch holding a message without an id has none.
func (t *Transport) batchMsg(receiver string, batch []outCopy) *natsio.Msg {
	if len(batch) == 1 {
		return t.natsMsg(receiver, batch[0].msg.data, msgID(receiver, batch[0].msg.id))
	}
	size := 1
	ids := make([]string, 0, len(batch))
	for _, c := range batch {
		size += len(c.msg.data) + 1
		if c.msg.id != "" {
			ids = append(ids, c.msg.id)
		}
	}
	data := append(make([]byte, 0, size), '[')
	for i, c := range batch {
		if i > 0 {
			data = append(data, ',')
		}
		data = append(data, c.msg.data...)
	}
	data = append(data, ']')
	id := ""
	if len(ids) == len(batch) {
		id = msgID(receiver, ids...)
	}
	return t.natsMsg(receiver, data, id)
}

// publishWait bounds the wait for one publish acknowledgement before a
// pipelined copy is published again (the stream stores it once, by its
// Nats-Msg-Id).
const publishWait = 5 * time.Second

// msgID is the Nats-Msg-Id of receiver's copy of the messages of ids
// (agent.MessageID): bounded, whatever the length of the senders'
// reply-with; "" when ids is one empty id.
func msgID(receiver string, ids ...string) string {
	if len(ids) == 1 && ids[0] == "" {
		return ""
	}
	h := sha256.New()
	for _, id := range ids {
		_, _ = io.WriteString(h, id+"\x00")
	}
	_, _ = io.WriteString(h, receiver)
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

func clip(s string) string {
	if len(s) <= policy.MaxQuoted {
		return s
	}
	return policy.Quote(s)
}

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
// the server, when it or its replacement comes back. Publishes carry a
// Nats-Msg-Id made from the sender, reply-with and receiver, so a message
// sent again within the stream's duplicate window is stored once.
//
// # Limits
//
// Everything a peer can make a receiver spend is bounded (Limits): the
// size of one message (the stream refuses a larger one, and a receiver
// terminates one larger than its own limit without reading it), the
// messages one sender may have waiting for one receiver (the stream
// refuses more, and the sender keeps them in its outbox to send again),
// the bytes of the whole stream, and the messages delivered to a
// receiver and not yet acknowledged.
package nats

import (
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
	// MaxMessageBytes is the largest message, encoded, that the stream
	// stores and a receiver reads. Default 1 MiB (the NATS server's
	// default max_payload).
	MaxMessageBytes int
	// MaxPerSender is the most messages one sender may have stored and
	// not yet acknowledged by one receiver; the stream refuses more
	// (Send fails and the message stays in the sender's outbox). Default
	// 10,000.
	MaxPerSender int64
	// MaxStreamBytes bounds the stream; when full it refuses new
	// messages. Default 1 GiB.
	MaxStreamBytes int64
	// MaxPending is the most messages delivered to the receiver and not
	// yet acknowledged (the consumer's max ack pending, and the client's
	// buffer). Default 1,024.
	MaxPending int
	// MaxPendingBytes bounds the bytes of the messages the client
	// buffers for the receiver. Default 64 MiB.
	MaxPendingBytes int
	// AckWait is how long the server waits for a receiver's
	// acknowledgement before it delivers the message again. Default 30 s.
	AckWait time.Duration
	// MaxInFlight is the most pipelined messages (WithPipelining) waiting
	// for the stream's acknowledgement; Send waits for a free slot until
	// its context ends. Default 4,096.
	MaxInFlight int
	// Redeliver is how long a receiver that is busy (agent.ErrBusy) or not
	// yet resumed asks the server to wait before delivering a message
	// again. Default 1 s.
	Redeliver time.Duration
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
	}
}

// keep sets *dst to v when v is positive.
func keep[T int | int64 | time.Duration](dst *T, v T) {
	if v > 0 {
		*dst = v
	}
}

// WithPipelining makes Send return once the message is handed to the
// connection, without waiting for the stream to store it, so that a
// manager's sender does not wait one round trip per message: a goroutine
// waits for the stream's acknowledgement, publishes again (with backoff,
// until the transport closes) what the stream did not store, and only
// then acknowledges the message to the manager. A conversation's messages
// still reach the stream in order: a message is published only once the
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
	// pending maps a root conversation to the settling of its last
	// pipelined message; slots bounds the pipelined messages.
	pmu     sync.Mutex
	pending map[string]chan struct{}
	slots   chan struct{}
	stop    chan struct{}
	stopO   sync.Once
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
	t := &Transport{self: self, o: o, nc: nc, js: js, stop: make(chan struct{}), pending: map[string]chan struct{}{}, slots: make(chan struct{}, o.limits.MaxInFlight)}
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

// handle hands one delivered message to the manager.
func (t *Transport) handle(msg jetstream.Msg) {
	if t.stopped() {
		_ = msg.Nak() // delivered again, to the agent's next consumer
		return
	}
	m := t.mgr.Load()
	sender, ok := strings.CutPrefix(msg.Subject(), t.o.prefix+"."+t.self+".")
	if !ok || natsname.Check(sender) != nil {
		t.drop(msg, "a subject that names no sender")
		return
	}
	if len(msg.Data()) > t.o.limits.MaxMessageBytes {
		t.drop(msg, fmt.Sprintf("%d bytes, over the limit of %d", len(msg.Data()), t.o.limits.MaxMessageBytes))
		return
	}
	var fm forms.Message
	if err := json.Unmarshal(msg.Data(), &fm); err != nil {
		t.drop(msg, "not a message: "+policy.Quote(err.Error()))
		return
	}
	err := m.DeliverAcked(sender, &fm, func() {
		if !t.stopped() {
			_ = msg.Ack() // a lost ack is a redelivery, and the store drops the duplicate
		}
	})
	switch {
	case err == nil:
	case errors.Is(err, agent.ErrBusy), errors.Is(err, agent.ErrNotResumed):
		_ = msg.NakWithDelay(t.o.limits.Redeliver)
	case errors.Is(err, agent.ErrClosed):
		// not acknowledged: delivered again after AckWait
	default:
		t.drop(msg, err.Error()) // the manager refused it: sending it again changes nothing
	}
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
	if len(data) > t.o.limits.MaxMessageBytes {
		return fmt.Errorf("nats: message of %d bytes, over the limit of %d", len(data), t.o.limits.MaxMessageBytes)
	}
	id := agent.MessageID(m)
	var errs []error
	var copies []outCopy
	for _, r := range m.Receivers {
		if err := natsname.Check(r); err != nil {
			errs = append(errs, fmt.Errorf("%w: %w", agent.ErrNoSuchAgent, err))
			continue
		}
		c := outCopy{to: r, msg: &natsio.Msg{Subject: t.o.prefix + "." + r + "." + t.self, Data: data}}
		if id != "" {
			c.opts = []jetstream.PublishOpt{jetstream.WithMsgID(msgID(id, r))}
		}
		copies = append(copies, c)
	}
	if !t.o.pipeline {
		for i := range copies {
			copies[i].fut, copies[i].err = t.js.PublishMsgAsync(copies[i].msg, copies[i].opts...)
		}
		mgr := t.mgr.Load()
		for _, c := range copies {
			err := c.err
			if err == nil {
				select {
				case <-c.fut.Ok():
					if mgr != nil {
						mgr.Acknowledge(c.to, m)
					}
				case err = <-c.fut.Err():
				case <-ctx.Done():
					err = ctx.Err()
				}
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("nats: send to %s: %w", policy.Quote(c.to), err))
			}
		}
		return errors.Join(errs...)
	}
	return errors.Join(append(errs, t.pipelined(ctx, m, copies))...)
}

// outCopy is one receiver's copy of a message being sent.
type outCopy struct {
	to   string
	msg  *natsio.Msg
	opts []jetstream.PublishOpt
	fut  jetstream.PubAckFuture
	err  error
}

// pipelined publishes m's copies without waiting for their
// acknowledgements, once the previous message of m's conversation is
// stored: a goroutine waits for them, publishes again what the stream
// did not store, and acknowledges each copy to the manager once stored.
func (t *Transport) pipelined(ctx context.Context, m *forms.Message, copies []outCopy) error {
	root, _, _ := strings.Cut(m.ConversationID, "/")
	select {
	case t.slots <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("nats: %d messages waiting for the server: %w", cap(t.slots), ctx.Err())
	}
	t.pmu.Lock()
	prev := t.pending[root]
	done := make(chan struct{})
	t.pending[root] = done
	t.pmu.Unlock()
	go t.settle(m, root, prev, done, copies)
	return nil
}

// settle publishes copies after prev is settled, waits until the stream
// has stored every one (publishing again, with backoff, what it did not
// store) and acknowledges each to the manager. It gives up only when
// the transport stops or its connection is closed.
func (t *Transport) settle(m *forms.Message, root string, prev, done chan struct{}, copies []outCopy) {
	defer func() {
		t.pmu.Lock()
		if t.pending[root] == done {
			delete(t.pending, root)
		}
		t.pmu.Unlock()
		close(done)
		<-t.slots
	}()
	if prev != nil {
		select {
		case <-prev:
		case <-t.stop:
			return
		}
	}
	for i := range copies {
		copies[i].fut, copies[i].err = t.js.PublishMsgAsync(copies[i].msg, copies[i].opts...)
	}
	mgr := t.mgr.Load()
	for _, c := range copies {
		stored := false
		if c.err == nil {
			timer := time.NewTimer(publishWait)
			select {
			case <-c.fut.Ok():
				stored = true
			case <-c.fut.Err():
			case <-timer.C:
			case <-t.stop:
			}
			timer.Stop()
		}
		for wait := 50 * time.Millisecond; !stored && !t.stopped() && !t.nc.IsClosed(); wait = min(2*wait, time.Second) {
			ctx, cancel := context.WithTimeout(context.Background(), publishWait)
			_, err := t.js.PublishMsg(ctx, c.msg, c.opts...)
			cancel()
			if stored = err == nil; !stored {
				t.o.logger.Debug("nats: publish failed, again", "agent", t.self, "to", c.to, "error", err)
				select {
				case <-time.After(wait):
				case <-t.stop:
				}
			}
		}
		if stored && mgr != nil {
			mgr.Acknowledge(c.to, m)
		}
	}
}

// publishWait bounds the wait for one publish acknowledgement before a
// pipelined copy is published again (the stream stores it once, by its
// Nats-Msg-Id).
const publishWait = 5 * time.Second

// msgID is the Nats-Msg-Id of id's copy for receiver: bounded, whatever
// the length of the sender's reply-with.
func msgID(id, receiver string) string {
	h := sha256.New()
	_, _ = io.WriteString(h, id)
	_, _ = io.WriteString(h, "\x00"+receiver)
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

func clip(s string) string {
	if len(s) <= policy.MaxQuoted {
		return s
	}
	return policy.Quote(s)
}

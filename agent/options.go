package agent

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policy"
)

// Option configures NewManager.
type Option func(*options)

type options struct {
	clock           Clock
	transport       Transport
	decider         decision.Decider
	async           func(DecisionRequest)
	logger          *slog.Logger
	observer        func(Observation)
	journal         Journal
	journalReceived bool
	retention       time.Duration
	workers         int
	notUnderstood   bool
	resolve         policy.Resolver
	setup           *policy.Policy
	limits          Limits
	store           Store
	errs            []error
}

func (o *options) fail(format string, args ...any) {
	o.errs = append(o.errs, fmt.Errorf(format, args...))
}

// Limits bound what peers and plug-ins can make a manager spend. Every
// limit applies per manager; a zero field keeps its default.
type Limits struct {
	// MaxQueue is the most inputs (delivered messages and starts) one
	// worker holds before Deliver and Start refuse with ErrBusy. Default
	// 65,536 per worker.
	MaxQueue int
	// MaxConversations is the most conversations the manager holds at
	// once, ended ones within their retention included. A message that
	// would open one more is refused (PE014) and Start returns
	// ErrLimit. Default 1,000,000.
	MaxConversations int
	// MaxPerPeer is the most live conversations one peer may have opened
	// with this agent; one more is refused (PE014). Default 10,000.
	MaxPerPeer int
	// MaxField is the most bytes of each string of a delivered message's
	// envelope: its performative, sender, every receiver, reply-to,
	// conversation id, reply-with, in-reply-to, protocol, language,
	// encoding and ontology. A message beyond it is refused at Deliver
	// with ErrEnvelope (reported as PE015), and Start refuses an ID
	// beyond it. A store keys conversations by their ids: the default,
	// 1,024, keeps every id well within what store/bolt accepts (32 KiB).
	MaxField int
	// MaxEnvelope is the most bytes all the strings of a delivered
	// message's envelope hold together, its receivers included; a message
	// beyond it is refused at Deliver with ErrEnvelope (reported as
	// PE015). Default 1 MiB (1,048,576 bytes), room for a call for
	// proposals to tens of thousands of receivers.
	MaxEnvelope int
	// Content bounds the content of a delivered message (nesting depth,
	// nodes, bytes; non-finite numbers are always refused): a message
	// beyond it is refused at Deliver with ErrContent. Default
	// forms.DefaultLimits.
	Content forms.Limits
	// DecisionTimeout bounds how long a Decider (and the async hand-off)
	// may take to answer; after it the conversation is aborted. Default
	// 30 s.
	DecisionTimeout time.Duration
	// SendTimeout is the deadline of the context each Transport.Send
	// gets. Default 10 s.
	SendTimeout time.Duration
	// MaxOutbox is the most messages waiting to be sent per worker; a
	// message beyond it fails to send (the transport is stalled), which
	// aborts its conversation. Default 65,536 per worker.
	MaxOutbox int
	// RetryInterval is how long, with a store, a message waits for its
	// receivers' acknowledgement before it is sent again (and again each
	// interval while it stays unacknowledged, until its conversation is
	// swept). Default 5 s.
	RetryInterval time.Duration
}

// DefaultLimits are the limits NewManager uses unless WithLimits says
// otherwise.
var DefaultLimits = Limits{
	MaxQueue:         1 << 16,
	MaxConversations: 1_000_000,
	MaxPerPeer:       10_000,
	MaxField:         1 << 10,
	MaxEnvelope:      1 << 20,
	Content:          forms.DefaultLimits,
	DecisionTimeout:  30 * time.Second,
	SendTimeout:      10 * time.Second,
	MaxOutbox:        1 << 16,
	RetryInterval:    5 * time.Second,
}

// WithLimits replaces DefaultLimits; zero fields keep their default, and
// a negative one is an error.
func WithLimits(l Limits) Option {
	return func(o *options) {
		set := func(name string, dst *int, v int) {
			switch {
			case v < 0:
				o.fail("agent: WithLimits: %s is %d, not positive", name, v)
			case v > 0:
				*dst = v
			}
		}
		set("MaxQueue", &o.limits.MaxQueue, l.MaxQueue)
		set("MaxConversations", &o.limits.MaxConversations, l.MaxConversations)
		set("MaxPerPeer", &o.limits.MaxPerPeer, l.MaxPerPeer)
		set("MaxOutbox", &o.limits.MaxOutbox, l.MaxOutbox)
		set("MaxField", &o.limits.MaxField, l.MaxField)
		set("MaxEnvelope", &o.limits.MaxEnvelope, l.MaxEnvelope)
		for _, d := range []struct {
			name string
			dst  *time.Duration
			v    time.Duration
		}{{"DecisionTimeout", &o.limits.DecisionTimeout, l.DecisionTimeout}, {"SendTimeout", &o.limits.SendTimeout, l.SendTimeout}, {"RetryInterval", &o.limits.RetryInterval, l.RetryInterval}} {
			switch {
			case d.v < 0:
				o.fail("agent: WithLimits: %s is %s, not positive", d.name, d.v)
			case d.v > 0:
				*d.dst = d.v
			}
		}
		if l.Content != (forms.Limits{}) {
			o.limits.Content = l.Content
		}
	}
}

// WithClock sets the clock (RealClock by default).
func WithClock(c Clock) Option {
	return func(o *options) {
		if c == nil {
			o.fail("agent: WithClock: nil clock")
		}
		o.clock = c
	}
}

// WithTransport sets the transport outbound messages leave by. Bus.Connect
// sets one too.
func WithTransport(t Transport) Option { return func(o *options) { o.transport = t } }

// WithDecider sets the decision logic asked at every decision point. It
// runs on a goroutine of its own, with a context that ends after
// Limits.DecisionTimeout; the request it gets is its own copy (vars and
// sessions are copied, content is shared and read-only). Decide
// expressions bound in the policy decide the points it returns
// decision.ErrNoDecision for.
func WithDecider(d decision.Decider) Option { return func(o *options) { o.decider = d } }

// WithAsyncDecisions hands every decision no decider takes to f, and the
// application answers later with Answer. f is called on the goroutine the
// decider ran on; a decision still unanswered after
// Limits.DecisionTimeout aborts its conversation.
func WithAsyncDecisions(f func(DecisionRequest)) Option {
	return func(o *options) { o.async = f }
}

// WithLogger sets the logger (slog.Default by default; nil discards).
// Every record carries the agent, conversation id, policy, role and
// state.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l == nil {
			l = slog.New(slog.DiscardHandler)
		}
		o.logger = l
	}
}

// WithObserver calls f with every input and output event of every
// conversation, from the manager's worker goroutines; f must be safe for
// concurrent use and quick. A panic in f is recovered and logged.
func WithObserver(f func(Observation)) Option { return func(o *options) { o.observer = f } }

// WithJournal records every message the manager sends, and with
// received also every message it receives, in j; a TimerJournal also
// gets every timer that fires.
func WithJournal(j Journal, received bool) Option {
	return func(o *options) { o.journal, o.journalReceived = j, received }
}

// WithRetention keeps ended conversations this long (1 minute by
// default), so late messages get "conversation ended" rather than
// "unknown conversation"; a sweep removes them afterwards, oldest
// first. Zero keeps them until Close. An ended conversation is kept as a
// small tombstone, without its handler, unless the handler is needed to
// tell a late message what it would (see docs/runtime.md).
func WithRetention(d time.Duration) Option {
	return func(o *options) {
		if d < 0 {
			o.fail("agent: WithRetention: %s is negative", d)
		}
		o.retention = d
	}
}

// WithWorkers sets the number of worker goroutines (GOMAXPROCS by
// default). Each conversation belongs to one worker, so its events are
// processed one at a time and in order; conversations of different
// workers are processed in parallel.
func WithWorkers(n int) Option {
	return func(o *options) {
		if n < 1 {
			o.fail("agent: WithWorkers: %d workers, need at least 1", n)
		}
		o.workers = n
	}
}

// WithNotUnderstood makes the manager answer a message that reaches no
// conversation, and cannot start one, with a not-understood.
func WithNotUnderstood() Option { return func(o *options) { o.notUnderstood = true } }

// WithSetup makes the manager take part in the conversation-setup policy
// (setup must be that policy, such as policies.Load("conversation-setup")):
// as the responder it accepts a proposed conversation when it registered
// the policy with the proposed role as a responder, and then accepts that
// conversation's messages under the agreed id even without a protocol;
// as the caller it is driven by Setup. NewManager fails when setup does
// not compile or does not have the shape Setup needs.
func WithSetup(setup *policy.Policy) Option {
	return func(o *options) {
		if setup == nil {
			o.fail("agent: WithSetup: nil policy")
		}
		o.setup = setup
	}
}

// WithResolver resolves child policies by name (policies.Resolve for the
// shipped ones). Register refuses a policy that runs a child policy the
// resolver does not find.
func WithResolver(resolve policy.Resolver) Option { return func(o *options) { o.resolve = resolve } }

func newOptions(opts []Option) (options, error) {
	o := options{
		clock: RealClock(), logger: slog.Default(), retention: time.Minute,
		workers: runtime.GOMAXPROCS(0), limits: DefaultLimits,
	}
	for _, opt := range opts {
		opt(&o)
	}
	return o, errors.Join(o.errs...)
}

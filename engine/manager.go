package engine

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policy"
)

// Journal records the messages a manager sends (and, if asked, receives),
// one per call. trace.Writer is one: it writes the JSON Lines trace format
// that cpvalidate trace checks.
type Journal interface {
	Write(at time.Time, m *forms.Message) error
}

// Observation is one event a manager saw, for observers (tests, metrics).
// The event is valid only during the observer call, except for the
// Message of a MessageEvent, which the observer may keep (but not modify).
type Observation struct {
	Agent        string
	Conversation string
	Policy       string
	Role         string
	// Input is true for events fed to a handler, false for its outputs.
	Input bool
	Event Event
	// Err is set for a message the transport failed to send (Event is the
	// MessageEvent), a decider that failed (Event is the DecisionEvent),
	// and a message that reached no conversation (Event is a
	// ProtocolErrorEvent).
	Err error
}

// DecisionRequest is a decision handed to the application to answer
// asynchronously with Manager.Answer.
type DecisionRequest struct {
	Conversation string
	Ticket       uint64
	Request      decision.Request
}

// ManagerOption configures NewManager.
type ManagerOption func(*Manager)

// WithClock sets the clock (RealClock by default).
func WithClock(c Clock) ManagerOption { return func(m *Manager) { m.clock = c } }

// WithTransport sets the transport outbound messages leave by; Bus.Connect
// sets it too.
func WithTransport(t Transport) ManagerOption { return func(m *Manager) { m.transport = t } }

// WithDecider sets the decision logic called synchronously at every
// decision point. Decide expressions bound in a policy decide the points
// it returns decision.ErrNoDecision for.
func WithDecider(d decision.Decider) ManagerOption { return func(m *Manager) { m.decider = d } }

// WithAsyncDecisions hands every decision no decider takes to f, which
// must return quickly; the application answers later with Answer.
func WithAsyncDecisions(f func(DecisionRequest)) ManagerOption {
	return func(m *Manager) { m.async = f }
}

// WithLogger sets the logger (slog.Default by default). Every record
// carries the conversation id, policy, role and state.
func WithLogger(l *slog.Logger) ManagerOption { return func(m *Manager) { m.logger = l } }

// WithObserver calls f with every input and output event of every
// conversation, from the manager's worker goroutines; f must be safe for
// concurrent use and quick.
func WithObserver(f func(Observation)) ManagerOption { return func(m *Manager) { m.observer = f } }

// WithJournal records every message the manager sends, and with received
// also every message it receives, in j.
func WithJournal(j Journal, received bool) ManagerOption {
	return func(m *Manager) { m.journal, m.journalReceived = j, received }
}

// WithRetention keeps ended conversations this long (1 minute by
// default), so late messages get "conversation ended" rather than
// "unknown conversation"; a sweep removes them afterwards.
func WithRetention(d time.Duration) ManagerOption { return func(m *Manager) { m.retention = d } }

// WithWorkers sets the number of worker goroutines (GOMAXPROCS by
// default). Each conversation belongs to one worker, so its events are
// processed one at a time and in order; conversations of different
// workers are processed in parallel.
func WithWorkers(n int) ManagerOption { return func(m *Manager) { m.workers = n } }

// WithNotUnderstood makes the manager answer a message that reaches no
// conversation, and cannot start one, with a not-understood.
func WithNotUnderstood() ManagerOption { return func(m *Manager) { m.notUnderstood = true } }

// WithSetup makes the manager take part in the conversation-setup policy
// (setup must be that policy, such as policies.Load("conversation-setup")):
// as Responder it accepts a proposed conversation when it registered the
// policy with the proposed role as a responder, and then accepts that
// conversation's messages under the agreed id even without a protocol;
// as Caller it is driven by Setup.
func WithSetup(setup *policy.Policy) ManagerOption {
	return func(m *Manager) { m.setup = setup }
}

// WithResolver resolves child policies by name (policies.Resolve for the
// shipped ones).
func WithResolver(resolve policy.Resolver) ManagerOption {
	return func(m *Manager) { m.resolve = resolve }
}

// Manager is the ConversationManager: it hosts one agent's conversations.
// It starts conversations (Start) and accepts new ones when a message
// arrives for a policy the agent registered, routes inbound messages by
// conversation id (and, inside a handler, by session), runs child
// policies, owns time (a Clock) and I/O (a Transport), calls decision
// logic, and keeps ended conversations for a while so late messages are
// recognised.
//
// A Manager is safe for concurrent use. It runs a fixed set of worker
// goroutines, not one per conversation: a conversation's events are
// processed one at a time, different conversations in parallel. Close it
// when done.
type Manager struct {
	self            string
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

	mu       sync.RWMutex
	programs map[[2]string]*Program
	bound    map[string]decision.Decider
	// responders maps a policy to the program this agent accepts new
	// conversations of it with: the role that receives its first message.
	responders map[string]*Program
	// agreed maps conversation ids agreed through conversation-setup to
	// the program to run them with.
	agreed map[string]*Program

	ctx    context.Context
	cancel context.CancelFunc
	seed   maphash.Seed
	shards []*shard
	seq    atomic.Uint64
	wg     sync.WaitGroup
	closed atomic.Bool
	sweep  ClockTimer
	sweepM sync.Mutex
}

// NewManager returns a manager for agent self and starts its workers.
func NewManager(self string, opts ...ManagerOption) *Manager {
	m := &Manager{
		self: self, clock: RealClock(), logger: slog.Default(), retention: time.Minute,
		workers: runtime.GOMAXPROCS(0), programs: map[[2]string]*Program{},
		bound: map[string]decision.Decider{}, responders: map[string]*Program{}, agreed: map[string]*Program{},
		seed: maphash.MakeSeed(),
	}
	for _, opt := range opts {
		opt(m)
	}
	if m.setup != nil {
		if err := m.Register(m.setup); err != nil {
			m.logger.Error("conversation-setup does not compile", "error", err)
			m.setup = nil
		}
	}
	if m.logger == nil {
		m.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	m.workers = max(1, m.workers)
	m.ctx, m.cancel = context.WithCancel(context.Background())
	for range m.workers {
		s := &shard{m: m, wake: make(chan struct{}, 1), convs: map[string]*conversation{}}
		m.shards = append(m.shards, s)
		m.wg.Add(1)
		go s.run()
	}
	m.scheduleSweep()
	return m
}

// Name returns the manager's agent name.
func (m *Manager) Name() string { return m.self }

// Register compiles p for each of roles (every role of p when none are
// given) so the agent can start conversations in them, and accept new
// conversations in the role that receives p's first message.
func (m *Manager) Register(p *policy.Policy, roles ...string) error {
	if len(roles) == 0 {
		for _, r := range p.Roles {
			roles = append(roles, r.Name)
		}
	}
	var copts []CompileOption
	if m.resolve != nil {
		copts = append(copts, WithPolicies(m.resolve))
	}
	bound, err := decision.FromPolicy(p)
	if err != nil {
		return err
	}
	compiled := map[string]*Program{}
	for _, r := range roles {
		prog, ds := Compile(p, r, copts...)
		if prog == nil {
			return fmt.Errorf("engine: register %s as %s: %w", p.Name, r, ds.Err())
		}
		compiled[r] = prog
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.bound[p.Name] = bound
	for r, prog := range compiled {
		m.programs[[2]string{p.Name, r}] = prog
		if prog.respondsFirst() {
			m.responders[p.Name] = prog
		}
	}
	return nil
}

// opens reports whether m is a message that starts a conversation of this
// program: one its initial state accepts.
func (pr *Program) opens(m *forms.Message) bool {
	for _, t := range pr.states[pr.initial].recvs {
		if pr.msgs[t.msg].form.Matches(m) {
			return true
		}
	}
	return false
}

// respondsFirst reports whether the program's role receives (rather than
// sends) the policy's first message, so it can accept new conversations.
func (pr *Program) respondsFirst() bool {
	st := &pr.states[pr.initial]
	return len(st.recvs) > 0 && len(st.sends) == 0
}

func (m *Manager) program(policyName, role string) (*Program, error) {
	m.mu.RLock()
	prog := m.programs[[2]string{policyName, role}]
	m.mu.RUnlock()
	if prog != nil {
		return prog, nil
	}
	if m.resolve == nil {
		return nil, fmt.Errorf("engine: %s cannot play %s in %s: register the policy first", m.self, role, policyName)
	}
	p := m.resolve(policyName)
	if p == nil {
		return nil, fmt.Errorf("engine: unknown policy %q", policyName)
	}
	if err := m.Register(p, role); err != nil {
		return nil, err
	}
	return m.program(policyName, role)
}

// Start starts a conversation of policyName in which this agent plays
// role, with peers mapping the other roles to agents (a many role to
// several). data is the content the first decision sees. It returns the
// new conversation's id once the conversation exists.
func (m *Manager) Start(ctx context.Context, policyName, role string, peers map[string][]string, data map[string]any) (string, error) {
	if m.closed.Load() {
		return "", ErrClosed
	}
	return m.startAs(ctx, m.newID(), policyName, role, peers, data)
}

func (m *Manager) newID() string { return m.self + "-" + strconv.FormatUint(m.seq.Add(1), 36) }

// startAs starts a conversation under a given id.
func (m *Manager) startAs(ctx context.Context, id, policyName, role string, peers map[string][]string, data map[string]any) (string, error) {
	prog, err := m.program(policyName, role)
	if err != nil {
		return "", err
	}
	done := make(chan error, 1)
	m.shardOf(id).push(input{kind: inStart, conv: id, extra: &inputExtra{start: &startReq{prog: prog, peers: peers, data: data, done: done}}})
	select {
	case err := <-done:
		return id, err
	case <-ctx.Done():
		return id, ctx.Err()
	}
}

// ErrClosed is returned by a manager that has been closed.
var ErrClosed = errors.New("engine: manager closed")

// ErrNoConversation is returned for a conversation the manager does not
// hold (never had, or swept after its retention).
var ErrNoConversation = errors.New("engine: no such conversation")

// Deliver hands the manager an inbound message (transports call it). The
// manager keeps m; the sender must not modify it afterwards.
func (m *Manager) Deliver(msg *forms.Message) {
	if m.closed.Load() {
		return
	}
	key := msg.ConversationID
	if key == "" {
		key = msg.Sender
	}
	m.shardOf(key).push(input{kind: inMessage, conv: msg.ConversationID, msg: msg})
}

// Answer answers a decision handed out by WithAsyncDecisions.
func (m *Manager) Answer(conversation string, ticket uint64, a decision.Answer) {
	if m.closed.Load() {
		return
	}
	m.shardOf(conversation).push(input{kind: inAnswer, conv: conversation, ticket: ticket, extra: &inputExtra{answer: a}})
}

// Wait blocks until the conversation ends and returns its outcome.
func (m *Manager) Wait(ctx context.Context, conversation string) (string, error) {
	ch := make(chan waitResult, 1)
	m.shardOf(conversation).push(input{kind: inWait, conv: conversation, extra: &inputExtra{wait: ch}})
	select {
	case r := <-ch:
		return r.outcome, r.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// Status describes one conversation the manager holds.
type Status struct {
	Conversation string
	Policy       string
	Role         string
	Done         bool
	Outcome      string
	// States maps each session's peer ("" for a single session) to its
	// state.
	States map[string]string
}

// Status reports on a conversation the manager holds.
func (m *Manager) Status(ctx context.Context, conversation string) (Status, error) {
	ch := make(chan statusResult, 1)
	m.shardOf(conversation).push(input{kind: inStatus, conv: conversation, extra: &inputExtra{status: ch}})
	select {
	case r := <-ch:
		return r.status, r.err
	case <-ctx.Done():
		return Status{}, ctx.Err()
	}
}

// Len returns the number of conversations the manager holds, ended ones
// within their retention included.
func (m *Manager) Len() int {
	n := 0
	for _, s := range m.shards {
		n += int(s.count.Load())
	}
	return n
}

// Flush waits until the manager has processed everything delivered to it
// before the call.
func (m *Manager) Flush(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, s := range m.shards {
		wg.Add(1)
		s.push(input{kind: inFlush, extra: &inputExtra{flush: wg.Done}})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// processed returns the number of inputs the manager has processed.
func (m *Manager) processed() uint64 {
	var n uint64
	for _, s := range m.shards {
		n += s.processed.Load()
	}
	return n
}

// Close stops the workers and every pending timer. Conversations are
// dropped; inputs after Close are ignored.
func (m *Manager) Close() {
	if m.closed.Swap(true) {
		return
	}
	m.cancel()
	m.sweepM.Lock()
	if m.sweep != nil {
		m.sweep.Stop()
	}
	m.sweepM.Unlock()
	for _, s := range m.shards {
		s.push(input{kind: inStop})
	}
	m.wg.Wait()
}

func (m *Manager) shardOf(conversation string) *shard {
	root, _, _ := strings.Cut(conversation, "/")
	return m.shards[maphash.String(m.seed, root)%uint64(len(m.shards))]
}

func (m *Manager) scheduleSweep() {
	if m.retention <= 0 {
		return
	}
	m.sweepM.Lock()
	defer m.sweepM.Unlock()
	if m.closed.Load() {
		return
	}
	m.sweep = m.clock.AfterFunc(m.retention/2, func() {
		for _, s := range m.shards {
			s.push(input{kind: inSweep})
		}
		m.scheduleSweep()
	})
}

// Settle waits until every manager on the bus is idle: nothing is queued
// and a round of flushes processed nothing new. Tests use it to wait for
// in-process conversations to come to rest.
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
		var after uint64
		for _, m := range mgrs {
			after += m.processed()
		}
		// Each flush is itself one processed input per shard.
		var flushes uint64
		for _, m := range mgrs {
			flushes += uint64(len(m.shards))
		}
		if after-before == flushes {
			return nil
		}
	}
}

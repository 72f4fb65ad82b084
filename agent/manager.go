package agent

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"maps"
	"math/bits"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policy"
)

// Journal records the messages a manager sends (and, if asked,
// receives), one per call. trace.Writer is one: it writes the JSON Lines
// trace format that cpvalidate trace checks.
type Journal interface {
	Write(at time.Time, m *forms.Message) error
}

// TimerJournal is a Journal that also records the timers that fire, so
// that a conversation a timeout ended is seen to be complete. The manager
// uses WriteTimer when its journal has it.
type TimerJournal interface {
	Journal
	// WriteTimer records that agent's timer fired in conversation.
	WriteTimer(at time.Time, agent, conversation, timer string) error
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
	Event engine.Event
	// Err is set for a message the transport failed to send (Event is the
	// MessageEvent), decision logic that failed (Event is the
	// DecisionEvent), and a message the manager refused or that reached no
	// conversation (Event is a ProtocolErrorEvent).
	Err error
}

// DecisionRequest is a decision handed to the application to answer
// asynchronously with Manager.Answer.
type DecisionRequest struct {
	Conversation string
	Ticket       uint64
	Request      decision.Request
}

// StartRequest says which conversation Start starts.
type StartRequest struct {
	// Policy and Role: the registered policy and the role this agent
	// plays in it.
	Policy string
	Role   string
	// Peers maps the other roles to the agents playing them (a many role
	// to several).
	Peers map[string][]string
	// Data is the content the first decision sees.
	Data map[string]any
	// ID is the conversation id; empty for a fresh unguessable one. An id
	// the caller chooses must be unique, and should be unguessable: a peer
	// that knows it first could open a conversation under it.
	ID string
}

// Manager hosts one agent's conversations. It starts conversations
// (Start) and accepts new ones when a message arrives for a policy the
// agent registered, routes inbound messages by conversation id (and,
// inside a handler, by session), runs child policies, owns time (a Clock)
// and I/O (a Transport), calls decision logic, and keeps ended
// conversations for a while so late messages are recognised.
//
// A Manager is safe for concurrent use. It runs a fixed set of worker
// goroutines, not one per conversation: a conversation's events are
// processed one at a time, different conversations in parallel. Decision
// logic runs off the workers and messages leave through one sender
// goroutine per worker, so a slow or stuck plug-in never stalls other
// conversations (on a Bus, whose Send never blocks, a worker with
// nothing waiting for its sender hands its messages to the receivers
// itself). A worker hands the decisions of each batch of its inputs to
// a goroutine of the decision pool at once, which takes them one after
// the other; a decision that waits behind decision logic that has not
// returned gets a goroutine of its own within 2 ms. Close it when done;
// every call after Close returns ErrClosed.
type Manager struct {
	self string
	o    options
	// transport is set once, by WithTransport or Bus.Connect.
	transport atomic.Pointer[Transport]

	// mu serialises Register and guards agreed. reg is what Register
	// registered, replaced whole by each Register, so that the workers
	// read it without a lock.
	mu  sync.Mutex
	reg atomic.Pointer[registry]
	// agreed maps conversation ids agreed through conversation-setup to
	// the program to run them with and the peer that agreed; nagreed is
	// its size, read without the lock.
	agreed  map[string]agreement
	nagreed atomic.Int64
	setup   *setupNames

	// opened counts the live conversations each peer opened here.
	peersMu sync.Mutex
	opened  map[string]int

	seed    maphash.Seed
	workers []*worker
	// total counts the conversations held, inflight the decisions running
	// and messages waiting to be sent. Both are written from every core,
	// each on a cache line of its own, so that a write does not take from
	// the other cores the line of the fields every call reads (closed,
	// resumed).
	total    padded[atomic.Int64]
	inflight padded[atomic.Int64]
	seq      atomic.Uint64 // outbox entries
	commit   *committer
	deciders *pool
	wg       sync.WaitGroup
	closed   atomic.Bool
	// resumed is false while the store holds what Resume has not loaded;
	// loaded is what NewManager found there.
	resumed atomic.Bool
	loaded  *Stored
	loadErr error
	sweep   ClockTimer
	sweepM  sync.Mutex
}

// padded holds v between two cache lines (64 bytes) of padding, so that
// no other field shares v's line.
type padded[T any] struct {
	_ [cacheLine]byte
	v T
	_ [cacheLine]byte
}

const cacheLine = 64

type agreement struct {
	prog *engine.Program
	peer string
}

// registry is what Register registered. It is never changed once
// published: Register publishes a new one.
type registry struct {
	programs map[[2]string]*engine.Program
	bound    map[string]decision.Decider
	// responders maps a policy to the program this agent accepts new
	// conversations of it with: the role that receives its first message.
	responders map[string]*engine.Program
}

// NewManager returns a manager for agent self and starts its workers. It
// fails for an empty name or a bad option.
func NewManager(self string, opts ...Option) (*Manager, error) {
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	if self == "" {
		return nil, errors.New("agent: NewManager: empty agent name")
	}
	m := &Manager{
		self: self, o: o, agreed: map[string]agreement{},
		opened: map[string]int{}, seed: maphash.MakeSeed(),
	}
	m.reg.Store(&registry{programs: map[[2]string]*engine.Program{}, bound: map[string]decision.Decider{}, responders: map[string]*engine.Program{}})
	if o.transport != nil {
		m.transport.Store(&o.transport)
	}
	if o.setup != nil {
		names, err := setupNamesOf(o.setup)
		if err != nil {
			return nil, err
		}
		if err := m.Register(o.setup); err != nil {
			return nil, fmt.Errorf("agent: WithSetup: %w", err)
		}
		m.setup = names
	}
	if o.store != nil {
		m.commit = newCommitter(o.store)
		m.loaded, m.loadErr = o.store.Load()
		m.resumed.Store(m.loadErr == nil && len(m.loaded.Conversations) == 0 && len(m.loaded.Outbox) == 0)
	} else {
		m.resumed.Store(true)
	}
	m.deciders = newPool(&m.inflight.v)
	for range o.workers {
		w := newWorker(m)
		m.workers = append(m.workers, w)
		m.wg.Add(2)
		go w.run()
		go w.out.run()
	}
	m.scheduleSweep()
	return m, nil
}

// Name returns the manager's agent name.
func (m *Manager) Name() string { return m.self }

// Register compiles p for each of roles (every role of p when none are
// given) so the agent can start conversations in them, and accept new
// conversations in the role that receives p's first message. It refuses
// a policy with errors from loading or checking, or whose child policies
// the resolver (WithResolver) does not find; the error holds the
// diagnostics.
func (m *Manager) Register(p *policy.Policy, roles ...string) error {
	if m.closed.Load() {
		return ErrClosed
	}
	var copts []engine.CompileOption
	if m.o.resolve != nil {
		copts = append(copts, engine.WithPolicies(m.o.resolve))
	}
	c, ds := engine.Check(p, copts...)
	if c == nil {
		return fmt.Errorf("agent: register %s: %w", policyName(p), ds.Err())
	}
	if len(roles) == 0 {
		roles = c.Roles()
	}
	compiled := map[string]*engine.Program{}
	for _, r := range roles {
		prog, err := c.Program(r)
		if err != nil {
			return fmt.Errorf("agent: register %s as %s: %w", p.Name, r, err)
		}
		compiled[r] = prog
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.reg.Load()
	reg := &registry{programs: maps.Clone(old.programs), bound: maps.Clone(old.bound), responders: maps.Clone(old.responders)}
	reg.bound[p.Name] = c.Decider()
	for r, prog := range compiled {
		reg.programs[[2]string{p.Name, r}] = prog
		if prog.RespondsFirst() {
			reg.responders[p.Name] = prog
		}
	}
	m.reg.Store(reg)
	return nil
}

func policyName(p *policy.Policy) string {
	if p == nil {
		return "<nil policy>"
	}
	return policy.Quote(p.Name)
}

func (m *Manager) program(policyName, role string) (*engine.Program, error) {
	prog := m.reg.Load().programs[[2]string{policyName, role}]
	if prog != nil {
		return prog, nil
	}
	if m.o.resolve == nil {
		return nil, fmt.Errorf("agent: %s cannot play %s in %s: register the policy first", m.self, policy.Quote(role), policy.Quote(policyName))
	}
	p := m.o.resolve(policyName)
	if p == nil {
		return nil, fmt.Errorf("agent: unknown policy %s", policy.Quote(policyName))
	}
	if err := m.Register(p, role); err != nil {
		return nil, err
	}
	return m.program(policyName, role)
}

// Start starts a conversation and returns its id once the conversation
// exists and has taken its first step; with a store (WithStore), once
// that step is committed, so that a conversation Start returned survives
// a crash.
func (m *Manager) Start(ctx context.Context, r StartRequest) (string, error) {
	if m.closed.Load() {
		return "", ErrClosed
	}
	if !m.resumed.Load() {
		return "", ErrNotResumed
	}
	prog, err := m.program(r.Policy, r.Role)
	if err != nil {
		return "", err
	}
	if prog.ManyRole() != "" && len(r.Peers[prog.ManyRole()]) == 0 {
		return "", fmt.Errorf("agent: start %s: name the %s agents in Peers", r.Policy, prog.ManyRole())
	}
	if err := forms.CheckContent(r.Data, m.o.limits.Content); err != nil {
		return "", fmt.Errorf("agent: start %s: data: %w", r.Policy, err)
	}
	if len(r.ID) > m.o.limits.MaxField {
		return "", fmt.Errorf("agent: start %s: the id is %d bytes, more than Limits.MaxField (%d)", r.Policy, len(r.ID), m.o.limits.MaxField)
	}
	id, fresh := r.ID, r.ID == ""
	if fresh {
		id = newID(m.self)
	}
	sc := startCalls.Get().(*startCall)
	sc.req = startReq{prog: prog, peers: r.Peers, data: r.Data, fresh: fresh, done: sc.done}
	sc.x = inputExtra{start: &sc.req}
	if err := m.workerOf(id).push(input{kind: inStart, conv: id, extra: &sc.x}, true); err != nil {
		sc.release()
		return "", err
	}
	err, ok := receive(ctx, sc.done)
	if !ok {
		return id, ctx.Err() // sc stays with the worker, which may still answer
	}
	sc.release()
	if err != nil {
		return "", err
	}
	return id, nil
}

// startCall is what one Start hands its worker, in one allocation that
// the next Start reuses once the worker has answered.
type startCall struct {
	x    inputExtra
	req  startReq
	done chan error
}

var startCalls = sync.Pool{New: func() any { return &startCall{done: make(chan error, 1)} }}

// release gives sc back for reuse; its channel is empty, the answer
// taken.
func (sc *startCall) release() {
	sc.x, sc.req = inputExtra{}, startReq{}
	startCalls.Put(sc)
}

// waitCall is what one Wait hands its worker, reused as startCall is.
type waitCall struct {
	x  inputExtra
	ch chan waitResult
}

var waitCalls = sync.Pool{New: func() any { return &waitCall{ch: make(chan waitResult, 1)} }}

func (wc *waitCall) release() {
	wc.x = inputExtra{}
	waitCalls.Put(wc)
}

// Deliver hands the manager an inbound message that the transport says
// agent from sent. The manager does not modify msg and keeps it; the
// caller must not modify it afterwards. Deliver does not block. It
// refuses, changing nothing, a message whose Sender is not from
// (ErrSender), whose content breaks Limits.Content (ErrContent), and any
// message when the worker's queue is full (ErrBusy) or the manager is
// closed (ErrClosed).
func (m *Manager) Deliver(from string, msg *forms.Message) error {
	return m.DeliverAcked(from, msg, nil)
}

// DeliverAcked is Deliver with an acknowledgement: ack (when not nil) is
// called once the message has been applied and, with a store, its effect
// committed, or found a duplicate of one applied before, or found to
// reach no conversation. It is not called when DeliverAcked returns an
// error. A transport that redelivers until acknowledged, to a manager
// with a store, gets each message applied exactly once.
func (m *Manager) DeliverAcked(from string, msg *forms.Message, ack func()) error {
	if m.closed.Load() {
		return ErrClosed
	}
	if !m.resumed.Load() {
		return ErrNotResumed
	}
	if msg.Sender != from {
		err := fmt.Errorf("%w: %s says it is from %s", ErrSender, policy.Quote(from), policy.Quote(msg.Sender))
		m.refused(msg, engine.CodeUnknownAgent, err.Error())
		return err
	}
	if err := m.checkEnvelope(msg); err != nil {
		err = fmt.Errorf("%w: %s from %s: %v", ErrEnvelope, policy.Quote(msg.Performative), policy.Quote(from), err)
		m.refused(msg, engine.CodeContentLimit, err.Error())
		return err
	}
	if err := forms.CheckContent(msg.Content, m.o.limits.Content); err != nil {
		err = fmt.Errorf("%w: %s from %s: %v", ErrContent, policy.Quote(msg.Performative), policy.Quote(from), err)
		m.refused(msg, engine.CodeContentLimit, err.Error())
		return err
	}
	if msg.ConversationID == "" {
		// A message without a conversation id can only open one: name the
		// conversation now, so that it is routed, stored and found by the
		// same id.
		if prog := m.opener(msg); prog != nil {
			cp := *msg
			cp.ConversationID = newID(m.self)
			msg = &cp
		}
	}
	key := msg.ConversationID
	if key == "" {
		key = msg.Sender
	}
	in := input{kind: inMessage, conv: msg.ConversationID, msg: msg}
	if ack != nil {
		in.extra = &inputExtra{ack: ack}
	}
	return m.workerOf(key).push(in, true)
}

// checkEnvelope says which of msg's envelope strings is longer than
// Limits.MaxField, or whether they are longer than Limits.MaxEnvelope
// together.
func (m *Manager) checkEnvelope(msg *forms.Message) error {
	l := m.o.limits
	if envelopeWithin(msg, l) {
		return nil
	}
	total := 0
	for _, f := range [...]struct {
		name, v string
	}{
		{"performative", msg.Performative}, {"sender", msg.Sender}, {"reply-to", msg.ReplyTo},
		{"conversation id", msg.ConversationID}, {"reply-with", msg.ReplyWith}, {"in-reply-to", msg.InReplyTo},
		{"protocol", msg.Protocol}, {"language", msg.Language}, {"encoding", msg.Encoding}, {"ontology", msg.Ontology},
	} {
		if len(f.v) > l.MaxField {
			return fmt.Errorf("its %s is %d bytes, more than %d", f.name, len(f.v), l.MaxField)
		}
		total += len(f.v)
	}
	for _, r := range msg.Receivers {
		if len(r) > l.MaxField {
			return fmt.Errorf("a receiver is %d bytes, more than %d", len(r), l.MaxField)
		}
		if total += len(r); total > l.MaxEnvelope {
			break
		}
	}
	if total > l.MaxEnvelope {
		return fmt.Errorf("its envelope is more than %d bytes", l.MaxEnvelope)
	}
	return nil
}

// envelopeWithin reports whether every envelope string of msg is at most
// l.MaxField bytes long, and all of them at most l.MaxEnvelope together:
// the check of checkEnvelope, without naming what breaks it.
func envelopeWithin(msg *forms.Message, l Limits) bool {
	longest := max(len(msg.Performative), len(msg.Sender), len(msg.ReplyTo), len(msg.ConversationID), len(msg.ReplyWith),
		len(msg.InReplyTo), len(msg.Protocol), len(msg.Language), len(msg.Encoding), len(msg.Ontology))
	total := len(msg.Performative) + len(msg.Sender) + len(msg.ReplyTo) + len(msg.ConversationID) + len(msg.ReplyWith) +
		len(msg.InReplyTo) + len(msg.Protocol) + len(msg.Language) + len(msg.Encoding) + len(msg.Ontology)
	for _, r := range msg.Receivers {
		longest = max(longest, len(r))
		if total += len(r); total > l.MaxEnvelope {
			return false
		}
	}
	return longest <= l.MaxField && total <= l.MaxEnvelope
}

// opener returns the program that msg opens a new conversation of, or nil.
func (m *Manager) opener(msg *forms.Message) *engine.Program {
	prog := m.reg.Load().responders[msg.Protocol]
	if prog == nil || !prog.Opens(msg) {
		return nil
	}
	return prog
}

// refused reports a message the manager refused before any worker saw it.
func (m *Manager) refused(msg *forms.Message, code engine.ErrorCode, reason string) {
	m.o.logger.Warn(reason, "agent", m.self, "conversation", clipAttr(msg.ConversationID), "code", string(code))
	if m.o.observer != nil {
		pe := &engine.ProtocolErrorEvent{At: m.o.clock.Now(), Code: code, Reason: reason, Message: msg}
		m.observe(Observation{Agent: m.self, Conversation: msg.ConversationID, Event: pe, Err: errors.New(reason)})
	}
}

// Answer answers a decision handed out by WithAsyncDecisions.
func (m *Manager) Answer(conversation string, ticket uint64, a decision.Answer) error {
	if m.closed.Load() {
		return ErrClosed
	}
	if err := forms.CheckContent(a.Content, m.o.limits.Content); err != nil {
		return fmt.Errorf("agent: answer: content: %w", err)
	}
	return m.workerOf(conversation).push(input{kind: inAnswer, conv: conversation, ticket: ticket, extra: &inputExtra{answer: a}}, false)
}

// Wait blocks until the conversation ends and returns its outcome. For a
// conversation the manager aborted it returns engine.OutcomeAborted and
// an *AbortError.
func (m *Manager) Wait(ctx context.Context, conversation string) (string, error) {
	if m.closed.Load() {
		return "", ErrClosed
	}
	wc := waitCalls.Get().(*waitCall)
	wc.x = inputExtra{wait: wc.ch}
	if err := m.workerOf(conversation).push(input{kind: inWait, conv: conversation, extra: &wc.x}, false); err != nil {
		wc.release()
		return "", err
	}
	r, ok := receive(ctx, wc.ch)
	if !ok {
		return "", ctx.Err() // wc stays with the worker, which may still answer
	}
	wc.release()
	return r.outcome, r.err
}

// receive waits for a value on ch, or for ctx to end (ok is false then);
// a context that never ends costs no select.
func receive[T any](ctx context.Context, ch <-chan T) (v T, ok bool) {
	done := ctx.Done()
	if done == nil {
		return <-ch, true
	}
	select {
	case v = <-ch:
		return v, true
	case <-done:
		return v, false
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
	if m.closed.Load() {
		return Status{}, ErrClosed
	}
	ch := make(chan statusResult, 1)
	if err := m.workerOf(conversation).push(input{kind: inStatus, conv: conversation, extra: &inputExtra{status: ch}}, false); err != nil {
		return Status{}, err
	}
	select {
	case r := <-ch:
		return r.status, r.err
	case <-ctx.Done():
		return Status{}, ctx.Err()
	}
}

// Len returns the number of conversations the manager holds, ended ones
// within their retention included.
func (m *Manager) Len() int { return int(m.total.v.Load()) }

// Flush waits until the manager has processed everything delivered to it
// before the call and, with a store, committed what that changed.
func (m *Manager) Flush(ctx context.Context) error {
	if m.closed.Load() {
		return ErrClosed
	}
	done := make(chan struct{}, len(m.workers))
	for _, w := range m.workers {
		if err := w.push(input{kind: inFlush, extra: &inputExtra{flush: done}}, false); err != nil {
			return err
		}
	}
	for range m.workers {
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// processed returns the number of inputs the manager has processed.
func (m *Manager) processed() uint64 {
	var n uint64
	for _, w := range m.workers {
		n += w.processed.Load()
	}
	return n
}

// Close stops the manager: it sends the messages already on their way
// out, drops every conversation and stops every timer. Every call after
// Close returns ErrClosed at once. Close returns when the workers and
// senders have stopped, or with ctx's error when ctx ends first (a
// transport that ignores its context may still hold a sender then).
// Decision logic still running is not waited for; its answers are
// dropped.
func (m *Manager) Close(ctx context.Context) error {
	if !m.closed.Swap(true) {
		m.sweepM.Lock()
		if m.sweep != nil {
			m.sweep.Stop()
		}
		m.sweepM.Unlock()
		for _, w := range m.workers {
			w.stop()
		}
		m.deciders.close()
	}
	done := make(chan struct{})
	go func() {
		m.wg.Wait()
		if m.commit != nil {
			m.commit.close()
			<-m.commit.done
		}
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *Manager) workerOf(conversation string) *worker {
	return m.workers[m.workerIndex(conversation)]
}

// workerIndex returns the worker that owns conversation: a child belongs
// to its root's worker.
func (m *Manager) workerIndex(conversation string) int {
	root, _, _ := strings.Cut(conversation, "/")
	// The hash's place in [0, workers), by a multiplication, not a division.
	i, _ := bits.Mul64(maphash.String(m.seed, root), uint64(len(m.workers)))
	return int(i)
}

func (m *Manager) scheduleSweep() {
	if m.o.retention <= 0 {
		return
	}
	m.sweepM.Lock()
	defer m.sweepM.Unlock()
	if m.closed.Load() {
		return
	}
	m.sweep = m.o.clock.AfterFunc(m.o.retention/2, func() {
		for _, w := range m.workers {
			_ = w.push(input{kind: inSweep}, false) // fails only once closed
		}
		m.scheduleSweep()
	})
}

// idle reports whether the manager has nothing queued, nothing being
// decided and nothing waiting to be sent.
func (m *Manager) idle() bool {
	if m.inflight.v.Load() > 0 {
		return false
	}
	for _, w := range m.workers {
		if !w.idle() {
			return false
		}
	}
	return true
}

// observe calls the observer, recovering from a panic in it.
func (m *Manager) observe(o Observation) {
	defer func() {
		if r := recover(); r != nil {
			m.o.logger.Error("observer panicked", "agent", m.self, "panic", clipAttr(fmt.Sprint(r)))
		}
	}()
	m.o.observer(o)
}

// clipAttr bounds a peer-controlled string put in a log record.
func clipAttr(s string) string {
	if len(s) <= policy.MaxQuoted {
		return s
	}
	return policy.Quote(s)
}

package engine

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"time"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/internal/timerheap"
	"github.com/parleyhq/parley/policy"
)

// DefaultStepLimit is how many steps one call of a Driver may take
// unless WithStepLimit says otherwise.
const DefaultStepLimit = 100_000

// ErrStepLimit is returned (wrapped) by a Driver call that took as many
// steps as its limit allows without running out of work: a conversation
// that loops, or more work than the limit was chosen for. The work not
// done stays queued; the next call goes on with it.
var ErrStepLimit = errors.New("engine: step limit reached")

// errReentered is returned by a Driver called from its own decider or
// observer.
var errReentered = errors.New("engine: the driver was called from its own decider or observer")

// DriverOption configures NewDriver.
type DriverOption func(*driverOptions)

type driverOptions struct {
	decider  decision.Decider
	agents   map[string]decision.Decider
	observer func(Step)
	limit    int
}

// WithDecider makes d answer every decision the hosted handlers raise, at
// once, on the caller's goroutine, with context.Background(). A decision
// d answers with decision.ErrNoDecision, another error or an empty
// answer (no choice and no session answers: "not now") stays pending;
// Pending lists it and Answer answers it. Without a decider every
// decision stays pending.
func WithDecider(d decision.Decider) DriverOption {
	return func(o *driverOptions) { o.decider = d }
}

// WithAgentDecider makes d answer the decisions of agent's handlers
// instead of the decider WithDecider set, in the same way: a
// decision.Request does not say which agent decides, so this is how
// agents of the same role decide differently.
func WithAgentDecider(agent string, d decision.Decider) DriverOption {
	return func(o *driverOptions) {
		if o.agents == nil {
			o.agents = map[string]decision.Decider{}
		}
		o.agents[agent] = d
	}
}

// WithObserver makes f see every step: each input fed to a handler, each
// output it produced, and each output the driver could not carry out
// (see Step). The step and its event are valid only during the call.
func WithObserver(f func(Step)) DriverOption {
	return func(o *driverOptions) { o.observer = f }
}

// WithStepLimit sets how many steps one call of the driver may take: a
// step is an input fed to a handler (a started handler, a delivered
// message, a fired timer, an answered decision). A call that reaches the
// limit returns ErrStepLimit. n < 1 means DefaultStepLimit.
func WithStepLimit(n int) DriverOption {
	return func(o *driverOptions) {
		if n < 1 {
			n = DefaultStepLimit
		}
		o.limit = n
	}
}

// Key names a handler a Driver hosts: the agent it runs for (its self)
// and its conversation.
type Key struct {
	Agent        string
	Conversation string
}

// StepKind says what a Step is.
type StepKind uint8

// Step kinds.
const (
	// StepInput is an event fed to a handler's Process.
	StepInput StepKind = iota + 1
	// StepOutput is an event a handler's Start or Process produced.
	StepOutput
	// StepUnrouted is an output the driver could not carry out: a
	// message for a receiver it does not host in the message's
	// conversation (To names it), or a LoadCPEvent (the driver runs no
	// child policies).
	StepUnrouted
)

// String returns "input", "output" or "unrouted".
func (k StepKind) String() string {
	switch k {
	case StepInput:
		return "input"
	case StepOutput:
		return "output"
	case StepUnrouted:
		return "unrouted"
	}
	return "step kind " + strconv.Itoa(int(k))
}

// Step is one thing a Driver did, as its observer sees it. Agent and
// Conversation name the handler that took the input or produced the
// output. The outputs of Start and Abort come without an input step.
type Step struct {
	Kind         StepKind
	Agent        string
	Conversation string
	// To is, for an unrouted message, the receiver the driver does not
	// host, and for a message TakeInFlight returns, the receiver it has
	// not reached yet.
	To    string
	Event Event
}

// Driver hosts a set of handlers on the caller's goroutine, with virtual
// time, and carries out their outputs: it delivers the messages they send
// to the hosted handlers of their receivers, keeps their timers and fires
// them when told to move the clock, and puts their decisions to a
// decider. It is what tests, trace checking and exploration drive
// conversations with, and the simplest way to embed the engine.
//
// Determinism: the driver reads no clock, starts no goroutine and lets
// no map's order show, so the same calls give the same steps in the same
// order. Messages are delivered in the order they were sent (so first in,
// first out for each receiver), each at the time it was sent (the
// network takes no time). Timers fire in deadline order, those with equal
// deadlines in the order they were set. Decisions are put to the decider
// in the order they were raised, as soon as the call that raised them has
// carried out its handler's outputs, before any message is delivered.
//
// Start, Process, Answer and Abort carry out the outputs of the input
// they feed (timers, decisions, and the outputs of the decisions'
// answers) and queue the messages sent; Settle delivers them, and
// AdvanceTo delivers them and fires timers. TakeInFlight takes them out
// of flight instead, for the caller to deliver late, out of order, twice
// or never.
//
// Limits: each call takes at most its step limit of steps (see
// WithStepLimit). Messages in flight are bounded by the steps that sent
// them; outputs the driver could not carry out are kept until
// TakeUnrouted; pending decisions are at most the handlers' open ones.
// Timers of a handler that ended are dropped; a removed handler leaves
// nothing behind.
//
// A Driver is not safe for concurrent use. Its decider and observer run
// inside its calls and must not call the driver's methods that change it
// (those return an error when they do).
type Driver struct {
	opts  driverOptions
	now   time.Time
	steps int
	busy  bool

	hosts map[Key]*host
	order []*host // in the order added
	spare []*host // removed hosts, for reuse

	timers timerheap.Heap[timerRef]
	// flights are the messages sent and not yet delivered to every
	// receiver, from index head on.
	flights []flight
	head    int
	// asks are the decisions raised and not yet put to the decider, from
	// index askHead on.
	asks     []ask
	askHead  int
	unrouted []Step

	// Reused for every step: handlers keep neither their input event nor
	// the message it carries.
	q     Queue
	msgIn MessageEvent
	tmIn  TimerEvent
	decIn DecisionEvent
}

// host is a hosted handler with its armed timers and pending decisions.
type host struct {
	key     Key
	h       *Handler
	timers  timerSet
	pending []ask
	ended   bool
}

// timerID identifies a timer a handler set.
type timerID struct {
	name       string
	commitment string
	session    string
	epoch      uint64
}

type timerRef struct {
	host *host
	id   timerID
}

// fewTimers is how many timers a host keeps in a list; one with more
// (a many role's, a timer or two per peer) keeps them in a map.
const fewTimers = 8

// timerSet is a host's armed timers and their handles in the heap.
type timerSet struct {
	few  []armedTimer
	many map[timerID]timerheap.Handle
}

type armedTimer struct {
	id timerID
	x  timerheap.Handle
}

func (s *timerSet) add(id timerID, x timerheap.Handle) {
	switch {
	case s.many != nil:
		s.many[id] = x
	case len(s.few) < fewTimers:
		s.few = append(s.few, armedTimer{id, x})
	default:
		s.many = make(map[timerID]timerheap.Handle, 2*fewTimers)
		for _, a := range s.few {
			s.many[a.id] = a.x
		}
		s.many[id] = x
		clear(s.few)
		s.few = s.few[:0]
	}
}

// take forgets timer id and returns its handle.
func (s *timerSet) take(id timerID) (timerheap.Handle, bool) {
	if s.many != nil {
		x, ok := s.many[id]
		delete(s.many, id)
		return x, ok
	}
	for i := range s.few {
		if a := s.few[i]; a.id == id {
			last := len(s.few) - 1
			s.few[i] = s.few[last]
			s.few[last] = armedTimer{}
			s.few = s.few[:last]
			return a.x, true
		}
	}
	return timerheap.Handle{}, false
}

// drain removes every timer of the set from heap and empties the set.
func (s *timerSet) drain(heap *timerheap.Heap[timerRef]) {
	for _, a := range s.few {
		heap.Remove(a.x)
	}
	for _, x := range s.many {
		heap.Remove(x)
	}
	clear(s.few)
	s.few, s.many = s.few[:0], nil
}

// flight is a message sent at at by from, delivered to its receivers
// before next already.
type flight struct {
	from Key
	at   time.Time
	msg  forms.Message
	next int
}

// ask is a decision raised at at.
type ask struct {
	host   *host
	at     time.Time
	ticket uint64
	req    decision.Request
}

// PendingDecision is a decision raised and not answered: the decider
// left it, or there is none. Request is as raised; its Content and Vars
// are the handler's (read them, do not change them).
type PendingDecision struct {
	Agent        string
	Conversation string
	At           time.Time
	Ticket       uint64
	Request      decision.Request
}

// NewDriver returns a driver whose clock reads start, hosting no handler.
func NewDriver(start time.Time, opts ...DriverOption) *Driver {
	d := &Driver{now: start, hosts: map[Key]*host{}, opts: driverOptions{limit: DefaultStepLimit}}
	for _, opt := range opts {
		opt(&d.opts)
	}
	return d
}

// Now returns the driver's time: start, moved by AdvanceTo.
func (d *Driver) Now() time.Time { return d.now }

// Add hosts h under its agent and conversation. It refuses a second
// handler with the same ones. Add a handler before Start: the driver
// fires only the timers it saw set, so a handler started elsewhere (or
// restored from a snapshot) brings none.
func (d *Driver) Add(h *Handler) error {
	if h == nil {
		return errors.New("engine: Add of a nil handler")
	}
	if d.busy {
		return errReentered
	}
	k := Key{Agent: h.self, Conversation: h.conv}
	if _, dup := d.hosts[k]; dup {
		return fmt.Errorf("engine: the driver already hosts agent %s in conversation %s", policy.Quote(k.Agent), policy.Quote(k.Conversation))
	}
	var ho *host
	if n := len(d.spare); n > 0 {
		ho = d.spare[n-1]
		d.spare = d.spare[:n-1]
	} else {
		ho = &host{}
	}
	ho.key, ho.h, ho.ended = k, h, false
	d.hosts[k] = ho
	d.order = append(d.order, ho)
	return nil
}

// Remove stops hosting agent's handler of conversation conv, with its
// timers and pending decisions, and reports whether it did (not when it
// was not hosted, nor when called from the decider or observer).
// Messages in flight to it are reported unrouted when their turn comes.
func (d *Driver) Remove(agent, conv string) bool {
	ho := d.hosts[Key{agent, conv}]
	if ho == nil || d.busy {
		return false
	}
	d.end(ho)
	delete(d.hosts, ho.key)
	d.order = slices.DeleteFunc(d.order, func(x *host) bool { return x == ho })
	kept := d.asks[:d.askHead]
	for _, a := range d.asks[d.askHead:] {
		if a.host != ho {
			kept = append(kept, a)
		}
	}
	clear(d.asks[len(kept):])
	d.asks = kept
	ho.h = nil
	d.spare = append(d.spare, ho)
	return true
}

// Handler returns agent's handler of conversation conv, or nil.
func (d *Driver) Handler(agent, conv string) *Handler {
	if ho := d.hosts[Key{agent, conv}]; ho != nil {
		return ho.h
	}
	return nil
}

// Handlers yields the hosted handlers in the order they were added.
func (d *Driver) Handlers() iter.Seq2[Key, *Handler] {
	return func(yield func(Key, *Handler) bool) {
		for _, ho := range d.order {
			if !yield(ho.key, ho.h) {
				return
			}
		}
	}
}

// InFlight returns the number of messages sent and not yet delivered to
// every receiver.
func (d *Driver) InFlight() int { return len(d.flights) - d.head }

// NextDeadline returns when the earliest timer is due, and false when no
// timer is set.
func (d *Driver) NextDeadline() (time.Time, bool) {
	at, _, ok := d.timers.Peek()
	return at, ok
}

// Pending returns the decisions waiting for an answer, by handler in the
// order the handlers were added, then in the order they were raised.
func (d *Driver) Pending() []PendingDecision {
	var out []PendingDecision
	for _, ho := range d.order {
		d.prune(ho)
		for _, a := range ho.pending {
			out = append(out, PendingDecision{Agent: ho.key.Agent, Conversation: ho.key.Conversation, At: a.at, Ticket: a.ticket, Request: a.req})
		}
	}
	return out
}

// TakeUnrouted returns the steps the driver could not carry out since the
// last call (messages for receivers it does not host and requests to run
// child policies, as StepUnrouted steps whose events are the caller's to
// keep), and forgets them.
func (d *Driver) TakeUnrouted() []Step {
	out := d.unrouted
	d.unrouted = nil
	return out
}

// TakeInFlight returns the messages sent and not yet delivered and
// removes them from flight: the caller may Process them later, in another
// order, more than once or never, as a network that delays, reorders,
// duplicates or drops messages would. There is one StepOutput step for
// each receiver a message has not reached yet, in the order Settle would
// have delivered them; Agent and Conversation name the sender's handler,
// To the receiver (hosted or not), and Event is a *MessageEvent at the
// time the message was sent, with a copy of the message of its own (the
// content is shared): the caller's to keep and change. Deliver one with
// Process(step.To, message.ConversationID, step.Event).
//
// The steps are at most the messages in flight times their receivers, so
// bounded as the messages are. From the decider or observer TakeInFlight
// takes nothing and returns nil.
func (d *Driver) TakeInFlight() []Step {
	if d.busy {
		return nil
	}
	var out []Step
	for i := d.head; i < len(d.flights); i++ {
		f := &d.flights[i]
		for _, to := range f.msg.Receivers[f.next:] {
			m := f.msg
			m.Receivers = slices.Clone(m.Receivers)
			out = append(out, Step{Kind: StepOutput, Agent: f.from.Agent, Conversation: f.from.Conversation, To: to, Event: &MessageEvent{At: f.at, Message: &m}})
		}
	}
	clear(d.flights)
	d.flights, d.head = d.flights[:0], 0
	return out
}

// Start starts agent's handler of conversation conv at the driver's time
// and carries out its outputs.
func (d *Driver) Start(agent, conv string) error {
	ho, err := d.beginDirect(agent, conv)
	if err != nil {
		return err
	}
	defer d.finish()
	return d.carryOut(ho, ho.h.Start(d.now, &d.q))
}

// Abort aborts agent's handler of conversation conv at the driver's time
// with reason, as a host does that cannot carry out what the handler
// asked for (see Handler.Abort), and carries out its outputs: the handler
// is done, so the driver forgets its timers and pending decisions.
// Messages in flight to it stay in flight, for it to refuse. Abort of a
// handler that is done does nothing.
func (d *Driver) Abort(agent, conv, reason string) error {
	ho, err := d.beginDirect(agent, conv)
	if err != nil {
		return err
	}
	defer d.finish()
	return d.carryOut(ho, ho.h.Abort(d.now, reason, &d.q))
}

// Process feeds ev to agent's handler of conversation conv and carries
// out its outputs. It stamps nothing, moves no clock and fires no timer:
// ev's At is the caller's (call AdvanceTo first to let time pass). A
// TimerEvent fed here is that timer firing: the driver forgets it.
func (d *Driver) Process(agent, conv string, ev Event) error {
	ho, err := d.begin(agent, conv)
	if err != nil {
		return err
	}
	defer d.finish()
	if e, ok := ev.(*TimerEvent); ok && e != nil {
		if x, ok := ho.timers.take(timerID{name: e.Name, commitment: e.Commitment, session: e.Session, epoch: e.Epoch}); ok {
			d.timers.Remove(x)
		}
	}
	if err := d.feed(ho, ev); err != nil {
		return err
	}
	return d.decide()
}

// Answer answers the decision ticket of agent's handler of conversation
// conv with a, at the driver's time, and carries out the outputs. An
// answer the handler does not accept (a stale ticket, a choice not
// allowed) is a ProtocolErrorEvent output, not an error.
func (d *Driver) Answer(agent, conv string, ticket uint64, a decision.Answer) error {
	ho, err := d.begin(agent, conv)
	if err != nil {
		return err
	}
	defer d.finish()
	d.decIn = DecisionEvent{At: d.now, Ticket: ticket, Answer: a}
	if err := d.feed(ho, &d.decIn); err != nil {
		return err
	}
	d.prune(ho)
	return d.decide()
}

// Settle delivers every message in flight, and every message those
// deliveries cause, until none is left: it returns when nothing is in
// flight, or with an error (the step limit, a handler's or the decider's
// error) with the work left still queued.
func (d *Driver) Settle() error {
	if d.busy {
		return errReentered
	}
	d.busy, d.steps = true, 0
	defer d.finish()
	return d.settle()
}

// AdvanceTo moves the clock to t, never backwards. It settles first, then
// fires every timer due at or before t in deadline order, each with its
// deadline as At and the clock moved to it, settling after each. A
// cancelled timer, or one of a handler that ended, never fires.
func (d *Driver) AdvanceTo(t time.Time) error {
	if d.busy {
		return errReentered
	}
	if t.Before(d.now) {
		return fmt.Errorf("engine: AdvanceTo %s is before the driver's time %s", t.Format(time.RFC3339Nano), d.now.Format(time.RFC3339Nano))
	}
	d.busy, d.steps = true, 0
	defer d.finish()
	if err := d.settle(); err != nil {
		return err
	}
	for {
		at, ref, ok := d.timers.Peek()
		if !ok || at.After(t) {
			break
		}
		if err := d.spend(); err != nil {
			return err
		}
		d.timers.Pop()
		ref.host.timers.take(ref.id)
		if at.After(d.now) {
			d.now = at
		}
		d.tmIn = TimerEvent{At: at, Name: ref.id.name, Commitment: ref.id.commitment, Session: ref.id.session, Deadline: at, Epoch: ref.id.epoch}
		if err := d.process(ref.host, &d.tmIn); err != nil {
			return err
		}
		if err := d.settle(); err != nil {
			return err
		}
	}
	d.now = t
	return nil
}

// begin starts a call on agent's handler of conv.
func (d *Driver) begin(agent, conv string) (*host, error) {
	if d.busy {
		return nil, errReentered
	}
	ho := d.hosts[Key{agent, conv}]
	if ho == nil {
		return nil, fmt.Errorf("engine: the driver hosts no agent %s in conversation %s", policy.Quote(agent), policy.Quote(conv))
	}
	d.busy, d.steps = true, 0
	return ho, nil
}

// beginDirect starts a call whose one input is a call of the handler
// itself (Start, Abort), not an event: it takes the call's first step,
// always within the limit, and empties the queue for the handler's
// outputs.
func (d *Driver) beginDirect(agent, conv string) (*host, error) {
	ho, err := d.begin(agent, conv)
	if err != nil {
		return nil, err
	}
	d.steps = 1
	d.q.Reset()
	return ho, nil
}

// carryOut carries out the outputs that a direct call of ho's handler,
// which returned err, put in the queue.
func (d *Driver) carryOut(ho *host, err error) error {
	if err != nil {
		return ho.fail(err)
	}
	d.dispatch(ho)
	return d.decide()
}

func (d *Driver) finish() { d.busy = false }

// full fails when the call has taken as many steps as its limit allows.
func (d *Driver) full() error {
	if d.steps >= d.opts.limit {
		return fmt.Errorf("%w: %d steps in one call, with %d messages in flight and %d timers set", ErrStepLimit, d.steps, d.InFlight(), d.timers.Len())
	}
	return nil
}

// spend takes a step, or fails when the call has taken its limit.
func (d *Driver) spend() error {
	if err := d.full(); err != nil {
		return err
	}
	d.steps++
	return nil
}

// feed takes a step: ev into ho's handler, and its outputs carried out.
func (d *Driver) feed(ho *host, ev Event) error {
	if err := d.spend(); err != nil {
		return err
	}
	return d.process(ho, ev)
}

// process feeds ev to ho's handler (the step already spent) and carries
// out its outputs.
func (d *Driver) process(ho *host, ev Event) error {
	d.observe(StepInput, ho.key, "", ev)
	d.q.Reset()
	if err := ho.h.Process(ev, &d.q); err != nil {
		return ho.fail(err)
	}
	d.dispatch(ho)
	return nil
}

func (ho *host) fail(err error) error {
	return fmt.Errorf("agent %s, conversation %s: %w", policy.Quote(ho.key.Agent), policy.Quote(ho.key.Conversation), err)
}

func (d *Driver) observe(kind StepKind, k Key, to string, ev Event) {
	if d.opts.observer != nil {
		d.opts.observer(Step{Kind: kind, Agent: k.Agent, Conversation: k.Conversation, To: to, Event: ev})
	}
}

// unroute reports an output the driver cannot carry out; ev is a copy
// the caller may keep.
func (d *Driver) unroute(from Key, to string, ev Event) {
	d.observe(StepUnrouted, from, to, ev)
	d.unrouted = append(d.unrouted, Step{Kind: StepUnrouted, Agent: from.Agent, Conversation: from.Conversation, To: to, Event: ev})
}

// dispatch carries out the outputs in the queue of ho's handler: timers
// into the heap, messages in flight, decisions to ask.
func (d *Driver) dispatch(ho *host) {
	for _, ev := range d.q.Events() {
		d.observe(StepOutput, ho.key, "", ev)
		switch e := ev.(type) {
		case *TimerEvent:
			d.timer(ho, e)
		case *MessageEvent:
			if len(e.Message.Receivers) == 0 {
				m := *e.Message
				d.unroute(ho.key, "", &MessageEvent{At: e.At, Message: &m})
				continue
			}
			d.flights = append(d.flights, flight{from: ho.key, at: e.At, msg: *e.Message})
		case *DecisionEvent:
			d.asks = append(d.asks, ask{host: ho, at: e.At, ticket: e.Ticket, req: e.Request})
		case *LoadCPEvent:
			c := *e
			d.unroute(ho.key, "", &c)
		}
	}
	if ho.h.done && !ho.ended {
		d.end(ho)
	}
}

// timer records a timer set or cancelled.
func (d *Driver) timer(ho *host, e *TimerEvent) {
	id := timerID{name: e.Name, commitment: e.Commitment, session: e.Session, epoch: e.Epoch}
	switch e.Op {
	case TimerSet:
		if old, ok := ho.timers.take(id); ok {
			d.timers.Remove(old)
		}
		ho.timers.add(id, d.timers.Push(e.Deadline, timerRef{host: ho, id: id}))
	case TimerCancel:
		if x, ok := ho.timers.take(id); ok {
			d.timers.Remove(x)
		}
	}
}

// end drops what the driver keeps for ho's handler: it ended, or is
// removed.
func (d *Driver) end(ho *host) {
	ho.timers.drain(&d.timers)
	clear(ho.pending)
	ho.pending = ho.pending[:0]
	ho.ended = true
}

// decide puts the decisions raised to the decider, in order, and feeds
// its answers.
func (d *Driver) decide() error {
	for d.askHead < len(d.asks) {
		i := d.askHead
		a := &d.asks[i]
		ho, at, ticket := a.host, a.at, a.ticket
		if !ho.h.Awaits(ticket) {
			d.askHead++
			continue
		}
		decider := d.opts.decider
		if x, ok := d.opts.agents[ho.key.Agent]; ok {
			decider = x
		}
		if decider == nil {
			d.askHead++
			d.park(a)
			continue
		}
		if err := d.full(); err != nil {
			return err
		}
		d.askHead++
		// The decider cannot call the driver, so asks stays put while it
		// reads the request.
		ans, err := decider.Decide(context.Background(), &a.req)
		if err != nil || ans.Choice == "" && len(ans.Sessions) == 0 {
			d.park(a)
			if err != nil && !errors.Is(err, decision.ErrNoDecision) {
				return ho.fail(fmt.Errorf("deciding %s: %w", policy.Quote(a.req.Point), err))
			}
			continue
		}
		d.steps++
		d.decIn = DecisionEvent{At: at, Ticket: ticket, Answer: ans}
		if err := d.process(ho, &d.decIn); err != nil {
			return err
		}
		if ho.h.Awaits(ticket) {
			d.park(&d.asks[i]) // a choice refused, or a join answered in part
		}
	}
	clear(d.asks)
	d.asks, d.askHead = d.asks[:0], 0
	return nil
}

// park keeps a copy of a as pending, once.
func (d *Driver) park(a *ask) {
	ho := a.host
	d.prune(ho)
	if !slices.ContainsFunc(ho.pending, func(p ask) bool { return p.ticket == a.ticket }) {
		ho.pending = append(ho.pending, *a)
	}
}

// prune forgets ho's pending decisions that are answered or stale.
func (d *Driver) prune(ho *host) {
	kept := slices.DeleteFunc(ho.pending, func(p ask) bool { return !ho.h.Awaits(p.ticket) })
	ho.pending = kept
}

// settle delivers messages (asking the decisions they raise) until none
// is in flight.
func (d *Driver) settle() error {
	for {
		if err := d.decide(); err != nil {
			return err
		}
		if d.head == len(d.flights) {
			clear(d.flights)
			d.flights, d.head = d.flights[:0], 0
			return nil
		}
		f := &d.flights[d.head]
		if f.next == len(f.msg.Receivers) {
			d.flights[d.head] = flight{}
			d.head++
			continue
		}
		to := f.msg.Receivers[f.next]
		ho := d.hosts[Key{to, f.msg.ConversationID}]
		if ho == nil {
			f.next++
			m := f.msg
			m.Receivers = slices.Clone(m.Receivers)
			d.unroute(f.from, to, &MessageEvent{At: f.at, Message: &m})
			continue
		}
		if !ho.h.started {
			return ho.fail(fmt.Errorf("%s from %s arrived before Start", policy.Quote(f.msg.Performative), policy.Quote(f.msg.Sender)))
		}
		if err := d.spend(); err != nil {
			return err
		}
		f.next++
		// The step may grow flights; the handler reads the message, which
		// stays as it is in the old array until the step is over.
		d.msgIn = MessageEvent{At: f.at, Message: &f.msg}
		if err := d.process(ho, &d.msgIn); err != nil {
			return err
		}
	}
}

package engine

import (
	"errors"
	"fmt"
	"slices"
	"time"
	"unsafe"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/internal/reuse"
	"github.com/parleyhq/parley/policy"
)

// Mode says what a handler does with a violation.
type Mode uint8

// Modes. In Enforce mode (the default) a violating message is reported and
// not applied. In Observe mode, for monitoring peers one does not control,
// it is reported and then applied wherever a transition exists.
const (
	Enforce Mode = iota
	Observe
)

// HandlerOption configures NewHandler.
type HandlerOption func(*handlerConfig) error

// handlerConfig is the handler an option configures: the handler itself,
// as a type of its own so that an option is not a func(*Handler). An
// option returns its error. What WithContent sets is kept, until the
// options have run, in the first session's place (see NewHandler).
type handlerConfig Handler

// WithMode sets the mode (Enforce by default).
func WithMode(m Mode) HandlerOption {
	return func(c *handlerConfig) error {
		c.mode = m
		return nil
	}
}

// WithContent sets the data the first decision sees as its content (the
// manager passes Start's data this way).
func WithContent(data map[string]any) HandlerOption {
	return func(c *handlerConfig) error {
		c.one[0].content = data
		return nil
	}
}

// WithPeers binds agents to a role. For the many role this handler keeps
// sessions for, each agent gets a session (at most MaxSessions); for any
// other role, one agent plays it. Roles left unbound are bound to the
// first agent that sends or receives that role's messages.
func WithPeers(role string, agents ...string) HandlerOption {
	return func(c *handlerConfig) error {
		h := (*Handler)(c)
		idx := -1
		for i, r := range h.prog.roles {
			if r == role {
				idx = i
			}
		}
		if idx < 0 {
			return fmt.Errorf("engine: WithPeers: policy %s has no role %s", policy.Quote(h.prog.policy.Name), policy.Quote(role))
		}
		if idx == h.prog.manyRole {
			if len(agents) > MaxSessions-len(h.sessions) {
				return fmt.Errorf("engine: WithPeers: %d agents for role %s, more than the %d sessions a handler keeps", len(agents), policy.Quote(role), MaxSessions)
			}
			h.sessions = slices.Grow(h.sessions, len(agents))
			h.many.peers.reserve(len(h.sessions) + len(agents))
			for _, a := range agents {
				h.addSession(a)
			}
			return nil
		}
		if len(agents) != 1 {
			return fmt.Errorf("engine: WithPeers: role %s is not many, so one agent plays it, not %d", policy.Quote(role), len(agents))
		}
		*h.peer(idx) = agents[0]
		return nil
	}
}

// Handler runs one conversation of a Program as its role: the
// ConversationPolicyHandler. Process is deterministic and does no I/O.
// A Handler is not safe for concurrent use: give each to one goroutine at
// a time (the manager does).
//
// Its fields that hold pointers come first, the words without after them.
type Handler struct {
	prog *Program
	conv string
	self string
	// sessions holds one session, or one per peer of the many role.
	sessions []session
	// many holds the bookkeeping of a handler with a many role's
	// sessions, and of one that holds messages or has more roles than
	// peerArr has room for (see manyState); nil for most others.
	many *manyState
	// Storage for the common case, so a handler is one allocation: the
	// agent of each of up to two roles (peerArr; with more roles, many's
	// morePeers, see peers) and one session.
	peerArr [2]string
	one     [1]session
	mode    Mode
	started bool
	done    bool
	aborted bool // done by Abort
	// ended counts ended sessions.
	ended   int32
	counter uint64 // advanced at every state change and decision
	seq     uint64 // reply-with numbers
}

// A session's peer, for the many role, is the peer index's (see
// Handler.sessionName): a session keeps no copy of its own. Its fields
// that hold pointers come first, the words without after them.
type session struct {
	// The last message received: for in-reply-to, duplicates and the data
	// a decision sees.
	lastReplyWith string
	lastInReplyTo string
	lastSender    string
	content       map[string]any
	// reply-with of the last two messages sent to this peer.
	sent [2]string
	// vars holds the variables set, nil for none. It may be a
	// transition's litVars, shared with other sessions and never written
	// (Program.sharesVars tells): the next assignment that changes it
	// writes a copy.
	vars map[string]any
	// more holds what a session keeps only under a run budget or when
	// the program's layout does not fit in words (see sessionMore): nil
	// for most sessions, which keep a word for it.
	more         *sessionMore
	state        int32
	timedOutFrom int32
	epoch        uint64
	ticket       uint64
	lastMsg      int32 // the message type, plus one; 0 for none
	// srcSet and cmSet say that the session has deadline sources and
	// commitments: none until the first message that sets a deadline
	// source, and the first commitment operation.
	srcSet, cmSet bool
	// words holds the deadlines of the state's timers (Unix nanoseconds;
	// 0 for none), to tell late messages, the latest value of each
	// deadline source (Unix nanoseconds) and the state of each
	// commitment, laid out by the program (see Program.layOutSpill), when
	// they fit in it, as they do for every shipped policy but one: then a
	// session needs no block of its own, and has no pointer to it to
	// write or for the collector to follow. Otherwise more's spill does,
	// a block allocated with the session (see Program.ownSpill). Their
	// lengths are the program's (see Handler.deadlines, srcTimes and
	// commits), so that the session keeps no slice of them.
	words inPlace
}

// sessionMore is what a session keeps only under a run budget, or when
// its words are a block of their own (see Program.spillAt).
type sessionMore struct {
	// spill is the block of the session's words when they do not fit in
	// its own (nil otherwise; see Program.ownSpill).
	spill *int64
	// visits and messages count what the run budget bounds: entries into
	// each state (nil without a visits budget) and messages exchanged.
	visits   []int32
	messages int32
}

// moreOf returns session s's sessionMore, which it allocates the first
// time.
func (s *session) moreOf() *sessionMore {
	if s.more == nil {
		s.more = &sessionMore{}
	}
	return s.more
}

// messageCount returns how many messages session s has exchanged, as
// the run budget counts them (0 without a messages budget).
func (s *session) messageCount() int32 {
	if s.more == nil {
		return 0
	}
	return s.more.messages
}

type commitInst struct {
	state commitPhase
	epoch uint64
	// deadline is when the commitment's armed timer fires (Unix
	// nanoseconds; 0 for none).
	deadline int64
}

// manyState is what a handler keeping one session per peer of a many
// role needs besides: sessions by peer, how many are at a join, and the
// pending group (opening broadcast) and join decisions. It also keeps
// what few other handlers need, so that a handler keeps one word for all
// of it: the messages it holds (see heldList), and the agents of its
// roles when it has more than two (see peers). A handler with one
// session that needs either has one, whose many role's fields are zero.
type manyState struct {
	peers peerIndex
	// held holds messages that arrived before the role can take them, in
	// arrival order (see MaxHeld).
	held heldBox
	// morePeers holds the agent of each role, when there are more than
	// the handler's peerArr has room for (nil otherwise).
	morePeers []string
	atJoin    int32
	// undecided counts the sessions in a join state that no released join
	// decision covers (ticket 0), so that checkJoin need not look for
	// one; it is not kept once the conversation has ended.
	undecided   int32
	groupTicket uint64
	joinTicket  uint64
}

// ticketSessionBits is the room tickets keep for a session index.
const ticketSessionBits = 24

// NewHandler returns a handler for conversation conversationID, in which
// this agent (self) plays the program's role.
func (pr *Program) NewHandler(conversationID, self string, opts ...HandlerOption) (*Handler, error) {
	h := &Handler{prog: pr, conv: conversationID, self: self}
	if pr.manyRole >= 0 {
		h.many = &manyState{}
	}
	h.makePeers()
	h.peers()[pr.roleIdx] = self
	if pr.manyRole < 0 {
		// h.one[0] = pr.newSession(), without writing the zero fields of
		// the new handler again.
		h.one[0].state, h.one[0].timedOutFrom = -1, -1
		pr.ownSpill(&h.one[0])
		h.sessions = h.one[:1]
	}
	if len(opts) == 0 {
		return h, nil
	}
	// The options configure the handler itself, which is on the heap
	// already: a configuration of their own would be too, since the
	// compiler takes what a function value is given to escape.
	var err error
	for _, opt := range opts {
		if e := opt((*handlerConfig)(h)); e != nil {
			err = e
		}
	}
	if err != nil {
		return nil, err
	}
	if pr.manyRole >= 0 {
		// WithContent's data is in the first session's place, which a
		// handler with a many role keeps no session in.
		content := h.one[0].content
		h.one[0].content = nil
		for i := range h.sessions {
			h.sessions[i].content = content
		}
	}
	return h, nil
}

// makePeers makes room for the agent of each role outside the handler
// (in many) when there are more roles than it has room for.
func (h *Handler) makePeers() {
	if n := len(h.prog.roles); n > len(h.peerArr) {
		h.manyOf().morePeers = make([]string, n)
	}
}

// manyOf returns the handler's manyState, which it allocates the first
// time.
func (h *Handler) manyOf() *manyState {
	if h.many == nil {
		h.many = &manyState{}
	}
	return h.many
}

// peers returns the agent bound to each role, "" for none yet (the
// handler's own agent for its role).
func (h *Handler) peers() []string {
	if h.many != nil && h.many.morePeers != nil {
		return h.many.morePeers
	}
	return h.peerArr[:len(h.prog.roles)]
}

// peer returns where the agent bound to role r is kept (see peers).
func (h *Handler) peer(r int) *string {
	if h.many == nil || h.many.morePeers == nil {
		return &h.peerArr[r]
	}
	return &h.many.morePeers[r]
}

// heldBox holds a handler's held messages, the first in place.
type heldBox struct {
	list  []heldMsg
	first [1]heldMsg
}

// heldList returns the held messages, in arrival order.
func (h *Handler) heldList() []heldMsg {
	if h.many == nil {
		return nil
	}
	return h.many.held.list
}

// setHeld makes list the held messages.
func (h *Handler) setHeld(list []heldMsg) {
	if h.many == nil && list == nil {
		return
	}
	h.manyOf().held.list = list
}

// holdMsg appends e to the held messages.
func (h *Handler) holdMsg(e heldMsg) {
	b := &h.manyOf().held
	if b.list == nil {
		b.list = b.first[:0]
	}
	b.list = append(b.list, e)
}

// visitCounts returns the session's entries into each state, nil when
// the budget does not bound visits.
func (s *session) visitCounts() []int32 {
	if s.more == nil {
		return nil
	}
	return s.more.visits
}

// newSession returns a session of the program in no state yet.
func (pr *Program) newSession() session {
	s := session{state: -1, timedOutFrom: -1}
	pr.ownSpill(&s)
	return s
}

// addSession returns the index of the session with peer, which it adds
// if there is none; false when there is none and MaxSessions are kept.
func (h *Handler) addSession(peer string) (int, bool) {
	if i, ok := h.many.peers.find(peer); ok {
		return i, true
	}
	if len(h.sessions) >= MaxSessions {
		return 0, false
	}
	h.sessions = append(h.sessions, h.prog.newSession())
	h.many.peers.add(peer)
	return len(h.sessions) - 1, true
}

// ErrNotStarted is returned by Process before Start.
var ErrNotStarted = errors.New("engine: handler not started")

// Start enters the initial state at time at: it arms the state's timers
// and, if this role speaks first, asks for the first decision. Call it
// once, before Process.
func (h *Handler) Start(at time.Time, out *Queue) error {
	if h.started {
		return errors.New("engine: handler already started")
	}
	h.started = true
	if h.prog.manyRole >= 0 && len(h.sessions) > 0 && len(h.prog.states[h.prog.initial].sends) > 0 {
		for i := range h.sessions {
			h.enter(i, h.prog.initial, &at, out, true)
		}
		h.raiseGroup(at, out)
		return nil
	}
	for i := range h.sessions {
		h.enter(i, h.prog.initial, &at, out, false)
	}
	return nil
}

// Process consumes one input event and appends the events it causes to
// out. Violations become ProtocolErrorEvents; the error is only for misuse
// (an output-only event, a handler not started, a message to send to a
// role no agent is bound to).
func (h *Handler) Process(in Event, out *Queue) error {
	if e, ok := in.(*MessageEvent); ok {
		return h.step(e, out, (*Handler).process)
	}
	return h.process(in, out)
}

// process is Process for an event step does not take.
func (h *Handler) process(in Event, out *Queue) error {
	if !h.started {
		return ErrNotStarted
	}
	var err error
	if e, ok := in.(*DecisionEvent); ok {
		err = h.answer(e, out) // the other common input, without dispatch's call
	} else {
		err = h.dispatch(in, out)
	}
	if len(h.heldList()) > 0 && err == nil {
		h.deliverHeld(eventTime(in), out)
	}
	return err
}

// eventTime returns when input event in happened.
func eventTime(in Event) time.Time {
	switch e := in.(type) {
	case *MessageEvent:
		return e.At
	case *DecisionEvent:
		return e.At
	case *TimerEvent:
		return e.At
	case *CPDoneEvent:
		return e.At
	}
	return time.Time{}
}

// dispatch hands input event in, of any kind but a DecisionEvent (which
// Process hands to answer itself), to the code for its kind.
func (h *Handler) dispatch(in Event, out *Queue) error {
	switch e := in.(type) {
	case *MessageEvent:
		if e.Message == nil {
			return errors.New("engine: MessageEvent without a Message")
		}
		if e.Sent {
			return h.sent(e, out)
		}
		h.received(e, out)
		return nil
	case *TimerEvent:
		h.timer(e, out)
		return nil
	case *CPDoneEvent:
		h.childDone(e, out)
		return nil
	case nil:
		return errors.New("engine: nil event")
	}
	return fmt.Errorf("engine: %T is an output event, not an input", in)
}

// Done reports whether the conversation has ended.
func (h *Handler) Done() bool { return h.done }

// Aborted reports whether Abort ended the conversation.
func (h *Handler) Aborted() bool { return h.aborted }

// ConversationID returns the conversation's id.
func (h *Handler) ConversationID() string { return h.conv }

// Program returns the handler's program.
func (h *Handler) Program() *Program { return h.prog }

// State returns the current state of the session with peer ("" when the
// handler has one session), or "" when there is no such session.
func (h *Handler) State(peer string) string {
	i, ok := h.sessionIndex(peer)
	if !ok || h.sessions[i].state < 0 {
		return ""
	}
	return h.prog.states[h.sessions[i].state].name
}

// Outcome returns the outcome of the session with peer ("" when the
// handler has one session), or "" while it runs. A session Abort ended
// has OutcomeAborted.
func (h *Handler) Outcome(peer string) string {
	i, ok := h.sessionIndex(peer)
	if !ok {
		return ""
	}
	return h.outcome(i)
}

func (h *Handler) outcome(i int) string {
	st := h.sessions[i].state
	switch {
	case st >= 0 && h.prog.states[st].terminal:
		return h.prog.states[st].outcome
	case h.aborted:
		return OutcomeAborted
	}
	return ""
}

// Sessions returns the peers of the many-role sessions, in order.
func (h *Handler) Sessions() []string {
	if h.prog.manyRole < 0 {
		return nil
	}
	out := make([]string, len(h.sessions))
	copy(out, h.many.peers.names)
	return out
}

// sessionIndex returns the index of the session with peer ("" when the
// handler has one session, whose peer is "").
func (h *Handler) sessionIndex(peer string) (int, bool) {
	if h.prog.manyRole < 0 {
		return 0, peer == ""
	}
	return h.many.peers.find(peer)
}

// sessionName returns the peer of session i: the many role's agent in
// it, or "" when the handler has one session.
func (h *Handler) sessionName(i int) string {
	if h.prog.manyRole < 0 {
		return ""
	}
	return h.many.peers.names[i]
}

// agentOf returns the agent playing role r as seen from session i.
func (h *Handler) agentOf(i, r int) string {
	if r == h.prog.manyRole {
		return h.many.peers.names[i]
	}
	return *h.peer(r)
}

func (h *Handler) next() uint64 {
	h.counter++
	return h.counter
}

func (h *Handler) ticketFor(i int) uint64 {
	return h.next()<<ticketSessionBits | uint64(i+1)
}

// enter moves session i into state st at time at. Most states are left
// and entered with a change of state alone; for the states whose leaving
// and entering flags say there is more, it cancels the timers the state
// left armed and counts the session out of a join, and then arms the new
// state's timers, ends the session, loads a child, counts a join or
// raises a decision, and releases a join that waits for no one else.
func (h *Handler) enter(i, st int, at *time.Time, out *Queue, inGroup bool) {
	pr := h.prog
	s := &h.sessions[i]
	if s.state >= 0 && pr.states[s.state].leaving {
		// Cancel the timers the state armed, and count the session out
		// of a join.
		old := &pr.states[s.state]
		if arms := old.arms; len(arms) == 1 {
			// Most states' one timer, without a loop, which reloads
			// what it keeps after each call.
			h.emitTimer(out, TimerCancel, at, arms[0], nil, i, s.epoch)
		} else {
			for _, k := range arms {
				h.emitTimer(out, TimerCancel, at, k, nil, i, s.epoch)
			}
		}
		if old.join && pr.manyRole >= 0 {
			h.many.atJoin--
			if s.ticket == 0 {
				h.many.undecided--
			}
		}
	}
	h.countVisit(i, st)
	h.changeState(s, st)
	sp := &pr.states[st]
	if !sp.entering && pr.manyRole < 0 {
		return
	}
	if len(sp.arms) > 0 {
		// The deadlines of the state left, if any, are forgotten: a
		// session has those of its state (see deadlines).
		deadlines := pr.deadlineSlots(s, len(sp.arms))
		if len(sp.arms) == 1 { // as above
			deadlines[0] = h.emitTimer(out, TimerSet, at, sp.arms[0], nil, i, s.epoch)
		} else {
			for j, k := range sp.arms {
				deadlines[j] = h.emitTimer(out, TimerSet, at, k, nil, i, s.epoch)
			}
		}
	}
	if sp.join && pr.manyRole >= 0 {
		h.many.undecided++ // changeState left no ticket
	}
	switch sp.entry {
	case entryRaise:
		if inGroup {
			break // the group's decision is raised once for all
		}
		h.raise(i, sp, at, out)
		if pr.manyRole < 0 {
			return // no join to check, and nothing else to keep
		}
	case entryEnd:
		if s.cmSet { // else it has no commitment to end
			h.endCommitments(i, at, "conversation ended", out)
		}
		h.ended++
		if int(h.ended) == len(h.sessions) {
			h.finish(at, out)
			return
		}
	case entryChild:
		h.loadChild(i, sp, *at, out)
	case entryJoin:
		h.many.atJoin++
	}
	if pr.manyRole >= 0 {
		h.checkJoin(*at, out)
	}
}

// changeState puts session s in state st, in a new epoch without a
// decision pending (after countVisit has counted the visit). Its caller
// holds the session: looking it up again by index would cost a bounds
// check.
func (h *Handler) changeState(s *session, st int) {
	s.state = int32(st)
	s.epoch = h.next()
	s.ticket = 0
}

// nanos returns t as Unix nanoseconds, or 0 for the zero time and times
// int64 nanoseconds cannot hold.
func nanos(t time.Time) int64 {
	// About the years 1678 to 2261, without the cost of computing a year;
	// the zero time, in the year 1, is below. Within them t.UnixNano() is
	// u*1e9 plus the nanoseconds, which this computes without reading
	// t's seconds again.
	const limit = 9_200_000_000
	if u := t.Unix(); u >= -limit && u <= limit {
		return u*1e9 + int64(t.Nanosecond())
	}
	return 0
}

// deadline computes when timer k fires if armed at at in session s.
func (h *Handler) deadline(s *session, k int, at time.Time) time.Time {
	t := &h.prog.timers[k]
	if t.src < 0 {
		return addTime(at, t.after)
	}
	if s.srcSet {
		if v := h.prog.srcSlots(s)[t.src]; v != 0 {
			return time.Unix(0, v).UTC()
		}
	}
	return addTime(at, t.fallback)
}

// hasMonotonic and nsecMask are the time package's: the flag of a
// time.Time's wall word that says it holds a monotonic reading, and the
// bits of it that hold the nanoseconds.
const (
	hasMonotonic = 1 << 63
	nsecMask     = 1<<30 - 1
)

// addTime returns t.Add(d), the same time.Time to the bit.
func addTime(t time.Time, d time.Duration) time.Time {
	w := (*timeWords)(unsafe.Pointer(&t))
	wall, ext, ok := addWords(w, d)
	if !ok {
		return t.Add(d)
	}
	w.wall, w.ext = wall, ext
	return t
}

// addWords returns the wall and ext words of the time w + d, which
// time.Add computes, in the common case: a time without a monotonic
// reading (as time.Date, a parsed time or UTC() gives, and what an
// event's At, from a store or the wire, usually is) and a d that is not
// negative, whose sum does not saturate. The wall word of such a time
// holds its nanoseconds alone and ext its seconds since the year 1, as
// TestAddTimeIsTimeAdd checks. It returns false in the other cases,
// which time.Add is left to compute: not inlined, it costs some 60
// instructions, and each timer a step sets computes a deadline.
func addWords(w *timeWords, d time.Duration) (wall uint64, ext int64, ok bool) {
	if w.wall&hasMonotonic != 0 || d < 0 {
		return 0, 0, false
	}
	sec, nsec := int64(d/1e9), int64(w.wall&nsecMask)+int64(d%1e9)
	if nsec >= 1e9 {
		sec++
		nsec -= 1e9
	}
	if ext = w.ext + sec; ext < w.ext {
		return 0, 0, false // time.Add saturates
	}
	return uint64(nsec), ext, true
}

// emitTimer asks to set (op TimerSet) or cancel timer k of session i,
// armed in epoch by commitment c (nil: by the state) at time at; for a
// set, it returns the deadline as Unix nanoseconds (see nanos), 0 for a
// cancel. at is a pointer, and the timer an index, so that the call
// passes every argument in registers.
//
// A set's deadline is deadline's. For a timer that fires a duration
// after at, the common case, emitTimer adds the duration as addTime
// does, into the event's words, and reads the nanoseconds off them: no
// time.Time is built or passed.
//
// It calls nothing but from where it returns what the call returns:
// when its pool or the events have no room (emitTimerGrow makes it) and
// for a deadline addWords does not compute (timerDeadline). Nothing it
// holds is live across a call, so that it keeps its arguments in
// registers, where a call it returned from would have them saved on
// entry and loaded again after.
func (h *Handler) emitTimer(out *Queue, op TimerOp, at *time.Time, k int, c *commitProg, i int, epoch uint64) int64 {
	timers := &out.timers
	if c != nil {
		timers = &out.commitTimers
	}
	items, j, events := timers.items, timers.n, out.events
	n := len(events)
	if uint(j) >= uint(len(items)) || n >= cap(events) {
		return h.emitTimerGrow(out, op, at, k, c, i, epoch)
	}
	e := &items[j] // every field is written
	timers.n = j + 1
	out.dirty = true
	// As emit appends, within the capacity, and then sets the length
	// alone: the array is the one out.events has.
	events[:n+1][n] = e
	out.events = out.events[:n+1]
	e.Op = op
	e.Epoch = epoch
	commitment := ""
	if c != nil {
		commitment = c.name
	}
	reuse.String(&e.Commitment, commitment)
	pr := h.prog
	session := "" // h.sessionName(i), reading h.prog once
	if pr.manyRole >= 0 {
		session = h.many.peers.names[i]
	}
	reuse.String(&e.Session, session)
	setTime(&e.At, *at)
	t := &pr.timers[k]
	reuse.String(&e.Name, t.name)
	if op != TimerSet {
		setTime(&e.Deadline, time.Time{})
		return 0
	}
	d := t.after
	if t.src >= 0 {
		d = t.fallback
		if s := &h.sessions[i]; s.srcSet && h.prog.srcSlots(s)[t.src] != 0 {
			d = -1 // a time from a message, which deadline reads
		}
	}
	w := (*timeWords)(unsafe.Pointer(at))
	wall, ext, ok := addWords(w, d)
	if !ok {
		return h.timerDeadline(e, i, k, at)
	}
	dw := (*timeWords)(unsafe.Pointer(&e.Deadline))
	dw.wall, dw.ext = wall, ext
	if dw.loc != w.loc {
		dw.loc = w.loc
	}
	// nanos of that time, read off its words.
	const limit = 9_200_000_000
	if u := ext - unixToInternal; u >= -limit && u <= limit {
		return u*1e9 + int64(wall)
	}
	return 0
}

// emitTimerGrow makes room for one more event in the timer pool
// emitTimer takes from (the commitments' when c is set) and in the
// events, and then emits the timer with emitTimer.
func (h *Handler) emitTimerGrow(out *Queue, op TimerOp, at *time.Time, k int, c *commitProg, i int, epoch uint64) int64 {
	timers := &out.timers
	if c != nil {
		timers = &out.commitTimers
	}
	timers.grow()
	out.events = slices.Grow(out.events, 1)
	return h.emitTimer(out, op, at, k, c, i, epoch)
}

// timerDeadline writes the deadline of timer k of session i, armed at
// at, into e, which emitTimer emits, and returns it as nanos does: for
// a deadline that is not at plus a duration addWords computes.
func (h *Handler) timerDeadline(e *TimerEvent, i, k int, at *time.Time) int64 {
	v := h.deadline(&h.sessions[i], k, *at)
	setTime(&e.Deadline, v)
	return nanos(v)
}

// unixToInternal is the time package's: the seconds from the year 1 to
// 1970, the start of Unix time.
const unixToInternal = (1969*365 + 1969/4 - 1969/100 + 1969/400) * 86400

func (h *Handler) protocolError(out *Queue, at time.Time, code ErrorCode, i int, m *forms.Message, applied bool, format string, args ...any) {
	h.report(out, at, code, i, m, applied, fmt.Sprintf(format, args...))
}

// report emits a protocol error with the given reason.
func (h *Handler) report(out *Queue, at time.Time, code ErrorCode, i int, m *forms.Message, applied bool, reason string) {
	e := out.errs.put(&out.dirty, ProtocolErrorEvent{At: at, Code: code, Reason: reason, Message: m, Applied: applied})
	if i >= 0 && i < len(h.sessions) {
		e.Session = h.sessionName(i)
		if st := h.sessions[i].state; st >= 0 {
			e.State = h.prog.states[st].name
		}
	}
	out.emit(e)
}

// choices returns the choices session i may take in its state; guards
// that need message content cannot be decided yet and are offered, then
// checked against the answer's content.
func (h *Handler) choices(i int) []string {
	sp := &h.prog.states[h.sessions[i].state]
	if !sp.guarded {
		return sp.choices
	}
	var out []string
	env := decision.Env{Vars: h.sessions[i].vars}
	for _, t := range sp.sends {
		if t.guard != nil {
			if ok, err := t.guard.Bool(&env); err == nil && !ok {
				continue
			}
		}
		if !containsString(out, t.key) {
			out = append(out, t.key)
		}
	}
	return out
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (h *Handler) request(i int, ticket uint64) decision.Request {
	var e DecisionEvent
	h.fillDecision(&e, i, &h.prog.states[h.sessions[i].state], ticket)
	return e.Request
}

// fillDecision writes the decision request of session i, in state sp,
// for ticket into e, every field of its Request and its Ticket, with
// package reuse, and clears its Answer: e may be a reused output event.
// (Its At is the caller's.)
func (h *Handler) fillDecision(e *DecisionEvent, i int, sp *stateProg, ticket uint64) {
	pr, s := h.prog, &h.sessions[i]
	r := &e.Request
	e.Ticket = ticket
	reuse.String(&r.ConversationID, h.conv)
	reuse.String(&r.Policy, pr.policy.Name)
	reuse.String(&r.Role, pr.role)
	reuse.String(&r.Point, sp.name)
	r.Ticket = ticket
	choices := sp.choices // h.choices(i), without its call when no guard is to be evaluated
	if sp.guarded {
		choices = h.choices(i)
	}
	reuse.Slice(&r.Choices, choices)
	reuse.String(&r.Peer, h.sessionName(i))
	reuse.Map(&r.Content, s.content)
	reuse.Map(&r.Vars, s.vars)
	reuse.Slice(&r.Sessions, nil)
	e.clearAnswer()
}

// raise asks for a decision for session i, which enter has put in
// state sp. Like emitTimer, it takes its event and its place in the
// events itself, has raiseGrow make room when there is none, and emits
// the event before fillDecision fills it: nothing it holds is live
// across a call.
func (h *Handler) raise(i int, sp *stateProg, at *time.Time, out *Queue) {
	items, j, events := out.decisions.items, out.decisions.n, out.events
	n := len(events)
	if uint(j) >= uint(len(items)) || n >= cap(events) {
		h.raiseGrow(i, sp, at, out)
		return
	}
	e := &items[j] // every field is written
	out.decisions.n = j + 1
	out.dirty = true
	events[:n+1][n] = e // as emitTimer
	out.events = out.events[:n+1]
	setTime(&e.At, *at)
	t := h.ticketFor(i)
	h.sessions[i].ticket = t
	h.fillDecision(e, i, sp, t)
}

// raiseGrow makes room for one more decision and event, and raises the
// decision with raise.
func (h *Handler) raiseGrow(i int, sp *stateProg, at *time.Time, out *Queue) {
	out.decisions.grow()
	out.events = slices.Grow(out.events, 1)
	h.raise(i, sp, at, out)
}

// clearAnswer zeroes the Answer of an output decision taken from the
// queue's pool, where a caller may have written one since: it is zero
// there almost always, and then its pointers are not written.
func (e *DecisionEvent) clearAnswer() {
	a := &e.Answer
	// a.ReplyBy != time.Time{}, word by word, where == compares it with
	// a zero time in memory.
	r := (*timeWords)(unsafe.Pointer(&a.ReplyBy))
	if len(a.Choice) != 0 || a.Content != nil || r.wall|uint64(r.ext) != 0 || r.loc != nil || a.Sessions != nil {
		*a = decision.Answer{}
	}
}

// raiseGroup asks one decision for every session: the many role's
// conversation starts with one message to all its peers.
func (h *Handler) raiseGroup(at time.Time, out *Queue) {
	t := h.ticketFor(-1)
	h.many.groupTicket = t
	e := out.decisions.get(&out.dirty)
	e.At, e.Ticket, e.Request = at, t, h.request(0, t)
	e.Request.Peer = ""
	out.emit(e)
}

// checkJoin releases a join once every session is at a join or ended and
// some wait there without a decision. It is called each time a session
// enters a state, so it counts rather than looks: looking, while a join's
// answers end its sessions one by one, would visit every session for
// each.
func (h *Handler) checkJoin(at time.Time, out *Queue) {
	if h.many.atJoin == 0 || int(h.many.atJoin+h.ended) != len(h.sessions) {
		return
	}
	if h.many.undecided > 0 {
		h.releaseJoin(at, out)
	}
}

// releaseJoin raises one decision for every session at a join.
func (h *Handler) releaseJoin(at time.Time, out *Queue) {
	t := h.ticketFor(-1)
	h.many.joinTicket = t
	h.many.undecided = 0 // every session at a join gets t below
	e := out.decisions.get(&out.dirty)
	e.At, e.Ticket = at, t
	first := true
	for i := range h.sessions {
		s := &h.sessions[i]
		if s.state < 0 || !h.prog.states[s.state].join {
			continue
		}
		s.ticket = t
		var choices []string
		if first {
			e.Request = h.request(i, t)
			choices = e.Request.Choices
			e.Request.Peer, e.Request.Content, e.Request.Vars = "", nil, nil
			e.Request.Sessions = make([]decision.Session, 0, h.many.atJoin)
			first = false
		} else {
			// The choices alone: the rest of a request is the first's.
			choices = h.choices(i)
		}
		e.Request.Sessions = append(e.Request.Sessions, decision.Session{Peer: h.many.peers.names[i], Choices: choices, Content: s.content, Vars: s.vars})
	}
	out.emit(e)
}

func (h *Handler) loadChild(i int, sp *stateProg, at time.Time, out *Queue) {
	e := out.loads.get(&out.dirty)
	e.At, e.Policy, e.Session, e.Epoch = at, sp.child.Policy.Name, h.sessionName(i), h.sessions[i].epoch
	e.Roles = make(map[string]string, len(sp.child.Bindings))
	for _, b := range sp.child.Bindings {
		for r, name := range h.prog.roles {
			if name == b.Parent.Name {
				e.Roles[b.Child] = h.agentOf(i, r)
				if r == h.prog.roleIdx {
					e.Role = b.Child
				}
			}
		}
	}
	out.emit(e)
}

// finish ends the conversation.
func (h *Handler) finish(at *time.Time, out *Queue) {
	h.done = true
	e := out.dones.next(&out.dirty) // every field is written
	setTime(&e.At, *at)
	reuse.String(&e.Policy, h.prog.policy.Name)
	if h.prog.manyRole < 0 {
		reuse.String(&e.Outcome, h.prog.states[h.sessions[0].state].outcome)
		reuse.Map(&e.Outcomes, nil)
	} else {
		e.Outcomes = make(map[string]string, len(h.sessions))
		// The outcomes are counted by state as they go in, and by outcome
		// then (states may share one): a count map of every peer's
		// outcome would look each up once more.
		var buf [16]int32
		var byState []int32
		if n := len(h.prog.states); n <= len(buf) {
			byState = buf[:n]
		} else {
			byState = make([]int32, n)
		}
		for i := range h.sessions {
			st := h.sessions[i].state
			e.Outcomes[h.many.peers.names[i]] = h.prog.states[st].outcome
			byState[st]++
		}
		counts := map[string]int{}
		for st, n := range byState {
			if n > 0 {
				counts[h.prog.states[st].outcome] += int(n)
			}
		}
		e.Outcome = summarize(counts)
	}
	reuse.String(&e.Session, "")
	e.Epoch = 0
	reuse.String(&e.Reason, "")
	out.emit(e)
}

// outboundReplyWith returns a fresh reply-with for a message this handler
// sends: conversation/agent#n, unique among every agent's messages.
func (h *Handler) outboundReplyWith(out *Queue) string {
	h.seq++
	return out.replyWith(h.conv, h.self, h.seq)
}

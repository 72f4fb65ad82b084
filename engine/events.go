package engine

import (
	"encoding/binary"
	"strconv"
	"time"
	"unsafe"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/forms"
)

// Event is an input to or an output of Handler.Process. The concrete
// types are the pointer types below; which direction each is used in, and
// when it is produced, is on each type.
type Event interface{ event() }

// MessageEvent carries a message.
//
// As input it says the message was received at At (or, with Sent, that
// this handler's own agent sent it: a monitor feeds what it overhears this
// way). As output it asks the agent to send Message; the handler produces
// one when a decision is answered.
type MessageEvent struct {
	At      time.Time
	Message *forms.Message
	Sent    bool
}

// DecisionEvent is a decision point.
//
// As output it asks the agent's decision logic to decide Request (produced
// when a session enters a state where this role may send, or when a join
// releases); Ticket identifies it. As input it carries the decision
// logic's Answer for Ticket, made at At.
//
// An output's Request.Content and Request.Vars (and those of its
// Sessions) are the handler's: read them, do not change them. Vars set
// only by literal assignments are shared by every conversation of the
// program that set the same; decision logic that changes what it gets
// must be handed a copy.
type DecisionEvent struct {
	At      time.Time
	Ticket  uint64
	Request decision.Request
	Answer  decision.Answer
}

// TimerOp says what a TimerEvent output asks for.
type TimerOp uint8

// Timer operations.
const (
	TimerSet TimerOp = iota + 1
	TimerCancel
)

// TimerEvent is a timer.
//
// As output (Op set) it asks for timer Name of session Session to fire at
// Deadline (TimerSet, produced when a state arming it is entered or a
// commitment gets a deadline), or to be forgotten (TimerCancel, produced
// when that state is left or the commitment moves on). As input it says
// the timer fired at At; Name, Commitment, Session and Epoch must be
// those of the TimerSet. A timer whose state was left (or whose
// commitment moved on) in the meantime is stale and ignored.
//
// Name is always the name of one of the policy's timers. Commitment is
// empty for a timer a state arms, and names the commitment for a
// commitment's deadline (Name is then the commitment's expires or
// deadline timer), so a state timer and a commitment's deadline never
// share a key, whatever the policy calls its timers. A runtime keys armed
// timers by (Name, Commitment, Session, Epoch) and feeds all four back.
type TimerEvent struct {
	At         time.Time
	Op         TimerOp
	Name       string
	Commitment string
	Session    string
	Deadline   time.Time
	Epoch      uint64
}

// LoadCPEvent is an output asking the agent to run child policy Policy
// in role Role (produced when a session enters an in-child state). Roles
// maps each child role to the agent playing it. When the child ends, feed
// a CPDoneEvent with the same Session and Epoch.
type LoadCPEvent struct {
	At      time.Time
	Policy  string
	Role    string
	Roles   map[string]string
	Session string
	Epoch   uint64
}

// CPDoneEvent is the end of a policy.
//
// As output it says this conversation ended with Outcome (produced once,
// when every session has reached a terminal state, or by Handler.Abort
// with OutcomeAborted); with a many role, Outcomes gives each peer's
// outcome and Outcome summarises them (or is OutcomeAborted). As input it
// says a child policy started by LoadCPEvent ended with Outcome.
type CPDoneEvent struct {
	At       time.Time
	Policy   string
	Outcome  string
	Outcomes map[string]string
	Session  string
	Epoch    uint64
	// Reason says why the conversation was aborted (Outcome is
	// OutcomeAborted); it is empty otherwise.
	Reason string
}

// ProtocolErrorEvent is an output reporting a violation: a message,
// timer or decision the policy does not allow. Code is stable; Reason says
// what happened and what the state allows. Applied is true in observe mode
// when the event was nevertheless applied.
type ProtocolErrorEvent struct {
	At      time.Time
	Code    ErrorCode
	Reason  string
	Message *forms.Message
	Session string
	State   string
	Applied bool
}

// CommitmentState is a state of a commitment's lifecycle.
type CommitmentState string

// Commitment states: active (conditional, detached) and final (the rest).
const (
	CommitmentConditional CommitmentState = "created"
	CommitmentDetached    CommitmentState = "detached"
	CommitmentDischarged  CommitmentState = "discharged"
	CommitmentViolated    CommitmentState = "violated"
	CommitmentExpired     CommitmentState = "expired"
	CommitmentCancelled   CommitmentState = "cancelled"
	CommitmentReleased    CommitmentState = "released"
)

// CommitmentEvent is an output reporting that commitment Name of session
// Session entered State (produced by the messages and deadlines the
// policy's commitments declare). Debtor and Creditor are agents.
type CommitmentEvent struct {
	At       time.Time
	Name     string
	State    CommitmentState
	Debtor   string
	Creditor string
	Session  string
	Cause    string
}

func (*MessageEvent) event()       {}
func (*DecisionEvent) event()      {}
func (*TimerEvent) event()         {}
func (*LoadCPEvent) event()        {}
func (*CPDoneEvent) event()        {}
func (*ProtocolErrorEvent) event() {}
func (*CommitmentEvent) event()    {}

// Queue collects output events. It reuses its storage: the events and
// the messages it holds stay valid until Reset, which callers do before
// each Process (or batch of them) to process without allocating. The zero
// Queue is ready to use; a Queue is not safe for concurrent use, and is
// not to be copied once used (the copy would share its storage, and hand
// out again what the first still holds).
//
// The reply-withs of the messages sent through a Queue (strings the
// messages, the handlers and their peers keep) are cut from blocks of
// 256 bytes it allocates as they fill, and outlive Reset: a block stays
// in memory while any reply-with cut from it does, so one reply-with
// keeps at most 256 bytes.
type Queue struct {
	events    []Event
	msgs      pool[MessageEvent]
	bodies    pool[forms.Message]
	decisions pool[DecisionEvent]
	timers    pool[TimerEvent]
	errs      pool[ProtocolErrorEvent]
	commits   pool[CommitmentEvent]
	loads     pool[LoadCPEvent]
	dones     pool[CPDoneEvent]
	text      []byte // reused to build the reasons of protocol errors
	reason    string // the last reason built in text
	// replyWiths is the block reply-withs are cut from (see replyWith):
	// bytes below its length are in strings handed out, and never
	// written again.
	replyWiths []byte
	// commitTimers holds the timers of commitments, apart from those of
	// states (timers): an element then sees the same timer names again
	// from one step to the next, which reuse does not write.
	commitTimers pool[TimerEvent]
	// dirty says that a pool has handed out an element since the last
	// Reset: every pool's get, put and next set it, so that a Reset after
	// steps that emitted nothing, the most common, is one test.
	dirty bool
}

// timeWords is the layout of a time.Time, which
// TestTimeWordsIsTheLayoutOfTime checks: a wall clock and a monotonic
// word, which hold no pointer, and the location.
type timeWords struct {
	wall uint64
	ext  int64
	loc  *time.Location
}

// setTime writes t to *dst, as reuse.Set does, but the location, the one
// pointer of a time.Time, only when it changes: a time that differs from
// the one in *dst by its clock only (an event's At, the next step, in the
// same location) costs no write barrier while the collector marks.
func setTime(dst *time.Time, t time.Time) {
	d, s := (*timeWords)(unsafe.Pointer(dst)), (*timeWords)(unsafe.Pointer(&t))
	d.wall, d.ext = s.wall, s.ext
	if d.loc != s.loc {
		d.loc = s.loc
	}
}

// replyWithBlock is the size of the blocks a Queue cuts reply-withs
// from; a longer reply-with is allocated on its own.
const replyWithBlock = 256

// replyWith returns conv/self#n, the reply-with of the n-th message self
// sends in conversation conv, cut from q's block: a string per message
// without an allocation per message.
func (q *Queue) replyWith(conv, self string, n uint64) string {
	need := len(conv) + len(self) + len("/#") + 20 // 20 digits hold any uint64
	if need > replyWithBlock {
		return conv + "/" + self + "#" + strconv.FormatUint(n, 10)
	}
	if cap(q.replyWiths)-len(q.replyWiths) < need {
		q.replyWiths = make([]byte, 0, replyWithBlock) // the old block stays with its strings
	}
	// The need bytes from start are within the block's capacity: they
	// are written through p, without a bounds check for each.
	start := len(q.replyWiths)
	p := unsafe.Add(unsafe.Pointer(unsafe.SliceData(q.replyWiths)), start)
	putString(p, conv)
	k := len(conv)
	*(*byte)(unsafe.Add(p, k)) = '/'
	putString(unsafe.Add(p, k+1), self)
	k += 1 + len(self)
	*(*byte)(unsafe.Add(p, k)) = '#'
	k++
	if n < 10 { // the first messages of a conversation
		*(*byte)(unsafe.Add(p, k)) = byte('0' + n)
		k++
	} else {
		k = len(strconv.AppendUint(q.replyWiths[start:start+k:start+need], n, 10))
	}
	q.replyWiths = q.replyWiths[:start+k]
	return unsafe.String((*byte)(p), k)
}

// putString copies s to p, which has room for it, a word at a time: one
// of 8 bytes or more as 8-byte words, the last of which overlaps the one
// before it, a shorter one as two words that overlap, its first bytes
// and its last. Conversation ids and agent names are mostly short: that
// costs less than a loop over their bytes, or the call of the runtime
// that copy makes (putString calls nothing, so needs no frame).
func putString(p unsafe.Pointer, s string) {
	switch n := len(s); {
	case n >= 8:
		for k := 0; k < n-8; k += 8 {
			binary.LittleEndian.PutUint64((*[8]byte)(unsafe.Add(p, k))[:], word64(s[k:]))
		}
		binary.LittleEndian.PutUint64((*[8]byte)(unsafe.Add(p, n-8))[:], word64(s[n-8:]))
	case n >= 4:
		binary.LittleEndian.PutUint32((*[4]byte)(p)[:], word32(s[:4]))
		binary.LittleEndian.PutUint32((*[4]byte)(unsafe.Add(p, n-4))[:], word32(s[n-4:]))
	case n >= 2:
		binary.LittleEndian.PutUint16((*[2]byte)(p)[:], uint16(s[0])|uint16(s[1])<<8)
		binary.LittleEndian.PutUint16((*[2]byte)(unsafe.Add(p, n-2))[:], uint16(s[n-2])|uint16(s[n-1])<<8)
	case n == 1:
		*(*byte)(p) = s[0]
	}
}

// word64 returns the first 8 bytes of s, little-endian: one load.
func word64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// word32 returns the first 4 bytes of s, little-endian: one load.
func word32(s string) uint32 {
	_ = s[3]
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}

// reasonOf returns b as a string: the last one it returned when b spells
// the same, so that a peer repeating a rejected message costs no
// allocation for its reason.
func (q *Queue) reasonOf(b []byte) string {
	if string(b) != q.reason {
		q.reason = string(b)
	}
	return q.reason
}

// emit appends e to the events. Reset leaves their storage in place, so
// that a Queue that has seen as many events in one step before does not
// grow. The slot is written whether or not it holds e already: the
// events of one step are seldom those the same slot held the step
// before (each step starts at the first), so comparing first costs more
// than the write it would save.
func (q *Queue) emit(e Event) {
	q.events = append(q.events, e)
}

// Events returns the events appended since the last Reset, in order.
func (q *Queue) Events() []Event { return q.events }

// Len returns the number of events.
func (q *Queue) Len() int { return len(q.events) }

// Reset empties the queue, keeping its storage for reuse.
func (q *Queue) Reset() {
	q.events = q.events[:0] // the events stay in place for emit
	if q.dirty {
		q.resetPools()
	}
}

// resetPools hands out the pools' elements again from the first.
func (q *Queue) resetPools() {
	q.dirty = false
	q.msgs.reset()
	q.bodies.reset()
	q.decisions.reset()
	q.timers.reset()
	q.commitTimers.reset()
	q.errs.reset()
	q.commits.reset()
	q.loads.reset()
	q.dones.reset()
}

// pool hands out zeroed elements of a reusable slice. Growing it copies
// the elements, but pointers handed out before stay valid (they point into
// the old array, which the events still reference). Its get, put and next
// set *dirty, the Queue's flag that Reset resets the pools by.
type pool[T any] struct {
	items []T
	n     int
}

func (p *pool[T]) get(dirty *bool) *T {
	*dirty = true
	var zero T
	if p.n == len(p.items) {
		p.items = append(p.items, zero)
	}
	x := &p.items[p.n]
	*x = zero
	p.n++
	return x
}

// put hands out the next element set to v, in one write where get and an
// assignment would write it twice.
func (p *pool[T]) put(dirty *bool, v T) *T {
	*dirty = true
	if p.n == len(p.items) {
		p.items = append(p.items, v)
	} else {
		p.items[p.n] = v
	}
	x := &p.items[p.n]
	p.n++
	return x
}

// next hands out the next element as it is, for a caller that overwrites
// all of it: the write a zeroing would cost (every pointer of T, under
// the collector's write barrier while it marks) is saved.
func (p *pool[T]) next(dirty *bool) *T {
	*dirty = true
	if p.n == len(p.items) {
		var zero T
		p.items = append(p.items, zero)
	}
	x := &p.items[p.n]
	p.n++
	return x
}

// grow makes room for one more element when every element is handed
// out, for a caller that takes the next one itself.
func (p *pool[T]) grow() {
	if p.n >= len(p.items) {
		var zero T
		p.items = append(p.items, zero)
	}
}

func (p *pool[T]) reset() { p.n = 0 }

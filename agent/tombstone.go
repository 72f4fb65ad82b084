package agent

import (
	"context"
	"fmt"
	"hash/maphash"
	"log/slog"
	"math"
	"slices"
	"time"
	"unsafe"

	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policy"
)

// tombstone is what a worker keeps of an ended conversation for its
// retention: enough to answer Wait and Status, and to tell a late or
// repeated message what the handler would have told it, without the
// handler. Ended conversations are kept in the order they ended (next),
// so that the sweep looks at the oldest only.
//
// A conversation whose handler might answer a late message in a way the
// tombstone cannot tell is kept whole (whole): one with a store (it is
// stored again when a late message changes what it applied), with many
// sessions, that took a timer's transition (a late answer to that wait
// is reported as late, PE004, which needs the policy's guards), that
// held a message, or whose handler failed to process an input.
//
// It holds no pointer, so that the collector has nothing to follow in
// the slabs, which hold every ended conversation of the retention: it
// finds its slab, which holds the text of its strings and the content of
// its last message, from its place in it (idx, see slab), the next
// tombstone by where that is (next, see tombLink), the conversation kept
// whole by its place among the worker's (whole, see keepWhole), its
// program by its number among the worker's (prog, see progOf), and it
// holds when it ended as the time since the worker's epoch (ended), not
// as a time.Time, whose location is a pointer.
type tombstone struct {
	next  tombLink
	ended time.Duration
	// whole is 1 more than the place in the worker's wholes of the
	// conversation, kept in the worker's convs; 0 for a tombstone in
	// tombs.
	whole uint32
	prog  uint32
	idx   uint8
	// aborted says the conversation was aborted; applied, that the
	// handler applied a message (see lastPerf).
	aborted, applied bool

	// The conversation's strings, in the slab's text; none for a
	// conversation kept whole (its conversation has them).
	id, outcome, abortReason, state text
	// The last message the handler applied (applied says there was one),
	// to tell a duplicate: its performative, sender, in-reply-to and
	// reply-with, and its content (the slab's contents[idx]) when it had
	// no reply-with.
	lastPerf, lastSender, lastInReplyTo, lastReplyWith text
}

// tombLink is where a tombstone is, for another's next: 1 more than its
// slab's number (see worker.slabs) times tombsPerSlab plus its place in
// the slab; 0 for none. Unlike a tombRef it names a tombstone of any
// slab.
type tombLink uint64

// link returns where t is, for another tombstone's next.
func (t *tombstone) link() tombLink {
	return tombLink(uint64(t.slab().num+1)*tombsPerSlab + uint64(t.idx))
}

// linked returns the tombstone at l, or nil for 0.
func (w *worker) linked(l tombLink) *tombstone {
	if l == 0 {
		return nil
	}
	return &w.slabs[l/tombsPerSlab-1].tombs[l%tombsPerSlab]
}

// lastContent returns the content of the last message t's conversation
// applied, kept when it had no reply-with.
func (t *tombstone) lastContent() map[string]any { return t.slab().contents[t.idx] }

// text is a string a tombstone keeps in its slab's text: where it starts
// and how long it is. A tombstone holds no pointer to its strings, so
// that the collector, marking a slab, has few pointers to follow.
type text struct{ off, n uint32 }

// maxTombText bounds the text of one tombstone: a conversation whose id,
// outcome, abort reason, state and last message's envelope strings are
// longer together is kept whole (see keptWhole), and the tombstone of a
// conversation kept whole keeps no text, so that a slab's text stays
// within 4 MiB, far within what its offsets can reach.
const maxTombText = 1 << 16

// keep copies s into t's slab's text. The bytes kept are never written
// again: the text only grows, and a string str returned keeps the array
// it points into.
func (t *tombstone) keep(s string) text {
	sl := t.slab()
	off := len(sl.text)
	sl.text = append(sl.text, s...)
	return text{off: uint32(off), n: uint32(len(s))}
}

// str returns the string x of t.
func (t *tombstone) str(x text) string {
	if x.n == 0 {
		return ""
	}
	return unsafe.String(&t.slab().text[x.off], int(x.n))
}

// slab returns the slab t was cut from: t is its tombs[t.idx].
func (t *tombstone) slab() *tombSlab {
	return (*tombSlab)(unsafe.Add(unsafe.Pointer(t), -int(unsafe.Offsetof(tombSlab{}.tombs))-int(t.idx)*int(unsafe.Sizeof(*t))))
}

// ref returns where t is, for tombs; t is referable.
func (t *tombstone) ref() tombRef {
	return tombRef((t.slab().num+1)*tombsPerSlab + uint32(t.idx))
}

// tombAt returns the tombstone at r, or nil for 0.
func (w *worker) tombAt(r tombRef) *tombstone {
	if r == 0 {
		return nil
	}
	return &w.slabs[r/tombsPerSlab-1].tombs[r%tombsPerSlab]
}

// progOf returns the program of t.
func (w *worker) progOf(t *tombstone) *engine.Program { return w.progs[t.prog] }

// progNumber returns the number of prog among the worker's programs,
// giving it the next when it has none: the program the worker numbered
// last, without a lookup, as conversations mostly run the same one.
func (w *worker) progNumber(prog *engine.Program) uint32 {
	if n := w.lastProg; n < uint32(len(w.progs)) && w.progs[n] == prog {
		return n
	}
	n, ok := w.progNumbers[prog]
	if !ok {
		if w.progNumbers == nil {
			w.progNumbers = map[*engine.Program]uint32{}
		}
		n = uint32(len(w.progs))
		w.progs = append(w.progs, prog)
		w.progNumbers[prog] = n
	}
	w.lastProg = n
	return n
}

// sinceEpoch returns t as a tombstone holds it: the time since the
// worker's epoch (monotonic when both have a monotonic reading).
func (w *worker) sinceEpoch(t time.Time) time.Duration { return t.Sub(w.epoch) }

// keptWhole reports whether c must stay whole after its end (see
// tombstone and maxTombText), and else returns the state it ended in.
func (w *worker) keptWhole(c *conversation) (state string, whole bool) {
	if w.d != nil || c.whole || c.h.Sessions() != nil {
		return "", true
	}
	state = c.h.State("")
	n := len(c.id) + len(c.outcome) + len(c.abortReason) + len(state)
	if l := c.last; l != nil {
		n += len(l.Performative) + len(l.Sender) + len(l.InReplyTo) + len(l.ReplyWith)
	}
	return state, n > maxTombText
}

// retire replaces c, which has just ended, by its tombstone, or keeps it
// whole, and queues it for the sweep.
func (w *worker) retire(c *conversation) {
	t := w.newTombstone()
	t.ended = w.sinceEpoch(c.endedAt)
	if state, whole := w.keptWhole(c); whole {
		w.keepWhole(t, c) // its id is c's: it keeps no text
	} else {
		h := c.h
		t.id, t.prog, t.outcome, t.abortReason = t.keep(c.id), w.progNumber(h.Program()), t.keep(c.outcome), t.keep(c.abortReason)
		t.state, t.aborted = t.keep(state), h.Aborted()
		if l := c.last; l != nil {
			t.applied = true
			t.lastPerf, t.lastSender = t.keep(l.Performative), t.keep(l.Sender)
			t.lastInReplyTo, t.lastReplyWith = t.keep(l.InReplyTo), t.keep(l.ReplyWith)
			if l.ReplyWith == "" {
				t.slab().contents[t.idx] = l.Content
			}
		}
		delete(w.convs, c.id)
		w.putTomb(t)
		if c.children == 0 { // no child points to it
			w.retired = append(w.retired, c)
		}
	}
	w.retain(t)
}

// maxFreeConversations bounds the conversations a worker keeps for reuse.
const maxFreeConversations = 256

// newConversation returns an empty conversation, reusing one retired
// before.
func (w *worker) newConversation() *conversation {
	if n := len(w.freeConvs); n > 0 {
		c := w.freeConvs[n-1]
		w.freeConvs = w.freeConvs[:n-1]
		return c
	}
	return &conversation{}
}

// recycle keeps the conversations retired by the input just processed
// for reuse: nothing refers to them any more (their tombstones took
// their place, their timers and decisions are gone, and no child points
// to them).
func (w *worker) recycle() {
	for i, c := range w.retired {
		w.retired[i] = nil
		if len(w.freeConvs) < maxFreeConversations {
			*c = conversation{}
			w.freeConvs = append(w.freeConvs, c)
		}
	}
	w.retired = w.retired[:0]
}

// retain queues t for the sweep, in the order conversations ended. Ends
// come in time order, but conversations restored from a store may have
// ended before those queued already: those are put in their place.
func (w *worker) retain(t *tombstone) {
	if w.newest == nil {
		w.oldest, w.newest = t, t
		return
	}
	if t.ended >= w.newest.ended {
		w.newest.next, w.newest = t.link(), t
		return
	}
	if t.ended < w.oldest.ended {
		t.next, w.oldest = w.oldest.link(), t
		return
	}
	p := w.oldest
	for n := w.linked(p.next); t.ended >= n.ended; n = w.linked(p.next) {
		p = n
	}
	t.next, p.next = p.next, t.link()
}

// keepWhole makes t the tombstone of c, kept whole in convs.
func (w *worker) keepWhole(t *tombstone, c *conversation) {
	if n := len(w.freeWholes); n > 0 {
		i := w.freeWholes[n-1]
		w.freeWholes = w.freeWholes[:n-1]
		w.wholes[i] = c
		t.whole = i + 1
		return
	}
	w.wholes = append(w.wholes, c)
	t.whole = uint32(len(w.wholes))
}

// dropWhole returns the conversation kept whole that t is the tombstone
// of, forgetting it, or nil when t is in tombs.
func (w *worker) dropWhole(t *tombstone) *conversation {
	if t.whole == 0 {
		return nil
	}
	i := t.whole - 1
	c := w.wholes[i]
	w.wholes[i] = nil
	w.freeWholes = append(w.freeWholes, i)
	return c
}

// retainEnded queues the ended conversations of cs, restored from the
// store and kept whole, for the sweep.
func (w *worker) retainEnded(cs []*conversation) {
	var ended []*conversation
	for _, c := range cs {
		if c.h.Done() {
			ended = append(ended, c)
		}
	}
	slices.SortStableFunc(ended, func(a, b *conversation) int { return a.endedAt.Compare(b.endedAt) })
	for _, c := range ended {
		t := w.newTombstone()
		t.ended = w.sinceEpoch(c.endedAt)
		w.keepWhole(t, c)
		w.retain(t)
	}
}

// sweep forgets the conversations that ended at least the retention ago,
// oldest first; it stops at the first one still within its retention.
func (w *worker) sweep(now time.Time) {
	if w.m.o.retention <= 0 {
		return
	}
	since := w.sinceEpoch(now)
	for t := w.oldest; t != nil && since-t.ended >= w.m.o.retention; t = w.oldest {
		w.oldest, t.next = w.linked(t.next), 0
		if w.oldest == nil {
			w.newest = nil
		}
		if c := w.dropWhole(t); c != nil {
			w.remove(c.id)
			if w.d != nil {
				w.d.forget(c)
			}
		} else {
			w.dropTomb(t)
			w.m.total.v.Add(-1)
		}
		t.slab().contents[t.idx] = nil
		w.swept(t)
		*t = tombstone{} // its slab may live on: hold nothing
	}
}

// tombKey is the key of id's tombstone in tombs: a 64-bit hash of id
// under the worker's random seed, never 0, so that tombs holds no
// strings for the collector to scan and grows without reading them.
func (w *worker) tombKey(id string) uint64 {
	if k := maphash.String(w.seed, id); k != 0 {
		return k
	}
	return 1
}

// tomb returns the tombstone of conversation id, or nil. A key that
// leads to another id's tombstone is no match: the tombstone of an id
// whose key was taken already is in collided.
func (w *worker) tomb(id string) *tombstone {
	if t := w.tombAt(w.tombs.get(w.tombKey(id))); t != nil && t.str(t.id) == id {
		return t
	}
	if len(w.collided) == 0 {
		return nil
	}
	return w.collided[id]
}

// putTomb holds t, by its id's key, or in collided when that key is
// another id's.
func (w *worker) putTomb(t *tombstone) {
	id := t.str(t.id)
	if !t.referable() {
		w.collide(id, t)
		return
	}
	place := w.tombs.put(w.tombKey(id))
	if o := w.tombAt(*place); o != nil && o.str(o.id) != id {
		w.collide(id, t)
		return
	}
	*place = t.ref()
}

// collide holds t, of id, in collided.
func (w *worker) collide(id string, t *tombstone) {
	if w.collided == nil {
		w.collided = map[string]*tombstone{}
	}
	w.collided[id] = t
}

// dropTomb forgets t, held by putTomb.
func (w *worker) dropTomb(t *tombstone) {
	id := t.str(t.id)
	if t.referable() && w.tombs.drop(w.tombKey(id), t.ref()) {
		return
	}
	if w.collided[id] == t {
		delete(w.collided, id)
	}
}

// maxRefSlabs is how many slabs a tombRef can name: the tombstones of a
// slab numbered beyond (a worker holding some 2^32 of them) are held in
// collided.
const maxRefSlabs = math.MaxUint32/tombsPerSlab - 1

// referable reports whether a tombRef can name t.
func (t *tombstone) referable() bool { return t.slab().num < maxRefSlabs }

// tombSlab is what a worker cuts tombstones from, tombsPerSlab at a
// time, with the text of their strings and the contents of their last
// messages. They are swept in about the order they were made, so a slab
// is freed soon after its last tombstone is swept; one allocation, and
// one object for the collector to mark, stand for 64 ended
// conversations, and one more for their strings. Its pointers come
// first, and its tombstones hold none: the collector looks at its
// first 65 words only. num is its number among the worker's slabs (see
// worker.slabs), which it holds while live counts tombstones cut from it
// and not yet swept, or it is the slab the worker cuts from.
type tombSlab struct {
	contents [tombsPerSlab]map[string]any
	text     []byte
	tombs    [tombsPerSlab]tombstone
	num      uint32
	live     int32
}

const (
	tombsPerSlab = 64
	// A slab's text starts with room for what the last slab's took, and
	// an eighth more, within minTombText and maxTombRoom.
	minTombText = 4 << 10
	maxTombRoom = 64 << 10
)

func (w *worker) newTombstone() *tombstone {
	if w.slab == nil || w.slabUsed == len(w.slab.tombs) {
		room := minTombText
		if w.slab != nil {
			n := len(w.slab.text)
			room = min(max(room, n+n/8), maxTombRoom)
		}
		if old := w.slab; old != nil && old.live == 0 {
			w.freeSlab(old)
		}
		w.slab, w.slabUsed = &tombSlab{text: make([]byte, 0, room)}, 0
		if n := len(w.freeSlabs); n > 0 {
			w.slab.num = w.freeSlabs[n-1]
			w.freeSlabs = w.freeSlabs[:n-1]
			w.slabs[w.slab.num] = w.slab
		} else {
			w.slab.num = uint32(len(w.slabs))
			w.slabs = append(w.slabs, w.slab)
		}
	}
	t := &w.slab.tombs[w.slabUsed]
	t.idx = uint8(w.slabUsed)
	w.slabUsed++
	w.slab.live++
	return t
}

// swept counts t, swept, out of its slab, which gives its number back
// once it holds no tombstone left and is not the one the worker cuts
// from.
func (w *worker) swept(t *tombstone) {
	sl := t.slab()
	if sl.live--; sl.live == 0 && sl != w.slab {
		w.freeSlab(sl)
	}
}

// freeSlab gives sl's number back, for the next slab.
func (w *worker) freeSlab(sl *tombSlab) {
	w.slabs[sl.num] = nil
	w.freeSlabs = append(w.freeSlabs, sl.num)
}

func (t *tombstone) result() waitResult {
	if t.abortReason.n > 0 {
		return waitResult{outcome: t.str(t.outcome), err: &AbortError{Conversation: t.str(t.id), Reason: t.str(t.abortReason)}}
	}
	return waitResult{outcome: t.str(t.outcome)}
}

func (w *worker) tombStatus(t *tombstone) Status {
	prog := w.progOf(t)
	return Status{Conversation: t.str(t.id), Policy: prog.Policy().Name, Role: prog.Role(), Done: true, Outcome: t.str(t.outcome), States: map[string]string{"": t.str(t.state)}}
}

// late reports a message for an ended conversation, as its handler
// would: its content beyond forms.DefaultLimits (PE015), after an abort
// (PE005), a repeat of the last message applied (PE006), else after the
// end (PE005).
func (w *worker) late(t *tombstone, msg *forms.Message, now time.Time) {
	m := w.m
	if m.o.journal != nil && m.o.journalReceived {
		if err := m.o.journal.Write(now, msg); err != nil {
			w.tombLog(t, slog.LevelError, "journal write failed", "error", err)
		}
	}
	if m.o.observer != nil {
		w.observeTomb(t, &engine.MessageEvent{At: now, Message: msg}, true)
	}
	perf, from := perfName(w.progOf(t), msg), policy.Quote(msg.Sender)
	var code engine.ErrorCode
	var reason string
	switch err := forms.CheckContent(msg.Content, forms.DefaultLimits); {
	case err != nil:
		code, reason = engine.CodeContentLimit, fmt.Sprintf("%s from %s was not applied: %v", perf, from, err)
	case t.aborted:
		code, reason = engine.CodeEnded, fmt.Sprintf("%s from %s arrived after the conversation was aborted", perf, from)
	case t.isDuplicate(msg):
		code, reason = engine.CodeDuplicate, fmt.Sprintf("%s from %s repeats a message already received; the conversation has ended with outcome %s", perf, from, policy.Quote(t.str(t.outcome)))
	default:
		code, reason = engine.CodeEnded, fmt.Sprintf("%s from %s arrived after the conversation ended with outcome %s", perf, from, policy.Quote(t.str(t.outcome)))
	}
	w.tombError(t, &engine.ProtocolErrorEvent{At: now, Code: code, Reason: reason, Message: msg, State: t.str(t.state)})
}

// lateAnswer reports an answer (Manager.Answer) for an ended
// conversation, as its handler would: the decision is stale (PE008).
func (w *worker) lateAnswer(t *tombstone, ticket uint64, now time.Time, in *input) {
	if w.m.o.observer != nil {
		w.observeTomb(t, &engine.DecisionEvent{At: now, Ticket: ticket, Answer: in.extra.answer}, true)
	}
	reason := fmt.Sprintf("decision for ticket %d is stale: the conversation moved on before it was answered", ticket)
	w.tombError(t, &engine.ProtocolErrorEvent{At: now, Code: engine.CodeStaleDecision, Reason: reason})
}

// tombError logs and observes a protocol error as dispatch does for a
// handler's.
func (w *worker) tombError(t *tombstone, pe *engine.ProtocolErrorEvent) {
	if w.m.o.observer != nil {
		w.observeTomb(t, pe, false)
	}
	if w.m.o.logger.Enabled(context.Background(), slog.LevelWarn) {
		w.tombLog(t, slog.LevelWarn, pe.Reason, "code", string(pe.Code), "session", "")
	}
}

// isDuplicate tells a repeat of the last message applied: the same
// performative, sender and in-reply-to, and the same reply-with, or the
// same content when neither has one.
func (t *tombstone) isDuplicate(m *forms.Message) bool {
	if !t.applied || m.Performative != t.str(t.lastPerf) || m.InReplyTo != t.str(t.lastInReplyTo) || m.Sender != t.str(t.lastSender) {
		return false
	}
	if m.ReplyWith != "" || t.lastReplyWith.n > 0 {
		return m.ReplyWith == t.str(t.lastReplyWith)
	}
	return forms.SameContent(m.Content, t.lastContent())
}

// perfName names m's performative for a reason, as prog's handler does:
// as it is when the policy has a message type of that performative, else
// quoted and bounded.
func perfName(prog *engine.Program, m *forms.Message) string {
	for _, mt := range prog.Policy().Messages {
		if mt.Performative == m.Performative {
			return m.Performative
		}
	}
	return policy.Quote(m.Performative)
}

func (w *worker) observeTomb(t *tombstone, ev engine.Event, input bool) {
	prog := w.progOf(t)
	w.m.observe(Observation{Agent: w.m.self, Conversation: t.str(t.id), Policy: prog.Policy().Name, Role: prog.Role(), Input: input, Event: ev})
}

func (w *worker) tombLog(t *tombstone, level slog.Level, msg string, args ...any) {
	m := w.m
	if !m.o.logger.Enabled(context.Background(), level) {
		return
	}
	prog := w.progOf(t)
	attrs := append([]any{"agent", m.self, "conversation", t.str(t.id), "policy", prog.Policy().Name, "role", prog.Role(), "state", t.str(t.state)}, args...)
	m.o.logger.Log(context.Background(), level, clipAttr(msg), attrs...)
}

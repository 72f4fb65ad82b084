package engine

import (
	"slices"
	"time"
	"unsafe"

	"github.com/parleyhq/parley/forms"
)

// step takes the transition of e, the event of a received message m, in
// the case that is by far the most common: a handler with one session,
// and a message that passes every check received makes, so that there is
// nothing to report. It makes those checks, in received's order and with
// the same helpers (the conversation id, the content's limits, the
// classification with its match rules and guards, the sender's binding,
// lateness, in-reply-to, the content's types, the run budget),
// then takes the transition as received does; a quiet one (see
// transProg) without the calls of apply and enter that would find
// nothing more to do. A message no transition of the state takes, the
// most common violation, it holds or reports as received does. Then it
// delivers the messages held, as Process does after any input. When
// another check fails or the case is another, it hands e to next (for
// Process, process) having changed nothing (as for a message sent, or
// an event without one), and returns what next does: dispatch's
// received makes the checks again and reports what fails.
//
// step itself decides, without a call, the simplest case (a plain state,
// a message without content or in-reply-to whose conversation id and
// sender are the very strings the handler holds), in which most of those
// checks have nothing to look at; stepChecked makes them all. Handing e
// on, rather than returning, lets Process return what step does without
// keeping its arguments across the call.
func (h *Handler) step(e *MessageEvent, out *Queue, next func(*Handler, Event, *Queue) error) error {
	m := e.Message
	if m == nil || e.Sent || h.done || !h.started {
		return next(h, e, out)
	}
	pr := h.prog
	// A handler without a many role keeps its one session in h.one.
	s := &h.one[0]
	if pr.manyRole >= 0 || s.state < 0 {
		return next(h, e, out)
	}
	sp := &pr.states[s.state]
	conv := m.ConversationID
	if !sp.plain || len(m.Content) != 0 || m.InReplyTo != "" || conv != "" && h.conv != "" && !sameString(conv, h.conv) {
		return h.stepChecked(e, sp, out, next)
	}
	perf := m.Performative
	key := perfKey64(perf)
	if key == 0 {
		return h.stepChecked(e, sp, out, next)
	}
	r := sp.recvOfKey(key, len(perf))
	if r == nil {
		h.stepUnexpected(m, e.At, out)
		return nil
	}
	t := r.t // a plain state's receives are byPerf
	bound := h.peer(t.peer)
	if b := *bound; b != "" && !sameString(b, m.Sender) || !t.plain {
		return h.stepChecked(e, sp, out, next)
	}
	// What stepChecked does for a quiet transition in a program without
	// a run budget.
	noteMessage(s, t, m, bound)
	s.timedOutFrom = -1
	h.changeState(s, t.next)
	if len(h.heldList()) > 0 {
		h.deliverHeld(e.At, out)
	}
	return nil
}

// stepChecked is step for a message in state sp that step did not
// decide itself: it makes every check.
func (h *Handler) stepChecked(e *MessageEvent, sp *stateProg, out *Queue, next func(*Handler, Event, *Queue) error) error {
	m := e.Message
	pr := h.prog
	s := &h.one[0]
	if h.otherConversation(m) || sp.terminal {
		return next(h, e, out)
	}
	kinds, val, err := sp.recvFields.CheckContentField(m.Content, forms.DefaultLimits, sp.guardField)
	if err != nil {
		return next(h, e, out)
	}
	var t *transProg
	if sp.byPerf {
		// The first receive of m's performative (perfRecvs).
		perf := m.Performative
		var r *perfRecv
		if key := perfKey64(perf); key != 0 {
			r = sp.recvOfKey(key, len(perf))
		} else {
			r = sp.recvOfLong(perf)
		}
		if r != nil {
			t = r.t
		}
	} else {
		var ok bool
		if t, ok = h.stepMatch(sp, m, kinds, val); !ok {
			return next(h, e, out)
		}
	}
	if t == nil {
		// No transition takes m, as received's classify would find:
		// what received does then.
		h.stepUnexpected(m, e.At, out)
		return nil
	}
	// received's classify would go on to a later transition bound to
	// the sender; this one, bound to another agent, is received's to
	// report or take. (boundTo, for a handler without a many role; the
	// quiet transition below binds the role through bound.)
	bound := h.peer(t.peer)
	if *bound != "" && !sameString(*bound, m.Sender) {
		return next(h, e, out)
	}
	if len(sp.arms) > 0 && h.lateBy(s, &e.At, t.peer) != 0 {
		return next(h, e, out)
	}
	if m.InReplyTo != "" && h.strayReply(s, m) {
		return next(h, e, out)
	}
	if len(t.form.Type.Fields) > 0 && t.form.ValidateKinds(m.Content, kinds, t.fieldsAt) != nil {
		return next(h, e, out)
	}
	if pr.budgeted && h.budgetSpent(0, t) != "" {
		return next(h, e, out)
	}
	if !t.quiet {
		at := e.At
		h.apply(0, t, m, &at, out, false)
	} else {
		// apply, and enter, for a transition that only changes the
		// state.
		if pr.budgeted {
			h.countMessage(0)
			h.countVisit(0, t.next)
		}
		noteMessage(s, t, m, bound)
		s.timedOutFrom = -1
		h.changeState(s, t.next)
	}
	if len(h.heldList()) > 0 {
		h.deliverHeld(e.At, out)
	}
	return nil
}

// stepUnexpected does what received does with m, which no transition of
// the state takes: it holds it for a later state, or reports it. Then it
// delivers the messages held, as Process does after any input.
func (h *Handler) stepUnexpected(m *forms.Message, at time.Time, out *Queue) {
	if !h.hold(0, m, at, out) {
		h.unexpected(0, m, at, out)
	}
	if len(h.heldList()) > 0 {
		h.deliverHeld(at, out)
	}
}

// perfRecv is a performative of a state's receives: its key
// (perfKey64) and length, and the first receive of it in the order
// classifying considers them (recvOrder's, unless byPerf). When that one
// has neither a match rule nor a guard, it takes every message of the
// performative, and recvs is nil; otherwise recvs holds the indices of
// every receive of the performative in that order, for stepMatch.
type perfRecv struct {
	key   uint64
	n     int
	t     *transProg
	recvs []int32
}

// recvOfLong returns the performative perf of state sp's receives,
// which has no key (perfKey64); nil for none.
func (sp *stateProg) recvOfLong(perf string) *perfRecv {
	for k := range sp.perfRecvs {
		if r := &sp.perfRecvs[k]; r.key == 0 && r.t.perf == perf {
			return r
		}
	}
	return nil
}

// recvOfKey returns the performative of state sp's receives of n bytes
// whose key (perfKey64) is key, not 0; nil for none.
func (sp *stateProg) recvOfKey(key uint64, n int) *perfRecv {
	for k := range sp.perfRecvs {
		if r := &sp.perfRecvs[k]; r.key == key && r.n == n {
			return r
		}
	}
	return nil
}

// perfKey64 is shortKey(s) in one word: the first four bytes low, the
// last four high.
func perfKey64(s string) uint64 {
	if len(s) < 4 || len(s) > 8 {
		return 0
	}
	return word4(s) | word4(s[len(s)-4:])<<32
}

// word4 returns the first four bytes of s, of four or more, as a number,
// the first lowest: one load of four bytes where the machine allows it.
func word4(s string) uint64 {
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24
}

// sameString is a == b, decided without a call of the runtime: at once
// when both are the same bytes in memory, as a conversation's id and an
// agent's name are in a message built in this process from the strings
// its handlers were given (a Driver's, a test's), and otherwise by
// sameBytes, as for a message decoded from a transport. The call and
// spills of the runtime's comparison cost more than the few bytes of
// such a string.
func sameString(a, b string) bool {
	return len(a) == len(b) && (unsafe.StringData(a) == unsafe.StringData(b) || sameBytes(a, b))
}

// sameBytes is a == b for strings of the same length: 8 bytes at a
// time, the last 8 overlapping the ones before them; 4 and 4 for a
// string of under 8; its first, middle and last bytes, all of them, for
// one of under 4.
func sameBytes(a, b string) bool {
	n := len(a)
	switch {
	case n >= 8:
		for k := 0; k < n-8; k += 8 {
			if word64(a[k:]) != word64(b[k:]) {
				return false
			}
		}
		return word64(a[n-8:]) == word64(b[n-8:])
	case n >= 4:
		return word32(a) == word32(b) && word32(a[n-4:]) == word32(b[n-4:])
	case n > 0:
		return a[0] == b[0] && a[n/2] == b[n/2] && a[n-1] == b[n-1]
	}
	return true
}

// stepMatch classifies m in state sp, some of whose receives have a
// match rule or a guard, as classify does: it finds the receives of m's
// performative (perfRecvs), and considers them in classify's order. It
// returns the first receive that takes m (nil for none), and false when
// a guard fails to evaluate. kinds and val are the content check's.
func (h *Handler) stepMatch(sp *stateProg, m *forms.Message, kinds forms.Kinds, val any) (*transProg, bool) {
	perf := m.Performative
	var r *perfRecv
	if key := perfKey64(perf); key != 0 {
		r = sp.recvOfKey(key, len(perf))
	} else {
		r = sp.recvOfLong(perf)
	}
	switch {
	case r == nil:
		return nil, true
	case r.recvs == nil:
		return r.t, true
	}
	for _, k := range r.recvs {
		c := &sp.recvs[k]
		if c.hasMatch && !c.matches(m, kinds) {
			continue
		}
		if c.guard != nil {
			if ok, err := h.guardHolds(0, c, m, guardField(sp, c, kinds, &val)); err != nil {
				return nil, false
			} else if !ok {
				continue
			}
		}
		return c, true
	}
	return nil, true
}

// guardField returns val, the value of state sp's guardField that the
// content check returned with kinds, for guardHolds of receive c when it
// is the field c's guard reads and the check found it; nil otherwise.
func guardField(sp *stateProg, c *transProg, kinds forms.Kinds, val *any) *any {
	if c.guardAt == sp.guardField && kinds.Found(c.guardAt) {
		return val
	}
	return nil
}

// matches is t.form.Matches(m) for a message m of t's performative
// whose content's fields have kinds (of its state's recvFields): a match
// rule that tests whether content holds a field the kinds say it holds
// or not is decided without evaluating it.
func (t *transProg) matches(m *forms.Message, kinds forms.Kinds) bool {
	if t.presenceAt >= 0 {
		switch {
		case kinds.Found(t.presenceAt):
			return t.ifPresent
		case kinds.Absent(t.presenceAt):
			return t.ifAbsent
		}
	}
	return t.form.Matches(m)
}

// shortKey returns the bytes of a string s of 4 to 8 bytes as numbers:
// its first four and its last four (which overlap when s is shorter
// than 8), so that two such strings of the same length are equal when
// their keys are. It returns zeros for other lengths, and for strings
// whose key is zeros, which are then to be compared as strings. Most
// performatives are of 4 to 8 bytes: step compares a message's with
// those of a state's receives by their keys, two loads for the
// message's and a compare for each receive, where == calls the runtime
// for each.
func shortKey(s string) [2]uint32 {
	if len(s) < 4 || len(s) > 8 {
		return [2]uint32{}
	}
	t := s[len(s)-4:]
	return [2]uint32{
		uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24,
		uint32(t[0]) | uint32(t[1])<<8 | uint32(t[2])<<16 | uint32(t[3])<<24,
	}
}

// planSteps sets what step reads of the program besides what build
// compiled for received: whether the program has a run budget, and for
// each state whether its receives are told apart by performative alone
// (byPerf), else the order classifying considers them in (recvOrder),
// and the receives of each performative in that order (perfRecvs).
func (pr *Program) planSteps() {
	pr.budgeted = pr.budgetMessages != 0 || pr.budgetVisits != 0
	for k := range pr.states {
		sp := &pr.states[k]
		sp.byPerf = !sp.recvMatch && !slices.ContainsFunc(sp.recvs, func(t transProg) bool { return t.guard != nil })
		sp.plain = sp.byPerf && !sp.terminal && len(sp.arms) == 0 && !pr.budgeted
		for j := range sp.recvs {
			t := &sp.recvs[j]
			t.plain = t.quiet && len(t.form.Type.Fields) == 0
		}
		order := sp.recvOrder
		switch {
		case !sp.byPerf && order == nil:
			sp.recvOrder = matchFirst(sp.recvs)
			order = sp.recvOrder
		case sp.byPerf:
			order = matchFirst(sp.recvs) // recvs' order: none has a match rule
		}
		sp.perfRecvs = perfRecvsOf(sp.recvs, order)
	}
}

// perfRecvsOf returns the performatives of list, in the order of their
// first receives in order (indices of list), each with its receives (see
// perfRecv).
func perfRecvsOf(list []transProg, order []int32) []perfRecv {
	var rs []perfRecv
	for _, j := range order {
		t := &list[j]
		k := slices.IndexFunc(rs, func(r perfRecv) bool { return r.t.perf == t.perf })
		if k < 0 {
			rs = append(rs, perfRecv{key: perfKey64(t.perf), n: len(t.perf), t: t})
			k = len(rs) - 1
		}
		if r := &rs[k]; r.t.hasMatch || r.t.guard != nil {
			r.recvs = append(r.recvs, j)
		}
	}
	return rs
}

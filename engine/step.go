package engine

import (
	"time"

	"github.com/parleyhq/parley/forms"
)

// step takes the transition of received message m in the case that is by
// far the most common: a handler with one session, whose state takes m
// without a match rule, and a message that passes every check received
// makes, so that there is nothing to report. It makes those checks, in
// received's order and with the same helpers (the conversation id, the
// content's limits, the classification with its guard, the sender's
// binding, lateness, in-reply-to, the content's types, the run budget),
// then takes the transition as received does; a quiet one (see
// transProg) without the calls of apply and enter that would find
// nothing more to do. A message no transition of the state takes, the
// most common violation, it holds or reports as received does. When
// another check fails or the case is another, it reports false having
// changed nothing, and Process hands m to received, which makes the
// checks again and reports what fails.
func (h *Handler) step(m *forms.Message, at time.Time, out *Queue) bool {
	pr := h.prog
	if pr.manyRole >= 0 || h.done || h.otherConversation(m) {
		return false
	}
	s := &h.sessions[0]
	if s.state < 0 {
		return false
	}
	sp := &pr.states[s.state]
	if sp.terminal || sp.recvMatch {
		return false
	}
	kinds, val, err := sp.recvFields.CheckContentField(m.Content, forms.DefaultLimits, sp.guardField)
	if err != nil {
		return false
	}
	var t *transProg
	for k := range sp.recvs {
		c := &sp.recvs[k]
		if c.perf != m.Performative {
			continue
		}
		if c.guard != nil {
			var field *any // the guard's field, when the check found it
			if c.guardAt == sp.guardField && kinds.Found(c.guardAt) {
				field = &val
			}
			if ok, err := h.guardHolds(0, c, m, field); err != nil {
				return false
			} else if !ok {
				continue
			}
		}
		t = c
		break
	}
	if t == nil {
		// No transition takes m, as received's classify would find:
		// what received does then.
		if !h.hold(0, m, at, out) {
			h.unexpected(0, m, at, out)
		}
		return true
	}
	// received's classify would go on to a later transition bound to
	// the sender; this one, bound to another agent, is received's to
	// report or take.
	if !h.boundTo(0, t.peer, m.Sender) {
		return false
	}
	if len(s.deadlines) > 0 {
		if late, _ := h.isLate(s, at, t.peer); late {
			return false
		}
	}
	if m.InReplyTo != "" && h.strayReply(s, m) {
		return false
	}
	if len(t.form.Type.Fields) > 0 && t.form.ValidateKinds(m.Content, kinds, t.fieldsAt) != nil {
		return false
	}
	if h.overBudget(0, t) != "" {
		return false
	}
	if !t.quiet {
		h.apply(0, t, m, at, out, false)
		return true
	}
	// apply, and enter, for a transition that only changes the state.
	h.countMessage(0)
	h.noteReceived(s, t, m)
	s.timedOutFrom = -1
	h.countVisit(0, t.next)
	h.changeState(0, t.next)
	return true
}

package engine

import "github.com/parleyhq/parley/forms"

// step takes the transition of e, the event of a received message m, in
// the case that is by far the most common: a handler with one session, whose state takes m
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
// changed nothing (as for a message sent, or an event without one), and
// Process hands e to dispatch, whose received makes the checks again
// and reports what fails.
func (h *Handler) step(e *MessageEvent, out *Queue) bool {
	m, pr := e.Message, h.prog
	if m == nil || e.Sent || pr.manyRole >= 0 || h.done || h.otherConversation(m) {
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
	perf := m.Performative
	key := shortKey(perf)
	for k := range sp.recvs {
		c := &sp.recvs[k]
		if len(c.perf) != len(perf) || key != c.perfKey || key == [2]uint32{} && c.perf != perf {
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
		if !h.hold(0, m, e.At, out) {
			h.unexpected(0, m, e.At, out)
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
		if late, _ := h.isLate(s, e.At, t.peer); late {
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
		h.apply(0, t, m, e.At, out, false)
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

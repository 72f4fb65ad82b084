package engine

import "time"

// OutcomeAborted is the outcome of a conversation its host aborted with
// Handler.Abort, because it could not carry out the handler's outputs (a
// message failed to send, decision logic failed). No policy can declare
// it: it names no terminal state.
const OutcomeAborted = "aborted"

// Abort ends the conversation at time at, whatever its state: it cancels
// every armed timer (TimerEvent cancel outputs), closes open commitments
// as an end would (a detached obligation is violated, a conditional one
// expires), and emits a CPDoneEvent with Outcome OutcomeAborted and
// reason. Afterwards the handler is done: messages get PE005, decisions
// are stale. Abort on a handler that is done does nothing; before Start
// it returns ErrNotStarted.
func (h *Handler) Abort(at time.Time, reason string, out *Queue) error {
	if !h.started {
		return ErrNotStarted
	}
	if h.done {
		return nil
	}
	pr := h.prog
	for i := range h.sessions {
		s := &h.sessions[i]
		if s.state < 0 || pr.states[s.state].terminal {
			continue
		}
		for _, k := range pr.states[s.state].arms {
			h.emitTimer(out, TimerCancel, at, pr.timers[k].name, "", i, s.epoch, time.Time{})
		}
		h.endCommitments(i, at, out)
		s.ticket = 0
	}
	if h.many != nil {
		h.many.groupTicket = 0
	}
	h.done = true
	e := out.dones.get()
	*e = CPDoneEvent{At: at, Policy: pr.policy.Name, Outcome: OutcomeAborted, Reason: reason}
	out.events = append(out.events, e)
	return nil
}

package engine

import "time"

// OutcomeAborted is the outcome of a conversation its host aborted with
// Handler.Abort, because it could not carry out the handler's outputs (a
// message failed to send, decision logic failed), and of each of its
// sessions that had not ended by then. No policy can declare it: it names
// no terminal state.
const OutcomeAborted = "aborted"

// Abort ends the conversation at time at, whatever its state, because the
// host cannot carry out what the handler asked for: a message it failed
// to send, a decision its logic failed to make (an error, a panic, a
// timeout). The conversation then ends visibly instead of waiting for a
// timer, or forever.
//
// Abort appends a TimerCancel for every timer the sessions' states armed;
// closes each open commitment as an end would, with cause "aborted" (a
// detached obligation is violated, a conditional one expires, and each
// cancels its deadline timer); and appends one CPDoneEvent with Outcome
// OutcomeAborted and Reason reason. With a many role, its Outcomes gives
// each peer's outcome: the sessions that had ended keep theirs, the others
// are OutcomeAborted, as Outcome reports them from then on.
//
// Afterwards the handler is done: every message gets PE005
// conversation-ended, timers and child ends are ignored, and answers to
// its decisions are stale (PE008). Child policies the conversation loaded
// are the host's to end. A snapshot keeps that the handler was aborted,
// not the reason.
//
// Abort on a handler that is done does nothing; before Start it returns
// ErrNotStarted.
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
		if s.state < 0 {
			continue
		}
		for _, k := range pr.states[s.state].arms {
			h.emitTimer(out, TimerCancel, &at, k, nil, i, s.epoch)
		}
		if !pr.states[s.state].terminal {
			h.endCommitments(i, &at, "aborted", out)
		}
		s.ticket = 0 // no decision is awaited any more
	}
	if h.many != nil {
		h.many.groupTicket = 0
	}
	h.dropHeld(at, out)
	h.done, h.aborted = true, true
	e := out.dones.get(&out.dirty)
	*e = CPDoneEvent{At: at, Policy: pr.policy.Name, Outcome: OutcomeAborted, Reason: reason}
	if pr.manyRole >= 0 {
		e.Outcomes = make(map[string]string, len(h.sessions))
		for i := range h.sessions {
			e.Outcomes[h.sessionName(i)] = h.outcome(i)
		}
	}
	out.emit(e)
	return nil
}

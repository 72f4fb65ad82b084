package engine

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/reuse"
)

func (c CommitmentState) active() bool {
	return c == CommitmentConditional || c == CommitmentDetached
}

// commitPhase is a CommitmentState as a small number, as a session
// keeps it: no string to compare, nor a pointer to write as it moves.
type commitPhase uint8

// The phases, in the order of phaseStates.
const (
	phaseNone commitPhase = iota // never created
	phaseConditional
	phaseDetached
	phaseDischarged
	phaseViolated
	phaseExpired
	phaseCancelled
	phaseReleased
)

// phaseStates holds the CommitmentState of each phase.
var phaseStates = [...]CommitmentState{
	phaseNone: "", phaseConditional: CommitmentConditional, phaseDetached: CommitmentDetached,
	phaseDischarged: CommitmentDischarged, phaseViolated: CommitmentViolated, phaseExpired: CommitmentExpired,
	phaseCancelled: CommitmentCancelled, phaseReleased: CommitmentReleased,
}

// state returns p's CommitmentState ("" for phaseNone).
func (p commitPhase) state() CommitmentState { return phaseStates[p] }

func (p commitPhase) active() bool {
	return p == phaseConditional || p == phaseDetached
}

// phaseOf returns the phase of commitment state st; phaseNone for "" and
// for a string that is no commitment state.
func phaseOf(st CommitmentState) commitPhase {
	for p, s := range phaseStates {
		if s == st {
			return commitPhase(p)
		}
	}
	return phaseNone
}

// phaseCount is the number of commitment phases.
const phaseCount = len(phaseStates)

// phaseMove is what a commitment operation does to a commitment in one
// phase: moves it to to, and on to then unless then is phaseNone;
// nothing when to is phaseNone.
type phaseMove struct{ to, then commitPhase }

// movesOf returns what operation op does to a commitment (detachable,
// or not) in each phase, which compile computes once: an active
// commitment is not created again, a conditional one is detached, an
// active one discharged or released, and a cancel lets a conditional
// commitment go but violates a detached one. A commitment created that
// cannot be detached later is detached at once.
func movesOf(op opKind, detachable bool) [phaseCount]phaseMove {
	var moves [phaseCount]phaseMove
	for k := range moves {
		p, mv := commitPhase(k), &moves[k]
		switch {
		case op == opCreate && !p.active():
			mv.to, mv.then = phaseConditional, phaseDetached
			if detachable {
				mv.then = phaseNone
			}
		case op == opDetach && p == phaseConditional:
			mv.to = phaseDetached
		case op == opDischarge && p.active():
			mv.to = phaseDischarged
		case op == opCancel && p == phaseConditional:
			mv.to = phaseCancelled
		case op == opCancel && p == phaseDetached:
			mv.to = phaseViolated
		case op == opRelease && p.active():
			mv.to = phaseReleased
		}
	}
	return moves
}

// move returns what op does to its commitment, one of insts (a
// session's), in the phase it is in.
func (op *commitOp) move(insts []commitInst) phaseMove {
	return op.moves[insts[op.commit].state]
}

// commitMove moves commitment k of session i to state to, emitting the
// event and setting or cancelling its deadline timers, and then, unless
// then is phaseNone, on to state then in the same way (a commitment
// created that cannot be detached later is detached at once).
func (h *Handler) commitMove(i, k int, to, then commitPhase, at *time.Time, cause string, out *Queue) {
	pr := h.prog
	c := &pr.commits[k]
	inst := &pr.commitSlots(&h.sessions[i])[k] // set: the session has commitments
	// The agents and the session are those of both moves: looked up
	// once. The timer a move arms is the one the next move cancels.
	debtor, creditor, session := h.agentOf(i, c.debtor), h.agentOf(i, c.creditor), h.sessionName(i)
	armed := c.timer(inst.state)
	for {
		if armed >= 0 {
			h.emitTimer(out, TimerCancel, at, armed, c, i, inst.epoch)
		}
		inst.state = to
		inst.epoch = h.next()
		inst.deadline = 0
		e := out.commits.next(&out.dirty) // every field is written
		setTime(&e.At, *at)
		reuse.String(&e.Name, c.name)
		reuse.String(&e.State, to.state())
		reuse.String(&e.Debtor, debtor)
		reuse.String(&e.Creditor, creditor)
		reuse.String(&e.Session, session)
		reuse.String(&e.Cause, cause)
		out.emit(e)
		if armed = c.timer(to); armed >= 0 {
			inst.deadline = h.emitTimer(out, TimerSet, at, armed, c, i, inst.epoch)
		}
		if then == phaseNone {
			return
		}
		to, then = then, phaseNone
	}
}

// timer returns the timer commitment c has armed in phase p (expires
// while conditional, deadline while detached), or -1.
func (c *commitProg) timer(p commitPhase) int {
	switch p {
	case phaseConditional:
		return c.expires
	case phaseDetached:
		return c.deadline
	}
	return -1
}

// commitTimer handles a commitment's deadline: an antecedent not met in
// time expires the commitment, a consequent not met violates it. A timer
// that is not the one the commitment armed last (another name or epoch)
// is stale and ignored.
func (h *Handler) commitTimer(i int, e *TimerEvent, out *Queue) {
	s := &h.sessions[i]
	k := slices.IndexFunc(h.prog.commits, func(c commitProg) bool { return c.name == e.Commitment })
	at := e.At // the input's, which the events emitted must not alias
	commits := h.commits(s)
	if k < 0 || commits == nil || commits[k].epoch != e.Epoch {
		return
	}
	if armed := h.prog.commits[k].timer(commits[k].state); armed < 0 || h.prog.timers[armed].name != e.Name {
		return
	}
	switch commits[k].state {
	case phaseConditional:
		h.commitMove(i, k, phaseExpired, phaseNone, &at, "deadline", out)
	case phaseDetached:
		h.commitMove(i, k, phaseViolated, phaseNone, &at, "deadline", out)
	}
}

// endCommitments closes the session's open commitments when it ends
// (cause says how: "conversation ended", "aborted"): an obligation still
// detached was not met, a conditional one lapses.
func (h *Handler) endCommitments(i int, at *time.Time, cause string, out *Queue) {
	s := &h.sessions[i]
	if !s.cmSet {
		return
	}
	commits := h.prog.commitSlots(s)
	for k := range commits {
		switch commits[k].state {
		case phaseConditional:
			h.commitMove(i, k, phaseExpired, phaseNone, at, cause, out)
		case phaseDetached:
			h.commitMove(i, k, phaseViolated, phaseNone, at, cause, out)
		}
	}
}

// summarize renders how many peers had each outcome as
// "done=1,rejected=4", sorted.
func summarize(counts map[string]int) string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%d", k, counts[k])
	}
	return b.String()
}

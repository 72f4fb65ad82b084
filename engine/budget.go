package engine

import (
	"fmt"

	"github.com/parleyhq/parley/policy"
)

// overBudget returns why taking transition t, on a message, in session i
// goes over the policy's run budget (policy.Budget), or "": the session
// has exchanged as many messages as the budget allows, or entered t's
// next state as many times. The handler counts both for each session
// (and keeps them in snapshots); timeouts and children's returns are
// counted but never refused.
func (h *Handler) overBudget(i int, t *transProg) string {
	if !h.prog.budgeted {
		return ""
	}
	return h.budgetSpent(i, t)
}

// budgetSpent is overBudget for a program with a run budget.
func (h *Handler) budgetSpent(i int, t *transProg) string {
	pr := h.prog
	s := &h.sessions[i]
	if n := s.messageCount(); pr.budgetMessages > 0 && int(n) >= pr.budgetMessages {
		return fmt.Sprintf("the conversation has exchanged as many messages as its budget allows (%d)", n)
	}
	if v := s.visitCounts(); pr.budgetVisits > 0 && t.next < len(v) && int(v[t.next]) >= pr.budgetVisits {
		return fmt.Sprintf("state %s has been entered as many times as the budget allows (%d)", policy.Quote(h.prog.states[t.next].name), v[t.next])
	}
	return ""
}

// countVisit counts session i's entry into state st, when the budget
// bounds visits.
func (h *Handler) countVisit(i, st int) {
	if h.prog.budgetVisits == 0 {
		return
	}
	s := &h.sessions[i]
	if len(s.visitCounts()) != len(h.prog.states) {
		s.moreOf().visits = make([]int32, len(h.prog.states))
	}
	if v := s.more.visits; v[st] < 1<<30 {
		v[st]++
	}
}

// countMessage counts a message session i exchanged, when the budget
// bounds messages (so that a handler without one keeps no count, and its
// snapshots do not grow a number that only dates them).
func (h *Handler) countMessage(i int) {
	if h.prog.budgetMessages == 0 {
		return
	}
	if m := h.sessions[i].moreOf(); m.messages < 1<<30 {
		m.messages++
	}
}

// restoreBudget restores a session's run budget counts: none negative,
// and a count of visits for every state or none.
func (pr *Program) restoreBudget(s *session, ss *sessionSnapshot) error {
	if ss.Messages < 0 {
		return fmt.Errorf("%d messages exchanged", ss.Messages)
	}
	if len(ss.Visits) > 0 && len(ss.Visits) != len(pr.states) {
		return fmt.Errorf("visits of %d states, the program has %d", len(ss.Visits), len(pr.states))
	}
	for _, v := range ss.Visits {
		if v < 0 {
			return fmt.Errorf("a state entered %d times", v)
		}
	}
	if ss.Messages != 0 {
		s.moreOf().messages = ss.Messages
	}
	if ss.Visits != nil {
		s.moreOf().visits = ss.Visits
	}
	return nil
}

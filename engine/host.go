package engine

// Awaits reports whether the handler still waits for an answer to the
// decision it raised with ticket: false once the decision was taken, the
// state moved on (the ticket is stale) or the conversation ended. Hosts
// use it to tell a decision that is overdue from one that no longer
// matters.
func (h *Handler) Awaits(ticket uint64) bool {
	if h.done || ticket == 0 {
		return false
	}
	idx := int(ticket & (1<<ticketSessionBits - 1))
	if idx > 0 {
		return idx <= len(h.sessions) && h.sessions[idx-1].ticket == ticket
	}
	if h.many == nil {
		return false
	}
	if ticket == h.many.groupTicket {
		return true
	}
	for i := range h.sessions {
		if h.sessions[i].ticket == ticket {
			return true
		}
	}
	return false
}

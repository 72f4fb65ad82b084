package engine

import (
	"time"

	"github.com/parleyhq/parley/decision"
)

// Armed returns a TimerEvent set (Op TimerSet) for every timer the
// handler has armed and not seen fire or cancelled: its states' timers
// and its commitments' deadlines, each with its absolute Deadline and
// Epoch. A host that restores a handler from a snapshot arms these again
// (firing at once those already past due, in deadline order), since a
// snapshot keeps timers only as the handler's state.
func (h *Handler) Armed() []TimerEvent {
	if h.done || !h.started {
		return nil
	}
	pr := h.prog
	var out []TimerEvent
	for i := range h.sessions {
		s := &h.sessions[i]
		if s.state < 0 {
			continue
		}
		sp := &pr.states[s.state]
		if !sp.terminal {
			deadlines := h.deadlines(s)
			for j, k := range sp.arms {
				if j < len(deadlines) && deadlines[j] != 0 {
					out = append(out, TimerEvent{Op: TimerSet, Name: pr.timers[k].name, Session: h.sessionName(i),
						Deadline: time.Unix(0, deadlines[j]).UTC(), Epoch: s.epoch})
				}
			}
		}
		commits := h.commits(s)
		for k := range commits {
			c, inst := &pr.commits[k], &commits[k]
			if t := c.timer(inst.state); t >= 0 && inst.deadline != 0 {
				out = append(out, TimerEvent{Op: TimerSet, Name: pr.timers[t].name, Commitment: c.name, Session: h.sessionName(i),
					Deadline: time.Unix(0, inst.deadline).UTC(), Epoch: inst.epoch})
			}
		}
	}
	return out
}

// Open returns a DecisionEvent for every decision the handler has raised
// and not seen answered, with the ticket that answers it: a host that
// restores a handler from a snapshot asks these again.
func (h *Handler) Open() []DecisionEvent {
	if h.done || !h.started {
		return nil
	}
	var out []DecisionEvent
	if h.many != nil && h.many.groupTicket != 0 {
		req := h.request(0, h.many.groupTicket)
		req.Peer = ""
		out = append(out, DecisionEvent{Ticket: h.many.groupTicket, Request: req})
	}
	var join *DecisionEvent
	for i := range h.sessions {
		s := &h.sessions[i]
		if s.ticket == 0 || s.state < 0 {
			continue
		}
		if h.many != nil && s.ticket == h.many.joinTicket {
			req := h.request(i, s.ticket)
			if join == nil {
				join = &DecisionEvent{Ticket: s.ticket, Request: req}
				join.Request.Peer, join.Request.Content, join.Request.Vars = "", nil, nil
			}
			join.Request.Sessions = append(join.Request.Sessions, decision.Session{Peer: h.sessionName(i), Choices: req.Choices, Content: s.content, Vars: s.vars})
			continue
		}
		out = append(out, DecisionEvent{Ticket: s.ticket, Request: h.request(i, s.ticket)})
	}
	if join != nil {
		out = append(out, *join)
	}
	return out
}

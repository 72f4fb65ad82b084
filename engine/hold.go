package engine

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policy"
)

// MaxHeld is how many messages a handler holds at once. A role that talks
// to two or more peers orders only its own sends and receives, so a
// message from one peer may arrive before the message from another peer
// that the role must take first (in Two-Buyer, Buyer1's share may reach
// Buyer2 before the Seller's quote). The handler holds such a message and
// delivers it when the role reaches a state that takes it:
//
//   - it holds a message its state cannot take when the message may come
//     from a role r that the current state does not receive from, and a
//     state reachable from there without sending r anything takes it from
//     r. Messages from one peer arrive in the order it sent them, so one
//     that the state's own peer sends out of turn is a violation at once;
//     so is one that r could send only after hearing from this role, and
//     one that no reachable state takes;
//   - held messages are delivered per sender, oldest first: one waits
//     while an older message from its sender is held;
//   - a held message that no reachable state takes any more is reported
//     as PE001 unexpected-message when the role moves on, and so is each
//     message still held when the conversation ends; Abort reports each as
//     PE005 conversation-ended;
//   - a message to hold beyond MaxHeld is reported as PE001 and not kept.
//
// So what a peer can make a handler keep is bounded: MaxHeld messages in
// all (whichever peers sent them), each within forms.DefaultLimits, and
// deciding whether to hold one walks the program's states once per role.
//
// A handler with one peer, or one session per peer of a many role, holds
// nothing: its peers' messages come in the order they were sent. The
// handler keeps a held message (not a copy) until it delivers it, as it
// keeps the content of the last message received; Snapshot saves held
// messages and Restore checks them.
const MaxHeld = 16

// heldMsg is a message held for a later state, and when it arrived.
type heldMsg struct {
	msg *forms.Message
	at  time.Time
}

// holdsEarly reports whether a handler of pr may hold messages: its role
// has one session and two or more peers.
func holdsEarly(pr *Program) bool {
	return pr.manyRole < 0 && len(pr.Peers()) >= 2
}

// issued reports whether reply-with rw is one this handler gave a message
// it sent (see outboundReplyWith).
func (h *Handler) issued(rw string) bool {
	prefix := h.conv + "/" + h.self + "#"
	if !strings.HasPrefix(rw, prefix) {
		return false
	}
	n, err := strconv.ParseUint(rw[len(prefix):], 10, 64)
	return err == nil && n >= 1 && n <= h.seq
}

// Held returns how many messages the handler holds for a later state.
func (h *Handler) Held() int { return len(h.heldList()) }

// hold keeps m, which the current state of session i cannot take, when a
// reachable state can; it reports whether m was dealt with (held, or
// refused because MaxHeld are held already).
func (h *Handler) hold(i int, m *forms.Message, at time.Time, out *Queue) bool {
	pr := h.prog
	if !pr.multiPeer || h.isDuplicate(&h.sessions[i], m) || !h.holdable(m) {
		return false
	}
	if len(h.heldList()) >= MaxHeld {
		sp := &pr.states[h.sessions[i].state]
		h.protocolError(out, at, CodeUnexpected, i, m, false, "%s from %s cannot be taken in state %s yet, and %d messages are held already, the most a handler holds; %s", h.perf(m), policy.Quote(m.Sender), policy.Quote(sp.name), MaxHeld, sp.allowText)
		return true
	}
	h.holdMsg(heldMsg{msg: m, at: at})
	return true
}

// holdable reports whether m may come from a role r that the current
// state does not receive from, and a state reachable from the current one
// without sending r anything takes m from r.
func (h *Handler) holdable(m *forms.Message) bool {
	pr := h.prog
	cur := h.sessions[0].state
	if cur < 0 {
		return false
	}
	var seen []bool
	for r := range pr.roles {
		if r == pr.roleIdx || !h.mayBe(r, m.Sender) || receivesFrom(pr, cur, r) {
			continue
		}
		if seen == nil {
			seen = make([]bool, len(pr.states))
		} else {
			clear(seen)
		}
		if pr.takesLater(cur, r, m, seen) {
			return true
		}
	}
	return false
}

// opensLater reports whether a handler in the initial state would hold
// m: the first message of a conversation may be one the role takes later.
func (pr *Program) opensLater(m *forms.Message) bool {
	if !pr.multiPeer {
		return false
	}
	first := int32(pr.initial)
	for r := range pr.roles {
		if r != pr.roleIdx && !receivesFrom(pr, first, r) && pr.takesLater(first, r, m, make([]bool, len(pr.states))) {
			return true
		}
	}
	return false
}

// takesLater reports whether a state reachable from st without a send to
// role r takes m from r; seen marks the states visited.
func (pr *Program) takesLater(st int32, r int, m *forms.Message, seen []bool) bool {
	stack := []int32{st}
	seen[st] = true
	for len(stack) > 0 {
		sp := &pr.states[stack[len(stack)-1]]
		stack = stack[:len(stack)-1]
		for k := range sp.recvs {
			t := &sp.recvs[k]
			if t.peer == r && t.perf == m.Performative && (!t.hasMatch || t.form.Matches(m)) {
				return true
			}
		}
		for j, list := range [...][]transProg{sp.sends, sp.recvs, sp.timeout, sp.returns} {
			for k := range list {
				t := &list[k]
				if j == 0 && t.peer == r {
					continue // r may wait for this send
				}
				if n := t.next; n >= 0 && !seen[n] {
					seen[n] = true
					stack = append(stack, int32(n))
				}
			}
		}
	}
	return false
}

// mayBe reports whether agent may play role r: it is bound to r, or r is
// unbound and agent plays no other role.
func (h *Handler) mayBe(r int, agent string) bool {
	if h.peers()[r] != "" {
		return h.peers()[r] == agent
	}
	return !slices.Contains(h.peers(), agent)
}

// receivesFrom reports whether state st of pr receives a message from
// role r.
func receivesFrom(pr *Program, st int32, r int) bool {
	sp := &pr.states[st]
	for k := range sp.recvs {
		if sp.recvs[k].peer == r {
			return true
		}
	}
	return false
}

// deliverHeld delivers the held messages the current state takes, oldest
// first per sender, until none is taken, and reports those that no state
// reachable from there takes. at is the time of the input that moved the
// role on.
func (h *Handler) deliverHeld(at time.Time, out *Queue) {
	pr := h.prog
	for len(h.heldList()) > 0 {
		s := &h.sessions[0]
		if h.done || s.state < 0 || pr.states[s.state].terminal {
			for _, e := range h.heldList() {
				h.protocolError(out, at, CodeUnexpected, 0, e.msg, false, "%s from %s was held for a later state, but the conversation ended with outcome %s first", h.perf(e.msg), policy.Quote(e.msg.Sender), policy.Quote(h.outcome(0)))
			}
			h.setHeld(h.heldList()[:0])
			return
		}
		sp := &pr.states[s.state]
		moved := false
		for k := 0; k < len(h.heldList()) && !moved; k++ {
			e := h.heldList()[k]
			if slices.ContainsFunc(h.heldList()[:k], func(o heldMsg) bool { return o.msg.Sender == e.msg.Sender }) {
				continue // an older message from its sender goes first
			}
			mt, err := h.classify(0, sp.recvs, sp.recvMatch, e.msg, e.msg.Sender, true)
			switch {
			case err != nil || mt.t != nil && mt.agentOK:
				h.setHeld(slices.Delete(h.heldList(), k, k+1))
				h.received(&MessageEvent{Message: e.msg, At: e.at}, out)
				moved = true
			case !h.holdable(e.msg):
				// received reports it now: no state it can reach takes it.
				h.setHeld(slices.Delete(h.heldList(), k, k+1))
				h.received(&MessageEvent{Message: e.msg, At: at}, out)
				moved = true
			}
		}
		if !moved {
			return
		}
	}
}

// dropHeld reports the held messages of a conversation being aborted.
func (h *Handler) dropHeld(at time.Time, out *Queue) {
	for _, e := range h.heldList() {
		h.protocolError(out, at, CodeEnded, 0, e.msg, false, "%s from %s was held for a later state, but the conversation was aborted first", h.perf(e.msg), policy.Quote(e.msg.Sender))
	}
	h.setHeld(nil)
}

// heldSnapshot is a held message in a snapshot.
type heldSnapshot struct {
	At             time.Time      `json:"at"`
	Performative   string         `json:"performative"`
	Sender         string         `json:"sender"`
	Receivers      []string       `json:"receivers,omitempty"`
	ReplyTo        string         `json:"reply_to,omitempty"`
	Content        map[string]any `json:"content,omitempty"`
	Language       string         `json:"language,omitempty"`
	Encoding       string         `json:"encoding,omitempty"`
	Ontology       string         `json:"ontology,omitempty"`
	Protocol       string         `json:"protocol,omitempty"`
	ConversationID string         `json:"conversation_id,omitempty"`
	ReplyWith      string         `json:"reply_with,omitempty"`
	InReplyTo      string         `json:"in_reply_to,omitempty"`
	ReplyBy        time.Time      `json:"reply_by"`
}

// heldSnapshots returns the held messages as a snapshot keeps them.
func (h *Handler) heldSnapshots() []heldSnapshot {
	if len(h.heldList()) == 0 {
		return nil
	}
	out := make([]heldSnapshot, len(h.heldList()))
	for k, e := range h.heldList() {
		m := e.msg
		out[k] = heldSnapshot{
			At: e.at, Performative: m.Performative, Sender: m.Sender, Receivers: m.Receivers, ReplyTo: m.ReplyTo,
			Content: m.Content, Language: m.Language, Encoding: m.Encoding, Ontology: m.Ontology, Protocol: m.Protocol,
			ConversationID: m.ConversationID, ReplyWith: m.ReplyWith, InReplyTo: m.InReplyTo, ReplyBy: m.ReplyBy,
		}
	}
	return out
}

// restoreHeld checks and rebuilds the held messages of restored handler
// h: at most MaxHeld, only for a program that holds and a conversation
// that runs, each with a sender and a performative, content within
// forms.DefaultLimits, of h's conversation, and one that h would hold
// now: its state cannot take it yet and a state reachable from there can.
func (pr *Program) restoreHeld(sn *snapshot, h *Handler) error {
	if len(sn.Held) == 0 {
		return nil
	}
	switch {
	case !pr.multiPeer:
		return errors.New("held messages for a role that holds none: it has one peer or a session per peer")
	case len(sn.Held) > MaxHeld:
		return fmt.Errorf("%d held messages, more than MaxHeld (%d)", len(sn.Held), MaxHeld)
	case sn.Done || !sn.Started || pr.states[h.sessions[0].state].terminal:
		return errors.New("held messages in a conversation that is not running")
	}
	h.setHeld(make([]heldMsg, 0, len(sn.Held)))
	for k := range sn.Held {
		hs := &sn.Held[k]
		m := &forms.Message{
			Performative: hs.Performative, Sender: hs.Sender, Receivers: hs.Receivers, ReplyTo: hs.ReplyTo,
			Content: hs.Content, Language: hs.Language, Encoding: hs.Encoding, Ontology: hs.Ontology, Protocol: hs.Protocol,
			ConversationID: hs.ConversationID, ReplyWith: hs.ReplyWith, InReplyTo: hs.InReplyTo, ReplyBy: hs.ReplyBy,
		}
		if err := pr.checkHeld(h, m); err != nil {
			return fmt.Errorf("held message %d: %w", k, err)
		}
		h.setHeld(append(h.heldList(), heldMsg{msg: m, at: hs.At}))
	}
	return nil
}

// checkHeld checks that restored handler h would hold m.
func (pr *Program) checkHeld(h *Handler, m *forms.Message) error {
	q := policy.Quote
	switch {
	case m.Sender == "" || m.Performative == "":
		return errors.New("no sender or no performative")
	case m.ConversationID != "" && h.conv != "" && m.ConversationID != h.conv:
		return fmt.Errorf("it is of conversation %s, not %s", q(m.ConversationID), q(h.conv))
	}
	if err := forms.CheckContent(m.Content, forms.DefaultLimits); err != nil {
		return err
	}
	sp := &pr.states[h.sessions[0].state]
	if mt, err := h.classify(0, sp.recvs, sp.recvMatch, m, m.Sender, true); err != nil || mt.t != nil && mt.agentOK {
		return fmt.Errorf("state %s takes %s from %s now", q(sp.name), h.perf(m), q(m.Sender))
	}
	if !h.holdable(m) {
		return fmt.Errorf("no state reachable from %s takes %s from %s", q(sp.name), h.perf(m), q(m.Sender))
	}
	return nil
}

package engine

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/internal/reuse"
	"github.com/parleyhq/parley/policy"
)

// match is the transition a message was classified into.
type match struct {
	t       *transProg
	form    *forms.Form
	agentOK bool // the sender (or receiver) is the agent bound to the role
}

// classify finds the transition of list that m is an instance of: by
// performative and match rule (forms with a match rule first), then guard.
// agent is the agent that m comes from (for receives) or goes to (for
// sends); a transition whose role is bound to another agent matches with
// agentOK false, so observe mode can still apply it.
func (h *Handler) classify(i int, list []transProg, matchRules bool, m *forms.Message, agent string, recv bool) (match, error) {
	var best, fallback match
	first := 0
	if !matchRules {
		first = 1 // no form here has a match rule: one pass is enough
	}
	for pass := first; pass < 2 && best.t == nil; pass++ {
		for k := range list {
			t := &list[k]
			if t.perf != m.Performative || t.hasMatch != (pass == 0) {
				continue
			}
			f := t.form
			if pass == 0 && !f.Matches(m) {
				continue
			}
			ok, err := h.guardHolds(i, t, m, nil)
			if err != nil {
				return match{}, err
			}
			if !ok {
				continue
			}
			mt := match{t: t, form: f, agentOK: h.boundTo(i, t.peer, agent) || (!recv && m.HasReceiver(h.agentOf(i, t.peer)))}
			if mt.agentOK {
				best = mt
				break
			}
			if fallback.t == nil {
				fallback = mt
			}
		}
	}
	if best.t == nil {
		best = fallback
	}
	return best, nil
}

// guardHolds evaluates t's guard, if it has one, on message m for
// session i. field, when not nil, is what m's content holds under the
// field the guard reads (decision.Expression.ContentField), looked up
// already.
func (h *Handler) guardHolds(i int, t *transProg, m *forms.Message, field *any) (bool, error) {
	switch {
	case t.guard == nil:
		return true, nil
	case field != nil:
		return t.guard.BoolField(m.Content, h.sessions[i].vars, *field)
	}
	env := decision.Env{Content: m.Content, Vars: h.sessions[i].vars}
	if t.guard.ReadsMsg() {
		env.Msg = m.Envelope()
	}
	return t.guard.Bool(&env)
}

// boundTo reports whether role r, as seen from session i, is played by
// agent or by no agent yet.
func (h *Handler) boundTo(i, r int, agent string) bool {
	bound := h.agentOf(i, r)
	return bound == "" || bound == agent
}

// otherConversation reports whether m belongs to another conversation
// than the handler's (an empty id on either side belongs to any).
func (h *Handler) otherConversation(m *forms.Message) bool {
	return m.ConversationID != "" && h.conv != "" && !sameString(m.ConversationID, h.conv)
}

// hasMatchRule reports whether a form of list has a match rule.
func hasMatchRule(pr *Program, list []transProg) bool {
	for k := range list {
		if pr.msgs[list[k].msg].form.HasMatch() {
			return true
		}
	}
	return false
}

// received handles a message from a peer.
func (h *Handler) received(e *MessageEvent, out *Queue) {
	m, at := e.Message, e.At
	pr := h.prog
	if h.otherConversation(m) {
		h.protocolError(out, at, CodeWrongConversation, -1, m, false, "message for conversation %s reached conversation %s", policy.Quote(m.ConversationID), policy.Quote(h.conv))
		return
	}
	i := 0
	if pr.manyRole >= 0 {
		var ok bool
		if i, ok = h.many.peers.find(m.Sender); !ok {
			h.protocolError(out, at, CodeUnknownAgent, -1, m, false, "%s is not a %s of this conversation", policy.Quote(m.Sender), pr.roles[pr.manyRole])
			return
		}
	}
	s := &h.sessions[i]
	fields := &noFields
	if s.state >= 0 {
		fields = &pr.states[s.state].recvFields
	}
	kinds, err := fields.CheckContentKinds(m.Content, forms.DefaultLimits)
	if err != nil {
		h.protocolError(out, at, CodeContentLimit, i, m, false, "%s from %s was not applied: %v", h.perf(m), policy.Quote(m.Sender), err)
		return
	}
	sp := &pr.states[s.state]
	if h.done || sp.terminal {
		h.afterEnd(i, m, at, out)
		return
	}
	mt, err := h.classify(i, sp.recvs, sp.recvMatch, m, m.Sender, true)
	if err != nil {
		h.protocolError(out, at, CodeExpression, i, m, false, "%v", err)
		return
	}
	if (mt.t == nil || !mt.agentOK) && h.hold(i, m, at, out) {
		return
	}
	if mt.t == nil {
		h.unexpected(i, m, at, out)
		return
	}
	applied := h.mode == Observe
	if !mt.agentOK {
		h.protocolError(out, at, CodeUnknownAgent, i, m, applied, "%s sent %s, but %s is played by %s in this conversation", policy.Quote(m.Sender), pr.msgs[mt.t.msg].name, pr.roles[mt.t.peer], policy.Quote(h.agentOf(i, mt.t.peer)))
		if !applied {
			return
		}
	}
	if d := h.lateBy(s, &at, mt.t.peer); d != 0 {
		h.protocolError(out, at, CodeLate, i, m, applied, "%s from %s arrived at %s, after the deadline %s of state %s", pr.msgs[mt.t.msg].name, policy.Quote(m.Sender), at.Format(time.RFC3339Nano), time.Unix(0, d).UTC().Format(time.RFC3339Nano), policy.Quote(sp.name))
		if !applied {
			return
		}
	}
	if h.strayReply(s, m) {
		if pr.multiPeer {
			h.protocolError(out, at, CodeWrongReply, i, m, applied, "%s from %s is in reply to %s, which %s never sent", pr.msgs[mt.t.msg].name, policy.Quote(m.Sender), policy.Quote(m.InReplyTo), policy.Quote(h.self))
		} else {
			h.protocolError(out, at, CodeWrongReply, i, m, applied, "%s from %s is in reply to %s, which was not sent to it (the last message sent had reply-with %s)", pr.msgs[mt.t.msg].name, policy.Quote(m.Sender), policy.Quote(m.InReplyTo), policy.Quote(s.sent[0]))
		}
		if !applied {
			return
		}
	}
	if len(mt.form.Type.Fields) > 0 {
		// kinds are those of the state's receive fields, which fieldsAt
		// places the form's in.
		if err := mt.form.ValidateKinds(m.Content, kinds, mt.t.fieldsAt); err != nil {
			h.protocolError(out, at, CodeInvalidContent, i, m, applied, "%v", err)
			if !applied {
				return
			}
		}
	}
	if why := h.overBudget(i, mt.t); why != "" {
		h.protocolError(out, at, CodeBudget, i, m, false, "%s from %s was not applied: %s", pr.msgs[mt.t.msg].name, policy.Quote(m.Sender), why)
		return
	}
	h.apply(i, mt.t, m, &at, out, false)
}

// strayReply reports whether m, received in session s, is in reply to a
// message that was not sent to its sender. With two or more peers, s.sent
// mixes what went to each, so that is one this handler never sent; with
// one, one whose reply-with is neither of the last two sent to it (once
// one was sent).
func (h *Handler) strayReply(s *session, m *forms.Message) bool {
	switch {
	case m.InReplyTo == "":
		return false
	case h.prog.multiPeer:
		return !h.issued(m.InReplyTo)
	}
	return s.sent[0] != "" && !sameString(m.InReplyTo, s.sent[0]) && !sameString(m.InReplyTo, s.sent[1])
}

// noFields is the Fields of a session in no state yet.
var noFields forms.Fields

// lateBy returns the deadline of the session's state that bounds role
// and that a message role sends at time at comes after, as Unix
// nanoseconds (see nanos); 0 when the message is not late. (A deadline
// is never 0: 0 is none.) The time is a pointer, and the deadline a
// number, so that the call passes and returns in registers.
func (h *Handler) lateBy(s *session, at *time.Time, role int) int64 {
	if s.state < 0 {
		return 0
	}
	arms := h.prog.states[s.state].arms
	if len(arms) == 0 {
		return 0
	}
	// A message at the zero time is not late; nanos is 0 for it, so
	// the time is tested only then.
	atn := nanos(*at)
	if atn == 0 && at.IsZero() {
		return 0
	}
	for j, d := range h.prog.deadlineSlots(s, len(arms)) {
		if d == 0 || atn < d {
			continue
		}
		if j < len(arms) && role < 64 && h.prog.timers[arms[j]].exempt&(1<<role) != 0 {
			continue
		}
		return d
	}
	return 0
}

// afterEnd reports a message that reached an ended session: late when it
// answers a wait that timed out, else conversation ended.
func (h *Handler) afterEnd(i int, m *forms.Message, at time.Time, out *Queue) {
	pr := h.prog
	s := &h.sessions[i]
	if h.aborted {
		h.protocolError(out, at, CodeEnded, i, m, false, "%s from %s arrived after the conversation was aborted", h.perf(m), policy.Quote(m.Sender))
		return
	}
	// Only this peer's session may have ended, not the conversation.
	what := "the conversation"
	if !h.done {
		what = "the session with " + h.sessionName(i)
	}
	if s.timedOutFrom >= 0 {
		if mt, err := h.classify(i, pr.states[s.timedOutFrom].recvs, pr.states[s.timedOutFrom].recvMatch, m, m.Sender, true); err == nil && mt.t != nil {
			h.protocolError(out, at, CodeLate, i, m, false, "%s from %s is late: state %s timed out and %s ended with outcome %s", pr.msgs[mt.t.msg].name, policy.Quote(m.Sender), policy.Quote(pr.states[s.timedOutFrom].name), what, policy.Quote(pr.states[s.state].outcome))
			return
		}
	}
	if h.isDuplicate(s, m) {
		h.protocolError(out, at, CodeDuplicate, i, m, false, "%s from %s repeats a message already received; %s has ended with outcome %s", h.perf(m), policy.Quote(m.Sender), what, policy.Quote(pr.states[s.state].outcome))
		return
	}
	h.protocolError(out, at, CodeEnded, i, m, false, "%s from %s arrived after %s ended with outcome %s", h.perf(m), policy.Quote(m.Sender), what, policy.Quote(pr.states[s.state].outcome))
}

func (h *Handler) isDuplicate(s *session, m *forms.Message) bool {
	if s.lastMsg == 0 || m.Performative != h.prog.msgs[s.lastMsg-1].form.Type.Performative || m.InReplyTo != s.lastInReplyTo || m.Sender != s.lastSender {
		return false
	}
	if m.ReplyWith != "" || s.lastReplyWith != "" {
		return m.ReplyWith == s.lastReplyWith
	}
	// A restored handler holds the content it last received as decoded
	// JSON (numbers as float64), so a duplicate must be recognised
	// whatever Go types carry its numbers: compare as JSON.
	return forms.SameContent(m.Content, s.content)
}

// perf names m's performative for a reason: as it is when the policy has
// a message type of that performative, else quoted and bounded, since a
// peer can send any performative.
func (h *Handler) perf(m *forms.Message) string {
	if h.knownPerf(m) {
		return m.Performative
	}
	return policy.Quote(m.Performative)
}

// appendPerf appends what perf returns to b.
func (h *Handler) appendPerf(b []byte, m *forms.Message) []byte {
	if h.knownPerf(m) {
		return append(b, m.Performative...)
	}
	return appendQuote(b, m.Performative)
}

func (h *Handler) knownPerf(m *forms.Message) bool {
	for k := range h.prog.msgs {
		if h.prog.msgs[k].form.Type.Performative == m.Performative {
			return true
		}
	}
	return false
}

// appendQuote appends policy.Quote(s) to b without building the string.
func appendQuote(b []byte, s string) []byte {
	if len(s) <= policy.MaxQuoted {
		return strconv.AppendQuote(b, s)
	}
	cut := policy.MaxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return append(strconv.AppendQuote(b, s[:cut]), "…"...)
}

// unexpected reports a message no transition of the state accepts,
// telling apart duplicates, late replies and messages of the wrong role.
func (h *Handler) unexpected(i int, m *forms.Message, at time.Time, out *Queue) {
	pr := h.prog
	s := &h.sessions[i]
	sp := &pr.states[s.state]
	if h.isDuplicate(s, m) {
		h.protocolError(out, at, CodeDuplicate, i, m, false, "%s from %s repeats the message already received; %s", h.perf(m), policy.Quote(m.Sender), sp.allowText)
		return
	}
	if s.timedOutFrom >= 0 {
		if mt, err := h.classify(i, pr.states[s.timedOutFrom].recvs, pr.states[s.timedOutFrom].recvMatch, m, m.Sender, true); err == nil && mt.t != nil {
			h.protocolError(out, at, CodeLate, i, m, false, "%s from %s is late: state %s timed out; %s", pr.msgs[mt.t.msg].name, policy.Quote(m.Sender), policy.Quote(pr.states[s.timedOutFrom].name), sp.allowText)
			return
		}
	}
	if mt, err := h.classify(i, sp.sends, sp.sendMatch, m, m.Sender, true); err == nil && mt.t != nil {
		h.protocolError(out, at, CodeWrongRole, i, m, false, "%s sent %s, which only %s sends here; %s", policy.Quote(m.Sender), pr.msgs[mt.t.msg].name, pr.role, sp.allowText)
		return
	}
	// The most common rejection, so its reason is built without fmt, in
	// the queue's reused buffer.
	b := append(out.text[:0], "unexpected "...)
	b = h.appendPerf(b, m)
	b = append(b, " from "...)
	b = appendQuote(b, m.Sender)
	b = append(b, ": "...)
	b = append(b, sp.allowText...)
	out.text = b
	h.report(out, at, CodeUnexpected, i, m, false, out.reasonOf(b))
}

// sent handles a message this handler's own agent sent, as a monitor
// overhears it: the decision was made elsewhere.
func (h *Handler) sent(e *MessageEvent, out *Queue) error {
	m, at := e.Message, e.At
	pr := h.prog
	if h.otherConversation(m) {
		h.protocolError(out, at, CodeWrongConversation, -1, m, false, "message for conversation %s reached conversation %s", policy.Quote(m.ConversationID), policy.Quote(h.conv))
		return nil
	}
	if err := forms.CheckContent(m.Content, forms.DefaultLimits); err != nil {
		h.protocolError(out, at, CodeContentLimit, -1, m, false, "%s sent by %s was not applied: %v", h.perf(m), policy.Quote(m.Sender), err)
		return nil
	}
	targets := []int{0}
	if pr.manyRole >= 0 {
		targets = make([]int, 0, len(m.Receivers))
		// Whether a new peer may join: asked once, since the peers that
		// join enter the initial state and so keep the answer (asking for
		// each would look at every session for each new peer).
		mayJoin := -1
		for _, r := range m.Receivers {
			i, ok := h.many.peers.find(r)
			if !ok && mayJoin < 0 {
				mayJoin = 0
				if len(h.sessions) == 0 || h.allAtInitial() {
					mayJoin = 1
					// Room for every receiver at once, as WithPeers makes.
					n := min(len(h.sessions)+len(m.Receivers), MaxSessions)
					h.sessions = slices.Grow(h.sessions, n-len(h.sessions))
					h.many.peers.reserve(n)
				}
			}
			if !ok && mayJoin == 1 {
				if i, ok = h.addSession(r); ok {
					h.sessions[i].state = -1
					h.enter(i, pr.initial, &at, out, true)
				}
			}
			if !ok {
				h.protocolError(out, at, CodeUnknownAgent, -1, m, false, "%s is not a %s of this conversation", policy.Quote(r), pr.roles[pr.manyRole])
				continue
			}
			targets = append(targets, i)
		}
	}
	for _, i := range targets {
		s := &h.sessions[i]
		if h.aborted {
			h.protocolError(out, at, CodeEnded, i, m, false, "%s sent by %s after the conversation was aborted", h.perf(m), policy.Quote(m.Sender))
			continue
		}
		if h.done || pr.states[s.state].terminal {
			if s.timedOutFrom >= 0 {
				if mt, err := h.classify(i, pr.states[s.timedOutFrom].sends, pr.states[s.timedOutFrom].sendMatch, m, "", false); err == nil && mt.t != nil {
					h.protocolError(out, at, CodeLate, i, m, false, "%s sent by %s is late: state %s timed out and the conversation ended with outcome %s", pr.msgs[mt.t.msg].name, policy.Quote(m.Sender), policy.Quote(pr.states[s.timedOutFrom].name), policy.Quote(pr.states[s.state].outcome))
					continue
				}
			}
			h.protocolError(out, at, CodeEnded, i, m, false, "%s sent by %s after the conversation ended with outcome %s", h.perf(m), policy.Quote(m.Sender), policy.Quote(pr.states[s.state].outcome))
			continue
		}
		sp := &pr.states[s.state]
		agent := ""
		if len(m.Receivers) > 0 {
			agent = m.Receivers[0]
		}
		if pr.manyRole >= 0 {
			agent = h.sessionName(i)
		}
		mt, err := h.classify(i, sp.sends, sp.sendMatch, m, agent, false)
		if err != nil {
			h.protocolError(out, at, CodeExpression, i, m, false, "%v", err)
			continue
		}
		if mt.t == nil {
			if mt2, err := h.classify(i, sp.recvs, sp.recvMatch, m, agent, false); err == nil && mt2.t != nil {
				h.protocolError(out, at, CodeWrongRole, i, m, false, "%s sent %s, which only %s sends here", policy.Quote(m.Sender), pr.msgs[mt2.t.msg].name, pr.roles[mt2.t.peer])
				continue
			}
			allowed := "it may send nothing here"
			if len(sp.choices) > 0 {
				allowed = "it may send " + joinList(sp.choices)
			}
			h.protocolError(out, at, CodeUnexpected, i, m, false, "unexpected %s sent by %s in state %s: %s", h.perf(m), policy.Quote(m.Sender), policy.Quote(sp.name), allowed)
			continue
		}
		applied := h.mode == Observe
		if pr.manyRole >= 0 && sp.join && s.ticket == 0 && h.onlyAtJoins(mt.t.msg) {
			h.protocolError(out, at, CodeJoinPending, i, m, applied, "%s sent by %s to %s before the join at state %s was released: %s neither reached it nor ended, and no timer of the join has fired", pr.msgs[mt.t.msg].name, policy.Quote(m.Sender), policy.Quote(h.sessionName(i)), policy.Quote(sp.name), h.notAtJoin())
			if !applied {
				continue
			}
		}
		if d := h.lateBy(s, &at, pr.roleIdx); d != 0 {
			h.protocolError(out, at, CodeLate, i, m, applied, "%s sent by %s at %s, after the deadline %s of state %s", pr.msgs[mt.t.msg].name, policy.Quote(m.Sender), at.Format(time.RFC3339Nano), time.Unix(0, d).UTC().Format(time.RFC3339Nano), policy.Quote(sp.name))
			if !applied {
				continue
			}
		}
		if err := mt.form.Validate(m.Content); err != nil {
			h.protocolError(out, at, CodeInvalidContent, i, m, applied, "%v", err)
			if !applied {
				continue
			}
		}
		if why := h.overBudget(i, mt.t); why != "" {
			h.protocolError(out, at, CodeBudget, i, m, false, "%s sent by %s was not applied: %s", pr.msgs[mt.t.msg].name, policy.Quote(m.Sender), why)
			continue
		}
		s.sent[1], s.sent[0] = s.sent[0], m.ReplyWith
		h.apply(i, mt.t, m, &at, out, true)
	}
	return nil
}

// onlyAtJoins reports whether this role sends message type msg from no
// state but joins and the initial one (whose sends open the conversation
// to every peer at once): a message the join decides (accept-proposal, a
// revised cfp), unlike one it may also send while sessions are still out
// (cancel).
func (h *Handler) onlyAtJoins(msg int) bool {
	for k := range h.prog.states {
		st := &h.prog.states[k]
		if st.join || k == h.prog.initial {
			continue
		}
		for j := range st.sends {
			if st.sends[j].msg == msg {
				return false
			}
		}
	}
	return true
}

// notAtJoin names, for a reason, the peers whose sessions have neither
// reached a join nor ended, with the verb that fits how many they are.
func (h *Handler) notAtJoin() string {
	var peers []string
	for i := range h.sessions {
		if st := h.sessions[i].state; st >= 0 && !h.prog.states[st].join && !h.prog.states[st].terminal {
			peers = append(peers, h.sessionName(i))
		}
	}
	if len(peers) == 1 {
		return policy.Quote(peers[0]) + " has"
	}
	return policy.QuoteList(peers, maxListed) + " have"
}

// allAtInitial reports whether no session has left the initial state,
// so a new peer can still join the opening message.
func (h *Handler) allAtInitial() bool {
	for i := range h.sessions {
		if h.sessions[i].state != int32(h.prog.initial) {
			return false
		}
	}
	return true
}

// apply takes transition t for session i on message m (received, or sent
// when sent is true).
func (h *Handler) apply(i int, t *transProg, m *forms.Message, at *time.Time, out *Queue, sent bool) {
	pr := h.prog
	s := &h.sessions[i]
	if len(t.sets) > 0 && !h.assign(i, t, m, *at, out) {
		return
	}
	h.countMessage(i)
	if !sent {
		// Note m for in-reply-to, duplicates and decisions, and bind t's
		// role to m's sender if no agent plays it yet.
		var bound *string
		if r := t.peer; r != pr.manyRole {
			bound = h.peer(r)
		}
		noteMessage(s, t, m, bound)
	} else if r := t.peer; r != pr.manyRole && len(m.Receivers) > 0 {
		if p := h.peer(r); *p == "" {
			*p = m.Receivers[0]
		}
	}
	if t.msgWork {
		// What a message of its type does besides its transition: it
		// notes the deadlines it sets and performs its commitment
		// operations (after the agents it binds are bound). Here, not in
		// a call of its own, which would keep apply's arguments across
		// it, and look the session and the program up again.
		mp := &pr.msgs[t.msg]
		if len(mp.srcs) > 0 {
			s.srcSet = true
			srcTimes := pr.srcSlots(s)
			for _, k := range mp.srcs {
				d, _ := forms.Time(m, pr.deadlineSrc[k].field)
				srcTimes[k] = nanos(h.boundWait(d, *at))
			}
		}
		if len(mp.ops) > 0 {
			s.cmSet = true
			insts := pr.commitSlots(s)
			if op := &mp.ops[0]; len(mp.ops) == 1 {
				// Most messages' one operation, without a loop, which
				// reloads what it keeps after each call.
				if mv := op.move(insts); mv.to != phaseNone {
					h.commitMove(i, op.commit, mv.to, mv.then, at, mp.name, out)
				}
			} else {
				for k := range mp.ops {
					op := &mp.ops[k]
					if mv := op.move(insts); mv.to != phaseNone {
						h.commitMove(i, op.commit, mv.to, mv.then, at, mp.name, out)
					}
				}
			}
		}
	}
	s.timedOutFrom = -1
	h.enter(i, t.next, at, out, false)
}

// noteMessage notes in session s the message m it received by
// transition t, for in-reply-to, duplicates and decisions, and binds t's
// role to m's sender if no agent plays it yet: bound is where the agent
// playing t's role is kept (nil for the many role, whose agent is the
// session's peer).
func noteMessage(s *session, t *transProg, m *forms.Message, bound *string) {
	s.lastReplyWith, s.lastInReplyTo, s.lastMsg, s.lastSender, s.content = m.ReplyWith, m.InReplyTo, int32(t.msg+1), m.Sender, m.Content
	if bound != nil && *bound == "" {
		*bound = m.Sender
	}
}

// boundWait returns deadline t, read from a message that arrived (or was
// sent) at at, bounded to at plus the program's maximum wait.
func (h *Handler) boundWait(t, at time.Time) time.Time {
	if t.IsZero() || at.IsZero() {
		return t
	}
	wait := h.prog.maxWait
	if wait <= 0 {
		wait = DefaultMaxWait
	}
	if limit := at.Add(wait); t.After(limit) {
		return limit
	}
	return t
}

// assign evaluates t's assignments and stores them; an evaluation error
// is reported and the transition not taken.
func (h *Handler) assign(i int, t *transProg, m *forms.Message, at time.Time, out *Queue) bool {
	if t.litOK && h.sessions[i].vars == nil {
		// Literals Compile found within the limits, for a session that
		// had no variables: they are litVars, shared.
		h.sessions[i].vars = t.litVars
		return true
	}
	var buf [maxInlineSets]any
	vals, name, err := h.evalSets(i, t, m, buf[:0])
	if err != nil {
		h.protocolError(out, at, CodeExpression, i, m, false, "setting %s: %v", policy.Quote(name), err)
		return false
	}
	s := &h.sessions[i]
	shared := h.prog.sharesVars(s.vars)
	switch {
	case s.vars == nil && t.litVars != nil:
		// The same variables for every session that had none: share them.
		s.vars = t.litVars
		return true
	case shared && t.litVars != nil && holdsLiterals(s.vars, t.sets):
		return true
	case shared:
		vars := make(map[string]any, len(h.prog.vars))
		maps.Copy(vars, s.vars)
		s.vars = vars
	case s.vars == nil:
		s.vars = make(map[string]any, len(h.prog.vars))
	}
	for k, set := range t.sets {
		s.vars[set.name] = vals[k]
	}
	return true
}

// holdsLiterals says whether vars already holds the value of each of
// sets, all literals: the same value of the same type (a float's sign
// included, which a snapshot keeps).
func holdsLiterals(vars map[string]any, sets []setProg) bool {
	for _, set := range sets {
		v, ok := vars[set.name]
		if !ok {
			return false
		}
		if f, isFloat := set.lit.(float64); isFloat {
			if g, ok := v.(float64); !ok || math.Float64bits(f) != math.Float64bits(g) {
				return false
			}
		} else if v != set.lit { // a literal is comparable: no panic
			return false
		}
	}
	return true
}

// evalSets evaluates t's assignments for session i on message m (nil for
// a timeout or a child's return) without storing them; on failure it
// returns the variable whose expression failed. A value that breaks the
// content limits (a division by zero's infinity) fails too: variables are
// kept in snapshots, and passed to decisions, as content is. It appends
// the values to vals.
//
// A literal within the limits (litOK) is taken as it is: Compile checked
// it once. The environment, a struct of some 300 bytes, is built only for
// the first assignment that is not a literal.
func (h *Handler) evalSets(i int, t *transProg, m *forms.Message, vals []any) ([]any, string, error) {
	var env decision.Env
	built := false
	for k := range t.sets {
		set := &t.sets[k]
		if set.litOK {
			vals = append(vals, set.lit)
			continue
		}
		v, err := set.lit, error(nil)
		if !set.isLit {
			if !built {
				env = h.setsEnv(i, t, m)
				built = true
			}
			v, err = set.prog.Eval(&env)
		}
		if err == nil {
			err = forms.CheckValue(v, forms.DefaultLimits)
		}
		if err != nil {
			return nil, set.name, err
		}
		vals = append(vals, v)
	}
	return vals, "", nil
}

// setsEnv returns the environment t's assignments are evaluated in for
// session i on message m (nil for none).
func (h *Handler) setsEnv(i int, t *transProg, m *forms.Message) decision.Env {
	env := decision.Env{Vars: h.sessions[i].vars}
	if m != nil {
		env.Content = m.Content
		if t.setsReadMsg {
			env.Msg = m.Envelope()
		}
	}
	return env
}

// maxInlineSets is how many assignments of a transition are evaluated
// without allocating room for their values.
const maxInlineSets = 4

// answer applies decision logic's answer.
func (h *Handler) answer(e *DecisionEvent, out *Queue) error {
	idx := int(e.Ticket & (1<<ticketSessionBits - 1))
	switch {
	case idx == 0 && e.Ticket != 0 && h.many != nil && e.Ticket == h.many.groupTicket && !h.done:
		return h.answerGroup(e, out)
	case idx == 0 && e.Ticket != 0 && h.many != nil && e.Ticket == h.many.joinTicket:
		return h.answerJoin(e, out)
	case idx == 0 || idx > len(h.sessions) || h.sessions[idx-1].ticket != e.Ticket || h.done:
		h.protocolError(out, e.At, CodeStaleDecision, -1, nil, false, "decision for ticket %d is stale: the conversation moved on before it was answered", e.Ticket)
		return nil
	}
	i := idx - 1
	a := &e.Answer
	if a.Choice == "" {
		return nil // wait: the decision stays open and may be answered later
	}
	_, err := h.take(i, a.Choice, a.Content, a.ReplyBy, e.At, out, nil)
	return err
}

// take sends the message of choice for session i (or, with group set, for
// every session in group at once) and takes its transition. It reports
// whether it did; a choice it refuses is a protocol error, not an error.
func (h *Handler) take(i int, choice string, content map[string]any, replyBy time.Time, at time.Time, out *Queue, group []int) (bool, error) {
	pr := h.prog
	s := &h.sessions[i]
	sp := &pr.states[s.state]
	// The kinds let ValidateKinds below decide the content without
	// looking its fields up again.
	kinds, err := sp.sendFields.CheckContentKinds(content, forms.DefaultLimits)
	if err != nil {
		h.protocolError(out, at, CodeContentLimit, i, nil, false, "the decision's content breaks a limit, so %s was not sent: %v", policy.Quote(choice), err)
		return false, nil
	}
	var t, guarded *transProg
	var guardErr error
	ck := shortKey(choice)
	for k := range sp.sends {
		c := &sp.sends[k]
		if len(c.key) != len(choice) || ck != c.keyKey || ck == [2]uint32{} && c.key != choice {
			continue // c.key != choice, without a call of the runtime for most
		}
		if c.guard != nil {
			ok, err := sendGuard(c.guard, content, s.vars)
			if err != nil || !ok {
				guarded, guardErr = c, err
				continue
			}
		}
		t = c
		break
	}
	switch {
	case t == nil && guardErr != nil:
		h.protocolError(out, at, CodeExpression, i, nil, false, "choice %s: %v", policy.Quote(choice), guardErr)
		return false, nil
	case t == nil && guarded != nil:
		h.protocolError(out, at, CodeChoiceNotAllowed, i, nil, false, "choice %s is not allowed in state %s: its guard %s does not hold for the decision's content", policy.Quote(choice), policy.Quote(sp.name), policy.Quote(guarded.guard.Src.Src))
		return false, nil
	case t == nil:
		h.protocolError(out, at, CodeChoiceNotAllowed, i, nil, false, "choice %s is not allowed in state %s; the choices are %s", policy.Quote(choice), policy.Quote(sp.name), strings.Join(h.choices(i), ", "))
		return false, nil
	}
	if d := h.lateBy(s, &at, pr.roleIdx); d != 0 && h.mode == Enforce {
		h.protocolError(out, at, CodeLate, i, nil, false, "too late to send %s: the deadline %s of state %s passed at %s", pr.msgs[t.msg].name, time.Unix(0, d).UTC().Format(time.RFC3339Nano), policy.Quote(sp.name), at.Format(time.RFC3339Nano))
		return false, nil
	}
	form := t.form
	if err := form.ValidateKinds(content, kinds, t.fieldsAt); err != nil {
		h.protocolError(out, at, CodeInvalidContent, i, nil, false, "the decision's content does not fit: %v", err)
		return false, nil
	}
	single := group == nil
	one := [1]int{i}
	if single {
		group = one[:] // on the stack: the sessions budgeted, assigned and applied
	}
	for _, j := range group {
		if why := h.overBudget(j, t); why != "" {
			h.protocolError(out, at, CodeBudget, j, nil, false, "%s was not sent: %s", pr.msgs[t.msg].name, why)
			return false, nil
		}
	}
	// The receivers are shared and read-only: no copy.
	var receivers []string
	switch {
	case !single:
		receivers = h.groupReceivers(group)
	case t.peer == pr.manyRole:
		if h.sessionName(i) == "" {
			return false, h.noAgent(t.peer)
		}
		receivers = h.many.peers.receivers(i)
	default:
		// The agent that plays the role, as h.peers()[t.peer:t.peer+1]
		// holds it, looked up once.
		p := h.peer(t.peer)
		if *p == "" {
			return false, h.noAgent(t.peer)
		}
		receivers = unsafe.Slice(p, 1)
	}
	msg := out.bodies.next(&out.dirty) // Fill overwrites all of it
	rw := h.outboundReplyWith(out)
	inReplyTo := s.lastReplyWith
	if pr.multiPeer && (len(receivers) != 1 || receivers[0] != s.lastSender) {
		inReplyTo = "" // the last message received came from another peer
	}
	// The content was validated above.
	form.FillWith(msg, content, &forms.Params{
		Sender: h.self, Receivers: receivers, ConversationID: h.conv,
		ReplyWith: rw, InReplyTo: inReplyTo, ReplyBy: replyBy, Protocol: pr.policy.Name,
	})
	// Assignments can fail at run time: evaluate them before the message
	// goes out, so that a failure sends nothing and leaves the state as it
	// was (apply evaluates them again, with the same result).
	for _, j := range group {
		if len(t.sets) == 0 || t.litOK {
			break // nothing can fail
		}
		var buf [maxInlineSets]any
		if _, name, err := h.evalSets(j, t, msg, buf[:0]); err != nil {
			h.seq--
			h.protocolError(out, at, CodeExpression, j, nil, false, "setting %s: %v; %s was not sent", policy.Quote(name), err, pr.msgs[t.msg].name)
			return false, nil
		}
	}
	me := out.msgs.next(&out.dirty) // every field is written
	setTime(&me.At, at)
	reuse.Set(&me.Message, msg)
	me.Sent = false
	out.emit(me)
	for _, j := range group {
		sj := &h.sessions[j]
		// Written only when it changes: before the first message sent,
		// both are empty (a pointer fewer to write while the collector
		// marks).
		reuse.String(&sj.sent[1], sj.sent[0])
		sj.sent[0] = rw
		h.apply(j, t, msg, &at, out, true)
	}
	return true, nil
}

// noAgent is the error of a send to role r, which no agent plays.
func (h *Handler) noAgent(r int) error {
	return fmt.Errorf("engine: no agent plays %s in conversation %s: bind one with WithPeers", h.prog.roles[r], policy.Quote(h.conv))
}

// groupReceivers returns the peers of the sessions in group, in order:
// the index's list of every peer, shared and read-only, when group is
// every session in order (the opening broadcast's), else a copy.
func (h *Handler) groupReceivers(group []int) []string {
	all := len(group) == len(h.sessions)
	for k, j := range group {
		if !all {
			break
		}
		all = j == k
	}
	if all {
		return h.many.peers.receivers(-1)
	}
	receivers := make([]string, len(group))
	for k, j := range group {
		receivers[k] = h.sessionName(j)
	}
	return receivers
}

// sendGuard evaluates guard g of a send for a decision's content and
// the session's variables. The environment, some 300 bytes, is built
// here: take, which calls it only for a guarded choice, keeps none in
// its frame.
func sendGuard(g *decision.Expression, content, vars map[string]any) (bool, error) {
	env := decision.Env{Content: content, Vars: vars}
	return g.Bool(&env)
}

// answerGroup applies the answer to the opening decision of a many-role
// conversation: one message to every peer.
func (h *Handler) answerGroup(e *DecisionEvent, out *Queue) error {
	if e.Answer.Choice == "" {
		return nil
	}
	list := indexLists.Get().(*[]int)
	defer putIndexList(list)
	group := slices.Grow((*list)[:0], len(h.sessions))
	for i := range h.sessions {
		group = append(group, i)
	}
	*list = group
	ok, err := h.take(0, e.Answer.Choice, e.Answer.Content, e.Answer.ReplyBy, e.At, out, group)
	if ok {
		h.many.groupTicket = 0
	}
	return err
}

// indexLists holds lists of session indexes that a call needs only while
// it runs (a broadcast's group, a join's waiting sessions), so that a
// conversation with thousands of peers does not allocate one each time.
var indexLists = sync.Pool{New: func() any { return new([]int) }}

// putIndexList gives list back to indexLists.
func putIndexList(list *[]int) {
	*list = (*list)[:0]
	indexLists.Put(list)
}

// A joinAnswer is the answer a join decision gives a waiting session,
// and whether it gives one.
type joinAnswer struct {
	decision.SessionAnswer
	ok bool
}

// joinAnswers holds the lists of answers answerJoin looks up.
var joinAnswers = sync.Pool{New: func() any { return new([]joinAnswer) }}

// putJoinAnswers gives list back to joinAnswers, dropping its answers'
// content, which is the caller's.
func putJoinAnswers(list *[]joinAnswer) {
	clear(*list)
	*list = (*list)[:0]
	joinAnswers.Put(list)
}

// answerJoin applies a join decision: one answer per waiting session.
func (h *Handler) answerJoin(e *DecisionEvent, out *Queue) error {
	// One pass over the sessions, into room for all of them (a word
	// each): counting the waiting ones first would be a second pass.
	list := indexLists.Get().(*[]int)
	defer putIndexList(list)
	waiting := slices.Grow((*list)[:0], len(h.sessions))
	for i := range h.sessions {
		if h.sessions[i].ticket == e.Ticket {
			waiting = append(waiting, i)
		}
	}
	*list = waiting
	// Every answer is looked up before any is taken: with many sessions
	// each lookup misses the cache, and lookups that follow one another
	// wait for their misses together, where a take between two would
	// make each wait alone.
	found := joinAnswers.Get().(*[]joinAnswer)
	defer putJoinAnswers(found)
	answers := slices.Grow((*found)[:0], len(waiting))[:len(waiting)]
	*found = answers
	for k, i := range waiting {
		answers[k].SessionAnswer, answers[k].ok = e.Answer.Sessions[h.sessionName(i)]
	}
	var missing []string
	for k, i := range waiting {
		a := &answers[k]
		if !a.ok {
			missing = append(missing, h.sessionName(i))
			continue
		}
		if a.Choice == "" {
			continue // this session waits
		}
		if _, err := h.take(i, a.Choice, a.Content, a.ReplyBy, e.At, out, nil); err != nil {
			return err
		}
	}
	// Each waiting session has its own peer, so the answers for them are
	// len(waiting)-len(missing) of the answer's; any other is stale. Look
	// for those only when there are some: with many sessions, looking
	// each answer's peer up costs a cache miss or two.
	var stale []string
	if len(e.Answer.Sessions) > len(waiting)-len(missing) {
		isWaiting := make([]bool, len(h.sessions))
		for _, i := range waiting {
			isWaiting[i] = true
		}
		for peer := range e.Answer.Sessions {
			if i, ok := h.many.peers.find(peer); !ok || !isWaiting[i] {
				stale = append(stale, peer)
			}
		}
	}
	// In peer order, not map order: the same inputs give the same outputs.
	slices.Sort(stale)
	for _, peer := range stale {
		h.protocolError(out, e.At, CodeStaleDecision, -1, nil, false, "the join decision answers %s, which is not waiting at the join", policy.Quote(peer))
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		h.protocolError(out, e.At, CodeChoiceNotAllowed, -1, nil, false, "the join decision has no answer for %s; they keep waiting", policy.QuoteList(missing, maxListed))
	}
	return nil
}

// maxListed is how many peers a reason names; it says how many more
// there are.
const maxListed = 8

// timer handles an expired timer.
func (h *Handler) timer(e *TimerEvent, out *Queue) {
	if h.done {
		return
	}
	i, ok := h.sessionIndex(e.Session)
	if !ok || i >= len(h.sessions) {
		return
	}
	if e.Commitment != "" {
		h.commitTimer(i, e, out)
		return
	}
	pr := h.prog
	s := &h.sessions[i]
	if s.state < 0 || e.Epoch != s.epoch {
		return // stale: the state was left
	}
	sp := &pr.states[s.state]
	k := -1
	for _, a := range sp.arms {
		if pr.timers[a].name == e.Name {
			k = a
		}
	}
	if k < 0 {
		return
	}
	env := decision.Env{Vars: s.vars}
	for j := range sp.timeout {
		t := &sp.timeout[j]
		if t.timer != k {
			continue
		}
		if t.guard != nil {
			ok, err := t.guard.Bool(&env)
			if err != nil {
				h.protocolError(out, e.At, CodeExpression, i, nil, false, "%v", err)
				return
			}
			if !ok {
				continue
			}
		}
		if len(t.sets) > 0 && !h.assign(i, t, nil, e.At, out) {
			return
		}
		from, at := s.state, e.At
		h.enter(i, t.next, &at, out, false)
		h.sessions[i].timedOutFrom = from
		return
	}
	if sp.join && pr.manyRole >= 0 && s.ticket == 0 {
		h.releaseJoin(e.At, out)
	}
}

// childDone takes the child-return transition for a child's outcome.
func (h *Handler) childDone(e *CPDoneEvent, out *Queue) {
	i, ok := h.sessionIndex(e.Session)
	if !ok || h.done {
		return
	}
	s := &h.sessions[i]
	if s.state < 0 || e.Epoch != s.epoch {
		return
	}
	sp := &h.prog.states[s.state]
	env := decision.Env{Vars: s.vars}
	for j := range sp.returns {
		t := &sp.returns[j]
		if t.outcome != e.Outcome {
			continue
		}
		if t.guard != nil {
			if ok, err := t.guard.Bool(&env); err != nil || !ok {
				continue
			}
		}
		if len(t.sets) > 0 && !h.assign(i, t, nil, e.At, out) {
			return
		}
		at := e.At
		h.enter(i, t.next, &at, out, false)
		return
	}
	h.protocolError(out, e.At, CodeUnexpected, i, nil, false, "child policy %s ended with outcome %s, which state %s does not handle", policy.Quote(e.Policy), policy.Quote(e.Outcome), policy.Quote(sp.name))
}

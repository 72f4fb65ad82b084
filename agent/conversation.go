package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policy"
)

type conversation struct {
	id     string
	h      *engine.Handler
	timers []*timer
	// opener is the peer that opened the conversation here, counted
	// against Limits.MaxPerPeer while the conversation lives.
	opener string
	// A child conversation knows its parent and the session and epoch to
	// report its end to.
	parent        *conversation
	parentSession string
	parentEpoch   uint64
	children      int
	endedAt       time.Time
	outcome       string
	abortReason   string
	waiters       []chan waitResult
	// applied holds the ids of the inbound messages applied, with a store
	// (see MessageID), sorted; see addApplied.
	applied []string
	// decisions holds the decisions decision logic is taking off the
	// worker. timers and decisions start in the buffers that follow,
	// which hold as many as a conversation usually has (and waiters its
	// one Wait).
	decisions   []*decisionJob
	timerBuf    [2]*timer
	decisionBuf [1]*decisionJob
	waiterBuf   [1]chan waitResult
	// last is the last message the handler applied, for the tombstone to
	// tell a duplicate after the end; whole says the conversation is kept
	// whole after its end (see tombstone).
	last  *forms.Message
	whole bool
}

func (c *conversation) result() waitResult {
	if c.abortReason != "" {
		return waitResult{outcome: c.outcome, err: &AbortError{Conversation: c.id, Reason: c.abortReason}}
	}
	return waitResult{outcome: c.outcome}
}

func noConversation(id string) error {
	return fmt.Errorf("%w: %s", ErrNoConversation, policy.Quote(id))
}

// add holds c; its place in the count of conversations is taken already
// (see reserve).
func (w *worker) add(c *conversation) { w.convs[c.id] = c }

// reserve takes a place for a new conversation, unless the manager holds
// Limits.MaxConversations already. Workers take places concurrently, so
// checking the count and adding later let each of them overshoot the
// limit.
func (m *Manager) reserve() bool {
	for {
		n := m.total.v.Load()
		if n >= int64(m.o.limits.MaxConversations) {
			return false
		}
		if m.total.v.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (w *worker) remove(id string) {
	delete(w.convs, id)
	w.m.total.v.Add(-1)
}

// peerOpt is the WithPeers option start made last, kept for the next
// conversation that binds the same agents to the same role: a worker's
// conversations mostly have the same peer, and building the option is
// an allocation. agents is its own copy of the caller's.
type peerOpt struct {
	role   string
	agents []string
	opt    engine.HandlerOption
}

// binds says whether p is an option made for agents in role.
func (p *peerOpt) binds(role string, agents []string) bool {
	return p.opt != nil && p.role == role && slices.Equal(p.agents, agents)
}

// withPeers is engine.WithPeers(role, agents...), the one made last when
// it binds the same agents to role.
func (w *worker) withPeers(role string, agents []string) engine.HandlerOption {
	p := &w.peerOpt
	if p.binds(role, agents) {
		return p.opt
	}
	p.role, p.agents = role, slices.Clone(agents)
	p.opt = engine.WithPeers(role, p.agents...)
	return p.opt
}

// samePeers returns the WithPeers option start made last when peers
// binds the same agents to the same role, and nothing else: one lookup,
// where ranging over peers costs several times that. It returns nil
// otherwise.
func (w *worker) samePeers(peers map[string][]string) engine.HandlerOption {
	p := &w.peerOpt
	if len(peers) != 1 {
		return nil
	}
	if agents, ok := peers[p.role]; !ok || !p.binds(p.role, agents) {
		return nil
	}
	return p.opt
}

// start creates a conversation and starts its handler.
func (w *worker) start(id string, req *startReq, now time.Time) error {
	m := w.m
	// A fresh id (128 random bits) is no ended conversation's: only a
	// caller's id is looked up among the tombstones, a large map.
	if w.convs[id] != nil || !req.fresh && w.tomb(id) != nil {
		return fmt.Errorf("%w: %s", ErrConversationExists, policy.Quote(id))
	}
	if !m.reserve() {
		return ErrLimit
	}
	var optBuf [4]engine.HandlerOption
	opts := optBuf[:0]
	if opt := w.samePeers(req.peers); opt != nil {
		opts = append(opts, opt)
	} else {
		for role, agents := range req.peers {
			opts = append(opts, w.withPeers(role, agents))
		}
	}
	if req.data != nil {
		opts = append(opts, engine.WithContent(req.data))
	}
	h, err := req.prog.NewHandler(id, m.self, opts...)
	if err != nil {
		m.total.v.Add(-1)
		return err
	}
	c := w.newConversation()
	c.id, c.h = id, h
	w.add(c)
	w.touch(c)
	w.log(c, slog.LevelInfo, "conversation started")
	q := w.getQueue()
	if err := h.Start(now, q); err != nil {
		w.putQueue(q)
		return err
	}
	w.dispatch(c, q, now)
	w.putQueue(q)
	return nil
}

// message routes an inbound message to its conversation, or starts one,
// and acknowledges it (see DeliverAcked). With a store, a message applied
// before (by MessageID) is acknowledged and dropped.
func (w *worker) message(msg *forms.Message, ack func(), now time.Time) {
	m := w.m
	if ack != nil {
		if w.d != nil {
			w.d.acks = append(w.d.acks, ack)
		} else {
			defer ack()
		}
	}
	c := w.convs[msg.ConversationID]
	if c == nil {
		if t := w.tomb(msg.ConversationID); t != nil {
			w.late(t, msg, now)
			return
		}
	}
	id := ""
	if w.d != nil {
		if id = MessageID(msg); id != "" && c != nil {
			if c.isApplied(id) {
				return
			}
		}
	}
	fresh := c == nil
	if fresh {
		if c = w.accept(msg, now); c == nil {
			return
		}
	}
	if id != "" {
		c.addApplied(id)
	}
	if m.o.journal != nil && m.o.journalReceived {
		w.record(c, now, msg)
	}
	ev := &w.msgEv
	if m.o.observer != nil {
		ev = new(engine.MessageEvent) // an observer may keep it
	}
	*ev = engine.MessageEvent{At: now, Message: msg}
	refused := w.process(c, ev, now)
	*ev = engine.MessageEvent{}
	if fresh && refused && !c.h.Done() {
		// The policy refused the message that opened the conversation (a
		// guard on its first transition, say): nothing would ever end it.
		w.discard(c)
	}
}

// discard forgets a conversation that never got under way.
func (w *worker) discard(c *conversation) {
	w.timers.clear(c)
	w.stopDecisions(c)
	if c.opener != "" {
		w.m.release(c.opener)
	}
	w.remove(c.id)
	if w.d != nil {
		w.d.forget(c)
	}
	w.log(c, slog.LevelInfo, "conversation dropped: the policy refused its opening message")
}

// accept starts a conversation for a message that opens one: its protocol
// names a policy this agent accepts conversations of, or its id was
// agreed through conversation-setup with its sender. Otherwise, or when a
// limit is reached, it reports the message and returns nil.
func (w *worker) accept(msg *forms.Message, now time.Time) *conversation {
	m := w.m
	if msg.ConversationID == "" || isChild(msg.ConversationID) {
		w.unknown(msg, nil, now)
		return nil
	}
	var prog *engine.Program
	if m.nagreed.Load() > 0 { // the lock only when some id was agreed
		m.mu.Lock()
		if a, ok := m.agreed[msg.ConversationID]; ok && a.peer == msg.Sender {
			prog = a.prog
			delete(m.agreed, msg.ConversationID)
			m.nagreed.Add(-1)
		}
		m.mu.Unlock()
	}
	if prog == nil {
		prog = m.reg.Load().responders[msg.Protocol]
	}
	if prog == nil || !prog.Opens(msg) {
		w.unknown(msg, prog, now)
		return nil
	}
	if reason := m.admit(msg); reason != "" {
		w.report(msg, engine.CodeRefused, reason, now)
		return nil
	}
	h, err := prog.NewHandler(msg.ConversationID, m.self)
	if err != nil {
		m.release(msg.Sender)
		m.total.v.Add(-1)
		w.report(msg, engine.CodeUnknownConversation, err.Error(), now)
		return nil
	}
	c := w.newConversation()
	c.id, c.h, c.opener = msg.ConversationID, h, msg.Sender
	w.add(c)
	w.touch(c)
	if m.o.logger.Enabled(context.Background(), slog.LevelInfo) {
		w.log(c, slog.LevelInfo, "conversation accepted", "from", clipAttr(msg.Sender))
	}
	q := w.getQueue()
	_ = h.Start(now, q) // a new handler always starts
	w.dispatch(c, q, now)
	w.putQueue(q)
	return c
}

// admit counts a new conversation opened by msg's sender against the
// limits, taking its place (reserve), or says why it is refused.
func (m *Manager) admit(msg *forms.Message) string {
	l := m.o.limits
	if !m.reserve() {
		return fmt.Sprintf("%s from %s would open conversation %s, but %s holds %d conversations (the limit)",
			policy.Quote(msg.Performative), policy.Quote(msg.Sender), policy.Quote(msg.ConversationID), m.self, l.MaxConversations)
	}
	m.peersMu.Lock()
	defer m.peersMu.Unlock()
	if n := m.opened[msg.Sender]; n >= l.MaxPerPeer {
		m.total.v.Add(-1)
		return fmt.Sprintf("%s from %s would open conversation %s, but %s already has %d open with %s (the limit per peer)",
			policy.Quote(msg.Performative), policy.Quote(msg.Sender), policy.Quote(msg.ConversationID), policy.Quote(msg.Sender), n, m.self)
	}
	m.opened[msg.Sender]++
	return ""
}

// release gives back what admit counted for peer.
func (m *Manager) release(peer string) {
	m.peersMu.Lock()
	defer m.peersMu.Unlock()
	if m.opened[peer]--; m.opened[peer] <= 0 {
		delete(m.opened, peer)
	}
}

// unknown reports a message that reaches no conversation and opens none,
// and answers it with not-understood when the manager is set to.
func (w *worker) unknown(msg *forms.Message, prog *engine.Program, now time.Time) {
	m := w.m
	perf, from, id := policy.Quote(msg.Performative), policy.Quote(msg.Sender), policy.Quote(msg.ConversationID)
	reason := fmt.Sprintf("%s from %s is for conversation %s, which %s does not know", perf, from, id, m.self)
	switch {
	case isChild(msg.ConversationID):
		reason += ", and a child conversation is only started by its parent"
	case msg.ConversationID == "" && msg.Protocol == "":
		reason = fmt.Sprintf("%s from %s has neither a conversation id nor a protocol, so it belongs to no conversation", perf, from)
	case msg.ConversationID == "":
		reason = fmt.Sprintf("%s from %s has no conversation id and does not open a conversation of %s", perf, from, policy.Quote(msg.Protocol))
	case prog != nil:
		reason += fmt.Sprintf(", and a %s does not open a conversation of %s", perf, policy.Quote(msg.Protocol))
	case msg.Protocol != "":
		reason += fmt.Sprintf(", and %s accepts no new conversations of protocol %s", m.self, policy.Quote(msg.Protocol))
	default:
		reason += " and names no protocol to start one"
	}
	w.report(msg, engine.CodeUnknownConversation, reason, now)
	if m.o.notUnderstood && msg.Performative != "not-understood" {
		reply := &forms.Message{
			Performative: "not-understood", Sender: m.self, Receivers: []string{msg.Sender},
			ConversationID: msg.ConversationID, InReplyTo: msg.ReplyWith, Protocol: msg.Protocol,
			Content: map[string]any{"reason": reason}, Language: "json",
		}
		w.out.send("", reply)
	}
}

// report logs and observes a protocol error no handler produced.
func (w *worker) report(msg *forms.Message, code engine.ErrorCode, reason string, now time.Time) {
	m := w.m
	m.o.logger.Warn(reason, "agent", m.self, "conversation", clipAttr(msg.ConversationID), "code", string(code))
	if m.o.observer != nil {
		pe := &engine.ProtocolErrorEvent{At: now, Code: code, Reason: reason, Message: msg}
		m.observe(Observation{Agent: m.self, Conversation: msg.ConversationID, Event: pe, Err: errors.New(reason)})
	}
}

// isChild reports whether id names a child conversation: those are never
// accepted from a message, only started by the parent's LoadCPEvent.
func isChild(id string) bool { return strings.Contains(id, "/") }

// process feeds ev to c's handler and carries out its outputs. It
// reports whether the handler refused ev, a message, without applying it.
func (w *worker) process(c *conversation, ev engine.Event, now time.Time) (refused bool) {
	m := w.m
	if m.o.observer != nil {
		w.observe(c, ev, true, nil)
	}
	w.touch(c)
	// The queue goes back by hand, not by a defer, on every path: this
	// runs for every input, and a panic on the worker ends the process.
	q := w.getQueue()
	if err := c.h.Process(ev, q); err != nil {
		w.putQueue(q)
		c.whole = true
		w.log(c, slog.LevelError, "processing failed", "error", err)
		return false
	}
	if me, ok := ev.(*engine.MessageEvent); ok {
		for _, out := range q.Events() {
			if pe, ok := out.(*engine.ProtocolErrorEvent); ok && pe.Message == me.Message && !pe.Applied {
				refused = true
			}
		}
		// What the tombstone needs to tell a duplicate after the end,
		// before dispatch ends the conversation.
		switch {
		case c.h.Held() > 0:
			c.whole = true
		case !refused:
			c.last = me.Message
		}
	}
	w.dispatch(c, q, now)
	w.putQueue(q)
	return refused
}

func (w *worker) observe(c *conversation, ev engine.Event, input bool, err error) {
	prog := c.h.Program()
	w.m.observe(Observation{Agent: w.m.self, Conversation: c.id, Policy: prog.Policy().Name, Role: prog.Role(), Input: input, Event: ev, Err: err})
}

// dispatch carries out a handler's outputs: messages go to the sender,
// timers to the worker's timers, decisions to decision logic, children
// are started and ends are reported.
func (w *worker) dispatch(c *conversation, q *engine.Queue, now time.Time) {
	m := w.m
	var stack [4]*engine.DecisionEvent
	decisions := stack[:0]
	for _, ev := range q.Events() {
		if me, ok := ev.(*engine.MessageEvent); ok {
			// The queue reuses its messages: send and show a copy.
			msg := new(forms.Message)
			*msg = *me.Message
			me.Message = msg
		}
		if m.o.observer != nil {
			w.observe(c, ev, false, nil)
		}
		switch e := ev.(type) {
		case *engine.MessageEvent:
			w.send(c, e.Message, now)
		case *engine.TimerEvent:
			w.timers.apply(c, e, now)
		case *engine.DecisionEvent:
			decisions = append(decisions, e)
		case *engine.LoadCPEvent:
			w.startChild(c, e, now)
		case *engine.CPDoneEvent:
			w.ended(c, e, now)
		case *engine.ProtocolErrorEvent:
			if m.o.logger.Enabled(context.Background(), slog.LevelWarn) {
				w.log(c, slog.LevelWarn, e.Reason, "code", string(e.Code), "session", clipAttr(e.Session))
			}
		case *engine.CommitmentEvent:
			if m.o.logger.Enabled(context.Background(), slog.LevelDebug) {
				w.log(c, slog.LevelDebug, "commitment "+string(e.State), "commitment", e.Name, "debtor", e.Debtor, "creditor", e.Creditor)
			}
		}
	}
	for _, e := range decisions {
		w.decide(c, e.Ticket, &e.Request, now)
	}
}

func (w *worker) send(c *conversation, msg *forms.Message, now time.Time) {
	m := w.m
	if m.o.journal != nil {
		w.record(c, now, msg)
	}
	if m.o.logger.Enabled(context.Background(), slog.LevelDebug) {
		w.log(c, slog.LevelDebug, "send "+msg.Performative, "to", msg.Receivers)
	}
	if w.d != nil {
		w.queueSend(c, msg)
		return
	}
	w.out.send(c.id, msg)
}

func (w *worker) record(c *conversation, at time.Time, msg *forms.Message) {
	if err := w.m.o.journal.Write(at, msg); err != nil {
		w.log(c, slog.LevelError, "journal write failed", "error", err)
	}
}

// decide asks decision logic for a decision: the manager's own
// conversation-setup logic, then the decider, then the policy's decide
// expressions, then the application through WithAsyncDecisions. The
// decider and the hand-off run off the worker, bounded by
// Limits.DecisionTimeout, on a goroutine of the manager's pool; without
// them the decision is taken here. req is the handler's, in the queue
// dispatch carries out, which no other step uses meanwhile (see
// getQueue); decision logic off the worker gets its own copy.
func (w *worker) decide(c *conversation, ticket uint64, req *decision.Request, now time.Time) {
	m := w.m
	if c.h.Done() {
		return
	}
	prog := c.h.Program()
	if m.setup != nil && prog.Policy() == m.o.setup {
		if a, err := m.setupDecision(req, c.opener); !errors.Is(err, decision.ErrNoDecision) {
			w.decidedNow(c, ticket, req.Point, a, err, now)
			return
		}
	}
	if m.o.decider == nil && m.o.async == nil {
		a, err := decision.Answer{}, decision.ErrNoDecision
		if bound := w.boundOf(prog.Policy().Name); bound != nil {
			r := *req // a copy, so that the worker's decisions stay off the heap
			a, err = bound.Decide(context.Background(), &r)
		}
		w.decidedNow(c, ticket, req.Point, a, err, now)
		return
	}
	w.startDecision(c, ticket, req, now)
}

// runDecision runs the decider, the policy's decide expressions and the
// async hand-off for one decision, off the worker. It reports the answer,
// or the error and whether it must abort the conversation (a panic).
func (m *Manager) runDecision(ctx context.Context, id string, ticket uint64, req *decision.Request, bound decision.Decider) (a decision.Answer, err error, abort bool) {
	defer func() {
		if r := recover(); r != nil {
			a, err, abort = decision.Answer{}, fmt.Errorf("decision logic panicked: %s", clipAttr(fmt.Sprint(r))), true
		}
	}()
	err = decision.ErrNoDecision
	if m.o.decider != nil {
		a, err = m.o.decider.Decide(ctx, req)
	}
	// An answer (err nil) is most decisions': it takes no errors.Is.
	if err != nil && bound != nil && errors.Is(err, decision.ErrNoDecision) {
		a, err = bound.Decide(ctx, req)
	}
	if err != nil && m.o.async != nil && errors.Is(err, decision.ErrNoDecision) {
		m.o.async(DecisionRequest{Conversation: id, Ticket: ticket, Request: *req})
		return decision.Answer{}, errAsync, false
	}
	return a, err, false
}

// errAsync marks a decision handed to the application.
var errAsync = errors.New("agent: decision handed to the application")

// decided takes the result of decision logic that ran off the worker.
func (w *worker) decided(c *conversation, ticket uint64, j *decisionJob, now time.Time) {
	switch {
	case j.abort:
		w.abort(c, j.err.Error(), now)
	case j.err != nil && errors.Is(j.err, errAsync):
	default:
		point := ""
		if j.err != nil { // only a failure is reported with its point
			point = pointOf(c.h, ticket)
		}
		w.decidedNow(c, ticket, point, j.answer, j.err, now)
	}
}

// pointOf returns the decision point of the decision h still awaits with
// ticket, or "" when it awaits none: the point of a request is not kept
// with its job, as decision logic may change the job's copy.
func pointOf(h *engine.Handler, ticket uint64) string {
	for _, d := range h.Open() {
		if d.Ticket == ticket {
			return d.Request.Point
		}
	}
	return ""
}

// decidedNow applies a decision's answer, or reports why there is none.
// An error from decision logic aborts the conversation while the
// decision is still awaited. No decision (decision.ErrNoDecision) leaves
// the point waiting: the policy's timers bound that wait; it is logged
// as a failure unless the point also waits for a peer (the cancel a
// Request initiator may send while it waits) or offers no choice.
func (w *worker) decidedNow(c *conversation, ticket uint64, point string, a decision.Answer, err error, now time.Time) {
	if !c.h.Awaits(ticket) {
		// A message or timer moved the conversation on while decision
		// logic was deciding: its answer no longer matters. (An answer
		// the application gives through Answer is still checked, and a
		// stale one reported.)
		w.stopDecision(c, ticket)
		return
	}
	if err == nil {
		w.answer(c, ticket, a, now)
		return
	}
	if errors.Is(err, decision.ErrNoDecision) {
		// Nobody takes the decision: the point stays open, bounded by the
		// policy's timers, not by the decision timeout.
		w.stopDecision(c, ticket)
		if !c.h.Program().Receives(point) {
			w.log(c, slog.LevelError, "no decision logic decides this point", "point", point)
			if w.m.o.observer != nil {
				w.observe(c, &engine.DecisionEvent{At: now, Ticket: ticket}, false, err)
			}
		}
		return
	}
	w.log(c, slog.LevelError, "decision failed", "point", point, "error", err)
	if w.m.o.observer != nil {
		w.observe(c, &engine.DecisionEvent{At: now, Ticket: ticket}, false, err)
	}
	w.abort(c, "decision failed: "+err.Error(), now)
}

// answer feeds an answer to its conversation.
func (w *worker) answer(c *conversation, ticket uint64, a decision.Answer, now time.Time) {
	w.stopDecision(c, ticket)
	if w.m.o.observer != nil {
		w.process(c, &engine.DecisionEvent{At: now, Ticket: ticket, Answer: a}, now) // an observer may keep it
		return
	}
	// The reused event's Request stays empty: only the fields set here
	// change, and its answer is dropped once processed.
	ev := &w.answerEv
	ev.At, ev.Ticket, ev.Answer = now, ticket, a
	w.process(c, ev, now)
	ev.Answer = decision.Answer{}
}

// abort ends a conversation the manager cannot carry on.
func (w *worker) abort(c *conversation, reason string, now time.Time) {
	if c.h.Done() {
		return
	}
	w.log(c, slog.LevelError, "conversation aborted", "reason", reason)
	c.abortReason = reason
	w.touch(c)
	q := w.getQueue()
	defer w.putQueue(q)
	if err := c.h.Abort(now, reason, q); err != nil {
		w.log(c, slog.LevelError, "abort failed", "error", err)
		return
	}
	w.dispatch(c, q, now)
}

// startChild runs a child policy for a LoadCPEvent. Both sides of a
// conversation enter the in-child state on the same message, so they
// derive the same child conversation id.
func (w *worker) startChild(c *conversation, e *engine.LoadCPEvent, now time.Time) {
	m := w.m
	c.children++
	id := fmt.Sprintf("%s/%s#%d", c.id, e.Policy, c.children)
	prog, err := m.program(e.Policy, e.Role)
	if err == nil && !m.reserve() {
		err = ErrLimit
	}
	var h *engine.Handler
	if err == nil {
		var opts []engine.HandlerOption
		for role, agent := range e.Roles {
			if role != e.Role && agent != "" {
				opts = append(opts, engine.WithPeers(role, agent))
			}
		}
		if h, err = prog.NewHandler(id, m.self, opts...); err != nil {
			m.total.v.Add(-1)
		}
	}
	if err != nil {
		w.abort(c, fmt.Sprintf("cannot start child policy %s: %v", policy.Quote(e.Policy), err), now)
		return
	}
	child := &conversation{id: id, h: h, parent: c, parentSession: e.Session, parentEpoch: e.Epoch}
	w.add(child)
	w.touch(child)
	w.touch(c)
	if m.o.logger.Enabled(context.Background(), slog.LevelInfo) {
		w.log(child, slog.LevelInfo, "child conversation started", "parent", c.id)
	}
	q := w.getQueue()
	defer w.putQueue(q)
	// The child starts at the time of the step that loaded it (a timer's
	// deadline, say), so that replaying the journal rebuilds it exactly.
	_ = h.Start(e.At, q) // a new handler always starts
	w.dispatch(child, q, now)
}

// ended records a conversation's end and reports a child's to its parent.
func (w *worker) ended(c *conversation, e *engine.CPDoneEvent, now time.Time) {
	c.outcome, c.endedAt = e.Outcome, now
	w.touch(c)
	w.timers.clear(c)
	w.stopDecisions(c)
	if c.opener != "" {
		w.m.release(c.opener)
	}
	res := c.result()
	for _, ch := range c.waiters {
		ch <- res
	}
	c.waiters = nil
	if w.m.o.logger.Enabled(context.Background(), slog.LevelInfo) {
		w.log(c, slog.LevelInfo, "conversation ended", "outcome", e.Outcome)
	}
	w.sweep(now)
	w.retire(c)
	if p := c.parent; p != nil && !p.h.Done() {
		w.process(p, &engine.CPDoneEvent{At: e.At, Policy: c.h.Program().Policy().Name, Outcome: e.Outcome, Session: c.parentSession, Epoch: c.parentEpoch}, now)
	}
}

func (w *worker) log(c *conversation, level slog.Level, msg string, args ...any) {
	m := w.m
	if !m.o.logger.Enabled(context.Background(), level) {
		return
	}
	state := ""
	if peers := c.h.Sessions(); peers == nil {
		state = c.h.State("")
	} else {
		state = fmt.Sprintf("%d sessions", len(peers))
	}
	prog := c.h.Program()
	attrs := append([]any{"agent", m.self, "conversation", c.id, "policy", prog.Policy().Name, "role", prog.Role(), "state", state}, args...)
	m.o.logger.Log(context.Background(), level, clipAttr(msg), attrs...)
}

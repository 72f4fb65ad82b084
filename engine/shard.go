package engine

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/forms"
)

type inputKind uint8

const (
	inMessage inputKind = iota + 1
	inTick
	inAnswer
	inStart
	inWait
	inStatus
	inFlush
	inSweep
	inStop
)

// input is one item of a shard's queue. It is kept small: the rare
// kinds carry their data behind extra.
type input struct {
	kind   inputKind
	conv   string
	msg    *forms.Message
	ticket uint64
	extra  *inputExtra
}

type inputExtra struct {
	answer decision.Answer
	start  *startReq
	wait   chan waitResult
	status chan statusResult
	flush  func()
}

type startReq struct {
	prog  *Program
	peers map[string][]string
	data  map[string]any
	done  chan error
}

type waitResult struct {
	outcome string
	err     error
}

type statusResult struct {
	status Status
	err    error
}

// shard is one worker: a queue of inputs and the conversations it owns.
// Only its goroutine touches convs, so conversations need no locks.
type shard struct {
	m         *Manager
	mu        sync.Mutex
	queue     []input
	spare     []input
	wake      chan struct{}
	convs     map[string]*conversation
	count     atomic.Int64
	processed atomic.Uint64
	queues    []*Queue
	// timers holds the armed timers of all the shard's conversations,
	// earliest first; one clock timer (alarm) is set for the earliest.
	timers   timerHeap
	alarm    ClockTimer
	alarmAt  time.Time
	alarmGen uint64
	// Reused by decide: a handler does not keep its input event, and a
	// decider may use its Request only during the call.
	answerEv   DecisionEvent
	requests   []*decision.Request
	freeTimers []*shardTimer
}

type conversation struct {
	id     string
	prog   *Program
	h      *Handler
	timers []*shardTimer
	// A child conversation knows its parent and the session and epoch to
	// report its end to.
	parent        *conversation
	parentSession string
	parentEpoch   uint64
	children      int
	endedAt       time.Time
	outcome       string
	waiters       []chan waitResult
}

// shardTimer is an armed timer of a conversation.
type shardTimer struct {
	conv  *conversation
	ev    TimerEvent
	index int // in the shard's heap
}

type timerHeap []*shardTimer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	return h[i].ev.Deadline.Before(h[j].ev.Deadline)
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *timerHeap) Push(x any) {
	t := x.(*shardTimer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.index = -1
	return t
}

func (s *shard) push(in input) {
	s.mu.Lock()
	s.queue = append(s.queue, in)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *shard) run() {
	defer s.m.wg.Done()
	for {
		<-s.wake
		for {
			s.mu.Lock()
			batch := s.queue
			s.queue, s.spare = s.spare[:0], nil
			s.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			for i := range batch {
				if batch[i].kind == inStop {
					s.stop()
					return
				}
				s.handle(&batch[i])
				s.processed.Add(1)
				batch[i] = input{}
			}
			s.mu.Lock()
			if s.spare == nil {
				s.spare = batch[:0]
			}
			s.mu.Unlock()
		}
	}
}

func (s *shard) stop() {
	if s.alarm != nil {
		s.alarm.Stop()
	}
	for _, c := range s.convs {
		for _, w := range c.waiters {
			w <- waitResult{err: ErrClosed}
		}
	}
	s.mu.Lock()
	for _, in := range s.queue {
		s.reject(&in, ErrClosed)
	}
	s.queue = nil
	s.mu.Unlock()
}

// reject answers an input's caller, if it waits, with err.
func (s *shard) reject(in *input, err error) {
	if in.extra == nil {
		return
	}
	switch in := in.extra; {
	case in.start != nil:
		in.start.done <- err
	case in.wait != nil:
		in.wait <- waitResult{err: err}
	case in.status != nil:
		in.status <- statusResult{err: err}
	case in.flush != nil:
		in.flush()
	}
}

func (s *shard) getQueue() *Queue {
	if n := len(s.queues); n > 0 {
		q := s.queues[n-1]
		s.queues = s.queues[:n-1]
		q.Reset()
		return q
	}
	return &Queue{}
}

func (s *shard) putQueue(q *Queue) { s.queues = append(s.queues, q) }

func (s *shard) handle(in *input) {
	m := s.m
	now := m.clock.Now()
	switch in.kind {
	case inFlush:
		in.extra.flush()
	case inSweep:
		s.sweep(now)
	case inStart:
		err := s.start(in.conv, in.extra.start, now)
		in.extra.start.done <- err
	case inWait:
		c := s.convs[in.conv]
		switch {
		case c == nil:
			in.extra.wait <- waitResult{err: fmt.Errorf("%w: %q", ErrNoConversation, in.conv)}
		case c.h.Done():
			in.extra.wait <- waitResult{outcome: c.outcome}
		default:
			c.waiters = append(c.waiters, in.extra.wait)
		}
	case inStatus:
		c := s.convs[in.conv]
		if c == nil {
			in.extra.status <- statusResult{err: fmt.Errorf("%w: %q", ErrNoConversation, in.conv)}
			return
		}
		st := Status{Conversation: c.id, Policy: c.prog.policy.Name, Role: c.prog.role, Done: c.h.Done(), Outcome: c.outcome, States: map[string]string{}}
		if peers := c.h.Sessions(); peers != nil {
			for _, p := range peers {
				st.States[p] = c.h.State(p)
			}
		} else {
			st.States[""] = c.h.State("")
		}
		in.extra.status <- statusResult{status: st}
	case inTick:
		s.fire(in.ticket, now)
	case inAnswer:
		c := s.convs[in.conv]
		if c == nil {
			return
		}
		s.process(c, &DecisionEvent{At: now, Ticket: in.ticket, Answer: in.extra.answer}, now)
	case inMessage:
		s.message(in.msg, now)
	}
}

// start creates a conversation and starts its handler.
func (s *shard) start(id string, req *startReq, now time.Time) error {
	var opts []HandlerOption
	for role, agents := range req.peers {
		opts = append(opts, WithPeers(role, agents...))
	}
	if req.data != nil {
		opts = append(opts, WithContent(req.data))
	}
	h, err := req.prog.NewHandler(id, s.m.self, opts...)
	if err != nil {
		return err
	}
	if req.prog.manyRole >= 0 && len(h.sessions) == 0 {
		return fmt.Errorf("engine: start %s: name the %s agents in peers", req.prog.policy.Name, req.prog.roles[req.prog.manyRole])
	}
	c := &conversation{id: id, prog: req.prog, h: h}
	s.add(c)
	s.log(c, slog.LevelInfo, "conversation started")
	q := s.getQueue()
	defer s.putQueue(q)
	if err := h.Start(now, q); err != nil {
		return err
	}
	s.dispatch(c, q, now)
	return nil
}

func (s *shard) add(c *conversation) {
	s.convs[c.id] = c
	s.count.Add(1)
}

// message routes an inbound message to its conversation, or starts one.
func (s *shard) message(msg *forms.Message, now time.Time) {
	m := s.m
	c := s.convs[msg.ConversationID]
	if c == nil {
		c = s.accept(msg, now)
		if c == nil {
			return
		}
	}
	if m.journal != nil && m.journalReceived {
		s.record(c, now, msg)
	}
	s.process(c, &MessageEvent{At: now, Message: msg}, now)
}

// accept starts a conversation for a message that opens one: its protocol
// names a policy this agent accepts conversations of. Otherwise it reports
// the message and, if configured, answers it with not-understood.
func (s *shard) accept(msg *forms.Message, now time.Time) *conversation {
	m := s.m
	m.mu.Lock()
	prog := m.agreed[msg.ConversationID]
	if prog != nil {
		delete(m.agreed, msg.ConversationID)
	} else {
		prog = m.responders[msg.Protocol]
	}
	m.mu.Unlock()
	if prog == nil || s.isChild(msg.ConversationID) || !prog.opens(msg) {
		reason := fmt.Sprintf("%s from %q is for conversation %q, which %s does not know", msg.Performative, msg.Sender, msg.ConversationID, m.self)
		switch {
		case msg.ConversationID == "" && msg.Protocol == "":
			reason = fmt.Sprintf("%s from %q has neither a conversation id nor a protocol, so it belongs to no conversation", msg.Performative, msg.Sender)
		case prog != nil:
			reason += fmt.Sprintf(", and a %s does not open a conversation of %q", msg.Performative, msg.Protocol)
		case msg.Protocol != "":
			reason += fmt.Sprintf(", and %s accepts no new conversations of protocol %q", m.self, msg.Protocol)
		default:
			reason += " and names no protocol to start one"
		}
		pe := &ProtocolErrorEvent{At: now, Code: CodeUnknownConversation, Reason: reason, Message: msg}
		m.logger.Warn(reason, "agent", m.self, "conversation", msg.ConversationID, "code", string(CodeUnknownConversation))
		if m.observer != nil {
			m.observer(Observation{Agent: m.self, Conversation: msg.ConversationID, Event: pe, Err: errors.New(reason)})
		}
		if m.notUnderstood && msg.Performative != "not-understood" && m.transport != nil {
			reply := &forms.Message{
				Performative: "not-understood", Sender: m.self, Receivers: []string{msg.Sender},
				ConversationID: msg.ConversationID, InReplyTo: msg.ReplyWith, Protocol: msg.Protocol,
				Content: map[string]any{"reason": reason}, Language: "json",
			}
			if err := m.transport.Send(m.ctx, reply); err != nil {
				m.logger.Warn("sending not-understood failed", "agent", m.self, "error", err)
			}
		}
		return nil
	}
	id := msg.ConversationID
	if id == "" {
		id = msg.Sender + "-" + msg.ReplyWith
		if msg.ReplyWith == "" {
			id = fmt.Sprintf("%s-%s-%d", msg.Sender, m.self, m.seq.Add(1))
		}
		msg.ConversationID = id
	}
	h, err := prog.NewHandler(id, m.self)
	if err != nil {
		return nil
	}
	c := &conversation{id: id, prog: prog, h: h}
	s.add(c)
	s.log(c, slog.LevelInfo, "conversation accepted", "from", msg.Sender)
	q := s.getQueue()
	defer s.putQueue(q)
	_ = h.Start(now, q) // a new handler always starts
	s.dispatch(c, q, now)
	return c
}

// isChild reports whether id names a child conversation: those are never
// accepted from a message, only started by the parent's LoadCPEvent.
func (s *shard) isChild(id string) bool { return strings.Contains(id, "/") }

// process feeds one input event to c's handler and dispatches the outputs.
func (s *shard) process(c *conversation, ev Event, now time.Time) {
	m := s.m
	if m.observer != nil {
		m.observer(Observation{Agent: m.self, Conversation: c.id, Policy: c.prog.policy.Name, Role: c.prog.role, Input: true, Event: ev})
	}
	q := s.getQueue()
	defer s.putQueue(q)
	if err := c.h.Process(ev, q); err != nil {
		s.log(c, slog.LevelError, "processing failed", "error", err)
		return
	}
	s.dispatch(c, q, now)
}

// dispatch carries out a handler's outputs: messages go to the transport,
// timers to the clock, decisions to the decider, children are started and
// ends are reported.
func (s *shard) dispatch(c *conversation, q *Queue, now time.Time) {
	m := s.m
	var stack [2]pendingDecision
	decisions := stack[:0]
	for _, ev := range q.Events() {
		if me, ok := ev.(*MessageEvent); ok {
			// The queue reuses its messages: send and show a copy.
			msg := new(forms.Message)
			*msg = *me.Message
			me.Message = msg
		}
		if m.observer != nil {
			m.observer(Observation{Agent: m.self, Conversation: c.id, Policy: c.prog.policy.Name, Role: c.prog.role, Event: ev})
		}
		switch e := ev.(type) {
		case *MessageEvent:
			s.send(c, e, now)
		case *TimerEvent:
			s.timer(c, e, now)
		case *DecisionEvent:
			decisions = append(decisions, pendingDecision{ticket: e.Ticket, req: e.Request})
		case *LoadCPEvent:
			s.startChild(c, e, now)
		case *CPDoneEvent:
			s.ended(c, e, now)
		case *ProtocolErrorEvent:
			if m.logger.Enabled(m.ctx, slog.LevelWarn) {
				s.log(c, slog.LevelWarn, e.Reason, "code", string(e.Code), "session", e.Session)
			}
		case *CommitmentEvent:
			if m.logger.Enabled(m.ctx, slog.LevelDebug) {
				s.log(c, slog.LevelDebug, "commitment "+string(e.State), "commitment", e.Name, "debtor", e.Debtor, "creditor", e.Creditor)
			}
		}
	}
	for i := range decisions {
		s.decide(c, &decisions[i], now)
	}
}

func (s *shard) send(c *conversation, e *MessageEvent, now time.Time) {
	m := s.m
	msg := e.Message
	if m.journal != nil {
		s.record(c, now, msg)
	}
	if m.logger.Enabled(m.ctx, slog.LevelDebug) {
		s.log(c, slog.LevelDebug, "send "+msg.Performative, "to", msg.Receivers)
	}
	if m.transport == nil {
		err := errors.New("no transport")
		s.sendFailed(c, e, msg, err)
		return
	}
	if err := m.transport.Send(m.ctx, msg); err != nil {
		s.sendFailed(c, e, msg, err)
	}
}

func (s *shard) sendFailed(c *conversation, e *MessageEvent, msg *forms.Message, err error) {
	m := s.m
	s.log(c, slog.LevelError, "send failed", "performative", msg.Performative, "to", msg.Receivers, "error", err)
	if m.observer != nil {
		m.observer(Observation{Agent: m.self, Conversation: c.id, Policy: c.prog.policy.Name, Role: c.prog.role, Event: e, Err: err})
	}
}

func (s *shard) record(c *conversation, at time.Time, msg *forms.Message) {
	if err := s.m.journal.Write(at, msg); err != nil {
		s.log(c, slog.LevelError, "journal write failed", "error", err)
	}
}

func (s *shard) timer(c *conversation, e *TimerEvent, now time.Time) {
	switch e.Op {
	case TimerSet:
		t := s.newTimer()
		t.conv, t.ev = c, *e
		heap.Push(&s.timers, t)
		c.timers = append(c.timers, t)
		if t.index == 0 {
			s.rearm(now)
		}
	case TimerCancel:
		for i, t := range c.timers {
			if t.ev.Name == e.Name && t.ev.Session == e.Session && t.ev.Epoch == e.Epoch {
				s.unschedule(c, i)
				return
			}
		}
	}
}

// unschedule removes timer i of c. The alarm stays: when it goes off early
// it finds nothing due and is set again.
func (s *shard) unschedule(c *conversation, i int) {
	t := c.timers[i]
	if t.index >= 0 {
		heap.Remove(&s.timers, t.index)
	}
	c.timers[i] = c.timers[len(c.timers)-1]
	c.timers[len(c.timers)-1] = nil
	c.timers = c.timers[:len(c.timers)-1]
	*t = shardTimer{index: -1}
	s.freeTimers = append(s.freeTimers, t)
}

// newTimer returns a shardTimer, reusing one unscheduled before.
func (s *shard) newTimer() *shardTimer {
	if n := len(s.freeTimers); n > 0 {
		t := s.freeTimers[n-1]
		s.freeTimers = s.freeTimers[:n-1]
		return t
	}
	return &shardTimer{index: -1}
}

// rearm sets the shard's alarm for its earliest timer, unless it is
// already set for then.
func (s *shard) rearm(now time.Time) {
	if len(s.timers) == 0 {
		return
	}
	at := s.timers[0].ev.Deadline
	if s.alarm != nil && s.alarmAt.Equal(at) {
		return
	}
	if s.alarm != nil {
		s.alarm.Stop()
	}
	m := s.m
	s.alarmAt = at
	s.alarmGen++
	gen := s.alarmGen
	s.alarm = m.clock.AfterFunc(at.Sub(now), func() {
		if !m.closed.Load() {
			s.push(input{kind: inTick, ticket: gen})
		}
	})
}

// fire processes every timer due by now, in deadline order, each at its
// deadline, then sets the alarm for the next. gen identifies the alarm
// that went off: if it is the current one, it is spent.
func (s *shard) fire(gen uint64, now time.Time) {
	if gen == s.alarmGen {
		s.alarm = nil
	}
	for len(s.timers) > 0 && !s.timers[0].ev.Deadline.After(now) {
		t := heap.Pop(&s.timers).(*shardTimer)
		c, ev := t.conv, t.ev
		for i, ct := range c.timers {
			if ct == t {
				s.unschedule(c, i) // t is reused from here on
				break
			}
		}
		ev.At = ev.Deadline
		s.process(c, &ev, now)
	}
	s.rearm(now)
}

// pendingDecision is a decision a handler asked for, copied out of the
// queue (which the decision's own processing reuses).
type pendingDecision struct {
	ticket uint64
	req    decision.Request
}

// decide asks decision logic: the decider, then the policy's decide
// expressions, then the application through WithAsyncDecisions.
func (s *shard) decide(c *conversation, d *pendingDecision, now time.Time) {
	m := s.m
	if c.h.Done() {
		return
	}
	req := s.request()
	defer s.releaseRequest(req)
	*req = d.req
	var (
		a   decision.Answer
		err = decision.ErrNoDecision
	)
	if m.decider != nil {
		a, err = m.decider.Decide(m.ctx, req)
	}
	if errors.Is(err, decision.ErrNoDecision) && m.setup != nil && c.prog.policy == m.setup {
		a, err = m.setupDecision(req)
	}
	if errors.Is(err, decision.ErrNoDecision) {
		m.mu.RLock()
		bound := m.bound[c.prog.policy.Name]
		m.mu.RUnlock()
		if bound != nil {
			a, err = bound.Decide(m.ctx, req)
		}
	}
	if errors.Is(err, decision.ErrNoDecision) && m.async != nil {
		m.async(DecisionRequest{Conversation: c.id, Ticket: d.ticket, Request: *req})
		return
	}
	if err != nil {
		if !errors.Is(err, decision.ErrNoDecision) || len(req.Choices) > 0 && !optional(c, req.Point) {
			s.log(c, slog.LevelError, "decision failed", "point", req.Point, "error", err)
			if m.observer != nil {
				m.observer(Observation{Agent: m.self, Conversation: c.id, Policy: c.prog.policy.Name, Role: c.prog.role, Event: &DecisionEvent{At: now, Ticket: d.ticket, Request: *req}, Err: err})
			}
		}
		return
	}
	ev := &s.answerEv
	*ev = DecisionEvent{At: now, Ticket: d.ticket, Answer: a}
	s.process(c, ev, now)
}

// request returns a Request to hand to deciders, reused once they return.
func (s *shard) request() *decision.Request {
	if n := len(s.requests); n > 0 {
		r := s.requests[n-1]
		s.requests = s.requests[:n-1]
		return r
	}
	return new(decision.Request)
}

func (s *shard) releaseRequest(r *decision.Request) {
	*r = decision.Request{}
	s.requests = append(s.requests, r)
}

// optional reports whether a decision point also waits for a peer, so
// leaving it undecided is fine (the cancel a Request initiator may send
// while waiting for a reply).
func optional(c *conversation, point string) bool {
	st, ok := c.prog.stateIndex[point]
	return ok && len(c.prog.states[st].recvs) > 0
}

// startChild runs a child policy for a LoadCPEvent. Both sides of a
// conversation enter the in-child state on the same message, so they
// derive the same child conversation id.
func (s *shard) startChild(c *conversation, e *LoadCPEvent, now time.Time) {
	m := s.m
	c.children++
	id := fmt.Sprintf("%s/%s#%d", c.id, e.Policy, c.children)
	prog, err := m.program(e.Policy, e.Role)
	if err != nil {
		s.log(c, slog.LevelError, "cannot start child policy", "child", e.Policy, "error", err)
		return
	}
	var opts []HandlerOption
	for role, agent := range e.Roles {
		if role != e.Role && agent != "" {
			opts = append(opts, WithPeers(role, agent))
		}
	}
	h, err := prog.NewHandler(id, m.self, opts...)
	if err != nil {
		s.log(c, slog.LevelError, "cannot start child policy", "child", e.Policy, "error", err)
		return
	}
	child := &conversation{id: id, prog: prog, h: h, parent: c, parentSession: e.Session, parentEpoch: e.Epoch}
	s.add(child)
	s.log(child, slog.LevelInfo, "child conversation started", "parent", c.id)
	q := s.getQueue()
	defer s.putQueue(q)
	_ = h.Start(now, q) // a new handler always starts
	s.dispatch(child, q, now)
}

// ended records a conversation's end and reports a child's to its parent.
func (s *shard) ended(c *conversation, e *CPDoneEvent, now time.Time) {
	c.outcome, c.endedAt = e.Outcome, now
	for len(c.timers) > 0 {
		s.unschedule(c, len(c.timers)-1)
	}
	for _, w := range c.waiters {
		w <- waitResult{outcome: e.Outcome}
	}
	c.waiters = nil
	s.log(c, slog.LevelInfo, "conversation ended", "outcome", e.Outcome)
	if p := c.parent; p != nil && !p.h.Done() {
		s.process(p, &CPDoneEvent{At: now, Policy: c.prog.policy.Name, Outcome: e.Outcome, Session: c.parentSession, Epoch: c.parentEpoch}, now)
	}
}

// sweep forgets conversations that ended more than the retention ago.
func (s *shard) sweep(now time.Time) {
	for id, c := range s.convs {
		if c.h.Done() && now.Sub(c.endedAt) >= s.m.retention {
			delete(s.convs, id)
			s.count.Add(-1)
		}
	}
}

func (s *shard) log(c *conversation, level slog.Level, msg string, args ...any) {
	m := s.m
	if !m.logger.Enabled(context.Background(), level) {
		return
	}
	state := ""
	if c.h != nil {
		if peers := c.h.Sessions(); peers == nil {
			state = c.h.State("")
		} else {
			state = fmt.Sprintf("%d sessions", len(peers))
		}
	}
	attrs := append([]any{"agent", m.self, "conversation", c.id, "policy", c.prog.policy.Name, "role", c.prog.role, "state", state}, args...)
	m.logger.Log(m.ctx, level, msg, attrs...)
}

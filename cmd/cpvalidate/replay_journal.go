package main

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policies"
	"github.com/parleyhq/parley/policy"
	"github.com/parleyhq/parley/trace"
)

// replayMaxSteps bounds the inputs a replay feeds the handlers (each
// Start and each Process, children included): a journal read within
// trace.DefaultLimits needs fewer, and a policy whose children start
// children without end cannot keep replay busy for ever.
const replayMaxSteps = trace.DefaultMaxSteps

// errReplaySteps is returned when a replay needs more than replayMaxSteps
// inputs.
var errReplaySteps = fmt.Errorf("the journal needs more than %d steps to replay", replayMaxSteps)

// replayer rebuilds one agent's conversations from its journal, feeding
// each line to a fresh handler of the conversation's role as the agent
// did: what it sent as a MessageEvent with Sent, what it received as a
// MessageEvent, and each timer line as that timer firing. It carries out
// the handlers' outputs as the agent does: it keeps their armed timers,
// starts the child policies they load (with the ids the agent gives
// them) and reports a child's end to its parent. Decisions are not
// asked: the messages the agent sent say what they decided.
type replayer struct {
	self    string
	journal string // the journal's name, for problems
	// given are the policies named on the command line, by name; others
	// (child policies) are resolved among the shipped ones.
	given  map[string]*policy.Policy
	progs  map[[2]string]*engine.Program
	stored map[string]*agent.StoredConversation
	// wanted reports whether the conversation tree of a root id, whose
	// journal speaks protocol, is replayed.
	wanted func(root, protocol string) bool
	convs  map[string]*replayConv
	steps  int
	queues []*engine.Queue
	// foreign counts the journal lines that involve another agent only,
	// and received the messages the agent received.
	foreign, received int
}

// replayConv is one conversation as replay rebuilds it.
type replayConv struct {
	id string
	sc *agent.StoredConversation // nil when the store does not hold it
	h  *engine.Handler           // nil when it could not be started
	// started is set when this agent started the conversation (a Start
	// the journal does not record), rather than a message opening it or
	// its parent loading it.
	started       bool
	opener        string
	parent        *replayConv
	parentSession string
	parentEpoch   uint64
	children      int
	ended         bool
	outcome       string
	aborted       bool // the store's abort has been applied
	applied       map[string]struct{}
	sent          map[string]sentLine
	timers        []engine.TimerEvent
	problems      []string
}

// sentLine is a message the agent sent, and the journal line it is on.
type sentLine struct {
	line int
	msg  *forms.Message
}

func (c *replayConv) problem(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

func newReplayer(self, journal string, given []*policy.Policy, stored []agent.StoredConversation) *replayer {
	r := &replayer{self: self, journal: journal, given: map[string]*policy.Policy{}, progs: map[[2]string]*engine.Program{},
		stored: map[string]*agent.StoredConversation{}, convs: map[string]*replayConv{}}
	for _, p := range given {
		r.given[p.Name] = p
	}
	for i := range stored {
		r.stored[stored[i].ID] = &stored[i]
	}
	return r
}

// resolve finds a policy by name: one given, else a shipped one.
func (r *replayer) resolve(name string) *policy.Policy {
	if p, ok := r.given[name]; ok {
		return p
	}
	return policies.Resolve(name)
}

// program compiles policy name for role, once.
func (r *replayer) program(name, role string) (*engine.Program, error) {
	k := [2]string{name, role}
	if pr, ok := r.progs[k]; ok {
		return pr, nil
	}
	p := r.resolve(name)
	if p == nil {
		return nil, fmt.Errorf("policy %s is neither given nor shipped", policy.Quote(name))
	}
	pr, ds := engine.Compile(p, role, engine.WithPolicies(r.resolve))
	if pr == nil {
		return nil, fmt.Errorf("policy %s does not compile for role %s: %d errors", policy.Quote(name), policy.Quote(role), ds.Count(policy.SeverityError))
	}
	r.progs[k] = pr
	return pr, nil
}

// rootOf returns the id of the conversation a child conversation id
// descends from (the id itself for a conversation that is no child).
func rootOf(id string) string {
	root, _, _ := strings.Cut(id, "/")
	return root
}

func (r *replayer) spend() error {
	if r.steps >= replayMaxSteps {
		return errReplaySteps
	}
	r.steps++
	return nil
}

func (r *replayer) getQueue() *engine.Queue {
	if n := len(r.queues); n > 0 {
		q := r.queues[n-1]
		r.queues = r.queues[:n-1]
		q.Reset()
		return q
	}
	return &engine.Queue{}
}

func (r *replayer) putQueue(q *engine.Queue) { r.queues = append(r.queues, q) }

// feed replays the journal's entries in order. at gives each message
// line's time as written (see rawTimes); the error is for the step limit.
func (r *replayer) feed(entries []trace.Entry, at map[int]time.Time) error {
	for i := range entries {
		e := &entries[i]
		var err error
		switch {
		case e.Timer != nil:
			err = r.timerLine(e)
		case e.Message != nil:
			t := e.At
			if raw, ok := at[e.Line]; ok {
				t = raw
			}
			err = r.messageLine(e.Line, t, e.Message)
		}
		if err != nil {
			return err
		}
	}
	return r.finish()
}

// messageLine replays a message the agent sent or received at at.
func (r *replayer) messageLine(line int, at time.Time, m *forms.Message) error {
	id := agent.MessageID(m)
	sender, receiver := m.Sender == r.self, slices.Contains(m.Receivers, r.self)
	if !sender && !receiver {
		r.foreign++
		return nil
	}
	root := rootOf(m.ConversationID)
	if !r.wanted(root, m.Protocol) {
		return nil
	}
	c := r.convs[m.ConversationID]
	if sender {
		prev, seen := sentLine{}, false
		if c != nil && id != "" {
			prev, seen = c.sent[id]
		}
		if !seen {
			return r.send(line, at, m, c)
		}
		if !receiver || c.applied != nil && hasKey(c.applied, id) {
			if !sameMessage(prev.msg, m) {
				c.problem("%s:%d: the agent sends message %s again, as on line %d, but not the same: was the agent restarted after it journaled the first and before it committed it?",
					r.journal, line, showMessageID(id), prev.line)
			}
			return nil
		}
	}
	r.received++
	if c == nil {
		var err error
		if c, err = r.open(m.ConversationID, m.Protocol, at, m.Sender, false); c == nil || err != nil {
			return err
		}
	}
	if id != "" {
		if hasKey(c.applied, id) {
			return nil // delivered again after a restart: the agent applies it once
		}
		if c.applied == nil {
			c.applied = map[string]struct{}{}
		}
		c.applied[id] = struct{}{}
	}
	if err := r.abortBefore(c, at); err != nil {
		return err
	}
	if c.h == nil {
		return nil
	}
	_, err := r.process(c, &engine.MessageEvent{At: at, Message: m})
	return err
}

func hasKey(m map[string]struct{}, k string) bool {
	_, ok := m[k]
	return ok
}

// sameMessage reports whether two lines give the same message.
func sameMessage(a, b *forms.Message) bool {
	return a.Performative == b.Performative && a.Sender == b.Sender && slices.Equal(a.Receivers, b.Receivers) &&
		a.ConversationID == b.ConversationID && a.ReplyWith == b.ReplyWith && a.InReplyTo == b.InReplyTo &&
		a.ReplyBy.Equal(b.ReplyBy) && a.Protocol == b.Protocol && a.Language == b.Language && a.Ontology == b.Ontology &&
		reflect.DeepEqual(a.Content, b.Content)
}

// send replays a message the agent sent: to its conversation's handler
// as sent, starting the conversation when this is its first line.
func (r *replayer) send(line int, at time.Time, m *forms.Message, c *replayConv) error {
	if c == nil {
		var err error
		if c, err = r.open(m.ConversationID, m.Protocol, at, "", true); c == nil || err != nil {
			return err
		}
	}
	if id := agent.MessageID(m); id != "" {
		if c.sent == nil {
			c.sent = map[string]sentLine{}
		}
		c.sent[id] = sentLine{line: line, msg: m}
	}
	if err := r.abortBefore(c, at); err != nil {
		return err
	}
	if c.h == nil {
		return nil
	}
	refused, err := r.process(c, &engine.MessageEvent{At: at, Message: m, Sent: true})
	for _, pe := range refused {
		c.problem("%s:%d: the handler replayed does not let the agent send this %s: %s [%s]", r.journal, line, policy.Quote(m.Performative), pe.Reason, pe.Code)
	}
	return err
}

// open starts conversation id at at, as the agent did: started by the
// agent (started), or opened by a message from opener. Its policy and
// role are the store's; for a conversation the store does not hold, the
// policy is the one protocol names, and the role the one of it that
// starts conversations (started) or accepts them. A child conversation
// is started by its parent only. open returns nil when the conversation
// cannot be replayed; the problem is kept with a conversation of that id.
func (r *replayer) open(id, protocol string, at time.Time, opener string, started bool) (*replayConv, error) {
	c := &replayConv{id: id, sc: r.stored[id], started: started}
	r.convs[id] = c
	if rootOf(id) != id {
		c.problem("%s: the journal has lines of this child conversation, but the replay of its parent did not start it", r.journal)
		return c, nil
	}
	var prog *engine.Program
	var err error
	if c.sc != nil {
		prog, err = r.program(c.sc.Policy, c.sc.Role)
	} else {
		prog, err = r.inferRole(protocol, opener, started)
	}
	if err != nil {
		c.problem("%v", err)
		return c, nil
	}
	var opts []engine.HandlerOption
	if started && c.sc != nil {
		// The agent's Start bound the peers, which the journal does not
		// record; a role of many peers needs them for its opening.
		if many := prog.ManyRole(); many != "" {
			if v, err := decodeSnapshot(c.sc.Handler); err == nil && len(v.Sessions) > 0 {
				peers := make([]string, len(v.Sessions))
				for i, s := range v.Sessions {
					peers[i] = s.Peer
				}
				opts = append(opts, engine.WithPeers(many, peers...))
			}
		}
	}
	h, err := prog.NewHandler(id, r.self, opts...)
	if err != nil {
		c.problem("cannot start a handler: %v", err)
		return c, nil
	}
	c.h, c.opener = h, opener
	return c, r.start(c, at)
}

// inferRole finds the role of a conversation of policy protocol that the
// store does not hold: the one that starts conversations (started) or
// accepts them.
func (r *replayer) inferRole(protocol, opener string, started bool) (*engine.Program, error) {
	p := r.given[protocol]
	if p == nil {
		return nil, fmt.Errorf("the store does not hold it and its policy %s is not given", policy.Quote(protocol))
	}
	for _, role := range p.Roles {
		pr, err := r.program(p.Name, role.Name)
		if err != nil {
			return nil, err
		}
		if pr.RespondsFirst() != started {
			return pr, nil
		}
	}
	if started {
		return nil, fmt.Errorf("the store does not hold it and no role of %s starts conversations", policy.Quote(p.Name))
	}
	return nil, fmt.Errorf("the store does not hold it and no role of %s accepts a conversation %s opens", policy.Quote(p.Name), policy.Quote(opener))
}

// start starts c's handler at at and carries out its outputs.
func (r *replayer) start(c *replayConv, at time.Time) error {
	if err := r.spend(); err != nil {
		return err
	}
	q := r.getQueue()
	defer r.putQueue(q)
	if err := c.h.Start(at, q); err != nil {
		c.problem("cannot start the handler: %v", err)
		return nil
	}
	_, err := r.dispatch(c, q)
	return err
}

// timerLine replays a timer that fired: the handler's armed timer of that
// name due at the line's time.
func (r *replayer) timerLine(e *trace.Entry) error {
	t := e.Timer
	if t.Agent != r.self {
		r.foreign++
		return nil
	}
	c := r.convs[t.Conversation]
	if c == nil {
		if !r.wanted(rootOf(t.Conversation), "") {
			return nil
		}
		var err error
		if c, err = r.open(t.Conversation, "", t.At, "", true); c == nil || err != nil {
			return err
		}
	}
	if err := r.abortBefore(c, t.At); err != nil {
		return err
	}
	if c.h == nil {
		return nil
	}
	k := slices.IndexFunc(c.timers, func(a engine.TimerEvent) bool { return a.Name == t.Name && a.Deadline.Equal(t.At) })
	if k < 0 {
		c.problem("%s:%d: timer %s fired at %s, but the handler replayed has no such timer armed then", r.journal, e.Line, policy.Quote(t.Name), t.At.UTC().Format(time.RFC3339Nano))
		return nil
	}
	ev := c.timers[k]
	c.timers = slices.Delete(c.timers, k, k+1)
	ev.At = ev.Deadline
	_, err := r.process(c, &ev)
	return err
}

// abortBefore applies the abort the store records for c before an input
// of c at at that comes after it: the agent aborts a conversation whose
// decision logic or send failed, which the journal does not record.
func (r *replayer) abortBefore(c *replayConv, at time.Time) error {
	if c.sc == nil || c.sc.Abort == "" || c.aborted || c.h == nil || !at.After(c.sc.Ended) {
		return nil
	}
	return r.abort(c)
}

func (r *replayer) abort(c *replayConv) error {
	c.aborted = true
	if c.h.Done() {
		return nil
	}
	if err := r.spend(); err != nil {
		return err
	}
	q := r.getQueue()
	defer r.putQueue(q)
	if err := c.h.Abort(c.sc.Ended, c.sc.Abort, q); err != nil {
		c.problem("cannot abort the handler as the agent did: %v", err)
		return nil
	}
	_, err := r.dispatch(c, q)
	return err
}

// finish applies the aborts still due, in id order.
func (r *replayer) finish() error {
	ids := make([]string, 0, len(r.convs))
	for id := range r.convs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		c := r.convs[id]
		if c.sc != nil && c.sc.Abort != "" && !c.aborted && c.h != nil {
			if err := r.abort(c); err != nil {
				return err
			}
		}
	}
	return nil
}

// process feeds ev to c's handler and carries out the outputs. It
// returns the protocol errors the handler reported for ev.
func (r *replayer) process(c *replayConv, ev engine.Event) ([]engine.ProtocolErrorEvent, error) {
	if err := r.spend(); err != nil {
		return nil, err
	}
	q := r.getQueue()
	defer r.putQueue(q)
	if err := c.h.Process(ev, q); err != nil {
		c.problem("the handler replayed fails: %v", err)
		return nil, nil
	}
	return r.dispatch(c, q)
}

// dispatch carries out the outputs in q of c's handler as the agent's
// worker does, and returns the protocol errors among them.
func (r *replayer) dispatch(c *replayConv, q *engine.Queue) ([]engine.ProtocolErrorEvent, error) {
	var pes []engine.ProtocolErrorEvent
	for _, ev := range q.Events() {
		switch e := ev.(type) {
		case *engine.TimerEvent:
			switch e.Op {
			case engine.TimerSet:
				c.timers = append(c.timers, *e)
			case engine.TimerCancel:
				c.timers = slices.DeleteFunc(c.timers, func(a engine.TimerEvent) bool {
					return a.Name == e.Name && a.Commitment == e.Commitment && a.Session == e.Session && a.Epoch == e.Epoch
				})
			}
		case *engine.LoadCPEvent:
			if err := r.startChild(c, *e); err != nil {
				return pes, err
			}
		case *engine.CPDoneEvent:
			if err := r.ended(c, *e); err != nil {
				return pes, err
			}
		case *engine.ProtocolErrorEvent:
			pes = append(pes, *e)
		}
	}
	return pes, nil
}

// startChild runs the child policy a LoadCPEvent asks for, under the id
// the agent gives it, or aborts the parent as the agent does when it
// cannot.
func (r *replayer) startChild(c *replayConv, e engine.LoadCPEvent) error {
	c.children++
	id := fmt.Sprintf("%s/%s#%d", c.id, e.Policy, c.children)
	prog, err := r.program(e.Policy, e.Role)
	var h *engine.Handler
	if err == nil {
		var opts []engine.HandlerOption
		roles := make([]string, 0, len(e.Roles))
		for role := range e.Roles {
			roles = append(roles, role)
		}
		slices.Sort(roles)
		for _, role := range roles {
			if agent := e.Roles[role]; role != e.Role && agent != "" {
				opts = append(opts, engine.WithPeers(role, agent))
			}
		}
		h, err = prog.NewHandler(id, r.self, opts...)
	}
	if err != nil {
		c.problem("cannot start child policy %s: %v", policy.Quote(e.Policy), err)
		return nil
	}
	child := &replayConv{id: id, sc: r.stored[id], h: h, parent: c, parentSession: e.Session, parentEpoch: e.Epoch}
	r.convs[id] = child
	return r.start(child, e.At)
}

// ended records c's end and reports a child's to its parent.
func (r *replayer) ended(c *replayConv, e engine.CPDoneEvent) error {
	c.ended, c.outcome, c.timers = true, e.Outcome, nil
	if p := c.parent; p != nil && p.h != nil && !p.h.Done() {
		_, err := r.process(p, &engine.CPDoneEvent{At: e.At, Policy: c.h.Program().Policy().Name, Outcome: e.Outcome, Session: c.parentSession, Epoch: c.parentEpoch})
		return err
	}
	return nil
}

package engine_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policies"
)

// The conversation harness: it compiles the shipped policies once, hosts
// one handler per agent on an engine.Driver and drives a conversation
// step by step: each action feeds one agent's handler an event at the
// step's time and lets the driver deliver what it sends. The driver's
// observer renders every output event one per line so that a table can
// pin them exactly, and records the decisions raised and the timers set
// for later actions to answer and fire.

// t0 is when every harness conversation starts; rendered times are
// offsets from it.
var t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// convID is the conversation id of every harness conversation.
const convID = "c1"

var (
	programsMu sync.Mutex
	programs   = map[[2]string]*engine.Program{}
)

// program returns the shipped policy name compiled for role, compiling it
// once per test binary.
func program(tb testing.TB, name, role string) *engine.Program {
	tb.Helper()
	programsMu.Lock()
	defer programsMu.Unlock()
	if pr, ok := programs[[2]string{name, role}]; ok {
		return pr
	}
	p, err := policies.Load(name)
	require.NoError(tb, err)
	pr, ds := engine.Compile(p, role, engine.WithPolicies(policies.Resolve))
	require.NotNil(tb, pr, "compile %s as %s: %v", name, role, ds)
	programs[[2]string{name, role}] = pr
	return pr
}

// agent is an agent taking part in a harness conversation.
type agent struct {
	name string
	role string
	opts []engine.HandlerOption
}

// cast are the agents of each shipped FIPA policy: alice initiates, bob
// (and, in Contract Net, carol and dave) participate.
func cast(policyName string, opts ...engine.HandlerOption) []agent {
	if policyName == "fipa-contract-net" {
		ini := append([]engine.HandlerOption{engine.WithPeers("Participant", "bob", "carol", "dave")}, opts...)
		return []agent{{"alice", "Initiator", ini}, {"bob", "Participant", opts}, {"carol", "Participant", opts}, {"dave", "Participant", opts}}
	}
	ini := append([]engine.HandlerOption{engine.WithPeers("Participant", "bob")}, opts...)
	return []agent{{"alice", "Initiator", ini}, {"bob", "Participant", opts}}
}

// conv is a running harness conversation. Its time is its own: each step
// feeds its events at the step's time, and timers fire only when a step
// fires them, so the driver's clock moves only to start the conversation.
type conv struct {
	t      testing.TB
	agents []agent
	d      *engine.Driver
	// handlers are the agents' handlers, by name, as the driver hosts
	// them.
	handlers map[string]*engine.Handler
	now      time.Time
	// tickets records, per agent, the ticket of the latest decision
	// raised at each decision point ("point", or "point/peer" for a
	// session's, "join" for the latest join; "" for the latest of all).
	tickets map[string]map[string]uint64
	// timers records, per agent, the latest TimerSet of each timer
	// ("name" or "name/session").
	timers map[string]map[string]engine.TimerEvent
	// loads records, per agent, the latest LoadCPEvent.
	loads map[string]engine.LoadCPEvent
	// held are messages taken out of flight and not yet delivered; last
	// are the messages the latest say sent, one step per receiver; sent
	// collects the messages sent, for last.
	held []engine.Step
	last []engine.Step
	sent []engine.Step
	out  []string
}

// newConv runs shipped policy policyName between agents.
func newConv(tb testing.TB, policyName string, agents []agent) *conv {
	tb.Helper()
	progs := map[string]*engine.Program{}
	for _, a := range agents {
		progs[a.name] = program(tb, policyName, a.role)
	}
	return newConvOf(tb, progs, agents...)
}

// newConvOf runs the programs progs (by agent) between agents.
func newConvOf(tb testing.TB, progs map[string]*engine.Program, agents ...agent) *conv {
	tb.Helper()
	c := &conv{
		t: tb, agents: agents, handlers: map[string]*engine.Handler{}, now: t0,
		tickets: map[string]map[string]uint64{}, timers: map[string]map[string]engine.TimerEvent{},
		loads: map[string]engine.LoadCPEvent{},
	}
	c.d = engine.NewDriver(t0, engine.WithObserver(c.observe))
	for _, a := range agents {
		h, err := progs[a.name].NewHandler(convID, a.name, a.opts...)
		require.NoError(tb, err)
		require.NoError(tb, c.d.Add(h))
		c.handlers[a.name] = h
		c.tickets[a.name] = map[string]uint64{}
		c.timers[a.name] = map[string]engine.TimerEvent{}
	}
	return c
}

// action is one step of a conversation.
type action func(c *conv)

// step is a row of a conversation table: at offset at from t0, do the
// action and expect want (one "agent: event" line per output event).
type step struct {
	at   time.Duration
	do   action
	want string
}

// printSteps prints every step's output in the tables' syntax instead of
// comparing it, for writing a new table (review the output before pasting
// it: the table is the specification).
var printSteps = flag.Bool("print-steps", false, "print each conversation step's output instead of comparing it")

// run drives the steps and asserts each one's output.
func (c *conv) run(t *testing.T, steps []step) {
	t.Helper()
	for i, s := range steps {
		c.now = t0.Add(s.at)
		c.out = c.out[:0]
		s.do(c)
		got := strings.Join(c.out, "\n")
		if *printSteps {
			fmt.Printf("// %s step %d\nwant: `\n\t%s`},\n", t.Name(), i+1, strings.ReplaceAll(got, "\n", "\n\t"))
			continue
		}
		assert.Equal(t, dedent(s.want), got, "step %d at +%s", i+1, s.at)
	}
}

// dedent trims the indentation of a multi-line expected string.
func dedent(s string) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// observe renders each output step as the output of its agent and records
// the decisions, timers, child policies and messages it names.
func (c *conv) observe(s engine.Step) {
	if s.Kind != engine.StepOutput {
		return
	}
	name := s.Agent
	c.out = append(c.out, name+": "+render(s.Event))
	switch e := s.Event.(type) {
	case *engine.DecisionEvent:
		c.tickets[name][e.Request.Point] = e.Ticket
		c.tickets[name][""] = e.Ticket
		if e.Request.Peer != "" {
			c.tickets[name][e.Request.Point+"/"+e.Request.Peer] = e.Ticket
		}
		if len(e.Request.Sessions) > 0 {
			c.tickets[name]["join"] = e.Ticket
		}
	case *engine.TimerEvent:
		if e.Op == engine.TimerSet {
			c.timers[name][timerKeyOf(e)] = *e
		}
	case *engine.MessageEvent:
		for _, to := range e.Message.Receivers {
			m := *e.Message
			m.Receivers = slices.Clone(m.Receivers)
			c.sent = append(c.sent, engine.Step{Kind: engine.StepOutput, Agent: name, Conversation: s.Conversation, To: to, Event: &engine.MessageEvent{At: e.At, Message: &m}})
		}
	case *engine.LoadCPEvent:
		c.loads[name] = *e
	}
}

func timerKey(name, session string) string {
	if session == "" {
		return name
	}
	return name + "/" + session
}

// timerKeyOf names timer e as the tables do: "name" or "name/session",
// and a commitment's deadline "name commitment=c" or "name/session
// commitment=c".
func timerKeyOf(e *engine.TimerEvent) string {
	key := timerKey(e.Name, e.Session)
	if e.Commitment != "" {
		key += " commitment=" + e.Commitment
	}
	return key
}

// feed feeds ev to agent's handler; what it sends stays in flight.
func (c *conv) feed(name string, ev engine.Event) {
	c.t.Helper()
	require.NoError(c.t, c.d.Process(name, convID, ev))
}

// process feeds ev to agent's handler and delivers what it sends.
func (c *conv) process(name string, ev engine.Event) {
	c.t.Helper()
	c.feed(name, ev)
	c.settle()
}

// settle delivers the messages in flight.
func (c *conv) settle() {
	c.t.Helper()
	require.NoError(c.t, c.d.Settle())
	// What the driver cannot carry out is no output: messages to agents
	// the conversation does not host, child policies (a table feeds their
	// ends itself).
	c.d.TakeUnrouted()
}

// deliver hands each message (a step as TakeInFlight returns it) to the
// handler of its receiver, if hosted, at the step's time, as a network
// that delivers it late or twice would.
func (c *conv) deliver(msgs []engine.Step) {
	c.t.Helper()
	for _, s := range msgs {
		m := s.Event.(*engine.MessageEvent).Message
		if c.d.Handler(s.To, m.ConversationID) != nil {
			c.feed(s.To, &engine.MessageEvent{At: c.now, Message: m})
		}
	}
	c.settle()
}

// start starts every agent's handler at the step's time: the driver's
// clock moves there first, which fires nothing, since no handler has set
// a timer before it starts.
func start() action {
	return func(c *conv) {
		c.t.Helper()
		require.NoError(c.t, c.d.AdvanceTo(c.now))
		for _, a := range c.agents {
			require.NoError(c.t, c.d.Start(a.name, convID))
		}
	}
}

// say answers agent's latest decision with choice and content, and
// delivers what it sends.
func say(name, choice string, content map[string]any) action {
	return answer(name, "", decision.Answer{Choice: choice, Content: content})
}

// sayBy is say with a reply-by d after t0.
func sayBy(name, choice string, content map[string]any, d time.Duration) action {
	return answer(name, "", decision.Answer{Choice: choice, Content: content, ReplyBy: t0.Add(d)})
}

// hold is say without delivering: the messages are taken out of flight
// and held until deliverHeld.
func hold(name, choice string, content map[string]any) action {
	return func(c *conv) {
		c.t.Helper()
		c.answer(name, "", decision.Answer{Choice: choice, Content: content})
		c.held = append(c.held, c.d.TakeInFlight()...)
	}
}

// deliverHeld delivers the messages held, at the step's time.
func deliverHeld() action {
	return func(c *conv) {
		msgs := c.held
		c.held = nil
		c.deliver(msgs)
	}
}

// again delivers the messages the latest say sent once more, at the
// step's time, as a network that duplicates them would.
func again() action {
	return func(c *conv) { c.deliver(c.last) }
}

// answer answers agent's latest decision at point ("point" or
// "point/peer"; "" for the latest of all) with a, and delivers what it
// sends.
func answer(name, point string, a decision.Answer) action {
	return func(c *conv) {
		c.t.Helper()
		c.answer(name, point, a)
		c.settle()
	}
}

// answer feeds agent's latest decision at point the answer a and keeps
// what it sends in flight, and as last.
func (c *conv) answer(name, point string, a decision.Answer) {
	c.t.Helper()
	ticket, ok := c.tickets[name][point]
	require.True(c.t, ok, "%s has no decision at %q", name, point)
	c.sent = c.sent[:0]
	c.feed(name, &engine.DecisionEvent{At: c.now, Ticket: ticket, Answer: a})
	c.last = slices.Clone(c.sent)
}

// decideTicket answers with an explicit ticket.
func decideTicket(name string, ticket uint64, choice string) action {
	return func(c *conv) {
		c.process(name, &engine.DecisionEvent{At: c.now, Ticket: ticket, Answer: decision.Answer{Choice: choice}})
	}
}

// join answers agent's latest join decision: choices maps each peer to
// its choice.
func join(name string, choices map[string]string) action {
	a := decision.Answer{Sessions: map[string]decision.SessionAnswer{}}
	for peer, ch := range choices {
		a.Sessions[peer] = decision.SessionAnswer{Choice: ch}
	}
	return answer(name, "join", a)
}

// recv delivers a hand-made message to agent (and to no one else). The
// conversation id defaults to the harness's.
func recv(name string, m forms.Message) action {
	return func(c *conv) {
		if m.ConversationID == "" {
			m.ConversationID = convID
		}
		c.process(name, &engine.MessageEvent{At: c.now, Message: &m})
	}
}

// fire fires agent's timer key (as timerKeyOf names it) with the epoch
// of its latest TimerSet, at the step's time.
func fire(name, key string) action {
	return func(c *conv) {
		c.t.Helper()
		set, ok := c.timers[name][key]
		require.True(c.t, ok, "%s never set timer %q", name, key)
		c.process(name, &engine.TimerEvent{At: c.now, Name: set.Name, Commitment: set.Commitment, Session: set.Session, Epoch: set.Epoch})
	}
}

// fireEach fires timer key of each agent, in order.
func fireEach(key string, names ...string) action {
	return func(c *conv) {
		for _, n := range names {
			fire(n, key)(c)
		}
	}
}

// abort aborts agent's handler with reason, as its host would, at the
// driver's time (the conversation's start: the tables render no time of
// what Abort outputs).
func abort(name, reason string) action {
	return func(c *conv) {
		c.t.Helper()
		require.NoError(c.t, c.d.Abort(name, convID, reason))
		c.settle()
	}
}

// seq runs actions in order, as one step.
func seq(actions ...action) action {
	return func(c *conv) {
		for _, a := range actions {
			a(c)
		}
	}
}

// render renders an output event as one stable line.
func render(ev engine.Event) string {
	switch e := ev.(type) {
	case *engine.MessageEvent:
		return "send " + renderMsg(e.Message)
	case *engine.DecisionEvent:
		r := &e.Request
		if len(r.Sessions) > 0 {
			var peers []string
			for _, s := range r.Sessions {
				ch := ""
				if !slices.Equal(s.Choices, r.Sessions[0].Choices) {
					ch = "[" + strings.Join(s.Choices, " ") + "]"
				}
				peers = append(peers, s.Peer+ch+renderContent(s.Content, "="))
			}
			return fmt.Sprintf("decide %s join(%s) [%s]", r.Point, strings.Join(peers, " "), strings.Join(r.Sessions[0].Choices, " "))
		}
		s := fmt.Sprintf("decide %s [%s]", r.Point, strings.Join(r.Choices, " "))
		if r.Peer != "" {
			s += " peer=" + r.Peer
		}
		return s + renderContent(r.Content, " ")
	case *engine.TimerEvent:
		key := timerKeyOf(e)
		switch e.Op {
		case engine.TimerSet:
			return fmt.Sprintf("timer set %s %s", key, offset(e.Deadline))
		case engine.TimerCancel:
			return "timer cancel " + key
		}
		return fmt.Sprintf("timer op%d %s", e.Op, key)
	case *engine.CommitmentEvent:
		name := e.Name
		if e.Session != "" {
			name += "/" + e.Session
		}
		return fmt.Sprintf("commitment %s %s %s->%s (%s)", name, e.State, e.Debtor, e.Creditor, e.Cause)
	case *engine.ProtocolErrorEvent:
		where := e.State
		if e.Session != "" {
			where = e.Session + "@" + where
		}
		s := "error " + string(e.Code)
		if where != "" {
			s += " [" + where + "]"
		}
		if e.Applied {
			s += " applied"
		}
		return s + ": " + e.Reason
	case *engine.CPDoneEvent:
		s := "done " + e.Outcome
		if len(e.Outcomes) > 0 {
			var peers []string
			for p, o := range e.Outcomes {
				peers = append(peers, p+"="+o)
			}
			sort.Strings(peers)
			s += " (" + strings.Join(peers, " ") + ")"
		}
		if e.Reason != "" {
			s += ": " + e.Reason
		}
		return s
	case *engine.LoadCPEvent:
		return fmt.Sprintf("load %s as %s", e.Policy, e.Role)
	}
	return fmt.Sprintf("%T", ev)
}

// renderMsg renders a message as "performative sender->receivers" and
// its parameters.
func renderMsg(m *forms.Message) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s->%s", m.Performative, m.Sender, strings.Join(m.Receivers, ","))
	if m.ConversationID != convID {
		fmt.Fprintf(&b, " conv=%q", m.ConversationID)
	}
	if m.ReplyWith != "" {
		b.WriteString(" rw=" + m.ReplyWith)
	}
	if m.InReplyTo != "" {
		b.WriteString(" irt=" + m.InReplyTo)
	}
	if !m.ReplyBy.IsZero() {
		b.WriteString(" by=" + offset(m.ReplyBy))
	}
	b.WriteString(renderContent(m.Content, " "))
	return b.String()
}

func renderContent(content map[string]any, sep string) string {
	if content == nil {
		return ""
	}
	data, err := json.Marshal(content)
	if err != nil {
		return sep + fmt.Sprintf("%v", content)
	}
	return sep + string(data)
}

// offset renders t as an offset from t0 ("+30s").
func offset(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return "+" + t.Sub(t0).String()
}

// msg builds a hand-made message.
func msg(perf, from, to string, content map[string]any) forms.Message {
	return forms.Message{Performative: perf, Sender: from, Receivers: []string{to}, Content: content, ConversationID: convID}
}

// with returns m changed by fn.
func with(m forms.Message, fn func(m *forms.Message)) forms.Message {
	fn(&m)
	return m
}

// content is shorthand for a content map.
type content = map[string]any

// decisionChoice is an answer with choice and no content.
func decisionChoice(choice string) decision.Answer { return decision.Answer{Choice: choice} }

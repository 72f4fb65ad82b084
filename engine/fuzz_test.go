package engine_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policies"
	"github.com/parleyhq/parley/policy"
)

// setupThenRequestSrc runs conversation-setup as a child policy before a
// small request, so that the fuzzer reaches in-child states, LoadCPEvent
// and CPDoneEvent, which no shipped FIPA policy has.
const setupThenRequestSrc = `policy: setup-then-request
version: 1
roles: [Initiator, Participant]
messages:
  request: request
  inform-done: inform
  failure: failure
timers:
  reply: 30s
states:
  start:
    child: {policy: conversation-setup, roles: {Caller: Initiator, Responder: Participant}}
    on:
      - {return: accepted, next: ready}
      - {return: declined, next: declined}
      - {return: timeout, next: declined}
      - {return: not-understood, next: declined}
  ready:
    - {send: request, from: Initiator, to: Participant, next: requested}
  requested:
    arm: reply
    on:
      - {send: inform-done, from: Participant, to: Initiator, next: done}
      - {send: failure, from: Participant, to: Initiator, next: failed}
      - {timeout: reply, next: failed}
  done: {terminal: done}
  failed: {terminal: failed}
  declined: {terminal: declined}
`

// fuzzPolicies are the policies FuzzHandler runs: every shipped policy
// and the child-policy one above.
var fuzzPolicies = []string{"fipa-request", "fipa-query", "fipa-contract-net", "conversation-setup", "setup-then-request"}

// fuzzProgram compiles the fuzz policy name for role, once.
func fuzzProgram(tb testing.TB, name, role string) *engine.Program {
	tb.Helper()
	if name != "setup-then-request" {
		return program(tb, name, role)
	}
	programsMu.Lock()
	defer programsMu.Unlock()
	if pr, ok := programs[[2]string{name, role}]; ok {
		return pr
	}
	pr, ds := engine.Compile(fuzzPolicy(tb, name), role, engine.WithPolicies(policies.Resolve))
	if pr == nil {
		tb.Fatal(ds)
	}
	programs[[2]string{name, role}] = pr
	return pr
}

// fuzzPolicy loads the fuzz policy name.
func fuzzPolicy(tb testing.TB, name string) *policy.Policy {
	tb.Helper()
	if name != "setup-then-request" {
		p, err := policies.Load(name)
		if err != nil {
			tb.Fatal(err)
		}
		return p
	}
	setupThenRequestOnce.Do(func() {
		var ds policy.Diagnostics
		setupThenRequest, ds = policy.LoadYAML("setup-then-request.yaml", []byte(setupThenRequestSrc))
		if ds.HasErrors() {
			setupThenRequest = nil
		}
	})
	if setupThenRequest == nil {
		tb.Fatal("setup-then-request does not load")
	}
	return setupThenRequest
}

var (
	setupThenRequestOnce sync.Once
	setupThenRequest     *policy.Policy
)

// fuzzCast returns the agents of a fuzz conversation: alice plays the
// first role, the others the second (in Contract Net, three of them).
func fuzzCast(tb testing.TB, name string) []agent {
	roles := fuzzPolicy(tb, name).Roles
	first, second := roles[0].Name, roles[1].Name
	peers := []string{"bob"}
	if roles[1].Many {
		peers = []string{"bob", "carol", "dave"}
	}
	out := []agent{{"alice", first, []engine.HandlerOption{engine.WithPeers(second, peers...)}}}
	for _, p := range peers {
		out = append(out, agent{p, second, []engine.HandlerOption{engine.WithPeers(first, "alice")}})
	}
	return out
}

// fuzzContents are the message and decision contents the fuzzer picks
// from: conforming ones and ones that break each policy's fields.
var fuzzContents = []map[string]any{
	nil, {}, {"done": true}, {"done": "yes"}, {"result": 1.5}, {"result": nil}, {"holds": true}, {"holds": "no"},
	{"reason": "busy"}, {"reason": 5}, {"price": 10}, {"policy": "fipa-request", "role": "Participant"}, {"policy": 1},
	{"action": "paint", "nested": map[string]any{"a": []any{1, "x"}}},
	{"reason": "too deep", "nested": deepList(40, 1)},
}

var fuzzPerformatives = []string{
	"request", "agree", "refuse", "not-understood", "failure", "inform", "cancel", "query-if", "query-ref",
	"cfp", "propose", "accept-proposal", "reject-proposal", "junk", "",
}

var fuzzAgents = []string{"alice", "bob", "carol", "dave", "mallory", ""}

var fuzzOutcomes = []string{"accepted", "declined", "timeout", "not-understood", "done", ""}

// fuzzTimerNames are timer names the fuzzer makes up: the policies' own,
// names no policy has, and names of the form version 1 snapshots gave
// commitment timers, which now name nothing.
var fuzzTimerNames = []string{"reply", "result", "proposals", "award", "cancel-reply", "commitment:perform", "commitment:task", "nope", ""}

// fuzzCommitments are commitment names the fuzzer makes up for timers:
// none, the policies' own and one no policy has.
var fuzzCommitments = []string{"", "perform", "task", "answer", "nope"}

// fuzzReader reads the fuzz input; past its end it reads zeros.
type fuzzReader struct {
	data []byte
	pos  int
}

func (b *fuzzReader) more() bool { return b.pos < len(b.data) }

func (b *fuzzReader) next() int {
	if b.pos >= len(b.data) {
		return 0
	}
	b.pos++
	return int(b.data[b.pos-1])
}

func pick[T any](b *fuzzReader, list []T) T { return list[b.next()%len(list)] }

// fuzzRun is one fuzzed conversation: one handler per agent, wired as in
// the harness, driven by the input's operations.
type fuzzRun struct {
	t        *testing.T
	mode     engine.Mode
	agents   []agent
	handlers map[string]*engine.Handler
	now      time.Time
	q        engine.Queue
	// What each agent's handler asked for: its decisions (latest last),
	// its armed timers, its child policies; every reply-with seen; and the
	// messages in flight.
	decisions map[string][]engine.DecisionEvent
	timers    map[string][]engine.TimerEvent
	loads     map[string][]engine.LoadCPEvent
	replies   []string
	held      []*forms.Message
	holding   bool
	finished  map[string]bool
	errors    int // protocol errors reported
	// inputs records every event each agent's handler processed.
	inputs map[string][]engine.Event
	// armed are each agent's timers set and not yet cancelled, and
	// tickets every decision ticket each agent's handler issued.
	armed   map[string]map[timerID]bool
	tickets map[string]map[uint64]bool
}

// Fuzz operations. Each is one byte, followed by its operands.
const (
	opDecide   = iota // agent, choice, content[, replyBy]: answer the agent's latest decision
	opDeliver         // deliver the messages in flight
	opFire            // agent, timer, epoch skew: fire an armed timer
	opMessage         // agent and message fields: inject a message
	opTicket          // agent, ticket, choice: answer an old or made-up ticket
	opChild           // agent, load, outcome, epoch skew: end a child policy
	opAdvance         // seconds: move the clock
	opHold            // from now on, hold sent messages in flight (or stop holding)
	opSnapshot        // agent: snapshot the agent's handler and continue with the restored one
	opAbort           // agent: abort the agent's conversation, as its host would
	opCount
)

func FuzzHandler(f *testing.F) {
	for _, seed := range fuzzSeeds() {
		f.Add(seed.data)
	}
	f.Fuzz(func(t *testing.T, data []byte) { runFuzz(t, data) })
}

// runFuzz runs one fuzz input and returns the run.
func runFuzz(t *testing.T, data []byte) *fuzzRun {
	b := &fuzzReader{data: data}
	name := pick(b, fuzzPolicies)
	mode := engine.Mode(b.next() % 2)
	r := newFuzzRun(t, name, mode)
	for steps := 0; b.more() && steps < 200; steps++ {
		r.step(b)
	}
	return r
}

// TestFuzzSeeds checks that the seeds do what they say: the conforming
// conversations end for every agent without a protocol error.
func TestFuzzSeeds(t *testing.T) {
	for _, seed := range fuzzSeeds() {
		t.Run(seed.name, func(t *testing.T) {
			r := runFuzz(t, seed.data)
			if !seed.clean {
				return
			}
			assert.Zero(t, r.errors, "protocol errors")
			for _, a := range r.agents {
				assert.True(t, r.finished[a.name], "%s has not finished", a.name)
			}
		})
	}
}

func newFuzzRun(t *testing.T, name string, mode engine.Mode) *fuzzRun {
	r := &fuzzRun{
		t: t, mode: mode, agents: fuzzCast(t, name), handlers: map[string]*engine.Handler{}, now: t0,
		decisions: map[string][]engine.DecisionEvent{}, timers: map[string][]engine.TimerEvent{},
		loads: map[string][]engine.LoadCPEvent{}, finished: map[string]bool{}, inputs: map[string][]engine.Event{},
		armed: map[string]map[timerID]bool{}, tickets: map[string]map[uint64]bool{},
	}
	for _, a := range r.agents {
		h, err := fuzzProgram(t, name, a.role).NewHandler(convID, a.name, append(a.opts, engine.WithMode(mode))...)
		if err != nil {
			t.Fatal(err)
		}
		r.handlers[a.name] = h
		r.q.Reset()
		if err := h.Start(r.now, &r.q); err != nil {
			t.Fatal(err)
		}
		r.collect(a.name)
	}
	return r
}

// timerID identifies a timer a handler set.
type timerID struct {
	name, commitment, session string
	epoch                     uint64
}

func (r *fuzzRun) agent(b *fuzzReader) string { return r.agents[b.next()%len(r.agents)].name }

func (r *fuzzRun) step(b *fuzzReader) {
	switch b.next() % opCount {
	case opDecide:
		name := r.agent(b)
		ds := r.decisions[name]
		if len(ds) == 0 {
			return
		}
		d := ds[len(ds)-1]
		r.process(name, &engine.DecisionEvent{At: r.now, Ticket: d.Ticket, Answer: r.answerFor(b, &d.Request)})
	case opDeliver:
		msgs := r.held
		r.held = nil
		r.deliver(msgs)
	case opHold:
		r.holding = !r.holding
	case opFire:
		name := r.agent(b)
		ts := r.timers[name]
		var ev engine.TimerEvent
		if k := b.next(); len(ts) > 0 && k < 0xf0 {
			ev = ts[k%len(ts)]
		} else {
			ev = engine.TimerEvent{Name: pick(b, fuzzTimerNames), Commitment: pick(b, fuzzCommitments), Session: pick(b, fuzzAgents), Epoch: uint64(b.next())}
		}
		ev.Op, ev.Deadline = 0, time.Time{}
		ev.Epoch += uint64(b.next() % 3)
		if ev.Epoch > 0 {
			ev.Epoch-- // skew by -1, 0 or +1
		}
		ev.At = r.now
		r.process(name, &ev)
	case opMessage:
		name := r.agent(b)
		m := &forms.Message{
			Performative: pick(b, fuzzPerformatives), Sender: pick(b, fuzzAgents), Receivers: []string{name},
			Content: pick(b, fuzzContents), ConversationID: convID, ReplyWith: fmt.Sprintf("x#%d", b.next()),
		}
		flags := b.next()
		if flags&1 != 0 {
			m.ConversationID = "c2"
		}
		if flags&2 != 0 && len(r.replies) > 0 {
			m.InReplyTo = pick(b, r.replies)
		} else if flags&4 != 0 {
			m.InReplyTo = "c1#99"
		}
		if flags&8 != 0 {
			m.ReplyBy = r.now.Add(time.Duration(b.next()) * time.Second)
		}
		if flags&16 != 0 {
			m.Receivers = []string{"bob", "carol", "dave"}
		}
		at := r.now
		if flags&32 != 0 {
			at = time.Time{}
		}
		if flags&128 != 0 {
			m.ReplyWith = ""
		}
		r.process(name, &engine.MessageEvent{At: at, Message: m, Sent: flags&64 != 0})
	case opTicket:
		name := r.agent(b)
		var ticket uint64
		var req decision.Request
		if ds := r.decisions[name]; len(ds) > 0 && b.next()%2 == 0 {
			d := ds[b.next()%len(ds)]
			ticket, req = d.Ticket, d.Request
		} else {
			ticket = uint64(b.next())<<24 | uint64(b.next()%5)
		}
		r.process(name, &engine.DecisionEvent{At: r.now, Ticket: ticket, Answer: r.answerFor(b, &req)})
	case opChild:
		name := r.agent(b)
		ev := engine.CPDoneEvent{At: r.now, Policy: "conversation-setup", Outcome: pick(b, fuzzOutcomes)}
		if ls := r.loads[name]; len(ls) > 0 {
			l := ls[b.next()%len(ls)]
			ev.Session, ev.Epoch = l.Session, l.Epoch
		}
		ev.Epoch += uint64(b.next() % 2)
		r.process(name, &ev)
	case opAdvance:
		r.now = r.now.Add(time.Duration(b.next()) * time.Second)
	case opSnapshot:
		name := r.agent(b)
		h := r.handlers[name]
		data, err := h.Snapshot()
		if err != nil {
			r.t.Fatalf("%s: snapshot: %v", name, err)
		}
		h2, err := h.Program().Restore(data)
		if err != nil {
			r.t.Fatalf("%s: restore: %v\n%s", name, err, data)
		}
		r.handlers[name] = h2
		r.check(name)
	case opAbort:
		name := r.agent(b)
		r.q.Reset()
		if err := r.handlers[name].Abort(r.now, "fuzz", &r.q); err != nil {
			r.t.Fatalf("%s: Abort: %v", name, err)
		}
		r.deliver(r.collect(name))
	}
}

// answerFor makes an answer to req from the input: a choice it offers
// (or another message key, or none) and a content, for each session at a
// join, and maybe a reply-by.
func (r *fuzzRun) answerFor(b *fuzzReader, req *decision.Request) decision.Answer {
	choice := func(choices []string) string {
		k := b.next()
		switch {
		case k%8 == 7:
			return ""
		case k%8 == 6 || len(choices) == 0:
			return pick(b, []string{"request", "agree", "cancel", "inform-done", "accept-proposal", "nope"})
		}
		return choices[k%len(choices)]
	}
	var a decision.Answer
	if len(req.Sessions) == 0 {
		a.Choice = choice(req.Choices)
		a.Content = pick(b, fuzzContents)
	} else {
		a.Sessions = map[string]decision.SessionAnswer{}
		for _, s := range req.Sessions {
			if b.next()%5 == 4 {
				continue // no answer for this session
			}
			c := choice(s.Choices)
			a.Sessions[s.Peer] = decision.SessionAnswer{Choice: c, Content: pick(b, fuzzContents)}
		}
		if b.next()%5 == 4 {
			a.Sessions[pick(b, fuzzAgents)] = decision.SessionAnswer{Choice: choice(nil)}
		}
	}
	if flags := b.next(); flags&1 != 0 {
		a.ReplyBy = r.now.Add(time.Duration(b.next()) * time.Second)
	}
	return a
}

// process feeds ev to agent's handler, checks what it says and does,
// and hands the messages it sends to the wire (held or delivered).
func (r *fuzzRun) process(name string, ev engine.Event) {
	r.inputs[name] = append(r.inputs[name], ev)
	r.q.Reset()
	if err := r.handlers[name].Process(ev, &r.q); err != nil {
		r.t.Fatalf("%s: Process(%T): %v", name, ev, err)
	}
	msgs := r.collect(name)
	if r.holding && len(r.held) < 16 {
		r.held = append(r.held, msgs...)
		return
	}
	r.deliver(msgs)
}

func (r *fuzzRun) deliver(msgs []*forms.Message) {
	for _, m := range msgs {
		for _, to := range m.Receivers {
			if _, ok := r.handlers[to]; ok {
				r.process(to, &engine.MessageEvent{At: r.now, Message: m})
			}
		}
	}
}

// collect checks agent's output and records what later operations pick
// from; it returns copies of the messages to send.
func (r *fuzzRun) collect(name string) []*forms.Message {
	h := r.handlers[name]
	var msgs []*forms.Message
	for _, ev := range r.q.Events() {
		switch e := ev.(type) {
		case *engine.MessageEvent:
			m := *e.Message
			m.Receivers = slices.Clone(m.Receivers)
			if m.Sender != name || m.ConversationID != convID || len(m.Receivers) == 0 {
				r.t.Fatalf("%s sent a malformed message: %+v", name, m)
			}
			if r.finished[name] {
				r.t.Fatalf("%s sent %s after its conversation ended", name, m.Performative)
			}
			msgs = append(msgs, &m)
			r.replies = append(r.replies, m.ReplyWith)
		case *engine.DecisionEvent:
			if r.finished[name] {
				r.t.Fatalf("%s asked for a decision after its conversation ended", name)
			}
			if !h.Program().HasState(e.Request.Point) {
				r.t.Fatalf("%s asked for a decision at %q, which is not a state", name, e.Request.Point)
			}
			if r.tickets[name] == nil {
				r.tickets[name] = map[uint64]bool{}
			}
			if r.tickets[name][e.Ticket] {
				r.t.Fatalf("%s issued ticket %d twice", name, e.Ticket)
			}
			r.tickets[name][e.Ticket] = true
			d := *e
			d.Request.Sessions = slices.Clone(d.Request.Sessions)
			r.decisions[name] = append(r.decisions[name], d)
		case *engine.TimerEvent:
			if r.armed[name] == nil {
				r.armed[name] = map[timerID]bool{}
			}
			id := timerID{e.Name, e.Commitment, e.Session, e.Epoch}
			switch e.Op {
			case engine.TimerSet:
				if r.finished[name] {
					r.t.Fatalf("%s set timer %v after its conversation ended", name, id)
				}
				if r.armed[name][id] {
					r.t.Fatalf("%s set timer %v twice", name, id)
				}
				r.armed[name][id] = true
				r.timers[name] = append(r.timers[name], *e)
			case engine.TimerCancel:
				if !r.armed[name][id] {
					r.t.Fatalf("%s cancelled timer %v, which is not set", name, id)
				}
				delete(r.armed[name], id)
			default:
				r.t.Fatalf("%s output timer op %d", name, e.Op)
			}
		case *engine.LoadCPEvent:
			r.loads[name] = append(r.loads[name], *e)
		case *engine.CPDoneEvent:
			if r.finished[name] {
				r.t.Fatalf("%s ended its conversation twice", name)
			}
			if (e.Outcome == engine.OutcomeAborted) != h.Aborted() {
				r.t.Fatalf("%s ended with outcome %q, but Aborted is %v", name, e.Outcome, h.Aborted())
			}
			r.finished[name] = true
		case *engine.ProtocolErrorEvent:
			r.errors++
			if !slices.ContainsFunc(engine.ErrorCodes, func(c engine.ErrorCodeInfo) bool { return c.Code == e.Code }) {
				r.t.Fatalf("%s reported undocumented code %q", name, e.Code)
			}
			if e.Reason == "" {
				r.t.Fatalf("%s reported %s without a reason", name, e.Code)
			}
			if e.Applied && r.mode == engine.Enforce {
				r.t.Fatalf("%s applied a violation in enforce mode: %s %s", name, e.Code, e.Reason)
			}
		case *engine.CommitmentEvent:
		default:
			r.t.Fatalf("%s output %T", name, ev)
		}
	}
	r.check(name)
	return msgs
}

// check asserts that agent's handler is in states its program has, and
// has ended exactly when every session has.
func (r *fuzzRun) check(name string) {
	h := r.handlers[name]
	peers := h.Sessions()
	if peers == nil {
		peers = []string{""}
	}
	ended := 0
	for _, p := range peers {
		st := h.State(p)
		if !h.Program().HasState(st) {
			r.t.Fatalf("%s: session %q is in state %q, which %s/%s does not have", name, p, st, h.Program().Policy().Name, h.Program().Role())
		}
		if h.Outcome(p) != "" {
			ended++
		}
	}
	if h.Done() != (ended == len(peers)) {
		r.t.Fatalf("%s: Done is %v with %d of %d sessions ended", name, h.Done(), ended, len(peers))
	}
	if h.Done() != r.finished[name] {
		r.t.Fatalf("%s: Done is %v but CPDoneEvent seen is %v", name, h.Done(), r.finished[name])
	}
	if h.Done() && len(r.armed[name]) > 0 {
		r.t.Fatalf("%s: the conversation ended with timers still set: %v", name, r.armed[name])
	}
}

// fuzzSeed encodes a conversation: the policy, the mode (enforce) and
// the operations.
func fuzzSeed(policyName string, ops ...[]byte) []byte {
	seed := []byte{byte(slices.Index(fuzzPolicies, policyName)), byte(engine.Enforce)}
	for _, op := range ops {
		seed = append(seed, op...)
	}
	return seed
}

// Seed operations. Agents are indexes into fuzzCast (0 alice, 1 bob,
// 2 carol, 3 dave), choices indexes into the decision's choices, timers
// indexes into the agent's TimerSets so far, contents into fuzzContents.
func decide(agent, choice, content byte) []byte { return []byte{opDecide, agent, choice, content, 0} }

// decideJoin answers a join: one choice per waiting session, in order.
func decideJoin(agent byte, choices ...byte) []byte {
	out := []byte{opDecide, agent}
	for _, c := range choices {
		out = append(out, 0, c, 0) // answered, choice, content
	}
	return append(out, 0, 0) // no extra session, no reply-by
}

func advance(seconds byte) []byte        { return []byte{opAdvance, seconds} }
func fireTimer(agent, timer byte) []byte { return []byte{opFire, agent, timer, 1} }
func snapshotOf(agent byte) []byte       { return []byte{opSnapshot, agent} }
func abortOf(agent byte) []byte          { return []byte{opAbort, agent} }
func staleTicket(agent, which byte) []byte {
	return []byte{opTicket, agent, 0, which, 0, 0, 0}
}
func childDone(agent byte, outcome string) []byte {
	return []byte{opChild, agent, byte(slices.Index(fuzzOutcomes, outcome)), 0, 0}
}
func inject(agent byte, perf, from string) []byte {
	return []byte{opMessage, agent, byte(slices.Index(fuzzPerformatives, perf)), byte(slices.Index(fuzzAgents, from)), 0, 0, 0}
}
func contentOf(c map[string]any) byte {
	return byte(slices.IndexFunc(fuzzContents, func(x map[string]any) bool { return fmt.Sprint(x) == fmt.Sprint(c) }))
}

// fuzzSeed is a seed of FuzzHandler: a conversation, clean when it
// conforms (every agent ends without a protocol error, in either mode).
type fuzzSeedCase struct {
	name  string
	clean bool
	data  []byte
}

// fuzzSeeds are the conforming conversations of each policy, and a few
// violations, each in both modes.
func fuzzSeeds() []fuzzSeedCase {
	done := contentOf(map[string]any{"done": true})
	result := contentOf(map[string]any{"result": 1.5})
	holds := contentOf(map[string]any{"holds": true})
	setup := contentOf(map[string]any{"policy": "fipa-request", "role": "Participant"})
	var out []fuzzSeedCase
	for _, c := range []fuzzSeedCase{
		{"request agree inform-done", true, fuzzSeed("fipa-request", decide(0, 0, 0), decide(1, 0, 0), decide(1, 0, done))},
		{"request agree inform-result", true, fuzzSeed("fipa-request", decide(0, 0, 0), decide(1, 0, 0), decide(1, 1, result))},
		{"request agree failure", true, fuzzSeed("fipa-request", decide(0, 0, 0), decide(1, 0, 0), decide(1, 2, 0))},
		{"request refuse", true, fuzzSeed("fipa-request", decide(0, 0, 0), decide(1, 1, 0))},
		{"request inform-result", true, fuzzSeed("fipa-request", decide(0, 0, 0), decide(1, 4, result))},
		{"request cancel", true, fuzzSeed("fipa-request", decide(0, 0, 0), decide(0, 0, 0), decide(1, 0, done))},
		{"request cancel after agree", true, fuzzSeed("fipa-request", decide(0, 0, 0), decide(1, 0, 0), decide(0, 0, 0), decide(1, 1, 0))},
		{"request reply timeout", true, fuzzSeed("fipa-request", decide(0, 0, 0), advance(31), fireTimer(0, 0), fireTimer(1, 0))},
		{"request result timeout", true, fuzzSeed("fipa-request", decide(0, 0, 0), decide(1, 0, 0), advance(255), advance(255), fireTimer(0, 1), fireTimer(0, 2), fireTimer(1, 1), fireTimer(1, 2))},
		{"request snapshots", true, fuzzSeed("fipa-request", decide(0, 0, 0), snapshotOf(1), decide(1, 0, 0), snapshotOf(0), decide(1, 0, done), snapshotOf(0))},
		{"request aborted after agree", true, fuzzSeed("fipa-request", decide(0, 0, 0), decide(1, 0, 0), abortOf(0), snapshotOf(0), abortOf(1))},
		{"request result after an abort", false, fuzzSeed("fipa-request", decide(0, 0, 0), decide(1, 0, 0), abortOf(0), decide(1, 1, result))},
		{"request result crosses cancel", false, fuzzSeed("fipa-request", decide(0, 0, 0), []byte{opHold}, decide(0, 0, 0), decide(1, 4, result), []byte{opHold, opDeliver})},
		{"request unknown agent and stale ticket", false, fuzzSeed("fipa-request", decide(0, 0, 0), inject(0, "agree", "mallory"), staleTicket(0, 0))},
		{"query-if answered", true, fuzzSeed("fipa-query", decide(0, 0, 0), decide(1, 3, holds))},
		{"query-ref agreed answered", true, fuzzSeed("fipa-query", decide(0, 1, 0), decide(1, 0, 0), decide(1, 0, result))},
		{"query-ref refused", true, fuzzSeed("fipa-query", decide(0, 1, 0), decide(1, 1, 0))},
		{"query-if cancelled", true, fuzzSeed("fipa-query", decide(0, 0, 0), decide(0, 0, 0), decide(1, 0, done))},
		{"contract-net propose refuse not-understood", true, fuzzSeed("fipa-contract-net", decide(0, 0, 0), decide(1, 0, 0), decide(2, 1, 0), decide(3, 2, 0), decideJoin(0, 0), decide(1, 0, done))},
		{"contract-net all propose", true, fuzzSeed("fipa-contract-net", decide(0, 0, 0), decide(1, 0, 0), decide(2, 0, 0), decide(3, 0, 0), decideJoin(0, 1, 0, 1), decide(2, 1, result))},
		{"contract-net silent until the deadline", true, fuzzSeed("fipa-contract-net", decide(0, 0, 0), decide(1, 0, 0), decide(2, 0, 0), advance(61), fireTimer(3, 0), fireTimer(0, 2), decideJoin(0, 0, 2), decide(1, 2, 0), decide(2, 0, done))},
		{"contract-net award timeout", true, fuzzSeed("fipa-contract-net", decide(0, 0, 0), decide(1, 0, 0), decide(2, 1, 0), decide(3, 1, 0), advance(255), fireTimer(0, 3), fireTimer(0, 4), fireTimer(1, 1), fireTimer(1, 2))},
		{"contract-net aborted at the join", true, fuzzSeed("fipa-contract-net", decide(0, 0, 0), decide(1, 0, 0), decide(2, 1, 0), abortOf(0), snapshotOf(0), abortOf(1), abortOf(3))},
		{"contract-net snapshots", true, fuzzSeed("fipa-contract-net", decide(0, 0, 0), snapshotOf(0), decide(1, 0, 0), decide(2, 0, 0), snapshotOf(0), decide(3, 0, 0), decideJoin(0, 2, 1, 0), snapshotOf(0), decide(1, 0, done), decide(3, 0, done), snapshotOf(0))},
		{"setup accepted", true, fuzzSeed("conversation-setup", decide(0, 0, setup), decide(1, 0, 0))},
		{"setup declined", true, fuzzSeed("conversation-setup", decide(0, 0, setup), decide(1, 1, 0))},
		{"child accepted", true, fuzzSeed("setup-then-request", childDone(0, "accepted"), childDone(1, "accepted"), decide(0, 0, 0), decide(1, 0, done))},
		{"child outcome not handled", false, fuzzSeed("setup-then-request", childDone(0, "declined"), childDone(1, "done"))},
	} {
		observed := c
		observed.name += " observed"
		observed.data = slices.Clone(c.data)
		observed.data[1] = byte(engine.Observe)
		out = append(out, c, observed)
	}
	return out
}

package bench

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policies"
	"github.com/parleyhq/parley/policy"
)

// Parley is driven the way engine/bench_test.go drives it: programs are
// compiled once and shared, a Queue is reused (Reset before each
// Process), and input events are built once and reused.

var parleyImpl = impl{
	name:         libParley,
	pingPong:     func(b *testing.B) { benchParleyPingPong(b, pingPongPolicy, nil) },
	guard:        func(b *testing.B) { benchParleyPingPong(b, guardPolicy, map[string]any{"n": 1}) },
	request:      benchParleyRequest,
	rejected:     benchParleyRejected,
	live:         func(b *testing.B) { benchLive(b, newParleyInitiators(b).build, parleyState) },
	testPingPong: func(t *testing.T) { testParleyPingPong(t, pingPongPolicy, nil) },
	testGuard:    testParleyGuard,
	testRequest:  testParleyRequest,
	testRejected: testParleyRejected,
	testLive:     func(t *testing.T) { testLive(t, newParleyInitiators(t).build, parleyState) },
}

// pingPongPolicy is engine/bench_test.go's: A pings and pongs B, forever
// unless it stops. The handler plays B, so each message is one
// transition with no decision and no timer.
const pingPongPolicy = `policy: ping-pong
version: 1
roles: [A, B]
messages: {ping: request, pong: inform, stop: cancel}
states:
  s0:
    - {send: ping, from: A, to: B, next: s1}
    - {send: stop, from: A, to: B, next: end}
  s1:
    - {send: pong, from: A, to: B, next: s0}
  end: {terminal: done}
`

// guardPolicy is pingPongPolicy with a guard on ping and pong that reads
// the message's content.
const guardPolicy = `policy: guarded-ping-pong
version: 1
roles: [A, B]
messages:
  ping: {performative: request, fields: {n: int}}
  pong: {performative: inform, fields: {n: int}}
  stop: cancel
states:
  s0:
    - {send: ping, from: A, to: B, next: s1, guard: content.n > 0}
    - {send: stop, from: A, to: B, next: end}
  s1:
    - {send: pong, from: A, to: B, next: s0, guard: content.n > 0}
  end: {terminal: done}
`

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func compileYAML(tb testing.TB, src, role string) *engine.Program {
	tb.Helper()
	p, ds := policy.LoadYAML("bench.yaml", []byte(src))
	if ds.HasErrors() {
		tb.Fatal(ds)
	}
	return compile(tb, p, role)
}

func compileShipped(tb testing.TB, name, role string) *engine.Program {
	tb.Helper()
	p, err := policies.Load(name)
	if err != nil {
		tb.Fatal(err)
	}
	return compile(tb, p, role)
}

func compile(tb testing.TB, p *policy.Policy, role string) *engine.Program {
	tb.Helper()
	prog, ds := engine.Compile(p, role)
	if prog == nil {
		tb.Fatal(ds)
	}
	return prog
}

// process resets q, feeds ev to h and turns a protocol error into an
// error.
func process(h *engine.Handler, ev engine.Event, q *engine.Queue) error {
	q.Reset()
	if err := h.Process(ev, q); err != nil {
		return err
	}
	for _, e := range q.Events() {
		if pe, ok := e.(*engine.ProtocolErrorEvent); ok {
			return fmt.Errorf("%s: %s", pe.Code, pe.Reason)
		}
	}
	return nil
}

// ticket returns the ticket of the first decision in q, or 0.
func ticket(q *engine.Queue) uint64 {
	for _, e := range q.Events() {
		if d, ok := e.(*engine.DecisionEvent); ok {
			return d.Ticket
		}
	}
	return 0
}

// message returns the first message in q, or nil. It stays valid until
// q is reset.
func message(q *engine.Queue) *forms.Message {
	for _, e := range q.Events() {
		if m, ok := e.(*engine.MessageEvent); ok {
			return m.Message
		}
	}
	return nil
}

func parleyState(h *engine.Handler) string { return h.State("") }

// newParleyPingPong returns a started handler of src as B, and A's ping
// and pong with the given content.
func newParleyPingPong(tb testing.TB, src string, content map[string]any) (*engine.Handler, [2]*engine.MessageEvent) {
	prog := compileYAML(tb, src, "B")
	h, err := prog.NewHandler("c1", "b")
	if err != nil {
		tb.Fatal(err)
	}
	var q engine.Queue
	if err := h.Start(t0, &q); err != nil {
		tb.Fatal(err)
	}
	msg := func(perf string) *engine.MessageEvent {
		return &engine.MessageEvent{At: t0, Message: &forms.Message{Performative: perf, Sender: "a", Receivers: []string{"b"}, ConversationID: "c1", Content: content}}
	}
	return h, [2]*engine.MessageEvent{msg("request"), msg("inform")}
}

func benchParleyPingPong(b *testing.B, src string, content map[string]any) {
	h, events := newParleyPingPong(b, src, content)
	var q engine.Queue
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		q.Reset()
		if err := h.Process(events[i&1], &q); err != nil {
			b.Fatal(err)
		}
		if q.Len() != 0 { // a transition here outputs nothing; anything is a protocol error
			b.Fatalf("step %d: %d output events", i, q.Len())
		}
		i++
	}
}

func testParleyPingPong(t *testing.T, src string, content map[string]any) {
	h, events := newParleyPingPong(t, src, content)
	var q engine.Queue
	for i, want := range []string{stS1, stS0, stS1, stS0} {
		if err := process(h, events[i&1], &q); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := h.State(""); got != want {
			t.Fatalf("step %d: state %q, want %q", i, got, want)
		}
	}
}

func testParleyGuard(t *testing.T) {
	testParleyPingPong(t, guardPolicy, map[string]any{"n": 1})
	h, events := newParleyPingPong(t, guardPolicy, map[string]any{"n": 0})
	var q engine.Queue
	err := process(h, events[0], &q)
	if err == nil {
		t.Fatal("ping with n = 0 passed the guard")
	}
	if !strings.HasPrefix(err.Error(), string(engine.CodeUnexpected)) {
		t.Fatalf("blocked ping: %v, want a protocol error %s", err, engine.CodeUnexpected)
	}
	if got := h.State(""); got != stS0 {
		t.Fatalf("blocked ping moved the state to %q", got)
	}
}

func benchParleyRejected(b *testing.B) {
	h, events := newParleyPingPong(b, pingPongPolicy, nil)
	pong := events[1]
	var q engine.Queue
	b.ReportAllocs()
	for b.Loop() {
		q.Reset()
		if err := h.Process(pong, &q); err != nil {
			b.Fatal(err)
		}
		if q.Len() != 1 {
			b.Fatalf("%d output events, want one protocol error", q.Len())
		}
		if _, ok := q.Events()[0].(*engine.ProtocolErrorEvent); !ok {
			b.Fatalf("output %T, want a protocol error", q.Events()[0])
		}
	}
}

func testParleyRejected(t *testing.T) {
	h, events := newParleyPingPong(t, pingPongPolicy, nil)
	var q engine.Queue
	q.Reset()
	if err := h.Process(events[1], &q); err != nil {
		t.Fatal(err)
	}
	if q.Len() != 1 {
		t.Fatalf("%d output events, want one protocol error", q.Len())
	}
	pe, ok := q.Events()[0].(*engine.ProtocolErrorEvent)
	if !ok || pe.Code != engine.CodeUnexpected {
		t.Fatalf("output %#v, want a protocol error %s", q.Events()[0], engine.CodeUnexpected)
	}
	if got := h.State(""); got != stS0 {
		t.Fatalf("rejected pong moved the state to %q", got)
	}
}

// parleyRequest runs whole FIPA Request conversations between alice
// (Initiator) and bob (Participant): the programs are compiled once, each
// conversation makes two handlers. Each agent has its own queue, so a
// message one handler sent stays valid while the other receives it.
type parleyRequest struct {
	ini, par *engine.Program
	iniOpts  []engine.HandlerOption
	qi, qp   engine.Queue
	// The decisions (alice requests, bob agrees, bob informs the result)
	// and the receipts, built once; only tickets and messages change.
	decide [3]engine.DecisionEvent
	recv   [3]engine.MessageEvent
}

func newParleyRequest(tb testing.TB) *parleyRequest {
	r := &parleyRequest{
		ini:     compileShipped(tb, "fipa-request", "Initiator"),
		par:     compileShipped(tb, "fipa-request", "Participant"),
		iniOpts: []engine.HandlerOption{engine.WithPeers("Participant", "bob")},
	}
	r.decide[0].Answer = decision.Answer{Choice: trRequest, Content: map[string]any{"action": "x"}}
	r.decide[1].Answer = decision.Answer{Choice: trAgree}
	r.decide[2].Answer = decision.Answer{Choice: trInformResult, Content: map[string]any{"result": 42}}
	for i := range r.decide {
		r.decide[i].At = t0
		r.recv[i].At = t0
	}
	return r
}

// run runs one conversation and returns both handlers, ended.
func (r *parleyRequest) run(conv string) (hi, hp *engine.Handler, err error) {
	if hi, err = r.ini.NewHandler(conv, "alice", r.iniOpts...); err != nil {
		return nil, nil, err
	}
	if hp, err = r.par.NewHandler(conv, "bob"); err != nil {
		return nil, nil, err
	}
	r.qp.Reset()
	if err := hp.Start(t0, &r.qp); err != nil {
		return nil, nil, err
	}
	r.qi.Reset()
	if err := hi.Start(t0, &r.qi); err != nil {
		return nil, nil, err
	}
	// alice: request.
	r.decide[0].Ticket = ticket(&r.qi)
	if err := process(hi, &r.decide[0], &r.qi); err != nil {
		return nil, nil, err
	}
	r.recv[0].Message = message(&r.qi)
	if err := process(hp, &r.recv[0], &r.qp); err != nil {
		return nil, nil, err
	}
	// bob: agree, then (its next decision) inform-result.
	r.decide[1].Ticket = ticket(&r.qp)
	if err := process(hp, &r.decide[1], &r.qp); err != nil {
		return nil, nil, err
	}
	r.recv[1].Message = message(&r.qp)
	r.decide[2].Ticket = ticket(&r.qp)
	if err := process(hi, &r.recv[1], &r.qi); err != nil {
		return nil, nil, err
	}
	if err := process(hp, &r.decide[2], &r.qp); err != nil {
		return nil, nil, err
	}
	r.recv[2].Message = message(&r.qp)
	if err := process(hi, &r.recv[2], &r.qi); err != nil {
		return nil, nil, err
	}
	if !hi.Done() || !hp.Done() {
		return nil, nil, fmt.Errorf("conversation did not end: alice in %q, bob in %q", hi.State(""), hp.State(""))
	}
	return hi, hp, nil
}

func benchParleyRequest(b *testing.B) {
	r := newParleyRequest(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := r.run("c1"); err != nil {
			b.Fatal(err)
		}
	}
}

func testParleyRequest(t *testing.T) {
	r := newParleyRequest(t)
	for i := range 3 { // the shared queues and events are reused correctly
		hi, hp, err := r.run(fmt.Sprintf("c%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if hi.State("") != stResult || hp.State("") != stResult {
			t.Fatalf("final states %q and %q, want %q", hi.State(""), hp.State(""), stResult)
		}
	}
}

// parleyInitiators builds Initiator handlers of the shared program that
// have sent their request and wait in "requested".
type parleyInitiators struct {
	prog *engine.Program
	opts []engine.HandlerOption
	q    engine.Queue
	req  engine.DecisionEvent
}

func newParleyInitiators(tb testing.TB) *parleyInitiators {
	return &parleyInitiators{
		prog: compileShipped(tb, "fipa-request", "Initiator"),
		opts: []engine.HandlerOption{engine.WithPeers("Participant", "bob")},
		req:  engine.DecisionEvent{At: t0, Answer: decision.Answer{Choice: trRequest, Content: map[string]any{"action": "x"}}},
	}
}

func (p *parleyInitiators) build(id string) (*engine.Handler, error) {
	h, err := p.prog.NewHandler(id, "alice", p.opts...)
	if err != nil {
		return nil, err
	}
	p.q.Reset()
	if err := h.Start(t0, &p.q); err != nil {
		return nil, err
	}
	p.req.Ticket = ticket(&p.q)
	if err := process(h, &p.req, &p.q); err != nil {
		return nil, err
	}
	return h, nil
}

// Contract Net: one whole conversation with n participants.

// contractNetSizes are the numbers of participants; 10,000 is left out
// with -short.
func contractNetSizes() []int {
	if testing.Short() {
		return []int{10, 100, 1_000}
	}
	return []int{10, 100, 1_000, 10_000}
}

// BenchmarkContractNet runs one FIPA Contract Net conversation per op:
// the cfp to all participants, every participant proposes, one join
// decision accepts p0's proposal and rejects the rest, p0 informs the
// result. ns/participant is ns/op divided by the participants.
func BenchmarkContractNet(b *testing.B) {
	for _, n := range contractNetSizes() {
		b.Run(fmt.Sprintf("participants=%d/%s", n, libParley), func(b *testing.B) {
			c := newParleyContractNet(b, n)
			b.ReportAllocs()
			for b.Loop() {
				if err := c.run("c1"); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/participant")
		})
	}
}

func TestContractNet(t *testing.T) {
	for _, n := range []int{1, 3, 10} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			c := newParleyContractNet(t, n)
			for i := range 2 {
				if err := c.run(fmt.Sprintf("c%d", i)); err != nil {
					t.Fatal(err)
				}
				if got := c.hi.Outcome("p0"); got != stResult {
					t.Fatalf("p0's outcome %q, want %q", got, stResult)
				}
				for j := 1; j < n; j++ {
					if got := c.hi.Outcome(c.names[j]); got != "rejected" {
						t.Fatalf("%s's outcome %q, want rejected", c.names[j], got)
					}
				}
			}
		})
	}
}

// parleyContractNet runs Contract Net conversations between the
// initiator "buyer" and participants p0, p1, ...: the programs, the
// participant names and the decisions are built once; each conversation
// makes n+1 handlers.
type parleyContractNet struct {
	ini, par *engine.Program
	names    []string
	index    map[string]int
	iniOpts  []engine.HandlerOption
	hi       *engine.Handler
	hps      []*engine.Handler
	// qa holds the initiator's broadcasts (the cfp, then the accept and
	// rejects) while the participants read them; qb its other outputs;
	// qp a participant's.
	qa, qb, qp                 engine.Queue
	cfp, join, propose, result engine.DecisionEvent
	toPar, toIni               engine.MessageEvent
}

func newParleyContractNet(tb testing.TB, n int) *parleyContractNet {
	c := &parleyContractNet{
		ini:   compileShipped(tb, "fipa-contract-net", "Initiator"),
		par:   compileShipped(tb, "fipa-contract-net", "Participant"),
		names: make([]string, n),
		index: make(map[string]int, n),
		hps:   make([]*engine.Handler, n),
	}
	sessions := make(map[string]decision.SessionAnswer, n)
	for j := range c.names {
		c.names[j] = fmt.Sprintf("p%d", j)
		c.index[c.names[j]] = j
		sessions[c.names[j]] = decision.SessionAnswer{Choice: "reject-proposal"}
	}
	sessions["p0"] = decision.SessionAnswer{Choice: "accept-proposal"}
	c.iniOpts = []engine.HandlerOption{engine.WithPeers("Participant", c.names...)}
	c.cfp = engine.DecisionEvent{At: t0, Answer: decision.Answer{Choice: "cfp", Content: map[string]any{"task": "deliver"}}}
	c.join = engine.DecisionEvent{At: t0, Answer: decision.Answer{Sessions: sessions}}
	c.propose = engine.DecisionEvent{At: t0, Answer: decision.Answer{Choice: "propose", Content: map[string]any{"price": 10}}}
	c.result = engine.DecisionEvent{At: t0, Answer: decision.Answer{Choice: trInformResult, Content: map[string]any{"result": 42}}}
	c.toPar.At, c.toIni.At = t0, t0
	// One conversation before the timed ones grows the queues to what a
	// conversation of n participants needs, as a running agent's are:
	// b.Loop times its first iteration, whose share of ns/op would
	// otherwise depend on how many iterations fit in the benchtime.
	if err := c.run("warm-up"); err != nil {
		tb.Fatal(err)
	}
	return c
}

func (c *parleyContractNet) run(conv string) error {
	var err error
	if c.hi, err = c.ini.NewHandler(conv, "buyer", c.iniOpts...); err != nil {
		return err
	}
	for j, name := range c.names {
		if c.hps[j], err = c.par.NewHandler(conv, name); err != nil {
			return err
		}
		c.qp.Reset()
		if err := c.hps[j].Start(t0, &c.qp); err != nil {
			return err
		}
	}
	c.qa.Reset()
	if err := c.hi.Start(t0, &c.qa); err != nil {
		return err
	}
	// The cfp, to every participant at once.
	c.cfp.Ticket = ticket(&c.qa)
	if err := process(c.hi, &c.cfp, &c.qa); err != nil {
		return err
	}
	c.toPar.Message = message(&c.qa)
	// Every participant proposes; the last proposal releases the join.
	for _, hp := range c.hps {
		if err := process(hp, &c.toPar, &c.qp); err != nil {
			return err
		}
		c.propose.Ticket = ticket(&c.qp)
		if err := process(hp, &c.propose, &c.qp); err != nil {
			return err
		}
		c.toIni.Message = message(&c.qp)
		if err := process(c.hi, &c.toIni, &c.qb); err != nil {
			return err
		}
	}
	// The join: accept p0, reject the others.
	c.join.Ticket = ticket(&c.qb)
	if err := process(c.hi, &c.join, &c.qa); err != nil {
		return err
	}
	for _, e := range c.qa.Events() {
		m, ok := e.(*engine.MessageEvent)
		if !ok {
			continue
		}
		j := c.index[m.Message.Receivers[0]]
		c.toPar.Message = m.Message
		if err := process(c.hps[j], &c.toPar, &c.qp); err != nil {
			return err
		}
		if j == 0 {
			c.result.Ticket = ticket(&c.qp)
		}
	}
	// The winner informs the result.
	if err := process(c.hps[0], &c.result, &c.qp); err != nil {
		return err
	}
	c.toIni.Message = message(&c.qp)
	if err := process(c.hi, &c.toIni, &c.qb); err != nil {
		return err
	}
	if !c.hi.Done() {
		return fmt.Errorf("the initiator did not end: p0 in %q", c.hi.State("p0"))
	}
	for j, hp := range c.hps {
		if !hp.Done() {
			return fmt.Errorf("%s did not end: in %q", c.names[j], hp.State(""))
		}
	}
	return nil
}

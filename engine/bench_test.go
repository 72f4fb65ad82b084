package engine_test

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policies"
	"github.com/parleyhq/parley/policy"
)

// pingPong is the smallest useful policy: A pings and pongs B, forever
// unless it stops.
const pingPong = `policy: ping-pong
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

func mustCompile(tb testing.TB, src, role string) *engine.Program {
	tb.Helper()
	p, ds := policy.LoadYAML("bench.yaml", []byte(src))
	if ds.HasErrors() {
		tb.Fatal(ds)
	}
	prog, ds := engine.Compile(p, role)
	if prog == nil {
		tb.Fatal(ds)
	}
	return prog
}

// BenchmarkMessageStep measures one received message moving the state:
// classify, validate, transition, with no decision and no timer.
func BenchmarkMessageStep(b *testing.B) {
	step := pingPongSteps(b, pingPong, nil)
	b.ReportAllocs()
	for b.Loop() {
		step()
	}
}

// pingPongSteps returns a function that feeds a started handler of src,
// playing B, A's ping and pong in turn, each carrying content, and fails
// tb on an error or any output (a transition there outputs nothing).
func pingPongSteps(tb testing.TB, src string, content map[string]any) func() {
	prog := mustCompile(tb, src, "B")
	h, err := prog.NewHandler("c1", "b")
	if err != nil {
		tb.Fatal(err)
	}
	var q engine.Queue
	if err := h.Start(time.Time{}, &q); err != nil {
		tb.Fatal(err)
	}
	events := [2]*engine.MessageEvent{
		{Message: &forms.Message{Performative: "request", Sender: "a", Receivers: []string{"b"}, ConversationID: "c1", Content: content}},
		{Message: &forms.Message{Performative: "inform", Sender: "a", Receivers: []string{"b"}, ConversationID: "c1", Content: content}},
	}
	i := 0
	return func() {
		q.Reset()
		if err := h.Process(events[i&1], &q); err != nil || q.Len() != 0 {
			tb.Fatalf("step %d: %v, %d output events", i, err, q.Len())
		}
		i++
	}
}

// guardedPingPong is pingPong with the content's n declared an int and
// guarding ping and pong.
const guardedPingPong = `policy: guarded-ping-pong
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

// BenchmarkGuardedStep is BenchmarkMessageStep with content: its limits
// checked, its field n validated as an int and read by the guard.
func BenchmarkGuardedStep(b *testing.B) {
	step := pingPongSteps(b, guardedPingPong, map[string]any{"n": 1})
	b.ReportAllocs()
	for b.Loop() {
		step()
	}
}

// requestConversation runs one whole FIPA Request conversation (request,
// agree, inform-result) between two handlers of shared programs.
func requestConversation(tb testing.TB, ini, par *engine.Program, q *engine.Queue, conv string) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	hi, err := ini.NewHandler(conv, "alice", engine.WithPeers("Participant", "bob"))
	if err != nil {
		tb.Fatal(err)
	}
	hp, err := par.NewHandler(conv, "bob")
	if err != nil {
		tb.Fatal(err)
	}
	q.Reset()
	_ = hp.Start(t0, q)
	q.Reset()
	_ = hi.Start(t0, q)
	d := lastDecision(q)
	step := func(h *engine.Handler, ev engine.Event) {
		q.Reset()
		if err := h.Process(ev, q); err != nil {
			tb.Fatal(err)
		}
	}
	step(hi, &engine.DecisionEvent{At: t0, Ticket: d, Answer: decision.Answer{Choice: "request", Content: map[string]any{"action": "x"}}})
	m := lastMessage(q)
	step(hp, &engine.MessageEvent{At: t0, Message: m})
	d = lastDecision(q)
	step(hp, &engine.DecisionEvent{At: t0, Ticket: d, Answer: decision.Answer{Choice: "agree"}})
	m = lastMessage(q)
	d = lastDecision(q) // the Participant's next decision: the result
	step(hi, &engine.MessageEvent{At: t0, Message: m})
	step(hp, &engine.DecisionEvent{At: t0, Ticket: d, Answer: decision.Answer{Choice: "inform-result", Content: map[string]any{"result": 42}}})
	m = lastMessage(q)
	step(hi, &engine.MessageEvent{At: t0, Message: m})
	if !hi.Done() || !hp.Done() {
		tb.Fatalf("conversation did not end: %s / %s", hi.State(""), hp.State(""))
	}
}

func lastDecision(q *engine.Queue) uint64 {
	for _, e := range q.Events() {
		if d, ok := e.(*engine.DecisionEvent); ok {
			return d.Ticket
		}
	}
	return 0
}

func lastMessage(q *engine.Queue) *forms.Message {
	for _, e := range q.Events() {
		if m, ok := e.(*engine.MessageEvent); ok {
			c := *m.Message
			return &c
		}
	}
	return nil
}

func BenchmarkRequestConversation(b *testing.B) {
	p, err := policies.Load("fipa-request")
	if err != nil {
		b.Fatal(err)
	}
	ini, _ := engine.Compile(p, "Initiator")
	par, _ := engine.Compile(p, "Participant")
	var q engine.Queue
	b.ReportAllocs()
	for b.Loop() {
		requestConversation(b, ini, par, &q, "c1")
	}
}

// BenchmarkLiveHandlerBytes keeps 100,000 FIPA Request initiators alive,
// each waiting for the reply to its request, and reports the heap bytes
// each one holds (handler, sessions, timers' deadlines, the last message's
// data).
func BenchmarkLiveHandlerBytes(b *testing.B) {
	p, err := policies.Load("fipa-request")
	if err != nil {
		b.Fatal(err)
	}
	ini, _ := engine.Compile(p, "Initiator")
	const n = 100_000
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var q engine.Queue
	content := map[string]any{"action": "x"}
	for b.Loop() {
		handlers := make([]*engine.Handler, n)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := range handlers {
			h, err := ini.NewHandler("conversation-"+strconv.Itoa(i), "alice", engine.WithPeers("Participant", "bob"))
			if err != nil {
				b.Fatal(err)
			}
			q.Reset()
			_ = h.Start(t0, &q)
			d := lastDecision(&q)
			q.Reset()
			_ = h.Process(&engine.DecisionEvent{At: t0, Ticket: d, Answer: decision.Answer{Choice: "request", Content: content}}, &q)
			handlers[i] = h
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/handler")
		if handlers[n-1].State("") != "requested" {
			b.Fatal("not waiting in requested")
		}
		runtime.KeepAlive(handlers)
	}
}

// contractNet runs one whole Contract Net conversation with n
// participants: the cfp to all, a proposal from each, one join decision
// accepting the first and rejecting the rest, and the winner's result.
func contractNet(tb testing.TB, ini, par *engine.Program, peers []string, q *engine.Queue) {
	hi, cfp := initiatorAfterCFP(tb, ini, peers, q)
	hps := make([]*engine.Handler, len(peers))
	proposals := make([]*forms.Message, len(peers))
	price := map[string]any{"price": 1}
	for i, p := range peers {
		hp, _ := par.NewHandler("cn", p)
		q.Reset()
		_ = hp.Start(t0, q)
		q.Reset()
		_ = hp.Process(&engine.MessageEvent{At: t0, Message: cfp}, q)
		d := lastDecision(q)
		q.Reset()
		_ = hp.Process(&engine.DecisionEvent{At: t0, Ticket: d, Answer: decision.Answer{Choice: "propose", Content: price}}, q)
		proposals[i] = lastMessage(q)
		hps[i] = hp
	}
	var join *engine.DecisionEvent
	for _, m := range proposals {
		q.Reset()
		_ = hi.Process(&engine.MessageEvent{At: t0, Message: m}, q)
		for _, e := range q.Events() {
			if de, ok := e.(*engine.DecisionEvent); ok && len(de.Request.Sessions) > 0 {
				c := *de
				join = &c
			}
		}
	}
	if join == nil {
		tb.Fatal("no join decision")
	}
	answer := decision.Answer{Sessions: make(map[string]decision.SessionAnswer, len(peers))}
	for i, p := range peers {
		choice := "reject-proposal"
		if i == 0 {
			choice = "accept-proposal"
		}
		answer.Sessions[p] = decision.SessionAnswer{Choice: choice}
	}
	q.Reset()
	_ = hi.Process(&engine.DecisionEvent{At: t0, Ticket: join.Ticket, Answer: answer}, q)
	var awards []*forms.Message
	for _, e := range q.Events() {
		if m, ok := e.(*engine.MessageEvent); ok {
			c := *m.Message
			awards = append(awards, &c)
		}
	}
	// awards[0] goes to the winner; the rejections end the others.
	var resultTicket uint64
	for _, m := range awards {
		i, _ := strconv.Atoi(m.Receivers[0][1:])
		q.Reset()
		_ = hps[i].Process(&engine.MessageEvent{At: t0, Message: m}, q)
		if i == 0 {
			resultTicket = lastDecision(q)
		}
	}
	q.Reset()
	_ = hps[0].Process(&engine.DecisionEvent{At: t0, Ticket: resultTicket, Answer: decision.Answer{Choice: "inform-done", Content: map[string]any{"done": true}}}, q)
	m := lastMessage(q)
	q.Reset()
	_ = hi.Process(&engine.MessageEvent{At: t0, Message: m}, q)
	if !hi.Done() {
		tb.Fatalf("contract net with %d participants did not end", len(peers))
	}
}

func BenchmarkContractNet(b *testing.B) {
	p, err := policies.Load("fipa-contract-net")
	if err != nil {
		b.Fatal(err)
	}
	ini, _ := engine.Compile(p, "Initiator")
	par, _ := engine.Compile(p, "Participant")
	for _, n := range []int{10, 100, 1000} {
		peers := make([]string, n)
		for i := range peers {
			peers[i] = "p" + strconv.Itoa(i)
		}
		b.Run(fmt.Sprintf("participants=%d", n), func(b *testing.B) {
			var q engine.Queue
			b.ReportAllocs()
			for b.Loop() {
				contractNet(b, ini, par, peers, &q)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/participant")
		})
	}
}

// BenchmarkHeldMessage measures Buyer2 of Two-Buyer taking the Seller's
// quote and Buyer1's share, in order and with the share arriving first,
// held and then delivered: a new handler each time, up to its decision.
func BenchmarkHeldMessage(b *testing.B) {
	pr := multipartyProgram(b, "two-buyer", "Buyer2")
	quote := &forms.Message{Performative: "inform", Sender: "seller", ConversationID: convID, Content: map[string]any{"price": 10}}
	share := &forms.Message{Performative: "propose", Sender: "buyer1", ConversationID: convID, Content: map[string]any{"amount": 4}}
	for _, bc := range []struct {
		name string
		msgs [2]*forms.Message
	}{{"in-order", [2]*forms.Message{quote, share}}, {"share-first", [2]*forms.Message{share, quote}}} {
		b.Run(bc.name, func(b *testing.B) {
			var q engine.Queue
			b.ReportAllocs()
			for b.Loop() {
				h := newMultipartyHandler(b, pr)
				q.Reset()
				if err := h.Start(t0, &q); err != nil {
					b.Fatal(err)
				}
				for _, m := range bc.msgs {
					q.Reset()
					if err := h.Process(&engine.MessageEvent{At: t0, Message: m}, &q); err != nil {
						b.Fatal(err)
					}
				}
				if h.State("") != "shared" {
					b.Fatalf("Buyer2 is in %s", h.State(""))
				}
			}
		})
	}
}

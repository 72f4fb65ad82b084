package engine_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"slices"
	"time"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policies"
)

// show prints the events an agent's handler produced, one a line.
func show(q *engine.Queue) {
	for _, ev := range q.Events() {
		showEvent(ev)
	}
}

// showEvent prints an event a handler produced as one line.
func showEvent(ev engine.Event) {
	switch e := ev.(type) {
	case *engine.MessageEvent:
		m := e.Message
		fmt.Printf("send %s to %v (reply-with %s)\n", m.Performative, m.Receivers, m.ReplyWith)
	case *engine.DecisionEvent:
		fmt.Printf("decide at %s: one of %v\n", e.Request.Point, e.Request.Choices)
	case *engine.TimerEvent:
		name := e.Name
		if e.Commitment != "" {
			name += " of commitment " + e.Commitment
		}
		if e.Op == engine.TimerSet {
			fmt.Printf("set timer %s for %s\n", name, e.Deadline.Format(time.TimeOnly))
		} else {
			fmt.Printf("cancel timer %s\n", name)
		}
	case *engine.CommitmentEvent:
		fmt.Printf("commitment %s of %s: %s\n", e.Name, e.Debtor, e.State)
	case *engine.ProtocolErrorEvent:
		fmt.Printf("protocol error %s: %s\n", e.Code, e.Reason)
	case *engine.CPDoneEvent:
		fmt.Printf("done: %s\n", e.Outcome)
	}
}

// toNetwork settles d and prints what its handlers sent to agents it does
// not host, which a host hands to its network.
func toNetwork(d *engine.Driver) {
	if err := d.Settle(); err != nil {
		log.Fatal(err)
	}
	for _, s := range d.TakeUnrouted() {
		if m, ok := s.Event.(*engine.MessageEvent); ok {
			fmt.Printf("to the network: %s for %s\n", m.Message.Performative, s.To)
		}
	}
}

// An agent asking another to perform an action: compile the policy for
// the agent's role once, then run a handler per conversation. Messages
// the agent receives go in as MessageEvents; its decision logic answers
// DecisionEvents; what to send comes out as MessageEvents.
func ExampleHandler() {
	p, err := policies.Load("fipa-request")
	if err != nil {
		log.Fatal(err)
	}
	initiator, ds := engine.Compile(p, "Initiator") // once, shared by every conversation
	if initiator == nil {
		log.Fatal(ds)
	}

	h, err := initiator.NewHandler("conv-1", "alice", engine.WithPeers("Participant", "bob"))
	if err != nil {
		log.Fatal(err)
	}
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	var q engine.Queue
	if err := h.Start(now, &q); err != nil {
		log.Fatal(err)
	}
	show(&q)
	ask := q.Events()[0].(*engine.DecisionEvent)

	// alice's decision logic answers: send the request, due in a minute.
	q.Reset()
	if err := h.Process(&engine.DecisionEvent{At: now, Ticket: ask.Ticket, Answer: decision.Answer{
		Choice: "request", Content: map[string]any{"action": "paint the fence"}, ReplyBy: now.Add(time.Minute),
	}}, &q); err != nil {
		log.Fatal(err)
	}
	show(&q)
	request := q.Events()[0].(*engine.MessageEvent).Message

	// bob agrees, then reports the result.
	for _, m := range []*forms.Message{
		{Performative: "agree", Sender: "bob", Receivers: []string{"alice"}, ConversationID: "conv-1", InReplyTo: request.ReplyWith},
		{Performative: "inform", Sender: "bob", Receivers: []string{"alice"}, ConversationID: "conv-1", InReplyTo: request.ReplyWith,
			Content: map[string]any{"result": "painted"}},
	} {
		now = now.Add(10 * time.Second)
		q.Reset()
		if err := h.Process(&engine.MessageEvent{At: now, Message: m}, &q); err != nil {
			log.Fatal(err)
		}
		fmt.Println("--", m.Performative)
		show(&q)
	}
	fmt.Println(h.Done(), h.Outcome(""))
	// Output:
	// decide at start: one of [request]
	// send request to [bob] (reply-with conv-1/alice#1)
	// set timer reply for 09:01:00
	// decide at requested: one of [cancel]
	// -- agree
	// commitment perform of bob: created
	// commitment perform of bob: detached
	// set timer result of commitment perform for 09:05:10
	// cancel timer reply
	// set timer result for 09:05:10
	// decide at agreed: one of [cancel]
	// -- inform
	// cancel timer result of commitment perform
	// commitment perform of bob: discharged
	// cancel timer result
	// done: result
	// true result
}

// The participant's side, with decision logic as a Go function behind
// the Decider interface: a driver hosting bob's handler asks it at every
// decision point and feeds its answer back. The messages bob receives go
// in with Process; what he sends to alice, whom the driver does not host,
// comes back from TakeUnrouted. A peer's violation is an event, not an
// error.
func ExampleWithDecider() {
	p, err := policies.Load("fipa-request")
	if err != nil {
		log.Fatal(err)
	}
	participant, ds := engine.Compile(p, "Participant")
	if participant == nil {
		log.Fatal(ds)
	}
	decide := decision.Func(func(_ context.Context, req *decision.Request) (decision.Answer, error) {
		if req.Point != "requested" {
			return decision.Answer{}, decision.ErrNoDecision // the result comes later
		}
		if req.Content["action"] == "paint the fence" && slices.Contains(req.Choices, "agree") {
			return decision.Answer{Choice: "agree"}, nil
		}
		return decision.Answer{Choice: "refuse", Content: map[string]any{"reason": "not my job"}}, nil
	})

	h, err := participant.NewHandler("conv-1", "bob")
	if err != nil {
		log.Fatal(err)
	}
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	d := engine.NewDriver(now, engine.WithDecider(decide), engine.WithObserver(func(s engine.Step) {
		if s.Kind == engine.StepOutput {
			showEvent(s.Event)
		}
	}))
	if err := errors.Join(d.Add(h), d.Start("bob", "conv-1")); err != nil {
		log.Fatal(err)
	}
	for i, m := range []*forms.Message{
		{Performative: "request", Sender: "alice", Receivers: []string{"bob"}, ConversationID: "conv-1",
			ReplyWith: "alice#1", Content: map[string]any{"action": "paint the fence"}},
		{Performative: "request", Sender: "alice", Receivers: []string{"bob"}, ConversationID: "conv-1"},
	} {
		if i > 0 {
			fmt.Println("--")
		}
		if err := d.Process("bob", "conv-1", &engine.MessageEvent{At: now, Message: m}); err != nil {
			log.Fatal(err)
		}
		toNetwork(d)
	}
	fmt.Println(h.State(""))
	// Output:
	// set timer reply for 09:00:30
	// decide at requested: one of [agree refuse not-understood inform-done inform-result failure]
	// send agree to [alice] (reply-with conv-1/bob#1)
	// commitment perform of bob: created
	// commitment perform of bob: detached
	// set timer result of commitment perform for 09:05:00
	// cancel timer reply
	// set timer result for 09:05:00
	// decide at agreed: one of [inform-done inform-result failure]
	// to the network: agree for alice
	// --
	// protocol error PE001: unexpected request from "alice": state "agreed" allows cancel from Initiator
	// agreed
}

// A Contract Net initiator decides on every proposal at once: when all
// participants have answered (or the cfp's deadline has passed) one
// decision lists the waiting sessions, and its answer gives each its own
// choice. The driver hosts alice alone: the proposals go in with
// Process, her messages come back from TakeUnrouted.
func ExampleDriver_join() {
	p, err := policies.Load("fipa-contract-net")
	if err != nil {
		log.Fatal(err)
	}
	initiator, ds := engine.Compile(p, "Initiator")
	if initiator == nil {
		log.Fatal(ds)
	}
	h, err := initiator.NewHandler("cn-1", "alice", engine.WithPeers("Participant", "bob", "carol", "dave"))
	if err != nil {
		log.Fatal(err)
	}
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	decide := decision.Func(func(_ context.Context, req *decision.Request) (decision.Answer, error) {
		switch {
		case req.Point == "start":
			return decision.Answer{Choice: "cfp", Content: map[string]any{"task": "deliver"}, ReplyBy: now.Add(time.Minute)}, nil
		case len(req.Sessions) == 0:
			return decision.Answer{}, decision.ErrNoDecision // alice never cancels
		}
		// The join: accept the cheapest proposal, reject the others.
		cheapest, best := "", 0.0
		for _, s := range req.Sessions {
			fmt.Printf("%s proposes %v, may %v\n", s.Peer, s.Content["price"], s.Choices)
			if price := s.Content["price"].(float64); cheapest == "" || price < best {
				cheapest, best = s.Peer, price
			}
		}
		answer := decision.Answer{Sessions: map[string]decision.SessionAnswer{}}
		for _, s := range req.Sessions {
			if s.Peer == cheapest {
				answer.Sessions[s.Peer] = decision.SessionAnswer{Choice: "accept-proposal"}
			} else {
				answer.Sessions[s.Peer] = decision.SessionAnswer{Choice: "reject-proposal", Content: map[string]any{"reason": "too dear"}}
			}
		}
		return answer, nil
	})
	d := engine.NewDriver(now, engine.WithDecider(decide))
	if err := errors.Join(d.Add(h), d.Start("alice", "cn-1")); err != nil {
		log.Fatal(err)
	}
	toNetwork(d)

	for _, m := range []*forms.Message{
		{Performative: "propose", Sender: "bob", Content: map[string]any{"price": 10.0}},
		{Performative: "propose", Sender: "carol", Content: map[string]any{"price": 8.0}},
		{Performative: "refuse", Sender: "dave", Content: map[string]any{"reason": "busy"}},
	} {
		m.Receivers, m.ConversationID = []string{"alice"}, "cn-1"
		if err := d.Process("alice", "cn-1", &engine.MessageEvent{At: now, Message: m}); err != nil {
			log.Fatal(err)
		}
	}
	toNetwork(d)
	for _, peer := range h.Sessions() {
		fmt.Printf("%s: %s\n", peer, h.State(peer))
	}
	// Output:
	// to the network: cfp for bob
	// to the network: cfp for carol
	// to the network: cfp for dave
	// bob proposes 10, may [accept-proposal reject-proposal cancel]
	// carol proposes 8, may [accept-proposal reject-proposal cancel]
	// to the network: reject-proposal for bob
	// to the network: accept-proposal for carol
	// bob: rejected
	// carol: awarded
	// dave: refused
}

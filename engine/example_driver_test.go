package engine_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/policies"
)

// requestHandlers returns alice's and bob's handlers of a FIPA Request
// conversation: alice asks, bob is asked.
func requestHandlers() (alice, bob *engine.Handler) {
	p, err := policies.Load("fipa-request")
	if err != nil {
		log.Fatal(err)
	}
	initiator, ds := engine.Compile(p, "Initiator") // once, shared by every conversation
	if initiator == nil {
		log.Fatal(ds)
	}
	participant, ds := engine.Compile(p, "Participant")
	if participant == nil {
		log.Fatal(ds)
	}
	alice, err = initiator.NewHandler("conv-1", "alice", engine.WithPeers("Participant", "bob"))
	if err != nil {
		log.Fatal(err)
	}
	bob, err = participant.NewHandler("conv-1", "bob")
	if err != nil {
		log.Fatal(err)
	}
	return alice, bob
}

// showMessages prints every message as it is delivered.
func showMessages(s engine.Step) {
	if m, ok := s.Event.(*engine.MessageEvent); ok && s.Kind == engine.StepInput {
		fmt.Printf("%s -> %s: %s", m.Message.Sender, s.Agent, m.Message.Performative)
		if m.Message.Content != nil {
			fmt.Printf(" %v", m.Message.Content)
		}
		fmt.Println()
	}
}

// A whole conversation on one goroutine: the driver hosts both agents'
// handlers, delivers what each sends to the other and asks the decision
// logic at every decision point. Nothing reads a clock: time is the
// driver's, and moves only when told.
func ExampleDriver() {
	alice, bob := requestHandlers()
	decide := decision.Func(func(_ context.Context, req *decision.Request) (decision.Answer, error) {
		switch req.Role + " " + req.Point {
		case "Initiator start":
			return decision.Answer{Choice: "request", Content: map[string]any{"action": "paint the fence"}}, nil
		case "Participant requested":
			return decision.Answer{Choice: "agree"}, nil
		case "Participant agreed":
			return decision.Answer{Choice: "inform-result", Content: map[string]any{"result": "painted"}}, nil
		}
		return decision.Answer{}, decision.ErrNoDecision // alice never cancels
	})

	d := engine.NewDriver(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC), engine.WithDecider(decide), engine.WithObserver(showMessages))
	for _, h := range []*engine.Handler{alice, bob} {
		if err := d.Add(h); err != nil {
			log.Fatal(err)
		}
	}
	for _, agent := range []string{"bob", "alice"} {
		if err := d.Start(agent, "conv-1"); err != nil {
			log.Fatal(err)
		}
	}
	if err := d.Settle(); err != nil { // deliver until nothing is in flight
		log.Fatal(err)
	}
	for k, h := range d.Handlers() {
		fmt.Printf("%s: %s\n", k.Agent, h.Outcome(""))
	}
	// Output:
	// alice -> bob: request map[action:paint the fence]
	// bob -> alice: agree
	// bob -> alice: inform map[result:painted]
	// alice: result
	// bob: result
}

// Decisions the decision logic does not make stay pending; time passes
// only through AdvanceTo, which fires the timers that fall due.
func ExampleDriver_AdvanceTo() {
	alice, bob := requestHandlers()
	decide := decision.Func(func(_ context.Context, req *decision.Request) (decision.Answer, error) {
		if req.Point == "start" {
			return decision.Answer{Choice: "request", Content: map[string]any{"action": "paint the fence"}}, nil
		}
		return decision.Answer{}, decision.ErrNoDecision // bob never answers
	})
	start := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	d := engine.NewDriver(start, engine.WithDecider(decide), engine.WithObserver(showMessages))
	if err := errors.Join(d.Add(alice), d.Add(bob)); err != nil {
		log.Fatal(err)
	}
	for k := range d.Handlers() { // in the order added
		if err := d.Start(k.Agent, k.Conversation); err != nil {
			log.Fatal(err)
		}
	}
	if err := d.Settle(); err != nil {
		log.Fatal(err)
	}
	for _, p := range d.Pending() {
		fmt.Printf("%s may %v\n", p.Agent, p.Request.Choices)
	}
	next, _ := d.NextDeadline()
	fmt.Println("next timer after", next.Sub(start))
	if err := d.AdvanceTo(start.Add(time.Minute)); err != nil {
		log.Fatal(err)
	}
	fmt.Println("alice:", alice.Outcome(""), "bob:", bob.Outcome(""), "pending:", len(d.Pending()))
	// Output:
	// alice -> bob: request map[action:paint the fence]
	// alice may [cancel]
	// bob may [agree refuse not-understood inform-done inform-result failure]
	// next timer after 30s
	// alice: timeout bob: timeout pending: 0
}

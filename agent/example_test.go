package agent_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/policies"
)

// Two agents in one process: alice asks bob to paint a fence through the
// shipped FIPA Request policy, bob agrees and reports the result. Each
// agent's manager registers the policy, gets its decision logic, and
// connects to the bus; bob accepts the conversation when alice's request
// arrives.
func ExampleManager() {
	p, err := policies.Load("fipa-request")
	if err != nil {
		log.Fatal(err)
	}
	bus := agent.NewBus()
	bob, err := agent.NewManager("bob", agent.WithLogger(nil), agent.WithDecider(decision.Func(
		func(_ context.Context, req *decision.Request) (decision.Answer, error) {
			switch req.Point {
			case "requested":
				return decision.Answer{Choice: "agree"}, nil
			case "agreed":
				return decision.Answer{Choice: "inform-result", Content: map[string]any{"result": "the fence is green"}}, nil
			}
			return decision.Answer{}, decision.ErrNoDecision
		})))
	if err != nil {
		log.Fatal(err)
	}
	alice, err := agent.NewManager("alice", agent.WithLogger(nil), agent.WithDecider(decision.Func(
		func(_ context.Context, req *decision.Request) (decision.Answer, error) {
			if req.Point == "start" {
				return decision.Answer{Choice: "request", Content: req.Content, ReplyBy: time.Now().Add(5 * time.Second)}, nil
			}
			return decision.Answer{}, decision.ErrNoDecision // alice never cancels
		})))
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range []*agent.Manager{alice, bob} {
		if err := m.Register(p); err != nil {
			log.Fatal(err)
		}
		if err := bus.Connect(m); err != nil {
			log.Fatal(err)
		}
	}
	ctx := context.Background()
	conv, err := alice.Start(ctx, agent.StartRequest{
		Policy: "fipa-request", Role: "Initiator",
		Peers: map[string][]string{"Participant": {"bob"}},
		Data:  map[string]any{"action": "paint the fence"},
	})
	if err != nil {
		log.Fatal(err)
	}
	outcome, err := alice.Wait(ctx, conv)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(outcome)
	for _, m := range []*agent.Manager{alice, bob} {
		if err := m.Close(ctx); err != nil {
			log.Fatal(err)
		}
	}
	// Output: result
}

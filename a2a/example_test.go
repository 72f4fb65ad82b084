package a2a_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/parleyhq/parley/a2a"
	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/policies"
)

// A painter agent served over A2A, and alice, a Parley agent that asks
// it to paint through a Client. Any A2A client could drive the painter,
// and alice could call any A2A agent.
func Example() {
	p, err := policies.Load("fipa-request")
	if err != nil {
		log.Fatal(err)
	}
	srv, err := a2a.NewServer(a2a.Info{Name: "painter"})
	if err != nil {
		log.Fatal(err)
	}
	painter, err := agent.NewManager("painter", append(srv.ManagerOptions(), agent.WithLogger(nil), agent.WithDecider(decision.Func(
		func(_ context.Context, req *decision.Request) (decision.Answer, error) {
			action, _ := req.Content["action"].(string)
			switch {
			case req.Point == "requested" && strings.HasPrefix(action, "paint"):
				return decision.Answer{Choice: "agree", Content: map[string]any{"action": action}}, nil
			case req.Point == "requested":
				return decision.Answer{Choice: "refuse", Content: map[string]any{"reason": "I only paint"}}, nil
			case req.Point == "agreed":
				return decision.Answer{Choice: "inform-result", Content: map[string]any{"result": action + ": done"}}, nil
			}
			return decision.Answer{}, decision.ErrNoDecision
		})))...)
	if err != nil {
		log.Fatal(err)
	}
	if err := srv.Attach(painter, p); err != nil {
		log.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()

	c, err := a2a.NewClient(a2a.WithPeer("painter", hs.URL+"/"))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	alice, err := agent.NewManager("alice", agent.WithTransport(c), agent.WithLogger(nil), agent.WithDecider(decision.Func(
		func(_ context.Context, req *decision.Request) (decision.Answer, error) {
			if req.Point == "start" {
				return decision.Answer{Choice: "request", Content: req.Content, ReplyBy: time.Now().Add(10 * time.Second)}, nil
			}
			return decision.Answer{}, decision.ErrNoDecision
		})))
	if err != nil {
		log.Fatal(err)
	}
	c.Attach(alice)
	if err := alice.Register(p); err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	for _, action := range []string{"paint the fence", "mow the lawn"} {
		conv, err := alice.Start(ctx, agent.StartRequest{Policy: "fipa-request", Role: "Initiator",
			Peers: map[string][]string{"Participant": {"painter"}}, Data: map[string]any{"action": action}})
		if err != nil {
			log.Fatal(err)
		}
		outcome, err := alice.Wait(ctx, conv)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(action+":", outcome)
	}
	for _, m := range []*agent.Manager{alice, painter} {
		if err := m.Close(ctx); err != nil {
			log.Fatal(err)
		}
	}
	// Output:
	// paint the fence: result
	// mow the lawn: refused
}

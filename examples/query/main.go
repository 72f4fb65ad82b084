// Command query runs two FIPA Query conversations between in-process
// agents: alice asks bob whether it is raining (query-if, answered with
// {"holds": ...}) and what apples cost (query-ref, answered with
// {"result": ...}). The conversations are printed as they happen and
// journaled in the trace format:
//
//	go run ./examples/query -journal query.jsonl
//	go run ./cmd/cpvalidate trace fipa-query query.jsonl
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/policies"
	"github.com/parleyhq/parley/trace"
)

func main() {
	journal := flag.String("journal", "", "write the message journal (JSON Lines) to `FILE`")
	flag.Parse()
	var jw io.Writer = io.Discard
	if *journal != "" {
		f, err := os.Create(*journal)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer f.Close()
		jw = f
	}
	if err := run(context.Background(), os.Stdout, jw); err != nil {
		fmt.Fprintln(os.Stderr, "query:", err)
		os.Exit(1)
	}
}

// facts is what bob knows.
var facts = map[string]any{"raining": false, "price of apples": 2.5}

func run(ctx context.Context, out, journal io.Writer) error {
	p, err := policies.Load("fipa-query")
	if err != nil {
		return err
	}
	bus := agent.NewBus()
	j := trace.NewWriter(journal)
	quiet := slog.New(slog.DiscardHandler)
	var mu sync.Mutex
	print := func(o agent.Observation) {
		if me, ok := o.Event.(*engine.MessageEvent); ok && !o.Input {
			mu.Lock()
			defer mu.Unlock()
			m := me.Message
			fmt.Fprintf(out, "%-11s %-5s -> %-5s %-9s %v\n", m.ConversationID, m.Sender, m.Receivers[0], m.Performative, m.Content)
		}
	}

	bob, err := agent.NewManager("bob", agent.WithLogger(quiet), agent.WithObserver(print), agent.WithJournal(j, false),
		agent.WithDecider(decision.Func(func(_ context.Context, req *decision.Request) (decision.Answer, error) {
			about, _ := req.Content["about"].(string)
			fact, known := facts[about]
			switch {
			case !known:
				return decision.Answer{Choice: "refuse", Content: map[string]any{"reason": "I know nothing about " + about}}, nil
			case req.Point == "if-queried":
				return decision.Answer{Choice: "inform-tf", Content: map[string]any{"holds": fact}}, nil
			case req.Point == "ref-queried":
				return decision.Answer{Choice: "inform-result", Content: map[string]any{"result": fact}}, nil
			}
			return decision.Answer{}, decision.ErrNoDecision
		})))
	if err != nil {
		return err
	}
	defer bob.Close(context.Background())

	alice, err := agent.NewManager("alice", agent.WithLogger(quiet), agent.WithObserver(print), agent.WithJournal(j, false),
		agent.WithDecider(decision.Func(func(_ context.Context, req *decision.Request) (decision.Answer, error) {
			if req.Point == "start" {
				return decision.Answer{Choice: req.Content["ask"].(string), Content: map[string]any{"about": req.Content["about"]}, ReplyBy: time.Now().Add(5 * time.Second)}, nil
			}
			return decision.Answer{}, nil
		})))
	if err != nil {
		return err
	}
	defer alice.Close(context.Background())

	for _, m := range []*agent.Manager{alice, bob} {
		if err := m.Register(p); err != nil {
			return err
		}
		if err := bus.Connect(m); err != nil {
			return err
		}
	}
	for _, q := range []map[string]any{
		{"ask": "query-if", "about": "raining"},
		{"ask": "query-ref", "about": "price of apples"},
	} {
		conv, err := alice.Start(ctx, agent.StartRequest{Policy: "fipa-query", Role: "Initiator", Peers: map[string][]string{"Participant": {"bob"}}, Data: q})
		if err != nil {
			return err
		}
		outcome, err := alice.Wait(ctx, conv)
		if err != nil {
			return err
		}
		mu.Lock()
		fmt.Fprintf(out, "%-11s ended: %s\n", conv, outcome)
		mu.Unlock()
	}
	return nil
}

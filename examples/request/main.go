// Command request runs a FIPA Request conversation between two in-process
// agents: alice asks bob to paint a fence, bob agrees and reports the
// result. Both agents' decision logic is plain Go. The conversation is
// printed as it happens and journaled in the trace format, so
//
//	go run ./examples/request -journal request.jsonl
//	go run ./cmd/cpvalidate trace fipa-request request.jsonl
//
// checks it afterwards.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
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
		fmt.Fprintln(os.Stderr, "request:", err)
		os.Exit(1)
	}
}

// run plays the conversation, printing it to out and journaling it to
// journal.
func run(ctx context.Context, out, journal io.Writer) error {
	p, err := policies.Load("fipa-request")
	if err != nil {
		return err
	}
	bus := agent.NewBus()
	j := trace.NewWriter(journal)
	quiet := slog.New(slog.DiscardHandler)
	start := time.Now()
	print := func(o agent.Observation) {
		if me, ok := o.Event.(*engine.MessageEvent); ok && !o.Input {
			m := me.Message
			fmt.Fprintf(out, "%6.1fms  %-5s -> %-5s %-8s %v\n", float64(time.Since(start).Microseconds())/1000, m.Sender, m.Receivers[0], m.Performative, m.Content)
		}
	}

	// bob performs actions: he agrees to paint, then reports the result.
	bob, err := agent.NewManager("bob", agent.WithLogger(quiet), agent.WithObserver(print), agent.WithJournal(j, false),
		agent.WithDecider(decision.Func(func(_ context.Context, req *decision.Request) (decision.Answer, error) {
			switch req.Point {
			case "requested":
				if req.Content["action"] != "paint the fence" {
					return decision.Answer{Choice: "refuse", Content: map[string]any{"reason": "I only paint fences"}}, nil
				}
				return decision.Answer{Choice: "agree"}, nil
			case "agreed":
				return decision.Answer{Choice: "inform-result", Content: map[string]any{"result": "the fence is green"}}, nil
			}
			return decision.Answer{}, decision.ErrNoDecision
		})))
	if err != nil {
		return err
	}
	defer bob.Close(context.Background())

	// alice asks; while she waits she has nothing more to decide.
	alice, err := agent.NewManager("alice", agent.WithLogger(quiet), agent.WithObserver(print), agent.WithJournal(j, false),
		agent.WithDecider(decision.Func(func(_ context.Context, req *decision.Request) (decision.Answer, error) {
			if req.Point == "start" {
				return decision.Answer{Choice: "request", Content: req.Content, ReplyBy: time.Now().Add(5 * time.Second)}, nil
			}
			return decision.Answer{}, nil // nothing to cancel: wait for bob
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
	conv, err := alice.Start(ctx, agent.StartRequest{Policy: "fipa-request", Role: "Initiator", Peers: map[string][]string{"Participant": {"bob"}}, Data: map[string]any{"action": "paint the fence"}})
	if err != nil {
		return err
	}
	outcome, err := alice.Wait(ctx, conv)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "conversation %s ended: %s\n", conv, outcome)
	return nil
}

// Command a2a shows a Parley agent talking to agents of other stacks over
// the Agent2Agent protocol (package a2a).
//
//	go run ./examples/a2a -listen 127.0.0.1:8080
//
// serves the agent "painter", playing the Participant of fipa-request,
// as an A2A agent: its card is at /.well-known/agent-card.json and its
// JSON-RPC endpoint at /. It agrees to an action that starts with
// "paint" and then informs {"result": ...}, and refuses any other action
// with a reason. Any A2A client drives it by sending a data part such as
// {"action": "paint the fence"}.
//
//	go run ./examples/a2a -call http://127.0.0.1:8080/ -action "paint the fence"
//
// plays the Initiator against the A2A agent at that URL (a Parley agent
// or any other) and prints the outcome and the content of the last
// message the agent sent.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/parleyhq/parley/a2a"
	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/policies"
)

func main() {
	listen := flag.String("listen", "", "serve the painter at this address (host:port)")
	url := flag.String("url", "", "with -listen: the URL the agent card gives (default http://ADDRESS/)")
	callURL := flag.String("call", "", "play the Initiator against the A2A agent at this URL")
	action := flag.String("action", "paint the fence", "with -call: the action to request")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	switch {
	case *listen != "" && *callURL == "":
		err := serve(ctx, *listen, *url, func(card string) {
			fmt.Printf("painter serves A2A at %s (agent card: %s.well-known/agent-card.json)\n", card, card)
		})
		if err != nil {
			log.Fatal(err)
		}
	case *callURL != "" && *listen == "":
		outcome, last, err := call(ctx, *callURL, *action)
		if err != nil {
			log.Fatal(err)
		}
		b, err := json.Marshal(last)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("outcome: %s\nlast message: %s\n", outcome, b)
	default:
		fmt.Fprintln(os.Stderr, "usage: a2a -listen ADDRESS [-url URL] | a2a -call URL [-action ACTION]")
		os.Exit(2)
	}
}

// paint decides for the painter: agree to actions that start with
// "paint" (the agree carries the action on to the next decision), then
// inform the result; refuse the rest; answer a cancel with done.
func paint(_ context.Context, req *decision.Request) (decision.Answer, error) {
	action, _ := req.Content["action"].(string)
	switch req.Point {
	case "requested":
		if strings.HasPrefix(action, "paint") {
			return decision.Answer{Choice: "agree", Content: map[string]any{"action": action}}, nil
		}
		return decision.Answer{Choice: "refuse", Content: map[string]any{"reason": "the painter only paints"}}, nil
	case "agreed":
		return decision.Answer{Choice: "inform-result", Content: map[string]any{"result": action + ": done"}}, nil
	case "cancelling":
		return decision.Answer{Choice: "inform-done", Content: map[string]any{"done": true}}, nil
	}
	return decision.Answer{}, decision.ErrNoDecision
}

// serve listens on addr and serves the painter until ctx ends. ready gets
// the URL of its endpoint once it listens: url, or http://ADDRESS/.
func serve(ctx context.Context, addr, url string, ready func(url string)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if url == "" {
		url = "http://" + ln.Addr().String() + "/"
	}
	p, err := policies.Load("fipa-request")
	if err != nil {
		return err
	}
	srv, err := a2a.NewServer(a2a.Info{Name: "painter", Description: "Paints what it is asked to paint, under FIPA Request.", URL: url})
	if err != nil {
		return err
	}
	m, err := agent.NewManager("painter", append(srv.ManagerOptions(), agent.WithLogger(nil), agent.WithDecider(decision.Func(paint)))...)
	if err != nil {
		return err
	}
	defer m.Close(context.Background())
	if err := srv.Attach(m, p); err != nil {
		return err
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(shut)
	}()
	ready(url)
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// call plays the Initiator of fipa-request, asking the A2A agent at url
// to perform action, and returns the outcome and the content of the last
// message the agent sent.
func call(ctx context.Context, url, action string) (string, map[string]any, error) {
	c, err := a2a.NewClient(a2a.WithPeer("agent", url), a2a.WithClientLogger(nil))
	if err != nil {
		return "", nil, err
	}
	defer c.Close()
	last := make(chan map[string]any, 1)
	m, err := agent.NewManager("initiator", agent.WithTransport(c), agent.WithLogger(nil),
		agent.WithDecider(decision.Func(func(_ context.Context, req *decision.Request) (decision.Answer, error) {
			if req.Point == "start" {
				return decision.Answer{Choice: "request", Content: req.Content, ReplyBy: time.Now().Add(30 * time.Second)}, nil
			}
			return decision.Answer{}, decision.ErrNoDecision // the initiator never cancels
		})),
		agent.WithObserver(func(o agent.Observation) {
			if me, ok := o.Event.(*engine.MessageEvent); ok && o.Input && me.Message.Sender == "agent" {
				select {
				case <-last:
				default:
				}
				last <- me.Message.Content
			}
		}))
	if err != nil {
		return "", nil, err
	}
	defer m.Close(context.Background())
	c.Attach(m)
	p, err := policies.Load("fipa-request")
	if err != nil {
		return "", nil, err
	}
	if err := m.Register(p); err != nil {
		return "", nil, err
	}
	conv, err := m.Start(ctx, agent.StartRequest{Policy: "fipa-request", Role: "Initiator", Peers: map[string][]string{"Participant": {"agent"}}, Data: map[string]any{"action": action}})
	if err != nil {
		return "", nil, err
	}
	outcome, err := m.Wait(ctx, conv)
	if err != nil {
		return "", nil, err
	}
	select {
	case content := <-last:
		return outcome, content, nil
	default:
		return outcome, nil, nil
	}
}

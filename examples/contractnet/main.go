// Command contractnet runs a FIPA Contract Net between in-process agents:
// a buyer calls for proposals to deliver crates, six carriers bid, and the
// buyer accepts the two cheapest bids once every carrier has answered or
// the deadline has passed. Each carrier prices the job with an expr
// expression from a small table; one carrier, slowpoke, is too slow and
// misses the deadline, so the engine closes its session as no-bid.
//
//	go run ./examples/contractnet                # the conversation as it happens
//	go run ./examples/contractnet -mermaid       # also as a Mermaid sequence diagram
//	go run ./examples/contractnet -journal cnet.jsonl
//	go run ./cmd/cpvalidate trace fipa-contract-net cnet.jsonl
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/membership"
	"github.com/parleyhq/parley/policies"
	"github.com/parleyhq/parley/policy"
	"github.com/parleyhq/parley/trace"
)

// carriers prices the job: each formula sees the cfp's content and returns
// a price, or nil to refuse.
var carriers = []struct {
	name    string
	formula string
	slow    bool
}{
	{"acme", "content.crates * 2.0 + 10", false},
	{"bolt", "content.crates * 1.8 + 25", false},
	{"cargo", `content.crates > 30 ? nil : content.crates * 2.2`, false},
	{"dash", "content.crates * 1.5 + 40", false},
	{"eagle", "content.crates * 2.5", false},
	{"slowpoke", "content.crates * 1.0", true},
}

// accepted is how many bids the buyer takes.
const accepted = 2

func main() {
	journal := flag.String("journal", "", "write the message journal (JSON Lines) to `FILE`")
	mermaid := flag.Bool("mermaid", false, "also print the conversation as a Mermaid sequence diagram")
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
	cfg := config{deadline: 300 * time.Millisecond, slowBy: 500 * time.Millisecond, mermaid: *mermaid}
	if err := run(context.Background(), os.Stdout, jw, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "contractnet:", err)
		os.Exit(1)
	}
}

type config struct {
	deadline time.Duration // for proposals, after the cfp
	slowBy   time.Duration // how long slowpoke takes to bid
	mermaid  bool
}

func run(ctx context.Context, out, journal io.Writer, cfg config) error {
	p, err := policies.Load("fipa-contract-net")
	if err != nil {
		return err
	}
	bus := agent.NewBus()
	// The carriers join a group, with a heartbeat each; the buyer calls
	// for proposals to every healthy carrier with room for the job.
	carrierGroup := membership.New(agent.RealClock())
	j := trace.NewWriter(journal)
	quiet := slog.New(slog.DiscardHandler)
	start := time.Now()
	var (
		mu  sync.Mutex
		log []*forms.Message
	)
	print := func(o agent.Observation) {
		me, ok := o.Event.(*engine.MessageEvent)
		if !ok || o.Input {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		m := me.Message
		log = append(log, m)
		fmt.Fprintf(out, "%6.0fms  %-8s -> %-31s %-15s %v\n", float64(time.Since(start).Milliseconds()), m.Sender, strings.Join(m.Receivers, ","), m.Performative, m.Content)
	}
	var managers []*agent.Manager
	defer func() {
		for _, m := range managers {
			m.Close(context.Background())
		}
	}()
	newAgent := func(name string, opts ...agent.Option) (*agent.Manager, error) {
		opts = append([]agent.Option{agent.WithLogger(quiet), agent.WithObserver(print), agent.WithJournal(j, false)}, opts...)
		m, err := agent.NewManager(name, opts...)
		if err != nil {
			return nil, err
		}
		managers = append(managers, m)
		if err := bus.Connect(m); err != nil {
			return nil, err
		}
		return m, m.Register(p)
	}

	for _, c := range carriers {
		price, err := decision.Compile(&policy.Expr{Src: c.formula})
		if err != nil {
			return fmt.Errorf("carrier %s: %w", c.name, err)
		}
		bid := carrierLogic(c.name, price)
		var m *agent.Manager
		if c.slow {
			m, err = newAgent(c.name, agent.WithAsyncDecisions(func(r agent.DecisionRequest) {
				go func() {
					time.Sleep(cfg.slowBy)
					a, _ := bid(ctx, &r.Request)
					_ = m.Answer(r.Conversation, r.Ticket, a) // fails only once the example closes
				}()
			}))
		} else {
			m, err = newAgent(c.name, agent.WithDecider(decision.Func(bid)))
		}
		if err != nil {
			return err
		}
		if err := carrierGroup.Register(membership.Registration{Name: c.name, Role: "Participant", Capabilities: []string{"transport"}, Capacity: 1}); err != nil {
			return err
		}
		if err := carrierGroup.Heartbeat(c.name); err != nil {
			return err
		}
	}

	buyer, err := newAgent("buyer", agent.WithDecider(decision.Func(func(_ context.Context, req *decision.Request) (decision.Answer, error) {
		switch req.Point {
		case "start":
			return decision.Answer{Choice: "cfp", Content: req.Content, ReplyBy: time.Now().Add(cfg.deadline)}, nil
		case "proposed":
			return award(req), nil
		}
		return decision.Answer{}, nil // nothing to cancel
	})))
	if err != nil {
		return err
	}
	bidders := carrierGroup.Available("transport")
	conv, err := buyer.Start(ctx, agent.StartRequest{Policy: "fipa-contract-net", Role: "Initiator", Peers: map[string][]string{"Participant": bidders}, Data: map[string]any{"crates": 40}})
	if err != nil {
		return err
	}
	outcome, err := buyer.Wait(ctx, conv)
	if err != nil {
		return err
	}
	if err := bus.Settle(ctx); err != nil {
		return err
	}
	st, err := buyer.Status(ctx, conv)
	if err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	fmt.Fprintf(out, "conversation %s ended: %s\n", conv, outcome)
	for _, b := range bidders {
		fmt.Fprintf(out, "  %-8s %s\n", b, st.States[b])
	}
	if cfg.mermaid {
		writeMermaid(out, "buyer", bidders, log)
	}
	return nil
}

// carrierLogic bids with the carrier's price formula and, once awarded,
// delivers.
func carrierLogic(name string, price *decision.Expression) func(context.Context, *decision.Request) (decision.Answer, error) {
	return func(_ context.Context, req *decision.Request) (decision.Answer, error) {
		switch req.Point {
		case "solicited":
			v, err := price.Eval(&decision.Env{Content: req.Content})
			if err != nil {
				return decision.Answer{}, err
			}
			if v == nil {
				return decision.Answer{Choice: "refuse", Content: map[string]any{"reason": "too many crates"}}, nil
			}
			return decision.Answer{Choice: "propose", Content: map[string]any{"price": v}}, nil
		case "awarded":
			return decision.Answer{Choice: "inform-result", Content: map[string]any{"result": name + " delivered the crates"}}, nil
		}
		return decision.Answer{}, nil
	}
}

// award accepts the cheapest bids and rejects the others.
func award(req *decision.Request) decision.Answer {
	sessions := slices.Clone(req.Sessions)
	sort.SliceStable(sessions, func(i, j int) bool {
		pi, _ := sessions[i].Content["price"].(float64)
		pj, _ := sessions[j].Content["price"].(float64)
		return pi < pj
	})
	a := decision.Answer{Sessions: map[string]decision.SessionAnswer{}}
	for i, s := range sessions {
		if i < accepted {
			a.Sessions[s.Peer] = decision.SessionAnswer{Choice: "accept-proposal", ReplyBy: time.Now().Add(5 * time.Second)}
		} else {
			a.Sessions[s.Peer] = decision.SessionAnswer{Choice: "reject-proposal", Content: map[string]any{"reason": "a cheaper bid won"}}
		}
	}
	return a
}

// writeMermaid prints the messages as a Mermaid sequence diagram.
func writeMermaid(out io.Writer, initiator string, participants []string, log []*forms.Message) {
	fmt.Fprintln(out, "\nsequenceDiagram")
	fmt.Fprintf(out, "    participant %s\n", initiator)
	for _, p := range participants {
		fmt.Fprintf(out, "    participant %s\n", p)
	}
	for _, m := range log {
		label := m.Performative
		if price, ok := m.Content["price"]; ok {
			label += fmt.Sprintf(" (%v)", price)
		}
		for _, r := range m.Receivers {
			fmt.Fprintf(out, "    %s->>%s: %s\n", m.Sender, r, label)
		}
	}
}

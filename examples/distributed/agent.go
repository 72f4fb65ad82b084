package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	natsio "github.com/nats-io/nats.go"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/policies"
	"github.com/parleyhq/parley/store/natskv"
	natstransport "github.com/parleyhq/parley/transport/nats"
)

// leaseTTL is how long a replacement waits for a dead carrier's lease.
const leaseTTL = 2 * time.Second

// child runs the agent its environment names, and reports on stdout:
// "ready" once it consumes, a carrier "awarded <id>" for each job it
// wins, a replacement "resumed <n>" and "finished <n>", the buyer
// "started" and "ended <n> <outcomes>".
func child() int {
	n, _ := strconv.Atoi(os.Getenv(envConvs))
	if err := runAgent(context.Background(), os.Getenv(envAgent), os.Getenv(envURL), os.Getenv(envRun), n); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", os.Getenv(envAgent), err)
		return 1
	}
	return 0
}

func runAgent(ctx context.Context, name, url, runID string, conversations int) error {
	nc, err := natsio.Connect(url, natsio.MaxReconnects(-1), natsio.ReconnectWait(100*time.Millisecond))
	if err != nil {
		return err
	}
	defer nc.Close()
	n := names(runID)
	st, err := natskv.Open(ctx, nc, name, natskv.WithBucket(n.Bucket), natskv.WithLeaseTTL(leaseTTL), natskv.WithWait())
	if err != nil {
		return err
	}
	defer st.Close()
	stored, err := st.Load()
	if err != nil {
		return err
	}
	var open []string
	for _, c := range stored.Conversations {
		if c.Ended.IsZero() {
			open = append(open, c.ID)
		}
	}
	tr, err := natstransport.New(ctx, nc, name, natstransport.WithPrefix(n.Prefix), natstransport.WithStream(n.Stream),
		natstransport.WithFence(st.Lost()), natstransport.WithLimits(natstransport.Limits{AckWait: leaseTTL, Redeliver: 200 * time.Millisecond}))
	if err != nil {
		return err
	}
	defer tr.Close()
	opts := []agent.Option{agent.WithStore(st), agent.WithTransport(tr), agent.WithLogger(slog.New(slog.DiscardHandler)),
		agent.WithLimits(agent.Limits{RetryInterval: time.Second, DecisionTimeout: 2 * time.Minute})}
	var m *agent.Manager
	var say sync.Mutex
	report := func(format string, args ...any) {
		say.Lock()
		defer say.Unlock()
		fmt.Printf(format+"\n", args...)
	}
	if name == buyerName {
		opts = append(opts, agent.WithDecider(decision.Func(buyerLogic)))
	} else {
		// A replacement delivers at once; carrier-1 the first time takes
		// longer than it lives.
		deliverIn := 300 * time.Millisecond
		if name == victim && len(open) == 0 {
			deliverIn = time.Minute
		} else if len(open) > 0 {
			deliverIn = 100 * time.Millisecond
		}
		price, _ := strconv.Atoi(strings.TrimPrefix(name, "carrier-"))
		opts = append(opts, agent.WithDecider(decision.Func(func(_ context.Context, req *decision.Request) (decision.Answer, error) {
			if req.Point == "solicited" {
				crates, _ := req.Content["crates"].(float64)
				return decision.Answer{Choice: "propose", Content: map[string]any{"price": crates * float64(price)}}, nil
			}
			return decision.Answer{}, decision.ErrNoDecision
		})), agent.WithAsyncDecisions(func(r agent.DecisionRequest) {
			if r.Request.Point != "awarded" {
				return
			}
			report("awarded %s", r.Conversation)
			time.AfterFunc(deliverIn, func() {
				_ = m.Answer(r.Conversation, r.Ticket, decision.Answer{Choice: "inform-result", Content: map[string]any{"result": name + " delivered"}})
			})
		}))
	}
	m, err = agent.NewManager(name, opts...)
	if err != nil {
		return err
	}
	defer m.Close(context.Background())
	p, err := policies.Load("fipa-contract-net")
	if err != nil {
		return err
	}
	if err := m.Register(p); err != nil {
		return err
	}
	if err := m.Resume(ctx); err != nil {
		return err
	}
	if err := tr.Attach(ctx, m); err != nil {
		return err
	}
	report("ready")
	if name == buyerName {
		return buy(ctx, m, conversations, report)
	}
	if len(open) > 0 {
		report("resumed %d", len(open))
		finished := 0
		for _, id := range open {
			wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
			if _, err := m.Wait(wctx, id); err == nil {
				finished++
			}
			cancel()
		}
		report("finished %d", finished)
	}
	select {
	case <-st.Lost():
		return natskv.ErrFenced
	case <-ctx.Done():
		return ctx.Err()
	}
}

// buy runs the buyer's conversations and reports how they ended.
func buy(ctx context.Context, m *agent.Manager, conversations int, report func(string, ...any)) error {
	var ids []string
	for i := range conversations {
		id, err := m.Start(ctx, agent.StartRequest{Policy: "fipa-contract-net", Role: "Initiator",
			Peers: map[string][]string{"Participant": carriers}, Data: map[string]any{"crates": 10 + i}})
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	report("started")
	outcomes := map[string]int{}
	delivered := 0
	for _, id := range ids {
		wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		out, err := m.Wait(wctx, id)
		cancel()
		if err != nil {
			return fmt.Errorf("conversation %s: %w", id, err)
		}
		outcomes[out]++
		if s, err := m.Status(ctx, id); err == nil && s.States[victim] == "result" {
			delivered++
		}
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(outcomes)) {
		parts = append(parts, fmt.Sprintf("%d ended %s", outcomes[k], k))
	}
	report("ended %d %s; %s delivered in %d of %d", conversations, strings.Join(parts, ", "), victim, delivered, conversations)
	<-ctx.Done()
	return nil
}

// buyerLogic calls for bids with a deadline and accepts the two cheapest.
func buyerLogic(_ context.Context, req *decision.Request) (decision.Answer, error) {
	switch req.Point {
	case "start":
		return decision.Answer{Choice: "cfp", Content: req.Content, ReplyBy: time.Now().Add(20 * time.Second)}, nil
	case "proposed":
		sessions := slices.Clone(req.Sessions)
		sort.SliceStable(sessions, func(i, j int) bool {
			pi, _ := sessions[i].Content["price"].(float64)
			pj, _ := sessions[j].Content["price"].(float64)
			return pi < pj
		})
		a := decision.Answer{Sessions: map[string]decision.SessionAnswer{}}
		for i, s := range sessions {
			if i < 2 {
				a.Sessions[s.Peer] = decision.SessionAnswer{Choice: "accept-proposal", ReplyBy: time.Now().Add(time.Minute)}
			} else {
				a.Sessions[s.Peer] = decision.SessionAnswer{Choice: "reject-proposal", Content: map[string]any{"reason": "a cheaper bid won"}}
			}
		}
		return a, nil
	}
	return decision.Answer{}, decision.ErrNoDecision
}

// Command booking runs the room-booking policy of docs/guide.md between
// in-process agents: a planner asks four venues for a room for 40 people
// within a budget of 500; three offer (one over the budget), one declines.
// The planner's own decision logic leaves the join to the policy's decide
// expression, which books the cheapest offer within the budget and passes
// on the others; the booked venue confirms, and the planner pays the
// deposit under fipa-request, run as a child policy.
//
//	go run ./examples/booking
package main

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/policies"
	"github.com/parleyhq/parley/policy"
)

// roomBooking is the policy, as docs/guide.md shows it (a test keeps the
// two the same).
//
//go:embed room-booking.yaml
var roomBooking []byte

// venues are the venues and their prices; 0 declines.
var venues = []struct {
	name  string
	price float64
}{
	{"barn", 0},
	{"grand-hall", 480},
	{"loft", 450},
	{"palace", 520},
}

func main() {
	if err := run(context.Background(), os.Stdout, agent.RealClock()); err != nil {
		fmt.Fprintln(os.Stderr, "booking:", err)
		os.Exit(1)
	}
}

// result is how the conversation ended, for the planner and each venue.
type result struct {
	planner string
	venues  map[string]string
	errors  []string // protocol errors any agent reported
}

// loadBooking loads and checks the embedded policy.
func loadBooking() (*policy.Policy, error) {
	p, ds := policy.LoadYAML("room-booking.yaml", roomBooking)
	if err := ds.Err(); err != nil {
		return nil, err
	}
	if err := policy.CheckPolicy(p, policy.WithPolicies(policies.Resolve)).Err(); err != nil {
		return nil, err
	}
	return p, nil
}

func run(ctx context.Context, out io.Writer, clock agent.Clock) error {
	r, err := book(ctx, out, clock)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "planner: %s\n", r.planner)
	for _, v := range venues {
		fmt.Fprintf(out, "  %-10s %s\n", v.name, r.venues[v.name])
	}
	if len(r.errors) > 0 {
		return fmt.Errorf("protocol errors: %s", strings.Join(r.errors, "; "))
	}
	return nil
}

// book runs one booking and prints every message as it is sent.
func book(ctx context.Context, out io.Writer, clock agent.Clock) (result, error) {
	booking, err := loadBooking()
	if err != nil {
		return result{}, err
	}
	request, err := policies.Load("fipa-request")
	if err != nil {
		return result{}, err
	}
	bus := agent.NewBus()
	var (
		mu   sync.Mutex
		errs []string
	)
	observe := func(o agent.Observation) {
		mu.Lock()
		defer mu.Unlock()
		switch e := o.Event.(type) {
		case *engine.MessageEvent:
			if !o.Input {
				fmt.Fprintf(out, "%-10s -> %-32s %-15s %v\n", e.Message.Sender, strings.Join(e.Message.Receivers, ","), e.Message.Performative, e.Message.Content)
			}
		case *engine.ProtocolErrorEvent:
			errs = append(errs, o.Agent+": "+string(e.Code)+" "+e.Reason)
		}
	}
	var managers []*agent.Manager
	defer func() {
		for _, m := range managers {
			m.Close(context.Background())
		}
	}()
	newAgent := func(name string, d decision.Func) (*agent.Manager, error) {
		m, err := agent.NewManager(name, agent.WithClock(clock), agent.WithLogger(slog.New(slog.DiscardHandler)),
			agent.WithDecider(d), agent.WithObserver(observe), agent.WithResolver(policies.Resolve))
		if err != nil {
			return nil, err
		}
		managers = append(managers, m)
		for _, p := range []*policy.Policy{booking, request} {
			if err := m.Register(p); err != nil {
				return nil, err
			}
		}
		return m, bus.Connect(m)
	}
	var names []string
	for _, v := range venues {
		if _, err := newAgent(v.name, venueLogic(v.price)); err != nil {
			return result{}, err
		}
		names = append(names, v.name)
	}
	planner, err := newAgent("planner", func(_ context.Context, req *decision.Request) (decision.Answer, error) {
		switch req.Policy + ":" + req.Point {
		case "room-booking:start":
			return decision.Answer{Choice: "ask", Content: map[string]any{"seats": 40, "budget": 500}, ReplyBy: clock.Now().Add(30 * time.Second)}, nil
		case "fipa-request:start":
			return decision.Answer{Choice: "request", Content: map[string]any{"action": "pay the deposit", "amount": 90}}, nil
		}
		return decision.Answer{}, decision.ErrNoDecision // the join: the policy's decide
	})
	if err != nil {
		return result{}, err
	}
	conv, err := planner.Start(ctx, agent.StartRequest{Policy: "room-booking", Role: "Planner", Peers: map[string][]string{"Venue": names}})
	if err != nil {
		return result{}, err
	}
	r := result{venues: map[string]string{}}
	if r.planner, err = planner.Wait(ctx, conv); err != nil {
		return result{}, err
	}
	for i, m := range managers[:len(venues)] {
		if r.venues[venues[i].name], err = m.Wait(ctx, conv); err != nil {
			return result{}, err
		}
	}
	if err := bus.Settle(ctx); err != nil {
		return result{}, err
	}
	mu.Lock()
	defer mu.Unlock()
	r.errors = slices.Clone(errs)
	return r, nil
}

// venueLogic offers the room at price (or declines for 0), confirms a
// booking and takes the deposit.
func venueLogic(price float64) decision.Func {
	return func(_ context.Context, req *decision.Request) (decision.Answer, error) {
		switch req.Policy + ":" + req.Point {
		case "room-booking:asked":
			if price == 0 {
				return decision.Answer{Choice: "decline", Content: map[string]any{"reason": "fully booked"}}, nil
			}
			return decision.Answer{Choice: "offer", Content: map[string]any{"price": price}}, nil
		case "room-booking:booked":
			return decision.Answer{Choice: "confirm", Content: map[string]any{"booking": "B-17"}}, nil
		case "fipa-request:requested":
			return decision.Answer{Choice: "inform-done", Content: map[string]any{"done": true}}, nil
		}
		return decision.Answer{}, decision.ErrNoDecision
	}
}

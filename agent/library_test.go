package agent_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/policies"
)

// library is an agent of the world that also speaks the named shipped
// policies of the protocol library.
func (w *world) library(name string, d decision.Decider, names []string, opts ...agent.Option) *agent.Manager {
	m := w.agent(name, d, opts...)
	for _, n := range names {
		p, err := policies.Load(n)
		require.NoError(w.t, err)
		require.NoError(w.t, m.Register(p))
	}
	return m
}

// outcomes waits for conversation conv to end at each agent and returns
// each agent's outcome.
func outcomes(t *testing.T, conv string, agents map[string]*agent.Manager) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out := map[string]string{}
	for name, m := range agents {
		outcome, err := m.Wait(ctx, conv)
		require.NoError(t, err, "%s", name)
		out[name] = outcome
	}
	return out
}

func TestLibraryIteratedContractNet(t *testing.T) {
	const name = "fipa-iterated-contract-net"
	// Each printer first asks its list price, then, when a revised cfp
	// caps the price, bids its floor if that is under the cap.
	printer := func(list, floor float64) decision.Decider {
		return decision.Func(func(_ context.Context, req *decision.Request) (decision.Answer, error) {
			switch req.Point {
			case "solicited":
				limit, revised := req.Content["max_price"].(float64)
				switch {
				case list == 0 || revised && floor > limit:
					return decision.Answer{Choice: "refuse", Content: map[string]any{"reason": "not at that price"}}, nil
				case revised:
					return decision.Answer{Choice: "propose", Content: map[string]any{"price": floor}}, nil
				}
				return decision.Answer{Choice: "propose", Content: map[string]any{"price": list}}, nil
			case "awarded":
				return decision.Answer{Choice: "inform-result", Content: map[string]any{"result": "printed"}}, nil
			}
			return decision.Answer{}, decision.ErrNoDecision
		})
	}
	// The buyer accepts the cheapest proposal within its budget of 100,
	// and otherwise calls again, capping the price at 100.
	var (
		mu     sync.Mutex
		rounds []int // the number of proposals at each join
	)
	buyer := decision.Func(func(_ context.Context, req *decision.Request) (decision.Answer, error) {
		switch req.Point {
		case "start":
			return decision.Answer{Choice: "cfp", Content: map[string]any{"task": "print 500 flyers"}, ReplyBy: mt0.Add(10 * time.Second)}, nil
		case "proposed":
			mu.Lock()
			rounds = append(rounds, len(req.Sessions))
			mu.Unlock()
			best, lowest := "", 100.0
			for _, s := range req.Sessions {
				if p, _ := s.Content["price"].(float64); p <= lowest {
					best, lowest = s.Peer, p
				}
			}
			a := decision.Answer{Sessions: map[string]decision.SessionAnswer{}}
			for _, s := range req.Sessions {
				switch {
				case best == "":
					a.Sessions[s.Peer] = decision.SessionAnswer{Choice: "cfp", Content: map[string]any{"task": "print 500 flyers", "max_price": 100.0}, ReplyBy: mt0.Add(20 * time.Second)}
				case s.Peer == best:
					a.Sessions[s.Peer] = decision.SessionAnswer{Choice: "accept-proposal"}
				default:
					a.Sessions[s.Peer] = decision.SessionAnswer{Choice: "reject-proposal", Content: map[string]any{"reason": "dearer"}}
				}
			}
			return a, nil
		}
		return decision.Answer{}, decision.ErrNoDecision
	})

	w := newWorld(t)
	names := []string{name}
	agents := map[string]*agent.Manager{
		"buyer": w.library("buyer", buyer, names),
		"p1":    w.library("p1", printer(120, 95), names),
		"p2":    w.library("p2", printer(110, 105), names),
		"p3":    w.library("p3", printer(0, 0), names),
	}
	conv, err := agents["buyer"].Start(context.Background(), agent.StartRequest{Policy: name, Role: "Initiator", Peers: map[string][]string{"Participant": {"p1", "p2", "p3"}}})
	require.NoError(t, err)
	w.settle()
	assert.Equal(t, map[string]string{"buyer": "refused=2,result=1", "p1": "result", "p2": "refused", "p3": "refused"}, outcomes(t, conv, agents))
	mu.Lock()
	assert.Equal(t, []int{2, 1}, rounds, "two proposals in the first round, one in the second")
	mu.Unlock()
	assert.Empty(t, w.rec.codes())
	w.rec.mu.Lock()
	defer w.rec.mu.Unlock()
	assert.Contains(t, w.rec.commits, "buyer task released", "the revised cfp releases the first proposals")
	assert.Contains(t, w.rec.commits, "buyer task discharged")
}

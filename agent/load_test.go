package agent_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/policies"
)

// pair is alice (Initiator) and bob (Participant) of fipa-request on a
// bus, with the real clock, each keeping ended conversations for
// retention.
type pair struct {
	bus        *agent.Bus
	alice, bob *agent.Manager
	ended      atomic.Int64
	wrong      atomic.Int64
	errs       atomic.Int64
}

func newPair(tb testing.TB, retention time.Duration, bobOpts ...agent.Option) *pair {
	p, err := policies.Load("fipa-request")
	require.NoError(tb, err)
	pr := &pair{bus: agent.NewBus()}
	count := agent.WithObserver(func(o agent.Observation) {
		switch e := o.Event.(type) {
		case *engine.CPDoneEvent:
			if !o.Input {
				if e.Outcome != "result" {
					pr.wrong.Add(1)
				}
				pr.ended.Add(1)
			}
		case *engine.ProtocolErrorEvent:
			pr.errs.Add(1)
		}
	})
	pr.alice, err = agent.NewManager("alice", agent.WithLogger(quiet), agent.WithRetention(retention), count,
		agent.WithDecider(script{"start": {Choice: "request"}}))
	require.NoError(tb, err)
	opts := append([]agent.Option{agent.WithLogger(quiet), agent.WithRetention(retention), count, agent.WithDecider(script{
		"requested": {Choice: "agree"}, "agreed": {Choice: "inform-result", Content: map[string]any{"result": 1}},
	})}, bobOpts...)
	pr.bob, err = agent.NewManager("bob", opts...)
	require.NoError(tb, err)
	for _, m := range []*agent.Manager{pr.alice, pr.bob} {
		require.NoError(tb, m.Register(p))
		require.NoError(tb, pr.bus.Connect(m))
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		assert.NoError(tb, pr.alice.Close(ctx))
		assert.NoError(tb, pr.bob.Close(ctx))
	})
	return pr
}

// startMany starts n conversations from g goroutines and returns their ids.
func startMany(ctx context.Context, tb testing.TB, m *agent.Manager, n, g int) []string {
	ids := make([]string, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	for range g {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				id, err := m.Start(ctx, agent.StartRequest{Policy: "fipa-request", Role: "Initiator", Peers: map[string][]string{"Participant": {"bob"}}})
				if err != nil {
					failed.Store(&err)
					return
				}
				ids[i] = id
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		tb.Fatal(*err)
	}
	return ids
}

// TestThousandConcurrentConversations runs 1,000 FIPA Request
// conversations at once between two managers and checks that every one
// ends with the result, with no protocol error, under distinct ids.
func TestThousandConcurrentConversations(t *testing.T) {
	const n = 1000
	// Every conversation is waited for after all have started: one that
	// ended more than a retention before its Wait would be gone (a second
	// was too short for a loaded machine).
	pr := newPair(t, time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ids := startMany(ctx, t, pr.alice, n, 8)
	for _, id := range ids {
		outcome, err := pr.alice.Wait(ctx, id)
		require.NoError(t, err)
		require.Equal(t, "result", outcome, id)
	}
	require.NoError(t, pr.bus.Settle(ctx))
	assert.Equal(t, int64(2*n), pr.ended.Load(), "both sides of every conversation ended")
	assert.Zero(t, pr.wrong.Load(), "conversations with another outcome")
	assert.Zero(t, pr.errs.Load(), "protocol errors")
	seen := map[string]bool{}
	for _, id := range ids {
		assert.False(t, seen[id], "id %s repeated", id)
		seen[id] = true
	}
}

// BenchmarkRequestConversations measures whole FIPA Request
// conversations between two managers on the bus, started from 8
// goroutines: conversations per second and the cost per message
// (request, agree, inform).
func BenchmarkRequestConversations(b *testing.B) {
	pr := newPair(b, time.Second) // a short retention keeps the heap to the conversations in flight
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	ids := startMany(ctx, b, pr.alice, b.N, 8)
	for _, id := range ids {
		if _, err := pr.alice.Wait(ctx, id); err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "conversations/s")
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(3*b.N), "ns/message")
}

// BenchmarkLiveConversations holds 100,000 FIPA Request conversations
// alive at once (bob hands every decision to the application and holds
// it) and reports the memory each takes, both agents' managers, handlers
// and timers counted.
func BenchmarkLiveConversations(b *testing.B) {
	const n = 100_000
	for range b.N {
		var held sync.Mutex
		var pending []agent.DecisionRequest
		pr := newPair(b, time.Second, agent.WithDecider(nil), agent.WithAsyncDecisions(func(r agent.DecisionRequest) {
			held.Lock()
			pending = append(pending, r)
			held.Unlock()
		}), agent.WithRetention(0), agent.WithLimits(agent.Limits{MaxPerPeer: n})) // alice opens them all
		ctx := context.Background()
		before := heapInUse()
		startMany(ctx, b, pr.alice, n, 8)
		if err := pr.bus.Settle(ctx); err != nil {
			b.Fatal(err)
		}
		after := heapInUse()
		held.Lock()
		if len(pending) != n {
			b.Fatalf("%d decisions pending, want %d", len(pending), n)
		}
		held.Unlock()
		b.ReportMetric(float64(after-before)/n, "B/conversation")
		runtime.KeepAlive(pending)
	}
}

func heapInUse() uint64 {
	var ms runtime.MemStats
	for range 2 {
		runtime.GC()
	}
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

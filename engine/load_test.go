package engine_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/policies"
)

// TestLoad runs many concurrent FIPA Request conversations through the
// in-process bus and reports conversations per second, memory per live
// conversation, and the manager's cost per message against the bare
// handler's, measured in the same run. It runs 100,000 conversations
// (10,000 under the race detector) and is skipped with -short.
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test: skipped with -short")
	}
	n := 100_000
	if raceEnabled {
		n = 10_000
	}
	p, err := policies.Load("fipa-request")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// Memory: n conversations alive at once (bob holds every decision).
	{
		bus := engine.NewBus()
		var held sync.Mutex
		var pending []engine.DecisionRequest
		alice := engine.NewManager("alice", engine.WithLogger(quiet), engine.WithDecider(script{"start": {Choice: "request"}}))
		bob := engine.NewManager("bob", engine.WithLogger(quiet), engine.WithAsyncDecisions(func(r engine.DecisionRequest) {
			held.Lock()
			pending = append(pending, r)
			held.Unlock()
		}))
		for _, m := range []*engine.Manager{alice, bob} {
			require.NoError(t, m.Register(p))
			bus.Connect(m)
		}
		before := heapInUse()
		startMany(ctx, t, alice, n, 8)
		require.NoError(t, bus.Settle(ctx))
		after := heapInUse()
		held.Lock()
		require.Len(t, pending, n)
		held.Unlock()
		perConv := float64(after-before) / float64(n)
		t.Logf("memory: %d live conversations hold %.0f B each (both agents' managers, handlers, timers)", n, perConv)
		alice.Close()
		bob.Close()
		runtime.KeepAlive(pending)
	}

	// Throughput, and the manager's cost per message against the bare
	// handler's, in the same run.
	bare := bareRequestConversations(t, n)
	bus := engine.NewBus()
	var ended atomic.Int64
	allEnded := make(chan struct{})
	countEnds := engine.WithObserver(func(o engine.Observation) {
		if done, ok := o.Event.(*engine.CPDoneEvent); ok && !o.Input {
			if done.Outcome != "result" {
				t.Errorf("%s ended %s", o.Conversation, done.Outcome)
			}
			if ended.Add(1) == int64(n) {
				close(allEnded)
			}
		}
	})
	// A short retention keeps the heap to the conversations in flight.
	alice := engine.NewManager("alice", engine.WithLogger(quiet), engine.WithDecider(script{"start": {Choice: "request"}}), engine.WithRetention(time.Second), countEnds)
	bob := engine.NewManager("bob", engine.WithLogger(quiet), engine.WithDecider(script{
		"requested": {Choice: "agree"}, "agreed": {Choice: "inform-result", Content: map[string]any{"result": 1}},
	}), engine.WithRetention(time.Second))
	defer alice.Close()
	defer bob.Close()
	for _, m := range []*engine.Manager{alice, bob} {
		require.NoError(t, m.Register(p))
		bus.Connect(m)
	}
	start := time.Now()
	startMany(ctx, t, alice, n, 8)
	select {
	case <-allEnded:
	case <-ctx.Done():
		t.Fatalf("only %d of %d conversations ended", ended.Load(), n)
	}
	elapsed := time.Since(start)
	const messages = 3 // request, agree, inform
	perMsg := elapsed / time.Duration(n*messages)
	barePerMsg := bare / time.Duration(n*messages)
	t.Logf("throughput: %d conversations in %v: %.0f conversations/s", n, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds())
	t.Logf("per message: manager %v, bare handler %v: %.2fx", perMsg, barePerMsg, float64(perMsg)/float64(barePerMsg))
}

// startMany starts n conversations from g goroutines and returns their ids.
func startMany(ctx context.Context, t *testing.T, m *engine.Manager, n, g int) []string {
	ids := make([]string, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	for range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				id, err := m.Start(ctx, "fipa-request", "Initiator", map[string][]string{"Participant": {"bob"}}, nil)
				if err != nil {
					failed.Store(&err)
					return
				}
				ids[i] = id
			}
		}()
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		t.Fatal(*err)
	}
	return ids
}

// bareRequestConversations runs n Request conversations with bare
// handlers (the same decisions, no manager) and returns the time taken.
func bareRequestConversations(t *testing.T, n int) time.Duration {
	p, err := policies.Load("fipa-request")
	require.NoError(t, err)
	ini, _ := engine.Compile(p, "Initiator")
	par, _ := engine.Compile(p, "Participant")
	var q engine.Queue
	start := time.Now()
	for i := range n {
		requestConversation(t, ini, par, &q, fmt.Sprint("c", i))
	}
	return time.Since(start)
}

func heapInUse() uint64 {
	var ms runtime.MemStats
	for range 2 {
		runtime.GC()
	}
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

var _ = decision.Answer{}

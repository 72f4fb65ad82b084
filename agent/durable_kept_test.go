package agent_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/policies"
)

// recordKeepingStore keeps the conversations every commit puts as
// values, with a copy of their snapshot and applied ids taken as the
// commit is made, and stores nothing else.
type recordKeepingStore struct {
	mu     sync.Mutex
	kept   []agent.StoredConversation
	copies []agent.StoredConversation
}

func (s *recordKeepingStore) Load() (*agent.Stored, error) { return &agent.Stored{}, nil }

func (s *recordKeepingStore) Commit(b *agent.Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sc := range b.Put {
		s.kept = append(s.kept, sc)
		s.copies = append(s.copies, agent.StoredConversation{Handler: slices.Clone(sc.Handler), Applied: slices.Clone(sc.Applied)})
	}
	return nil
}

func (s *recordKeepingStore) Close() error { return nil }

// newRequestPair connects alice and bob, with stores, over a bus, both
// running fipa-request: alice starts with the request, bob agrees and
// informs. The end of t closes them.
func newRequestPair(t *testing.T, ctx context.Context, stores map[string]agent.Store) (*agent.Bus, map[string]*agent.Manager) {
	t.Helper()
	p, err := policies.Load("fipa-request")
	require.NoError(t, err)
	bus := agent.NewBus()
	deciders := map[string]decision.Func{
		"alice": func(_ context.Context, req *decision.Request) (decision.Answer, error) {
			if req.Point == "start" {
				return decision.Answer{Choice: "request", Content: req.Content, ReplyBy: time.Now().Add(time.Minute)}, nil
			}
			return decision.Answer{}, decision.ErrNoDecision
		},
		"bob": func(_ context.Context, req *decision.Request) (decision.Answer, error) {
			switch req.Point {
			case "requested":
				return decision.Answer{Choice: "agree"}, nil
			case "agreed":
				return decision.Answer{Choice: "inform-result", Content: map[string]any{"result": "done"}}, nil
			}
			return decision.Answer{}, decision.ErrNoDecision
		},
	}
	managers := map[string]*agent.Manager{}
	for _, name := range []string{"alice", "bob"} {
		m, err := agent.NewManager(name, agent.WithLogger(nil), agent.WithDecider(deciders[name]), agent.WithStore(stores[name]))
		require.NoError(t, err)
		require.NoError(t, m.Register(p))
		require.NoError(t, m.Resume(ctx))
		require.NoError(t, bus.Connect(m))
		managers[name] = m
		t.Cleanup(func() {
			cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			assert.NoError(t, m.Close(cctx))
		})
	}
	return bus, managers
}

// TestKeptRecordsStayAsCommitted: a store may keep the conversations a
// commit hands it; the snapshots and applied ids it kept must not change
// when the manager commits those conversations again, though the
// manager adds applied ids to a sorted list.
func TestKeptRecordsStayAsCommitted(t *testing.T) {
	stores := map[string]*recordKeepingStore{"alice": {}, "bob": {}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bus, managers := newRequestPair(t, ctx, map[string]agent.Store{"alice": stores["alice"], "bob": stores["bob"]})
	const conversations = 200 // enough snapshots to fill several buffers
	var wg sync.WaitGroup
	errs := make([]error, conversations)
	for i := range conversations {
		wg.Go(func() {
			conv, err := managers["alice"].Start(ctx, agent.StartRequest{Policy: "fipa-request", Role: "Initiator",
				Peers: map[string][]string{"Participant": {"bob"}}, Data: map[string]any{"action": "x"}})
			if err == nil {
				_, err = managers["alice"].Wait(ctx, conv)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, bus.Settle(ctx))

	for name, s := range stores {
		s.mu.Lock()
		require.Greater(t, len(s.kept), conversations, name)
		applied := 0
		for i, sc := range s.kept {
			assert.Equal(t, s.copies[i].Handler, sc.Handler, "%s's record %d of %s", name, i, sc.ID)
			assert.Equal(t, s.copies[i].Applied, sc.Applied, "%s's record %d of %s", name, i, sc.ID)
			assert.True(t, slices.IsSorted(sc.Applied), "%s's record %d of %s", name, i, sc.ID)
			applied += len(sc.Applied)
		}
		assert.Positive(t, applied, name)
		s.mu.Unlock()
	}
}

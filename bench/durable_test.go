package bench

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/policies"
	"github.com/parleyhq/parley/store/bolt"
)

// The cost of durability: the same FIPA Request conversations between
// alice and bob, two agent.Managers on an agent.Bus, with the deciders of
// BenchmarkManagerRequest, 1,000 conversations in flight at once, run
// three ways:
//
//   - memory: no store;
//   - bolt: each manager with a store/bolt file (in b.TempDir()), synced
//     to disk at every commit (the default);
//   - nosync: the same with bolt.WithoutSync().
//
// One op is one batch of each, in turn: alice starts 1,000 conversations
// at once (a goroutine each: Start, then Wait), and the batch is over when
// every conversation has ended and the bus has settled (bob's last
// commits and the acknowledgements included). Each batch is timed on its
// own, so that the three ways of one op share the load of the machine at
// that moment; the op rotates which way goes first.

// durableInFlight is how many conversations are in flight at once.
const durableInFlight = 1000

// Names of the three ways, as the metrics name them.
const (
	wayMemory = "memory"
	wayBolt   = "bolt"
	wayNoSync = "nosync"
)

// durableWay is one way of running the batches: its managers, and the
// time its batches took.
type durableWay struct {
	name    string
	ms      *managers
	elapsed time.Duration
}

// durableManagers are alice and bob on a bus, each with the store at its
// path when paths is not nil.
type durableManagers struct {
	*managers
	paths []string
	close func()
}

// newDurableManagers connects alice and bob over a bus as newManagers
// does, each with a store in dir when dir is not empty (bolt options
// opts). Its close closes the managers and then their stores, once; the
// end of tb calls it too.
func newDurableManagers(tb testing.TB, dir string, opts ...bolt.Option) *durableManagers {
	tb.Helper()
	p, err := policies.Load("fipa-request")
	require.NoError(tb, err)
	dm := &durableManagers{managers: &managers{bus: agent.NewBus()}}
	var closers []func()
	for _, a := range []struct {
		name string
		dec  answers
		m    **agent.Manager
	}{{"alice", aliceDecides, &dm.alice}, {"bob", bobDecides, &dm.bob}} {
		mopts := []agent.Option{agent.WithLogger(slog.New(slog.DiscardHandler)), agent.WithDecider(a.dec)}
		var st *bolt.Store
		if dir != "" {
			path := filepath.Join(dir, a.name+".db")
			st, err = bolt.Open(path, opts...)
			require.NoError(tb, err)
			dm.paths = append(dm.paths, path)
			mopts = append(mopts, agent.WithStore(st))
		}
		m, err := agent.NewManager(a.name, mopts...)
		require.NoError(tb, err)
		*a.m = m
		require.NoError(tb, m.Register(p))
		require.NoError(tb, dm.bus.Connect(m))
		closers = append(closers, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			assert.NoError(tb, m.Close(ctx))
			if st != nil {
				assert.NoError(tb, st.Close())
			}
		})
	}
	dm.close = sync.OnceFunc(func() {
		for _, c := range closers {
			c()
		}
	})
	tb.Cleanup(dm.close)
	return dm
}

// batch runs n conversations at once, each from Start to its result, and
// waits for the bus to settle.
func (ms *managers) batch(ctx context.Context, n int) error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = ms.conversation(ctx) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return ms.bus.Settle(ctx)
}

// BenchmarkDurableRequest reports, per message, what a batch of 1,000
// Request conversations in flight costs in memory, with a bolt store
// synced at every commit and with one that is not synced, and the ratios
// of the stores' costs to memory's. Its ns/op is the sum of the three
// batches.
func BenchmarkDurableRequest(b *testing.B) {
	ways := []*durableWay{
		{name: wayMemory, ms: newDurableManagers(b, "").managers},
		{name: wayBolt, ms: newDurableManagers(b, b.TempDir()).managers},
		{name: wayNoSync, ms: newDurableManagers(b, b.TempDir(), bolt.WithoutSync()).managers},
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		for k := range ways {
			w := ways[(i+k)%len(ways)]
			start := time.Now()
			if err := w.ms.batch(ctx, durableInFlight); err != nil {
				b.Fatal(err)
			}
			w.elapsed += time.Since(start)
		}
	}
	messages := float64(requestMessages * durableInFlight * b.N)
	perMessage := map[string]float64{}
	for _, w := range ways {
		perMessage[w.name] = float64(w.elapsed.Nanoseconds()) / messages
		b.ReportMetric(perMessage[w.name], "ns/msg-"+w.name)
	}
	b.ReportMetric(perMessage[wayBolt]/perMessage[wayMemory], wayBolt+"/"+wayMemory)
	b.ReportMetric(perMessage[wayNoSync]/perMessage[wayMemory], wayNoSync+"/"+wayMemory)
}

// TestDurableRequestBatches: a batch ends every conversation in result in
// each of the three ways, and with a store, once the managers are
// closed, each file holds every conversation, ended in result, and no
// message left unacknowledged.
func TestDurableRequestBatches(t *testing.T) {
	tests := []struct {
		name  string
		store bool
		opts  []bolt.Option
	}{
		{name: wayMemory},
		{name: wayBolt, store: true},
		{name: wayNoSync, store: true, opts: []bolt.Option{bolt.WithoutSync()}},
	}
	const n = 50
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, files := "", 0
			if tt.store {
				dir, files = t.TempDir(), 2
			}
			dm := newDurableManagers(t, dir, tt.opts...)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			require.NoError(t, dm.batch(ctx, n))
			assert.Equal(t, n, dm.alice.Len())
			assert.Equal(t, n, dm.bob.Len())
			dm.close()
			require.Len(t, dm.paths, files)
			for _, path := range dm.paths {
				st, err := bolt.Open(path, bolt.WithLockTimeout(time.Second))
				require.NoError(t, err)
				stored, err := st.Load()
				require.NoError(t, st.Close())
				require.NoError(t, err)
				assert.Len(t, stored.Conversations, n, path)
				for _, sc := range stored.Conversations {
					assert.Equal(t, stResult, sc.Outcome, "%s: %s", path, sc.ID)
				}
				assert.Empty(t, stored.Outbox, "%s: every message acknowledged", path)
			}
		})
	}
}

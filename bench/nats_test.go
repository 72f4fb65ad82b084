package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	natsio "github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/internal/natsembed"
	"github.com/parleyhq/parley/policies"
	"github.com/parleyhq/parley/store/natskv"
	natstransport "github.com/parleyhq/parley/transport/nats"
)

// Parley over NATS against raw nats.go: FIPA Request conversations per
// second between alice and bob, each on a connection of its own to one
// nats-server (JetStream on file storage in b.TempDir(), in the test
// process), run three ways in the same op:
//
//   - raw: nats.go request-reply exchanging the same three messages
//     (request, agree, inform-result, each a forms.Message as JSON):
//     alice publishes the request with a reply subject, bob's handler
//     decodes it and publishes agree and inform-result to the reply
//     subject, and alice decodes both. Core NATS: no stream, no
//     acknowledgement, no state.
//   - nats: the two agent.Managers of BenchmarkManagerRequest with a
//     transport/nats transport each and no store: every message is
//     stored in a JetStream stream, and Send waits for the stream's
//     acknowledgement; the receiver consumes it through its durable
//     consumer and acknowledges it.
//   - pipelined: the same with natstransport.WithPipelining: Send
//     returns once the message is queued, and the messages queued for a
//     receiver while a publish to it is in flight wait for it and go in
//     one publish, as one stream message (a batch), acknowledged by the
//     receiver once it has applied every message of it.
//   - natskv: pipelined, with a store/natskv store each: every step is
//     also committed to the key-value bucket before its messages leave.
//
// One op is one batch of each way, in turn (the op rotates which goes
// first): natsInFlight conversations at once, each from its start to
// alice holding the result.

// natsInFlight is how many conversations are in flight at once.
const natsInFlight = 200

const (
	wayRaw       = "raw"
	wayNATS      = "nats"
	wayPipelined = "pipelined"
	wayNATSKV    = "natskv"
)

// natsWay is one way of running the batches and the time its batches
// took.
type natsWay struct {
	name    string
	batch   func(ctx context.Context, n int) error
	elapsed time.Duration
}

func natsConnect(tb testing.TB, url string) *natsio.Conn {
	nc, err := natsio.Connect(url, natsio.MaxReconnects(-1))
	require.NoError(tb, err)
	tb.Cleanup(nc.Close)
	return nc
}

// rawRequest is the raw way: bob answers on his subscription, alice
// waits for two answers per conversation on hers.
func rawRequest(tb testing.TB, url string) func(ctx context.Context, n int) error {
	alice, bob := natsConnect(tb, url), natsConnect(tb, url)
	encode := func(m *forms.Message) []byte {
		data, err := json.Marshal(m)
		require.NoError(tb, err)
		return data
	}
	_, err := bob.Subscribe("raw.bob", func(msg *natsio.Msg) {
		var req forms.Message
		if json.Unmarshal(msg.Data, &req) != nil {
			return
		}
		reply := func(performative string, content map[string]any) {
			_ = bob.Publish(msg.Reply, encode(&forms.Message{Performative: performative, Sender: "bob", Receivers: []string{"alice"},
				Protocol: req.Protocol, ConversationID: req.ConversationID, InReplyTo: req.ReplyWith, Content: content}))
		}
		reply("agree", nil)
		reply("inform", map[string]any{"result": 42})
	})
	require.NoError(tb, err)
	require.NoError(tb, bob.Flush())
	var (
		mu      sync.Mutex
		waiting = map[string]chan *forms.Message{}
		seq     atomic.Uint64
	)
	_, err = alice.Subscribe("raw.alice.*", func(msg *natsio.Msg) {
		var m forms.Message
		if json.Unmarshal(msg.Data, &m) != nil {
			return
		}
		mu.Lock()
		ch := waiting[m.ConversationID]
		mu.Unlock()
		if ch != nil {
			ch <- &m
		}
	})
	require.NoError(tb, err)
	conversation := func(ctx context.Context) error {
		id := "c" + strconv.FormatUint(seq.Add(1), 10)
		ch := make(chan *forms.Message, 2)
		mu.Lock()
		waiting[id] = ch
		mu.Unlock()
		defer func() {
			mu.Lock()
			delete(waiting, id)
			mu.Unlock()
		}()
		req := &forms.Message{Performative: "request", Sender: "alice", Receivers: []string{"bob"}, Protocol: "fipa-request",
			ConversationID: id, ReplyWith: id + "-1", Content: map[string]any{"action": "x"}}
		if err := alice.PublishRequest("raw.bob", "raw.alice."+id, encode(req)); err != nil {
			return err
		}
		for _, want := range []string{"agree", "inform"} {
			select {
			case m := <-ch:
				if m.Performative != want {
					return fmt.Errorf("conversation %s: %s, want %s", id, m.Performative, want)
				}
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}
	return func(ctx context.Context, n int) error { return inFlight(ctx, n, conversation) }
}

// natsManagers is the nats way (durable: the natskv way): alice and bob
// on their own connections and subjects.
func natsManagers(tb testing.TB, url, way string, durable bool, more ...natstransport.Option) func(ctx context.Context, n int) error {
	p, err := policies.Load("fipa-request")
	require.NoError(tb, err)
	ctx := context.Background()
	ms := &managers{}
	for _, a := range []struct {
		name string
		dec  answers
		m    **agent.Manager
	}{{"alice", aliceDecides, &ms.alice}, {"bob", bobDecides, &ms.bob}} {
		nc := natsConnect(tb, url)
		opts := []agent.Option{agent.WithLogger(slog.New(slog.DiscardHandler)), agent.WithDecider(a.dec)}
		topts := append([]natstransport.Option{natstransport.WithPrefix("bench." + way), natstransport.WithStream("BENCH_" + way)}, more...)
		if durable {
			st, err := natskv.Open(ctx, nc, a.name, natskv.WithBucket("bench_"+way))
			require.NoError(tb, err)
			tb.Cleanup(func() { _ = st.Close() })
			opts = append(opts, agent.WithStore(st))
			topts = append(topts, natstransport.WithFence(st.Lost()))
		}
		tr, err := natstransport.New(ctx, nc, a.name, topts...)
		require.NoError(tb, err)
		tb.Cleanup(tr.Close)
		m, err := agent.NewManager(a.name, append(opts, agent.WithTransport(tr))...)
		require.NoError(tb, err)
		tb.Cleanup(func() { _ = m.Close(context.Background()) })
		require.NoError(tb, m.Register(p))
		if durable {
			require.NoError(tb, m.Resume(ctx))
		}
		require.NoError(tb, tr.Attach(ctx, m))
		*a.m = m
	}
	return func(ctx context.Context, n int) error { return inFlight(ctx, n, ms.conversation) }
}

// inFlight runs n conversations at once and waits for them all.
func inFlight(ctx context.Context, n int, conversation func(context.Context) error) error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = conversation(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func natsWays(tb testing.TB) []*natsWay {
	srv, err := natsembed.Start(tb.TempDir(), -1)
	require.NoError(tb, err)
	tb.Cleanup(srv.Shutdown)
	url := srv.ClientURL()
	return []*natsWay{
		{name: wayRaw, batch: rawRequest(tb, url)},
		{name: wayNATS, batch: natsManagers(tb, url, wayNATS, false)},
		{name: wayPipelined, batch: natsManagers(tb, url, wayPipelined, false, natstransport.WithPipelining())},
		{name: wayNATSKV, batch: natsManagers(tb, url, wayNATSKV, true, natstransport.WithPipelining())},
	}
}

// BenchmarkNATSRequest reports the conversations per second of each way
// (conv/s-raw, conv/s-nats, conv/s-pipelined, conv/s-natskv) and the
// ratios of Parley's to raw's (nats/raw, pipelined/raw, natskv/raw; the
// goal is at least 0.5). Its ns/op is the sum of the four batches.
func BenchmarkNATSRequest(b *testing.B) {
	ways := natsWays(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		for k := range ways {
			w := ways[(i+k)%len(ways)]
			start := time.Now()
			if err := w.batch(ctx, natsInFlight); err != nil {
				b.Fatal(w.name, ": ", err)
			}
			w.elapsed += time.Since(start)
		}
	}
	rate := map[string]float64{}
	for _, w := range ways {
		rate[w.name] = float64(natsInFlight*b.N) / w.elapsed.Seconds()
		b.ReportMetric(rate[w.name], "conv/s-"+w.name)
	}
	for _, w := range ways[1:] {
		b.ReportMetric(rate[w.name]/rate[wayRaw], w.name+"/"+wayRaw)
	}
}

// TestNATSRequestBatches: a batch ends every conversation in each way.
func TestNATSRequestBatches(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, w := range natsWays(t) {
		t.Run(w.name, func(t *testing.T) {
			require.NoError(t, w.batch(ctx, 20))
		})
	}
}

package nats_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	natsio "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/internal/natstest"
	"github.com/parleyhq/parley/store/natskv"
	natstransport "github.com/parleyhq/parley/transport/nats"
)

// each checks that every conversation ended with its result and that
// alice and bob applied each of its messages exactly once.
func each(t *testing.T, s *natstest.Site, alice *agent.Manager, ids []string) {
	t.Helper()
	for _, id := range ids {
		assert.Equal(t, "result", natstest.Wait(t, alice, id))
	}
	for _, id := range ids {
		assert.Equal(t, 1, s.Applied("bob", id, "request"), "bob applied the request of %s", id)
		assert.Equal(t, 1, s.Applied("alice", id, "agree"), "alice applied the agree of %s", id)
		assert.Equal(t, 1, s.Applied("alice", id, "inform"), "alice applied the result of %s", id)
	}
	assert.Empty(t, s.Codes())
}

// modes are the two ways Send can publish.
var modes = []struct {
	name string
	opts []natstransport.Option
}{
	{name: "waiting for the stream"},
	{name: "pipelined", opts: []natstransport.Option{natstransport.WithPipelining()}},
}

// pair starts bob, who performs, and alice, who requests, with the
// transport options opts.
func pair(t *testing.T, opts []natstransport.Option) (*natstest.Site, *natstest.Agent) {
	s := natstest.NewSite(t)
	s.Transport = opts
	_, err := s.Run("bob", "", natstest.Performer)
	require.NoError(t, err)
	alice, err := s.Run("alice", "", natstest.Initiator)
	require.NoError(t, err)
	return s, alice
}

func TestRequestConversationsOverJetStream(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			s, alice := pair(t, mode.opts)
			var ids []string
			for range 50 {
				ids = append(ids, natstest.Request(t, alice.M, "bob"))
			}
			each(t, s, alice.M, ids)
		})
	}
}

func TestBrokerRestartMidConversation(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			s, alice := pair(t, mode.opts)
			var ids []string
			for range 20 {
				ids = append(ids, natstest.Request(t, alice.M, "bob"))
			}
			s.Stop()
			// While the server is down conversations pause: a new one
			// starts and waits for its commit and its messages.
			started := make(chan string, 1)
			go func() {
				id, err := alice.M.Start(context.Background(), agent.StartRequest{Policy: "fipa-request", Role: "Initiator", Peers: map[string][]string{"Participant": {"bob"}}})
				assert.NoError(t, err)
				started <- id
			}()
			time.Sleep(300 * time.Millisecond)
			s.Start()
			ids = append(ids, <-started)
			for range 20 {
				ids = append(ids, natstest.Request(t, alice.M, "bob"))
			}
			each(t, s, alice.M, ids)
		})
	}
}

// identitySite is a server with users alice, bob and mallory, each
// allowed to publish only as itself, and an administrator that created
// the stream and the bucket.
func identitySite(t *testing.T) *natstest.Site {
	admin := &server.User{Username: "admin", Password: "pw-admin"}
	s := natstest.NewSite(t, admin, natstest.User("alice"), natstest.User("bob"), natstest.User("mallory"))
	nc := s.Connect("admin")
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx := context.Background()
	_, err = js.CreateStream(ctx, natstransport.StreamConfig(natstransport.DefaultStream, natstransport.DefaultPrefix, natstransport.DefaultLimits))
	require.NoError(t, err)
	_, err = js.CreateKeyValue(ctx, natskv.BucketConfig(natskv.DefaultBucket, 1<<20))
	require.NoError(t, err)
	return s
}

func TestAgentsWithSubjectPermissions(t *testing.T) {
	s := identitySite(t)
	_, err := s.Run("bob", "bob", natstest.Performer)
	require.NoError(t, err)
	alice, err := s.Run("alice", "alice", natstest.Initiator)
	require.NoError(t, err)
	each(t, s, alice.M, []string{natstest.Request(t, alice.M, "bob")})
}

func TestTheServerRefusesAnAgentClaimingAnotherName(t *testing.T) {
	s := identitySite(t)
	bob, err := s.Run("bob", "bob", natstest.Performer)
	require.NoError(t, err)
	msg := &forms.Message{Performative: "request", Sender: "alice", Receivers: []string{"bob"}, Protocol: "fipa-request", ConversationID: "alice-forged", ReplyWith: "r1", Content: map[string]any{"action": "paint"}}
	data, err := json.Marshal(msg)
	require.NoError(t, err)
	ctx := context.Background()

	t.Run("name=publish on alice's subject", func(t *testing.T) {
		refused := make(chan error, 1)
		nc := s.Connect("mallory", natsio.ErrorHandler(func(_ *natsio.Conn, _ *natsio.Subscription, err error) {
			select {
			case refused <- err:
			default:
			}
		}))
		js, err := jetstream.New(nc)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err = js.Publish(ctx, natstransport.DefaultPrefix+".bob.alice", data)
		require.Error(t, err, "no stream stored it")
		select {
		case err := <-refused:
			assert.ErrorIs(t, err, natsio.ErrPermissionViolation)
			assert.ErrorContains(t, err, "parley.msg.bob.alice")
		case <-time.After(5 * time.Second):
			t.Fatal("the server did not refuse the publish")
		}
		assert.Equal(t, 0, bob.M.Len(), "bob opened no conversation")
	})
	t.Run("name=a transport as alice", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		nc := s.Connect("mallory")
		_, err := natstransport.New(ctx, nc, "alice", natstransport.WithoutSetup())
		require.Error(t, err, "mallory cannot create alice's consumer")
		_, err = natskv.Open(ctx, nc, "alice")
		require.Error(t, err, "mallory cannot take alice's lease")
	})
	t.Run("name=alice in the payload, on mallory's subject", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		nc := s.Connect("mallory")
		js, err := jetstream.New(nc)
		require.NoError(t, err)
		_, err = js.Publish(ctx, natstransport.DefaultPrefix+".bob.mallory", data)
		require.NoError(t, err, "mallory may publish as herself")
		require.Eventually(t, func() bool { return len(s.Codes()) > 0 }, 5*time.Second, 10*time.Millisecond, "bob refuses the message")
		assert.Equal(t, 0, bob.M.Len(), "bob opened no conversation")
	})
}

// TestPipelinedMessagesTheStreamRefusesArePublishedAgainInOrder: the
// stream holds few stream messages from alice to bob, so what she sends
// after them is refused until bob reads; it is published again, in each
// conversation's order, and what waited meanwhile goes in batches.
func TestPipelinedMessagesTheStreamRefusesArePublishedAgainInOrder(t *testing.T) {
	tests := []struct {
		name          string
		limits        natstransport.Limits
		messages      int
		conversations int
		batched       bool
	}{
		{name: "one at a time", limits: natstransport.Limits{MaxPerSender: 2, MaxBatch: 1}, messages: 5, conversations: 1},
		{name: "in batches", limits: natstransport.Limits{MaxPerSender: 1, MaxBatch: 3}, messages: 10, conversations: 3, batched: true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := natstest.NewSite(t)
			nc := s.Connect("")
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			stream, prefix := "FEW"+strconv.Itoa(i), "few"+strconv.Itoa(i)
			tr, err := natstransport.New(ctx, nc, "alice", natstransport.WithPipelining(), natstransport.WithStream(stream), natstransport.WithPrefix(prefix),
				natstransport.WithLimits(tt.limits))
			require.NoError(t, err)
			defer tr.Close()
			var want []string
			for i := range tt.messages {
				m := &forms.Message{Performative: "inform", Sender: "alice", Receivers: []string{"bob"},
					ConversationID: "alice-c" + strconv.Itoa(i%tt.conversations), ReplyWith: "r" + strconv.Itoa(i)}
				require.NoError(t, tr.Send(ctx, m), "a pipelined send does not wait for the stream")
				want = append(want, m.ReplyWith)
			}
			// bob reads, and so makes room for what the stream refused.
			got, batches := readBatches(ctx, t, nc, stream, prefix, "bob", len(want))
			assert.Equal(t, want, got, "every message once, in order")
			for _, n := range batches {
				assert.LessOrEqual(t, n, tt.limits.MaxBatch, "no batch over MaxBatch")
			}
			if tt.batched {
				assert.Less(t, len(batches), len(want), "messages that waited went together")
			}
		})
	}
}

func TestSendRefusesAnotherSender(t *testing.T) {
	s := natstest.NewSite(t)
	tr, err := natstransport.New(context.Background(), s.Connect(""), "alice")
	require.NoError(t, err)
	err = tr.Send(context.Background(), &forms.Message{Performative: "inform", Sender: "bob", Receivers: []string{"carol"}})
	assert.ErrorIs(t, err, agent.ErrSender)
}

func TestNamesAndLimits(t *testing.T) {
	s := natstest.NewSite(t)
	nc := s.Connect("")
	ctx := context.Background()
	tests := []struct {
		name string
		self string
		opts []natstransport.Option
	}{
		{name: "a dot in the name", self: "a.b"},
		{name: "a wildcard in the name", self: "a*"},
		{name: "an empty name", self: ""},
		{name: "a wildcard in the prefix", self: "alice", opts: []natstransport.Option{natstransport.WithPrefix("parley.>")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := natstransport.New(ctx, nc, tt.self, tt.opts...)
			assert.Error(t, err)
		})
	}
	t.Run("name=a message over the limit", func(t *testing.T) {
		tr, err := natstransport.New(ctx, nc, "alice", natstransport.WithStream("SMALL"), natstransport.WithPrefix("small"),
			natstransport.WithLimits(natstransport.Limits{MaxMessageBytes: 512}))
		require.NoError(t, err)
		big := &forms.Message{Performative: "inform", Sender: "alice", Receivers: []string{"bob"}, Content: map[string]any{"pad": string(make([]byte, 600))}}
		assert.ErrorContains(t, tr.Send(ctx, big), "over the limit")
	})
	t.Run("name=more messages from one sender than the limit", func(t *testing.T) {
		tr, err := natstransport.New(ctx, nc, "alice", natstransport.WithStream("FEW"), natstransport.WithPrefix("few"),
			natstransport.WithLimits(natstransport.Limits{MaxPerSender: 3}))
		require.NoError(t, err)
		var errs []error
		for i := range 5 {
			m := &forms.Message{Performative: "inform", Sender: "alice", Receivers: []string{"bob"}, ReplyWith: string(rune('a' + i))}
			errs = append(errs, tr.Send(ctx, m))
		}
		assert.NoError(t, errors.Join(errs[:3]...))
		assert.Error(t, errs[3], "bob has three waiting from alice")
		assert.Error(t, errs[4])
	})
}

// readBatches reads n messages for receiver from stream (subjects
// <prefix>.<receiver>.*), one stream message at a time, and returns the
// reply-with of each message and how many each stream message held.
func readBatches(ctx context.Context, t *testing.T, nc *natsio.Conn, stream, prefix, receiver string, n int) (got []string, batches []int) {
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	cons, err := js.CreateOrUpdateConsumer(ctx, stream, jetstream.ConsumerConfig{Durable: "reader-" + receiver, FilterSubject: prefix + "." + receiver + ".*",
		AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	for len(got) < n {
		fetched, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
		require.NoError(t, err)
		for msg := range fetched.Messages() {
			var ms []forms.Message
			if msg.Data()[0] == '[' {
				require.NoError(t, json.Unmarshal(msg.Data(), &ms))
			} else {
				ms = make([]forms.Message, 1)
				require.NoError(t, json.Unmarshal(msg.Data(), &ms[0]))
			}
			for _, m := range ms {
				got = append(got, m.ReplyWith)
			}
			batches = append(batches, len(ms))
			require.NoError(t, msg.DoubleAck(ctx))
		}
		require.NoError(t, fetched.Error())
	}
	return got, batches
}

// request is alice's FIPA request opening conversation id, as JSON.
func request(t *testing.T, id string) []byte {
	data, err := json.Marshal(&forms.Message{Performative: "request", Sender: "alice", Receivers: []string{"bob"}, Protocol: "fipa-request",
		ConversationID: id, ReplyWith: id + "-r", Content: map[string]any{"action": "paint"}})
	require.NoError(t, err)
	return data
}

// batch is a batch of alice's requests opening the conversations ids.
func batch(t *testing.T, ids ...string) []byte {
	var parts [][]byte
	for _, id := range ids {
		parts = append(parts, request(t, id))
	}
	return append(append([]byte("["), bytes.Join(parts, []byte(","))...), ']')
}

// settled waits until bob's consumer has nothing pending or unacknowledged.
func settled(t *testing.T, nc *natsio.Conn) {
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	cons, err := js.Consumer(context.Background(), natstransport.DefaultStream, natstransport.ConsumerPrefix+"bob")
	require.NoError(t, err)
	assert.Eventually(t, func() bool {
		info, err := cons.Info(context.Background())
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0
	}, 20*time.Second, 10*time.Millisecond, "bob acknowledged every delivery")
}

// TestABusyReceiverAppliesEveryMessageOfABatchOnce: bob's manager takes
// one input at a time, so most of a batch finds it busy. The rest of the
// batch is kept and handed again later, on a timer or, when keeping it
// would go over MaxPendingBytes, on the consumer's goroutine.
func TestABusyReceiverAppliesEveryMessageOfABatchOnce(t *testing.T) {
	tests := []struct {
		name   string
		limits natstransport.Limits
	}{
		{name: "on a timer"},
		{name: "on the consumer", limits: natstransport.Limits{MaxPendingBytes: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := natstest.NewSite(t)
			s.Transport = []natstransport.Option{natstransport.WithLimits(tt.limits)}
			_, err := s.Run("bob", "", natstest.Performer, agent.WithLimits(agent.Limits{MaxQueue: 1}))
			require.NoError(t, err)
			nc := s.Connect("")
			var ids []string
			for i := range 20 {
				ids = append(ids, "alice-q"+strconv.Itoa(i))
			}
			require.NoError(t, nc.Publish("parley.msg.bob.alice", batch(t, ids...)))
			require.Eventually(t, func() bool { return s.Applied("bob", ids[len(ids)-1], "request") == 1 }, 20*time.Second, 10*time.Millisecond)
			settled(t, nc)
			for _, id := range ids {
				assert.Equal(t, 1, s.Applied("bob", id, "request"), "bob applied %s once", id)
			}
		})
	}
}

func TestAReceiverAppliesEveryMessageOfABatchAndDropsWhatIsNotOne(t *testing.T) {
	s := natstest.NewSite(t)
	s.Transport = []natstransport.Option{natstransport.WithLimits(natstransport.Limits{MaxBatch: 2})}
	_, err := s.Run("bob", "", natstest.Performer)
	require.NoError(t, err)
	nc := s.Connect("")
	require.NoError(t, nc.Publish("parley.msg.bob.alice", batch(t, "alice-x1", "alice-x2", "alice-x3")))
	require.NoError(t, nc.Publish("parley.msg.bob.alice", batch(t, "alice-b1", "alice-b2")))
	require.NoError(t, nc.Publish("parley.msg.bob.alice", append(append([]byte("["), request(t, "alice-m1")...), ",42]"...)))
	require.NoError(t, nc.Publish("parley.msg.bob.alice", request(t, "alice-s1")))
	require.Eventually(t, func() bool { return s.Applied("bob", "alice-s1", "request") == 1 }, 20*time.Second, 10*time.Millisecond)
	for _, id := range []string{"alice-b1", "alice-b2", "alice-m1"} {
		assert.Equal(t, 1, s.Applied("bob", id, "request"), "bob applied %s of its batch", id)
	}
	for _, id := range []string{"alice-x1", "alice-x2", "alice-x3"} {
		assert.Zero(t, s.Applied("bob", id, "request"), "bob dropped the batch over the limit, with %s", id)
	}
	settled(t, nc)
}

func TestAPipelinedMessageToSeveralReceiversReachesEachInItsConversationsOrder(t *testing.T) {
	s := natstest.NewSite(t)
	nc := s.Connect("")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tr, err := natstransport.New(ctx, nc, "alice", natstransport.WithPipelining(), natstransport.WithStream("MANY"), natstransport.WithPrefix("many"))
	require.NoError(t, err)
	defer tr.Close()
	sends := []struct {
		to    []string
		reply string
	}{{[]string{"bob", "carol"}, "r0"}, {[]string{"bob"}, "r1"}, {[]string{"carol", "bob"}, "r2"}, {[]string{"carol"}, "r3"}}
	for _, m := range sends {
		require.NoError(t, tr.Send(ctx, &forms.Message{Performative: "inform", Sender: "alice", Receivers: m.to, ConversationID: "alice-c", ReplyWith: m.reply}))
	}
	tests := []struct {
		name string
		want []string
	}{
		{name: "bob", want: []string{"r0", "r1", "r2"}},
		{name: "carol", want: []string{"r0", "r2", "r3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := readBatches(ctx, t, nc, "MANY", "many", tt.name, len(tt.want))
			assert.Equal(t, tt.want, got, "every copy once, in order")
		})
	}
}

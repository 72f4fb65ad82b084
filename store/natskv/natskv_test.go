package natskv_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

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

func TestTwoProcessesStartingAtOnceOneOwns(t *testing.T) {
	s := natstest.NewSite(t)
	ctx := context.Background()
	for round := range 5 {
		var (
			wg     sync.WaitGroup
			stores [2]*natskv.Store
			errs   [2]error
		)
		for i := range stores {
			nc := s.Connect("")
			wg.Go(func() { stores[i], errs[i] = natskv.Open(ctx, nc, "bob", natskv.WithLeaseTTL(natstest.LeaseTTL)) })
		}
		wg.Wait()
		owners := 0
		for i := range stores {
			if errs[i] == nil {
				owners++
				continue
			}
			assert.ErrorIs(t, errs[i], natskv.ErrOwned, "round %d", round)
		}
		require.Equal(t, 1, owners, "round %d: exactly one process owns bob", round)
		for _, st := range stores {
			if st != nil {
				require.NoError(t, st.Close()) // releases the lease for the next round
			}
		}
	}
}

func TestASecondManagerForTheSameAgentIsRefused(t *testing.T) {
	s := natstest.NewSite(t)
	_, err := s.Run("bob", "", natstest.Performer)
	require.NoError(t, err)
	ctx := context.Background()
	_, err = natskv.Open(ctx, s.Connect(""), "bob")
	assert.ErrorIs(t, err, natskv.ErrOwned)
	alice, err := s.Run("alice", "", natstest.Initiator)
	require.NoError(t, err)
	id := natstest.Request(t, alice.M, "bob")
	assert.Equal(t, "result", natstest.Wait(t, alice.M, id))
	assert.Equal(t, 1, s.Applied("bob", id, "request"))
}

// holdAgreed agrees and then never reports the result: its conversations
// stay live in state agreed.
var holdAgreed = agent.WithAsyncDecisions(func(agent.DecisionRequest) {})

func TestAReplacementProcessResumesTheLiveConversations(t *testing.T) {
	s := natstest.NewSite(t)
	bob, err := s.Run("bob", "", natstest.Script{"requested": {Choice: "agree"}}, holdAgreed)
	require.NoError(t, err)
	alice, err := s.Run("alice", "", natstest.Initiator)
	require.NoError(t, err)
	var ids []string
	for range 10 {
		ids = append(ids, natstest.Request(t, alice.M, "bob"))
	}
	require.Eventually(t, func() bool {
		for _, id := range ids {
			if s.Applied("alice", id, "agree") == 0 {
				return false
			}
		}
		return true
	}, 10*time.Second, 10*time.Millisecond, "bob agreed to every request")
	bob.Kill()
	// Sent while bob is down: they wait in the stream for his
	// replacement.
	for range 5 {
		ids = append(ids, natstest.Request(t, alice.M, "bob"))
	}
	start := time.Now()
	_, err = s.Run("bob", "", natstest.Performer)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), natstest.LeaseTTL/2, "the replacement waited for the dead owner's lease")
	for _, id := range ids {
		assert.Equal(t, "result", natstest.Wait(t, alice.M, id))
		assert.Equal(t, 1, s.Applied("alice", id, "inform"), "alice applied the result of %s once", id)
		assert.Equal(t, 1, s.Applied("alice", id, "agree"), "alice applied the agree of %s once", id)
	}
	assert.Empty(t, s.Codes())
}

func TestAnOwnerWhoseLeaseIsTakenIsFenced(t *testing.T) {
	s := natstest.NewSite(t)
	alice, err := s.Run("alice", "", natstest.Initiator)
	require.NoError(t, err)
	bob, err := s.Run("bob", "", natstest.Performer)
	require.NoError(t, err)
	first := natstest.Request(t, alice.M, "bob")
	require.Equal(t, "result", natstest.Wait(t, alice.M, first))

	// An operator removes bob's lease while bob is alive (as when bob
	// stalls past its TTL): another process takes bob over.
	ctx := context.Background()
	js, err := jetstream.New(s.Connect(""))
	require.NoError(t, err)
	kv, err := js.KeyValue(ctx, natskv.DefaultBucket)
	require.NoError(t, err)
	require.NoError(t, kv.Purge(ctx, "bob.lease"))
	_, err = s.Run("bob", "", natstest.Performer)
	require.NoError(t, err)
	select {
	case <-bob.Store.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("the first bob never noticed it lost its lease")
	}
	assert.ErrorIs(t, bob.Store.Commit(&agent.Batch{Delete: []string{first}}), natskv.ErrFenced)
	assert.ErrorIs(t, bob.Transport.Send(ctx, &forms.Message{Performative: "inform", Sender: "bob", Receivers: []string{"alice"}}), natstransport.ErrFenced,
		"the fenced bob sends nothing")
	var ids []string
	for range 5 {
		ids = append(ids, natstest.Request(t, alice.M, "bob"))
	}
	for _, id := range ids {
		assert.Equal(t, "result", natstest.Wait(t, alice.M, id))
		assert.Equal(t, 1, s.Applied("bob", id, "request"), "one bob applied the request of %s", id)
	}
}

func TestLoadNamesAnUnreadableRecordAndReadsTheOthers(t *testing.T) {
	s := natstest.NewSite(t)
	alice, err := s.Run("alice", "", natstest.Initiator)
	require.NoError(t, err)
	_, err = s.Run("bob", "", natstest.Script{"requested": {Choice: "agree"}}, holdAgreed)
	require.NoError(t, err)
	id := natstest.Request(t, alice.M, "bob")
	require.Eventually(t, func() bool { return s.Applied("alice", id, "agree") == 1 }, 10*time.Second, 10*time.Millisecond)
	alice.Kill()

	ctx := context.Background()
	nc := s.Connect("")
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	kv, err := js.KeyValue(ctx, natskv.DefaultBucket)
	require.NoError(t, err)
	_, err = kv.Put(ctx, "alice.c.garbage", []byte("{not json"))
	require.NoError(t, err)
	st, err := natskv.Open(ctx, nc, "alice", natskv.WithWait())
	require.NoError(t, err)
	stored, err := st.Load()
	require.Error(t, err)
	assert.ErrorContains(t, err, "alice.c.garbage")
	require.Len(t, stored.Conversations, 1)
	assert.Equal(t, id, stored.Conversations[0].ID)
	require.NoError(t, st.Close())
}

func TestCommitReturnsOnceTheConnectionIsClosed(t *testing.T) {
	s := natstest.NewSite(t)
	nc := s.Connect("")
	st, err := natskv.Open(context.Background(), nc, "alice", natskv.WithLeaseTTL(natstest.LeaseTTL))
	require.NoError(t, err)
	nc.Close()
	done := make(chan error, 1)
	go func() { done <- st.Commit(&agent.Batch{Put: []agent.StoredConversation{{ID: "alice-1"}}}) }()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, natsio.ErrConnectionClosed)
	case <-time.After(10 * time.Second):
		t.Fatal("Commit retried for ever on a closed connection")
	}
}

func TestOpenRefusesBadNames(t *testing.T) {
	s := natstest.NewSite(t)
	nc := s.Connect("")
	for _, name := range []string{"", "a.b", "a>", "x y"} {
		t.Run("name="+name, func(t *testing.T) {
			_, err := natskv.Open(context.Background(), nc, name)
			assert.Error(t, err)
			assert.False(t, errors.Is(err, natskv.ErrOwned))
		})
	}
}

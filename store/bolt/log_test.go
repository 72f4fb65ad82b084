package bolt_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/store/bolt"
)

// TestTheLogAndItsCheckpointsLoadWhatWasCommitted commits puts, puts
// again and deletes of conversations, and outbox entries sent, partly
// acknowledged and acknowledged, reopening the file now and then, with checkpoints
// at every commit, now and then, and never, and compares what Load finds
// with what was committed.
func TestTheLogAndItsCheckpointsLoadWhatWasCommitted(t *testing.T) {
	tests := []struct {
		name string
		opts []bolt.Option
	}{
		{"checkpoint at every commit", []bolt.Option{bolt.WithCheckpointSize(1)}},
		{"checkpoint every few commits", []bolt.Option{bolt.WithCheckpointSize(2000)}},
		{"no checkpoint", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "a.db")
			s, err := bolt.Open(path, tt.opts...)
			require.NoError(t, err)
			want := map[string]agent.StoredConversation{}
			wantOut := map[uint64][]string{} // seq -> pending
			ended := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
			for step := range 60 {
				var b agent.Batch
				for k := range 2 {
					seq := uint64(step*2 + k + 1)
					msg := &forms.Message{Performative: "inform", Sender: "a", Receivers: []string{"b", "c"}, ConversationID: "c1", ReplyWith: fmt.Sprintf("c1/a#%d", seq)}
					b.Send = append(b.Send, agent.OutboxEntry{Seq: seq, Conversation: "c1", Message: msg, Pending: []string{"b", "c"}})
					wantOut[seq] = []string{"b", "c"}
				}
				if step >= 3 { // an older entry acknowledged by one receiver, one by both
					seq := uint64(step*2 - 5)
					msg := &forms.Message{Performative: "inform", Sender: "a", Receivers: []string{"b", "c"}, ConversationID: "c1", ReplyWith: fmt.Sprintf("c1/a#%d", seq)}
					b.Update = append(b.Update, agent.OutboxEntry{Seq: seq, Conversation: "c1", Message: msg, Pending: []string{"c"}})
					wantOut[seq] = []string{"c"}
					b.Acked = append(b.Acked, uint64(step*2-4))
					delete(wantOut, uint64(step*2-4))
				}
				for k := range 4 {
					id := fmt.Sprintf("c%d", (step*3+k)%17)
					sc := agent.StoredConversation{ID: id, Policy: "p", Role: "A", Fingerprint: "f", Handler: fmt.Appendf(nil, `{"step":%d}`, step),
						Opener: "bob", Parent: "root", ParentSession: "s", ParentEpoch: uint64(step), Children: k, Applied: []string{id + "#1", id + "#2"}}
					if k == 3 {
						sc.Ended, sc.Outcome, sc.Abort = ended.Add(time.Duration(step)*time.Second), "done", "why"
					}
					b.Put = append(b.Put, sc)
					want[id] = sc
				}
				if step%7 == 6 {
					id := fmt.Sprintf("c%d", step%17)
					b.Delete = append(b.Delete, id)
					delete(want, id)
				}
				require.NoError(t, s.Commit(&b))
				if step%20 == 19 {
					require.NoError(t, s.Close())
					s, err = bolt.Open(path, tt.opts...)
					require.NoError(t, err)
				}
			}
			st, err := s.Load()
			require.NoError(t, err)
			require.NoError(t, s.Close())
			got := map[string]agent.StoredConversation{}
			for _, sc := range st.Conversations {
				got[sc.ID] = sc
			}
			require.Len(t, got, len(want))
			gotOut := map[uint64][]string{}
			for _, e := range st.Outbox {
				gotOut[e.Seq] = e.Pending
				assert.Equal(t, fmt.Sprintf("c1/a#%d", e.Seq), e.Message.ReplyWith)
			}
			assert.Equal(t, wantOut, gotOut, "the outbox")
			for id, w := range want {
				g := got[id]
				assert.True(t, w.Ended.Equal(g.Ended), "%s ended", id)
				w.Ended, g.Ended = time.Time{}, time.Time{}
				assert.Equal(t, w, g, id)
			}
		})
	}
}

// TestAFileOfFormat1IsConverted opens a file written by the first format
// (conversations as JSON) and finds its conversations.
func TestAFileOfFormat1IsConverted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := bbolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	old := agent.StoredConversation{ID: "c1", Policy: "p", Role: "A", Fingerprint: "f", Handler: []byte(`{"x":1}`), Applied: []string{"a"}}
	require.NoError(t, db.Update(func(tx *bbolt.Tx) error {
		meta, err := tx.CreateBucket([]byte("meta"))
		require.NoError(t, err)
		require.NoError(t, meta.Put([]byte("version"), []byte("1")))
		convs, err := tx.CreateBucket([]byte("conversations"))
		require.NoError(t, err)
		v, err := json.Marshal(&old)
		require.NoError(t, err)
		require.NoError(t, convs.Put([]byte("c1"), v))
		_, err = tx.CreateBucket([]byte("outbox"))
		return err
	}))
	require.NoError(t, db.Close())

	s, err := bolt.Open(path)
	require.NoError(t, err)
	defer s.Close()
	st, err := s.Load()
	require.NoError(t, err)
	assert.Equal(t, []agent.StoredConversation{old}, st.Conversations)
}

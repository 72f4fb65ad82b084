package bolt_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
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

// TestAnUnreadableLogEntryStaysThroughLaterCheckpoints opens a file of
// format 3 whose log (inside the bbolt file) has a broken first entry,
// then commits with a checkpoint at every commit: the conversion folds
// the readable entries into the tables, the checkpoints write the new
// commits, and the broken entry stays for Load to report.
func TestAnUnreadableLogEntryStaysThroughLaterCheckpoints(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	c2, err := bolt.EncodeEntry(&agent.Batch{Put: []agent.StoredConversation{{ID: "c2"}}})
	require.NoError(t, err)
	require.NoError(t, bolt.WriteFormat3(path, []byte("\xff\xff\xff broken"), c2))

	for _, id := range []string{"c3", "c4"} {
		s, err := bolt.Open(path, bolt.WithCheckpointSize(1))
		require.NoError(t, err)
		require.NoError(t, s.Commit(&agent.Batch{Put: []agent.StoredConversation{{ID: id}}}))
		require.NoError(t, s.Close())
	}
	s, err := bolt.Open(path)
	require.NoError(t, err)
	defer s.Close()
	st, err := s.Load()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "log entry 0000000000000001: unreadable record")
	require.NotNil(t, st)
	var ids []string
	for _, sc := range st.Conversations {
		ids = append(ids, sc.ID)
	}
	assert.Equal(t, []string{"c2", "c3", "c4"}, ids)
}

// TestAFailedCommitLeavesNothingForTheNextCheckpoint: a commit that
// fails (its conversation's id cannot be a key, or a message of its
// outbox cannot be JSON) changes nothing, and the checkpoint of the next
// commit does not write it either, whether that checkpoint comes at once
// or later.
func TestAFailedCommitLeavesNothingForTheNextCheckpoint(t *testing.T) {
	bad := &forms.Message{Performative: "inform", Sender: "a", Receivers: []string{"b"}, ConversationID: "c1", ReplyWith: "c1/a#1", Content: map[string]any{"f": func() {}}}
	tests := []struct {
		name  string
		batch agent.Batch
		want  string
	}{
		{"an empty id", agent.Batch{Put: []agent.StoredConversation{{ID: "c1"}, {ID: ""}}}, `conversation id "" of 0 bytes`},
		{"an id longer than a key", agent.Batch{Put: []agent.StoredConversation{{ID: "c1"}, {ID: strings.Repeat("x", bbolt.MaxKeySize+1)}}}, "of 32769 bytes"},
		{"a delete of an id longer than a key", agent.Batch{Put: []agent.StoredConversation{{ID: "c1"}}, Delete: []string{strings.Repeat("x", bbolt.MaxKeySize+1)}}, "of 32769 bytes"},
		{"a message that is not JSON", agent.Batch{Put: []agent.StoredConversation{{ID: "c1"}}, Send: []agent.OutboxEntry{{Seq: 1, Conversation: "c1", Message: bad, Pending: []string{"b"}}}}, "outbox entry 1"},
	}
	for _, tt := range tests {
		for _, checkpoint := range []int{1, 1 << 20} {
			t.Run(fmt.Sprintf("%s, checkpoint %d", tt.name, checkpoint), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "a.db")
				s, err := bolt.Open(path, bolt.WithCheckpointSize(checkpoint))
				require.NoError(t, err)
				err = s.Commit(&tt.batch)
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.want)
				require.NoError(t, s.Commit(&agent.Batch{Put: []agent.StoredConversation{{ID: "c2"}}}))
				require.NoError(t, s.Close())
				for range 2 { // as the log left it, then folded at once
					s, err = bolt.Open(path, bolt.WithCheckpointSize(1))
					require.NoError(t, err)
					st, err := s.Load()
					require.NoError(t, err)
					require.Len(t, st.Conversations, 1)
					assert.Equal(t, "c2", st.Conversations[0].ID)
					assert.Empty(t, st.Outbox)
					require.NoError(t, s.Commit(&agent.Batch{Put: []agent.StoredConversation{{ID: "c2"}}}))
					require.NoError(t, s.Close())
				}
			})
		}
	}
}

package bolt_test

import (
	"bytes"
	"os"
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

func TestCommitAndLoadRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	s, err := bolt.Open(path)
	require.NoError(t, err)
	msg := &forms.Message{Performative: "request", Sender: "alice", Receivers: []string{"bob", "carol"}, ConversationID: "c1", ReplyWith: "c1/alice#1", Content: map[string]any{"n": 1.0}}
	ended := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	require.NoError(t, s.Commit(&agent.Batch{
		Put:  []agent.StoredConversation{{ID: "c1", Policy: "p", Role: "A", Fingerprint: "f", Handler: []byte(`{}`), Applied: []string{"x"}}, {ID: "c2", Ended: ended, Outcome: "done"}, {ID: "gone"}},
		Send: []agent.OutboxEntry{{Seq: 1, Conversation: "c1", Message: msg, Pending: []string{"bob", "carol"}}, {Seq: 2, Conversation: "c1", Message: msg, Pending: []string{"bob"}}},
	}))
	require.NoError(t, s.Commit(&agent.Batch{
		Delete: []string{"gone"},
		Update: []agent.OutboxEntry{{Seq: 1, Conversation: "c1", Message: msg, Pending: []string{"carol"}}},
		Acked:  []uint64{2},
	}))
	require.NoError(t, s.Close())

	s, err = bolt.Open(path)
	require.NoError(t, err)
	defer s.Close()
	st, err := s.Load()
	require.NoError(t, err)
	require.Len(t, st.Conversations, 2)
	assert.Equal(t, "c1", st.Conversations[0].ID)
	assert.Equal(t, []string{"x"}, st.Conversations[0].Applied)
	assert.True(t, ended.Equal(st.Conversations[1].Ended))
	require.Len(t, st.Outbox, 1)
	assert.Equal(t, []string{"carol"}, st.Outbox[0].Pending)
	assert.Equal(t, msg.ReplyWith, st.Outbox[0].Message.ReplyWith)
	assert.Equal(t, msg.Content, st.Outbox[0].Message.Content)
}

func TestABadFileIsAClearErrorNamingIt(t *testing.T) {
	good := filepath.Join(t.TempDir(), "good.db")
	s, err := bolt.Open(good)
	require.NoError(t, err)
	var convs []agent.StoredConversation
	for i := range 200 {
		convs = append(convs, agent.StoredConversation{ID: strings.Repeat("c", 1+i%50) + string(rune('a'+i%26)), Handler: []byte(`{"pad":"` + strings.Repeat("x", 500) + `"}`)})
	}
	require.NoError(t, s.Commit(&agent.Batch{Put: convs}))
	require.NoError(t, s.Close())
	src, err := os.ReadFile(good)
	require.NoError(t, err)
	// the file is grown ahead of its pages (bbolt's allocation step):
	// cut it within them
	used := len(bytes.TrimRight(src, "\x00"))

	tests := []struct {
		name  string
		bytes []byte
		want  string
	}{
		{"not a store", []byte(strings.Repeat("not a database ", 2000)), "store"},
		{"truncated to a few bytes", src[:100], "truncated"},
		{"truncated in the middle", src[:used/2], "truncated"},
		{"meta pages overwritten", append(make([]byte, 8192), src[8192:]...), "store"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.db")
			require.NoError(t, os.WriteFile(path, tt.bytes, 0o600))
			s, err := bolt.Open(path, bolt.WithLockTimeout(100*time.Millisecond))
			if err == nil {
				_, err = s.Load()
				s.Close()
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), path)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestAnUnreadableRecordLosesNoReadableOne(t *testing.T) {
	tests := []struct {
		name string
		// opts are the store's: a checkpoint size of 1 folds every commit
		// into the conversations at once.
		opts  []bolt.Option
		breaK func(t *testing.T, path string)
		want  string
	}{
		{"in the conversations", []bolt.Option{bolt.WithCheckpointSize(1)}, func(t *testing.T, path string) {
			db, err := bbolt.Open(path, 0o600, nil)
			require.NoError(t, err)
			require.NoError(t, db.Update(func(tx *bbolt.Tx) error {
				b, key := tx.Bucket([]byte("conversations")), []byte{0, 0, 0, 0, 0, 0, 0, 1}
				require.NotNil(t, b.Get(key), "the record to break is there")
				return b.Put(key, []byte("\xff\xff\xff broken"))
			}))
			require.NoError(t, db.Close())
		}, "conversation record 0000000000000001: unreadable record"},
		{"in the log", nil, func(t *testing.T, path string) {
			f, err := os.OpenFile(path+"-wal", os.O_RDWR, 0)
			require.NoError(t, err)
			_, err = f.WriteAt([]byte("broken"), 20) // in the first record's entry
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}, "-wal offset 0: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "a.db")
			s, err := bolt.Open(path, tt.opts...)
			require.NoError(t, err)
			require.NoError(t, s.Commit(&agent.Batch{Put: []agent.StoredConversation{{ID: "c1"}}}))
			require.NoError(t, s.Commit(&agent.Batch{Put: []agent.StoredConversation{{ID: "c2"}}}))
			bolt.Crash(s) // Close would fold the log into the tables
			tt.breaK(t, path)

			s, err = bolt.Open(path)
			require.NoError(t, err)
			defer s.Close()
			st, err := s.Load()
			require.Error(t, err)
			assert.Contains(t, err.Error(), path)
			assert.Contains(t, err.Error(), tt.want)
			require.NotNil(t, st)
			require.Len(t, st.Conversations, 1)
			assert.Equal(t, "c2", st.Conversations[0].ID)
		})
	}
}

func TestOneFileServesOneManagerAtATime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	s, err := bolt.Open(path)
	require.NoError(t, err)
	defer s.Close()
	_, err = bolt.Open(path, bolt.WithLockTimeout(50*time.Millisecond))
	require.Error(t, err)
	assert.Contains(t, err.Error(), path)
}

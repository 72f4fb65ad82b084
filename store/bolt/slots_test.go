package bolt

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/parleyhq/parley/agent"
)

// tableIDs returns the ids of the records of the conversations' table
// of the file at path, in the order of their slots, and whether every
// key is a slot.
func tableIDs(t *testing.T, path string) ([]string, bool) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	defer db.Close()
	var ids []string
	slotted := true
	require.NoError(t, db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketConversations).ForEach(func(k, v []byte) error {
			slotted = slotted && len(k) == slotKeySize
			id, err := recordKey(v)
			require.NoError(t, err)
			ids = append(ids, string(id))
			return nil
		})
	}))
	return ids, slotted
}

// TestEachConversationHasOneSlot puts, puts again, deletes and puts
// again conversations across checkpoints and reopenings: the table holds
// one record for each conversation alive, none for a deleted one.
func TestEachConversationHasOneSlot(t *testing.T) {
	tests := []struct {
		name       string
		checkpoint int
	}{
		{"checkpoint at every commit", 1},
		{"checkpoint every few commits", 300},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "a.db")
			s, err := Open(path, WithCheckpointSize(tt.checkpoint))
			require.NoError(t, err)
			alive := map[string]bool{}
			for step := range 40 {
				var b agent.Batch
				for k := range 3 {
					id := fmt.Sprintf("c%d", (step*5+k)%11)
					b.Put = append(b.Put, agent.StoredConversation{ID: id, Handler: fmt.Appendf(nil, "step %d", step)})
					alive[id] = true
				}
				if step%4 == 3 {
					id := fmt.Sprintf("c%d", step%11)
					b.Delete = append(b.Delete, id)
					delete(alive, id)
				}
				require.NoError(t, s.Commit(&b))
				if step%10 == 9 {
					require.NoError(t, s.Close())
					s, err = Open(path, WithCheckpointSize(tt.checkpoint))
					require.NoError(t, err)
				}
			}
			require.NoError(t, s.Commit(&agent.Batch{Put: []agent.StoredConversation{{ID: "last"}}}))
			alive["last"] = true
			require.NoError(t, s.Close())
			s, err = Open(path, WithCheckpointSize(1))
			require.NoError(t, err)
			require.NoError(t, s.Commit(&agent.Batch{Put: []agent.StoredConversation{{ID: "last"}}})) // folds what is left
			require.NoError(t, s.Close())

			ids, slotted := tableIDs(t, path)
			assert.True(t, slotted, "every key is a slot")
			slices.Sort(ids)
			want := make([]string, 0, len(alive))
			for id := range alive {
				want = append(want, id)
			}
			slices.Sort(want)
			assert.Equal(t, want, ids)
		})
	}
}

// TestAFileOfFormat2IsConverted opens a file written by format 2 (the
// conversations' table keyed by id) with a log entry not yet folded: the
// conversations move to slots, the log is folded into them, and Load
// finds them.
func TestAFileOfFormat2IsConverted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := bbolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	old := []agent.StoredConversation{
		{ID: "c1", Policy: "p", Role: "A", Fingerprint: "f", Handler: []byte("one"), Applied: []string{"a"}},
		{ID: "c2", Policy: "p", Role: "B", Fingerprint: "f", Handler: []byte("two")},
		{ID: "c3", Policy: "p", Role: "B", Fingerprint: "f", Handler: []byte("three")},
	}
	logged := agent.Batch{Put: []agent.StoredConversation{{ID: "c2", Policy: "p", Role: "B", Fingerprint: "f", Handler: []byte("two again")}}, Delete: []string{"c3"}}
	rec, err := appendEntry(nil, &logged, &outboxEncoder{format4: true})
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bbolt.Tx) error {
		for _, name := range [][]byte{bucketMeta, bucketConversations, bucketLog, bucketOutbox} {
			_, err := tx.CreateBucket(name)
			require.NoError(t, err)
		}
		require.NoError(t, tx.Bucket(bucketMeta).Put(keyVersion, []byte("2")))
		for i := range old {
			require.NoError(t, tx.Bucket(bucketConversations).Put([]byte(old[i].ID), appendConversation(nil, &old[i])))
		}
		return putEntry(tx.Bucket(bucketLog), 1, rec)
	}))
	require.NoError(t, db.Close())

	s, err := Open(path)
	require.NoError(t, err)
	st, err := s.Load()
	require.NoError(t, err)
	assert.Equal(t, []agent.StoredConversation{old[0], logged.Put[0]}, st.Conversations)
	require.NoError(t, s.Close())
	ids, slotted := tableIDs(t, path)
	assert.True(t, slotted, "every key is a slot")
	assert.Equal(t, []string{"c1", "c2"}, ids, "the log is folded")

	s, err = Open(path, WithCheckpointSize(1))
	require.NoError(t, err)
	require.NoError(t, s.Commit(&agent.Batch{Put: []agent.StoredConversation{{ID: "c4"}}}))
	require.NoError(t, s.Close())
	ids, _ = tableIDs(t, path)
	assert.Equal(t, []string{"c1", "c2", "c4"}, ids, "c2 kept its slot, c3's went, c4 took a new one")
}

// TestAFailedTransactionLeavesNothingForTheNextCheckpoint makes a
// commit fail (the bbolt file, or the log file, open read-only
// underneath), with and without a checkpoint in it: the store takes
// back what that commit changed, and the next checkpoint writes the
// commits before and after it only, each conversation in one slot.
func TestAFailedTransactionLeavesNothingForTheNextCheckpoint(t *testing.T) {
	tests := []struct {
		name       string
		checkpoint int
	}{
		{"the failed commit checkpoints", 1},
		{"the failed commit goes to the log", 1 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "a.db")
			s, err := Open(path, WithCheckpointSize(1<<20))
			require.NoError(t, err)
			defer func() { s.db.Close(); s.wal.f.Close() }()
			require.NoError(t, s.Commit(&agent.Batch{Put: []agent.StoredConversation{{ID: "c1", Handler: []byte("1")}}}))
			s.checkpoint = tt.checkpoint
			require.NoError(t, s.db.Close())
			s.db, err = bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
			require.NoError(t, err)
			wal := s.wal.f
			s.wal.f, err = os.Open(wal.Name())
			require.NoError(t, err)
			require.Error(t, s.Commit(&agent.Batch{Put: []agent.StoredConversation{{ID: "c1", Handler: []byte("lost")}, {ID: "c2"}}, Delete: []string{"c1"}}))
			require.NoError(t, s.wal.f.Close())
			s.wal.f = wal
			require.NoError(t, s.db.Close())
			s.db, err = bbolt.Open(path, 0o600, nil)
			require.NoError(t, err)
			s.checkpoint = 1
			require.NoError(t, s.Commit(&agent.Batch{Put: []agent.StoredConversation{{ID: "c3"}}}))

			st, err := s.Load()
			require.NoError(t, err)
			require.Len(t, st.Conversations, 2)
			assert.Equal(t, "c1", st.Conversations[0].ID)
			assert.Equal(t, []byte("1"), st.Conversations[0].Handler)
			assert.Equal(t, "c3", st.Conversations[1].ID)
			require.NoError(t, s.db.Close())
			ids, _ := tableIDs(t, path)
			slices.Sort(ids)
			assert.Equal(t, []string{"c1", "c3"}, ids)
			s.db, err = bbolt.Open(path, 0o600, nil)
			require.NoError(t, err)
		})
	}
}

package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/forms"
)

// bigPut is a batch that puts conversation id with a handler of 64 KiB
// holding h, and sends an entry of sequence number seq.
func bigPut(id, h string, seq uint64) *agent.Batch {
	return &agent.Batch{
		Put:  []agent.StoredConversation{{ID: id, Handler: []byte(h + strings.Repeat(".", 64<<10))}},
		Send: []agent.OutboxEntry{{Seq: seq, Conversation: id, Message: &forms.Message{Performative: "inform", ReplyWith: fmt.Sprint(id, "#", seq)}, Pending: []string{"bob"}}},
	}
}

// committed is a store of 1 MiB checkpoints at path and what the test
// committed to it: each conversation's handler's first byte, by id, and
// the outbox's sequence numbers.
type committed struct {
	t     *testing.T
	path  string
	s     *Store
	convs map[string]string
	seqs  []uint64
}

func openCommitted(t *testing.T) *committed {
	path := filepath.Join(t.TempDir(), "a.db")
	s, err := Open(path, WithCheckpointSize(1<<20))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	return &committed{t: t, path: path, s: s, convs: map[string]string{}}
}

// commit commits bigPut of id, h and the next sequence number.
func (c *committed) commit(id, h string) {
	seq := uint64(len(c.seqs) + 1)
	require.NoError(c.t, c.s.Commit(bigPut(id, h, seq)))
	c.convs[id], c.seqs = h, append(c.seqs, seq)
}

// changed is how many conversations ix changes.
func changed(ix *windowIndex) int {
	ids := map[string]bool{}
	for _, o := range ix.convOps {
		ids[string(o.key)] = true
	}
	return len(ids)
}

// copyStore copies the store files at path to a new directory, as a
// crash at that moment would leave them, and returns the copy's path.
func copyStore(t *testing.T, path string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(path))
	for _, suffix := range []string{"", walSuffix} {
		b, err := os.ReadFile(path + suffix)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(dst+suffix, b, 0o600))
	}
	return dst
}

// stored returns what the store at path holds: each conversation's
// handler's first byte, by id, and the outbox's sequence numbers.
func stored(t *testing.T, path string) (map[string]string, []uint64) {
	t.Helper()
	s, err := Open(path)
	require.NoError(t, err)
	defer Crash(s)
	st, err := s.Load()
	require.NoError(t, err)
	convs := map[string]string{}
	for _, sc := range st.Conversations {
		convs[sc.ID] = string(sc.Handler[:1])
	}
	var seqs []uint64
	for _, e := range st.Outbox {
		seqs = append(seqs, e.Seq)
	}
	return convs, seqs
}

// TestALargeLogIsCheckpointedInTheBackground fills the log to the
// checkpoint size: the checkpoint runs in the background while the next
// commits go on at the log file's end, past the checkpoint size; the
// commit after it folds them, and the log file starts over. A crash at
// any of those moments loses nothing, and repeats nothing.
func TestALargeLogIsCheckpointedInTheBackground(t *testing.T) {
	c := openCommitted(t)
	s, path, want, commit := c.s, c.path, c.convs, c.commit
	// hold bbolt's writer lock, so that the background checkpoint waits
	tx, err := s.db.Begin(true)
	require.NoError(t, err)
	for i := 0; s.background == nil; i++ {
		require.Less(t, i, 32, "a background checkpoint starts once the log is 1 MiB")
		commit(fmt.Sprint("c", i), "1")
	}
	bg := s.background
	assert.Empty(t, s.window, "the window after it starts empty")
	assert.Equal(t, s.wal.off, int64(len(bg.window)), "its commit's record went to the log file")
	commit("c0", "2")
	commit("late", "3")
	assert.Greater(t, s.wal.off, int64(len(bg.window)), "the log file goes on past it")
	assert.Equal(t, 2, changed(&s.ix), "the commits meanwhile are indexed apart")
	crashed := copyStore(t, path)
	got, gotSeqs := stored(t, crashed)
	assert.Equal(t, want, got, "a crash before the background checkpoint is done")
	assert.Equal(t, c.seqs, gotSeqs)

	require.NoError(t, tx.Rollback())
	s.mu.Lock()
	s.takeBackground(true)
	s.mu.Unlock()
	require.Nil(t, s.background)
	var cp uint64
	require.NoError(t, s.db.View(func(tx2 *bbolt.Tx) error {
		cp = binary.BigEndian.Uint64(tx2.Bucket(bucketMeta).Get(keyCheckpoint))
		return nil
	}))
	assert.Equal(t, bg.seq, cp, "checkpointed through its commit")
	assert.NotZero(t, s.wal.off, "the records after it are in the log file still")
	crashed = copyStore(t, path)
	got, gotSeqs = stored(t, crashed)
	assert.Equal(t, want, got, "a crash after it, before the next commit")
	assert.Equal(t, c.seqs, gotSeqs)

	commit("next", "4")
	assert.Zero(t, s.wal.off, "the next commit folds the rest, and the log file starts over")
	assert.Empty(t, s.window)
	commit("after", "5")
	st, err := s.Load()
	require.NoError(t, err)
	assert.Len(t, st.Conversations, len(want))
	assert.Len(t, st.Outbox, len(c.seqs))
	require.NoError(t, s.Close())
	got, gotSeqs = stored(t, path)
	assert.Equal(t, want, got)
	assert.Equal(t, c.seqs, gotSeqs)
}

// TestAFailedBackgroundCheckpointLosesNothing: when the background
// checkpoint fails, the window keeps every record, the next commits
// checkpoint it again, and once the log file is twice the checkpoint
// size a commit folds it all itself.
func TestAFailedBackgroundCheckpointLosesNothing(t *testing.T) {
	defer func(f func(*Store, *background) error) { foldBackground = f }(foldBackground)
	foldBackground = func(*Store, *background) error { return errors.New("disk full") }
	c := openCommitted(t)
	s := c.s
	started := 0
	for i := 0; s.wal.off > 0 || i == 0; i++ {
		require.Less(t, i, 64, "a commit folds the log once it is twice the checkpoint size")
		c.commit(fmt.Sprint("c", i%20), fmt.Sprint(i%10))
		if s.background != nil {
			started++
			s.mu.Lock()
			s.takeBackground(true)
			s.mu.Unlock()
			assert.NotZero(t, s.wal.off)
			assert.Equal(t, min(i+1, 20), changed(&s.ix), "every record's changes, again")
		}
	}
	assert.GreaterOrEqual(t, started, 2)
	assert.Nil(t, s.background)
	st, err := s.Load()
	require.NoError(t, err)
	assert.Len(t, st.Conversations, len(c.convs))
	require.NoError(t, s.Close())
	got, gotSeqs := stored(t, c.path)
	assert.Equal(t, c.convs, got)
	assert.Equal(t, c.seqs, gotSeqs)
}

// TestACrashAtAnyMomentLosesNothing commits random batches to a store
// whose checkpoints run in the background and in commits by turns, and
// copies its files now and then, as a crash would leave them (between
// two bbolt transactions): each copy holds what was committed before
// it, no more, no less.
func TestACrashAtAnyMomentLosesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	s, err := Open(path, WithCheckpointSize(600<<10), WithoutSync())
	require.NoError(t, err)
	defer s.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	convs := map[string]string{}
	outbox := map[uint64]bool{}
	var seq uint64
	backgrounds := 0
	for i := range 400 {
		var b agent.Batch
		used := map[string]bool{} // a batch deletes after it puts: one change an id
		for range 1 + rng.IntN(6) {
			id := fmt.Sprint("c", rng.IntN(200))
			if used[id] {
				continue
			}
			used[id] = true
			if rng.IntN(8) == 0 {
				b.Delete = append(b.Delete, id)
				delete(convs, id)
				continue
			}
			h := fmt.Sprint(i)
			b.Put = append(b.Put, agent.StoredConversation{ID: id, Handler: []byte(h + strings.Repeat(".", 8<<10))})
			convs[id] = h
		}
		for range rng.IntN(4) {
			seq++
			b.Send = append(b.Send, agent.OutboxEntry{Seq: seq, Conversation: "c", Message: &forms.Message{Performative: "inform", ReplyWith: fmt.Sprint("c#", seq)}, Pending: []string{"bob"}})
			outbox[seq] = true
		}
		for acked := range outbox {
			if rng.IntN(3) == 0 {
				b.Acked = append(b.Acked, acked)
				delete(outbox, acked)
			}
		}
		require.NoError(t, s.Commit(&b))
		if s.background != nil {
			backgrounds++
		}
		if i%25 != 24 {
			continue
		}
		tx, err := s.db.Begin(true) // no checkpoint halfway through
		require.NoError(t, err)
		crashed := copyStore(t, path)
		require.NoError(t, tx.Rollback())
		got, gotSeqs := stored(t, crashed)
		want := map[string]string{}
		for id, h := range convs {
			want[id] = h[:1]
		}
		assert.Equal(t, want, got, "after commit %d", i)
		assert.ElementsMatch(t, slices.Collect(maps.Keys(outbox)), gotSeqs, "after commit %d", i)
	}
	assert.Greater(t, backgrounds, 3, "checkpoints in the background")
}

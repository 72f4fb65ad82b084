package bolt

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/parleyhq/parley/agent"
)

// put is a batch that puts conversation id with handler h.
func put(id, h string) *agent.Batch {
	return &agent.Batch{Put: []agent.StoredConversation{{ID: id, Handler: []byte(h)}}}
}

// commitAll opens the store at path with opts, commits bs and leaves
// the files as a crash would (Close would fold the log into the
// tables). It returns the offset of each commit's record in the log
// file.
func commitAll(t *testing.T, path string, opts []Option, bs ...*agent.Batch) []int64 {
	t.Helper()
	s, err := Open(path, opts...)
	require.NoError(t, err)
	var offs []int64
	for _, b := range bs {
		offs = append(offs, s.wal.off)
		require.NoError(t, s.Commit(b))
	}
	Crash(s)
	return offs
}

// loaded opens the store at path and returns each conversation's
// handler, by id, and Load's error; it leaves the files as they were.
func loaded(t *testing.T, path string) (map[string]string, error) {
	t.Helper()
	s, err := Open(path)
	require.NoError(t, err)
	defer Crash(s)
	st, err := s.Load()
	require.NotNil(t, st)
	got := map[string]string{}
	for _, sc := range st.Conversations {
		got[sc.ID] = string(sc.Handler)
	}
	return got, err
}

// writeAt writes b at off in the file at path.
func writeAt(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(b, off)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// TestATornLastRecordIsDropped breaks the log's last record as a crash
// while it was written would (its commit never returned): the log ends
// before it, without an error, and the next commit goes where it was.
func TestATornLastRecordIsDropped(t *testing.T) {
	tests := []struct {
		name  string
		breaK func(t *testing.T, wal string, last int64)
	}{
		{"its entry half written", func(t *testing.T, wal string, last int64) {
			writeAt(t, wal, last+walHeader+2, make([]byte, 8))
		}},
		{"its header half written", func(t *testing.T, wal string, last int64) {
			writeAt(t, wal, last+8, make([]byte, 8))
		}},
		{"the file cut inside it", func(t *testing.T, wal string, last int64) {
			require.NoError(t, os.Truncate(wal, last+walHeader+3))
		}},
		{"the file cut inside its header", func(t *testing.T, wal string, last int64) {
			require.NoError(t, os.Truncate(wal, last+5))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "a.db")
			offs := commitAll(t, path, nil, put("c1", "1"), put("c2", "2"), put("c3", "3"))
			tt.breaK(t, path+walSuffix, offs[2])
			got, err := loaded(t, path)
			require.NoError(t, err)
			assert.Equal(t, map[string]string{"c1": "1", "c2": "2"}, got)

			again := commitAll(t, path, nil, put("c4", "4"))
			assert.Equal(t, offs[2], again[0], "the next record goes where the torn one was")
			got, err = loaded(t, path)
			require.NoError(t, err)
			assert.Equal(t, map[string]string{"c1": "1", "c2": "2", "c4": "4"}, got)
		})
	}
}

// TestARecordBrokenBeforeALaterOneIsReported breaks the second of three
// records: the error names the log file and the record's offset, the
// records before and after it are loaded, and the error stays once a
// checkpoint has folded the log and the log has started over.
func TestARecordBrokenBeforeALaterOneIsReported(t *testing.T) {
	tests := []struct {
		name string
		off  int64 // into the record
		b    []byte
	}{
		{"its entry", walHeader + 1, []byte("broken")},
		{"its checksum", 4, []byte{0, 0, 0, 0}},
		{"its length", 0, []byte{0xff, 0xff, 0, 0}},
		{"its sequence number", 8, []byte{9}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "a.db")
			offs := commitAll(t, path, nil, put("c1", "1"), put("c2", "2"), put("c3", "3"))
			writeAt(t, path+walSuffix, offs[1]+tt.off, tt.b)
			want := fmt.Sprintf("%s offset %d: %d unreadable bytes", path+walSuffix, offs[1], offs[2]-offs[1])

			got, err := loaded(t, path)
			require.Error(t, err)
			assert.Contains(t, err.Error(), want)
			assert.Equal(t, map[string]string{"c1": "1", "c3": "3"}, got)

			commitAll(t, path, []Option{WithCheckpointSize(1)}, put("c4", "4"))
			commitAll(t, path, nil, put("c5", "5"))
			got, err = loaded(t, path)
			require.Error(t, err)
			assert.Contains(t, err.Error(), want)
			assert.Equal(t, map[string]string{"c1": "1", "c3": "3", "c4": "4", "c5": "5"}, got)
			assert.Equal(t, 1, strings.Count(err.Error(), want), "reported once")
			assert.Equal(t, 1, countUnreadable(t, path), "kept once")
		})
	}
}

// countUnreadable counts what the bbolt file at path keeps of what the
// log lost.
func countUnreadable(t *testing.T, path string) int {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	require.NoError(t, err)
	defer db.Close()
	n := 0
	require.NoError(t, db.View(func(tx *bbolt.Tx) error {
		n = tx.Bucket(bucketUnreadable).Stats().KeyN
		return nil
	}))
	return n
}

// TestACrashDuringACheckpointLosesAndRepeatsNothing leaves the files
// as a crash at each point of a checkpoint would: commits 1 and 2 in the
// log file (c1 put, then deleted), commit 3 (c1 put again) folding them
// into the tables. Records already checkpointed are skipped by their
// numbers, not applied twice (c1 deleted again), nor are the records of
// the log's earlier round once it has started over.
func TestACrashDuringACheckpointLosesAndRepeatsNothing(t *testing.T) {
	tests := []struct {
		name string
		// crash leaves the files after the checkpoint commit: before is
		// the bbolt file as it was before, and last the offset of commit
		// 2's record.
		crash func(t *testing.T, path string, before []byte, last int64)
		want  map[string]string
	}{
		{"before the transaction is committed", func(t *testing.T, path string, before []byte, _ int64) {
			require.NoError(t, os.WriteFile(path, before, 0o600))
		}, map[string]string{}},
		{"the transaction committed, the log not started over", func(*testing.T, string, []byte, int64) {}, map[string]string{"c1": "3"}},
		{"the next commit's record torn over the earlier round", func(t *testing.T, path string, _ []byte, _ int64) {
			offs := commitAll(t, path, nil, put("c9", "x"))
			writeAt(t, path+walSuffix, offs[0]+walHeader, []byte("torn"))
		}, map[string]string{"c1": "3"}},
		{"the next commits written over the earlier round", func(t *testing.T, path string, _ []byte, last int64) {
			offs := commitAll(t, path, nil, put("c", ""), put("c4", "4"))
			require.Less(t, offs[1], last, "commit 2's record is still there, after the new ones")
		}, map[string]string{"c1": "3", "c": "", "c4": "4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "a.db")
			offs := commitAll(t, path, nil, put("c1", "first round, a long handler"), &agent.Batch{Delete: []string{"c1"}})
			before, err := os.ReadFile(path)
			require.NoError(t, err)
			commitAll(t, path, []Option{WithCheckpointSize(1)}, put("c1", "3"))
			tt.crash(t, path, before, offs[1])

			got, err := loaded(t, path)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestAFileOfFormat3IsConverted opens a file of format 3, its log
// inside the bbolt file: the log is folded into the tables at Open, the
// next commits go to the log file, and the bbolt file's log is left
// empty.
func TestAFileOfFormat3IsConverted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	var log [][]byte
	for _, b := range []*agent.Batch{put("c1", "1"), put("c2", "2"), {Delete: []string{"c1"}}, put("c2", "2 again")} {
		rec, err := appendEntry(nil, b, &outboxEncoder{format4: true})
		require.NoError(t, err)
		log = append(log, rec)
	}
	require.NoError(t, WriteFormat3(path, log...))

	offs := commitAll(t, path, nil, put("c3", "3"))
	assert.Equal(t, []int64{0}, offs, "the commit goes to the log file")
	got, err := loaded(t, path)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"c2": "2 again", "c3": "3"}, got)

	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.View(func(tx *bbolt.Tx) error {
		assert.Equal(t, formatVersion, string(tx.Bucket(bucketMeta).Get(keyVersion)))
		assert.Equal(t, []byte{0, 0, 0, 0, 0, 0, 0, 4}, tx.Bucket(bucketMeta).Get(keyCheckpoint), "checkpointed through the old log's last entry")
		assert.Zero(t, tx.Bucket(bucketLog).Stats().KeyN)
		return nil
	}))
}

// TestTheLogFileIsWrittenInPlace: the log file grows by steps, and once
// a checkpoint has started it over, the next records are written over
// the first ones without growing it.
func TestTheLogFileIsWrittenInPlace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	s, err := Open(path, WithCheckpointSize(1<<20))
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Commit(put("c1", "1")))
	info, err := os.Stat(path + walSuffix)
	require.NoError(t, err)
	assert.Equal(t, int64(1<<20), info.Size(), "grown by one step")
	s.checkpoint = 1
	require.NoError(t, s.Commit(put("c2", "2")))
	s.checkpoint = 1 << 20
	require.NoError(t, s.Commit(put("c3", "3")))
	assert.Equal(t, int64(len(s.window)), s.wal.off, "the record after the checkpoint is at offset 0")
	info, err = os.Stat(path + walSuffix)
	require.NoError(t, err)
	assert.Equal(t, int64(1<<20), info.Size())
}

// FuzzScanWAL reads arbitrary bytes as a log file after checkpoints of
// several numbers: it never panics, and every record it takes is whole,
// numbered after the checkpoint and one more than the one before, within
// the log and before where the next one goes.
func FuzzScanWAL(f *testing.F) {
	var log []byte
	for seq := uint64(1); seq <= 4; seq++ {
		start := len(log)
		log = append(appendWALHeader(log), fmt.Sprint("entry ", seq)...)
		sealWAL(log[start:], seq)
	}
	f.Add(log, uint64(0))
	f.Add(log, uint64(2))
	f.Add(append(log[:len(log):len(log)], make([]byte, 64)...), uint64(4))
	broken := append([]byte(nil), log...)
	broken[walHeader+20] ^= 1
	f.Add(broken, uint64(0))
	f.Add([]byte{}, uint64(0))
	f.Fuzz(func(t *testing.T, b []byte, cp uint64) {
		sc := scanWAL(b, cp)
		assert.GreaterOrEqual(t, sc.seq, cp)
		for i, r := range sc.recs {
			require.LessOrEqual(t, r.off+r.n, len(b))
			seq, n, ok := walRecord(b[r.off:])
			assert.True(t, ok)
			assert.Equal(t, r.seq, seq)
			assert.Equal(t, r.n, n)
			assert.Greater(t, seq, cp)
			if i > 0 {
				assert.Greater(t, seq, sc.recs[i-1].seq)
			}
			assert.LessOrEqual(t, r.off+r.n, sc.end)
		}
		for _, r := range sc.bad {
			assert.LessOrEqual(t, r.off+r.n, len(b))
		}
	})
}

// TestScanWAL reads logs of known shapes.
func TestScanWAL(t *testing.T) {
	rec := func(seq uint64, entry string) []byte {
		b := append(appendWALHeader(nil), entry...)
		sealWAL(b, seq)
		return b
	}
	cat := func(bs ...[]byte) []byte {
		var out []byte
		for _, b := range bs {
			out = append(out, b...)
		}
		return out
	}
	r1, r2, r3 := rec(1, "one"), rec(2, "two"), rec(3, "three")
	n1, n2, n3 := len(r1), len(r2), len(r3)
	broken := append([]byte(nil), r2...)
	broken[walHeader] ^= 1
	tests := []struct {
		name    string
		log     []byte
		cp      uint64
		recs    []uint64
		bad     []walSpan
		end     int
		lastSeq uint64
	}{
		{"empty", nil, 0, nil, nil, 0, 0},
		{"zeros", make([]byte, 100), 5, nil, nil, 0, 5},
		{"three records then zeros", cat(r1, r2, r3, make([]byte, 40)), 0, []uint64{1, 2, 3}, nil, n1 + n2 + n3, 3},
		{"checkpointed through 2", cat(r1, r2, r3), 2, []uint64{3}, nil, n1 + n2 + n3, 3},
		{"checkpointed through all", cat(r1, r2, r3), 3, nil, nil, 0, 3},
		{"a torn last record", cat(r1, r2, r3[:n3-1]), 0, []uint64{1, 2}, nil, n1 + n2, 2},
		{"a broken record before a later one", cat(r1, broken, r3), 0, []uint64{1, 3}, []walSpan{{off: n1, n: n2}}, n1 + n2 + n3, 3},
		{"a new round over an earlier one", cat(rec(4, "x"), r2[:n2-2], r3), 3, []uint64{4}, nil, len(rec(4, "x")), 4},
		{"a record numbered lower ends the log", cat(r1, r2, r1), 0, []uint64{1, 2}, nil, n1 + n2, 2},
		{"commits missing before the first", cat(r3), 0, []uint64{3}, []walSpan{{seq: 3, missing: 1}}, n3, 3},
		{"commits missing between two", cat(r1, r3), 0, []uint64{1, 3}, []walSpan{{off: n1, seq: 3, missing: 2}}, n1 + n3, 3},
		{"checkpointed commits skipped over", cat(r1, r3), 2, []uint64{3}, nil, n1 + n3, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := scanWAL(tt.log, tt.cp)
			var seqs []uint64
			for _, r := range sc.recs {
				seqs = append(seqs, r.seq)
			}
			assert.Equal(t, tt.recs, seqs)
			assert.Equal(t, tt.bad, sc.bad)
			assert.Equal(t, tt.end, sc.end)
			assert.Equal(t, tt.lastSeq, sc.seq)
		})
	}
}

// TestALogFileBesideAFreshFileIsNotApplied: a log file left beside a
// new bbolt file (the old one removed), or beside a file of format 3
// (which had no log file), is not that file's: Open empties it.
func TestALogFileBesideAFreshFileIsNotApplied(t *testing.T) {
	tests := []struct {
		name string
		make func(t *testing.T, path string)
		want map[string]string
	}{
		{"a new file", func(t *testing.T, path string) { require.NoError(t, os.Remove(path)) }, map[string]string{}},
		{"a file of format 3", func(t *testing.T, path string) {
			require.NoError(t, os.Remove(path))
			require.NoError(t, WriteFormat3(path))
		}, map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "a.db")
			commitAll(t, path, nil, put("c1", "1"), put("c2", "2"))
			tt.make(t, path)
			got, err := loaded(t, path)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			commitAll(t, path, nil, put("c3", "3"))
			got, err = loaded(t, path)
			require.NoError(t, err)
			assert.Equal(t, map[string]string{"c3": "3"}, got)
		})
	}
}

// TestCloseLeavesEveryCommitInTheBboltFile: Close folds the log into
// the tables, so that the bbolt file alone holds every commit, and the
// unreadable stretch of the log that Load reported stays reported.
func TestCloseLeavesEveryCommitInTheBboltFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	offs := commitAll(t, path, nil, put("c1", "1"), put("c2", "2"), put("c3", "3"))
	writeAt(t, path+walSuffix, offs[1]+walHeader, []byte("broken"))
	s, err := Open(path)
	require.NoError(t, err)
	require.NoError(t, s.Commit(put("c4", "4")))
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "a second Close does nothing")
	require.NoError(t, os.Remove(path+walSuffix))

	got, err := loaded(t, path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf("%s offset %d: ", path+walSuffix, offs[1]))
	assert.Equal(t, map[string]string{"c1": "1", "c3": "3", "c4": "4"}, got)
}

// Package bolt is the embedded default agent.Store: one bbolt file per
// agent, ACID, in pure Go. Open it and hand it to agent.WithStore:
//
//	s, err := bolt.Open("alice.db")
//	m, err := agent.NewManager("alice", agent.WithStore(s))
//	// register the policies, then
//	err = m.Resume(ctx)
//
// Every Commit is one bbolt transaction, synced to disk (fsync) before it
// returns, unless WithoutSync. A commit appends what it changed
// (conversations and outbox entries) to a log, as one record under the
// next sequence number, so that it writes a few pages however much it
// changed; once the log holds WithCheckpointSize bytes (8 MiB by
// default), a commit folds it into the tables of conversations and
// outbox, writing each record once. Without sync, then a process that crashes loses nothing
// (the operating system still writes the file), but a crash of the
// machine or a power loss can lose the last commits or, as bbolt warns
// for its NoSync mode, leave the file corrupt.
package bolt

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"go.etcd.io/bbolt"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/policy"
)

// formatVersion is the version of the records. A file of format 1
// (conversations as JSON, no log) is converted when it is opened; a file
// of another version is refused.
const formatVersion = "2"

// defaultCheckpoint is the log size at which a commit folds the log into
// the conversations (WithCheckpointSize).
const defaultCheckpoint = 8 << 20

var (
	bucketConversations = []byte("conversations")
	bucketLog           = []byte("log")
	bucketOutbox        = []byte("outbox")
	bucketMeta          = []byte("meta")
	keyVersion          = []byte("version")
)

// Option configures Open.
type Option func(*options)

type options struct {
	noSync     bool
	timeout    time.Duration
	checkpoint int
}

// WithoutSync commits without fsync: faster, and safe against a crash of
// the process, not of the machine (which can lose the last commits or
// corrupt the file).
func WithoutSync() Option { return func(o *options) { o.noSync = true } }

// WithLockTimeout bounds how long Open waits for another process that
// holds the file (1 s by default): one file serves one manager at a time.
func WithLockTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithCheckpointSize sets how many bytes of log a commit folds into the
// table of conversations (8 MiB by default; at least 1). A larger log
// makes checkpoints rarer and Load slower: Load reads the whole log.
func WithCheckpointSize(n int) Option { return func(o *options) { o.checkpoint = max(n, 1) } }

// Store is an agent.Store on one bbolt file. It is safe for concurrent
// use.
type Store struct {
	db         *bbolt.DB
	path       string
	checkpoint int
	// mu serialises commits; seq is the last log entry's number and
	// logged the size of the log.
	mu     sync.Mutex
	seq    uint64
	logged int
	buf    []byte
}

var _ agent.Store = (*Store)(nil)

// Open opens (creating if need be) the store file at path. A file that is
// not a store, is corrupt or truncated, or holds records of another
// format version is an error naming the file; Open never panics on a bad
// file.
func Open(path string, opts ...Option) (s *Store, err error) {
	o := options{timeout: time.Second, checkpoint: defaultCheckpoint}
	for _, opt := range opts {
		opt(&o)
	}
	// A corrupt or truncated file can make bbolt fault on its memory map
	// or panic; both become an error naming the file.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("store %s: the file is corrupt: %v", path, r)
		}
	}()
	if info, err := os.Stat(path); err == nil && info.Size() > 0 && info.Size() < 4*int64(os.Getpagesize()) {
		return nil, fmt.Errorf("store %s: the file is truncated (%d bytes)", path, info.Size())
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: o.timeout, NoSync: o.noSync})
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	st := &Store{db: db, path: path, checkpoint: o.checkpoint}
	err = db.Update(func(tx *bbolt.Tx) error {
		if info, err := os.Stat(path); err == nil && info.Size() < tx.Size() {
			return fmt.Errorf("the file is truncated: %d bytes, its records need %d", info.Size(), tx.Size())
		}
		for _, b := range [][]byte{bucketConversations, bucketLog, bucketOutbox, bucketMeta} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bucketMeta)
		switch v := meta.Get(keyVersion); {
		case v == nil:
		case string(v) == "1":
			if err := convertFormat1(tx); err != nil {
				return err
			}
		case string(v) != formatVersion:
			return fmt.Errorf("records of format %s, this version reads format %s", policy.Quote(string(v)), formatVersion)
		}
		if err := meta.Put(keyVersion, []byte(formatVersion)); err != nil {
			return err
		}
		log := tx.Bucket(bucketLog)
		st.seq = lastSeq(log)
		return log.ForEach(func(_, v []byte) error {
			st.logged += len(v)
			return nil
		})
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	return st, nil
}

// convertFormat1 rewrites the conversations of a format 1 file, stored
// as JSON, as binary records. A record it cannot read is left as it is,
// and Load reports it.
func convertFormat1(tx *bbolt.Tx) error {
	convs := tx.Bucket(bucketConversations)
	recs := map[string][]byte{}
	if err := convs.ForEach(func(k, v []byte) error {
		var sc agent.StoredConversation
		if json.Unmarshal(v, &sc) == nil && sc.ID == string(k) {
			recs[sc.ID] = appendConversation(nil, &sc)
		}
		return nil
	}); err != nil {
		return err
	}
	for id, rec := range recs {
		if err := convs.Put([]byte(id), rec); err != nil {
			return err
		}
	}
	return nil
}

// Path returns the file's path.
func (s *Store) Path() string { return s.path }

// Load returns every record: the conversations as the last checkpoint
// left them, with the log applied in order, and the outbox. A record it
// cannot read is left out and named in the error, with the file; the
// others are returned.
func (s *Store) Load() (st *agent.Stored, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			st, err = nil, fmt.Errorf("store %s: the file is corrupt: %v", s.path, r)
		}
	}()
	st = &agent.Stored{}
	var bad []error
	convs := map[string]agent.StoredConversation{}
	out := map[uint64]agent.OutboxEntry{}
	err = s.db.View(func(tx *bbolt.Tx) error {
		if err := tx.Bucket(bucketConversations).ForEach(func(k, v []byte) error {
			sc, err := decodeConversation(v)
			if err != nil || sc.ID != string(k) {
				bad = append(bad, fmt.Errorf("conversation %s: unreadable record", policy.Quote(string(k))))
				return nil
			}
			convs[sc.ID] = sc
			return nil
		}); err != nil {
			return err
		}
		if err := tx.Bucket(bucketOutbox).ForEach(func(k, v []byte) error {
			if len(k) != 8 {
				bad = append(bad, fmt.Errorf("outbox entry %x: unreadable record", k))
				return nil
			}
			if e, ok := decodeOutbox(binary.BigEndian.Uint64(k), v); ok {
				out[e.Seq] = e
			} else {
				bad = append(bad, fmt.Errorf("outbox entry %x: unreadable record", k))
			}
			return nil
		}); err != nil {
			return err
		}
		return forEachEntry(tx.Bucket(bucketLog), func(seq uint64, keys [][]byte, v []byte, ok bool) error {
			k := binary.BigEndian.AppendUint64(nil, seq)
			e, err := decodeEntry(v)
			if !ok || err != nil {
				bad = append(bad, fmt.Errorf("log entry %x: unreadable record", k))
				return nil
			}
			for _, rec := range e.put {
				sc, err := decodeConversation(rec)
				if err != nil {
					bad = append(bad, fmt.Errorf("log entry %x: unreadable conversation", k))
					continue
				}
				convs[sc.ID] = sc
			}
			for _, id := range e.del {
				delete(convs, id)
			}
			for _, o := range e.out {
				if oe, ok := decodeOutbox(o.seq, o.json); ok {
					out[o.seq] = oe
				} else {
					bad = append(bad, fmt.Errorf("log entry %x: unreadable outbox entry %d", k, o.seq))
				}
			}
			for _, seq := range e.acked {
				delete(out, seq)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", s.path, err)
	}
	for _, id := range slices.Sorted(maps.Keys(convs)) {
		st.Conversations = append(st.Conversations, convs[id])
	}
	for _, seq := range slices.Sorted(maps.Keys(out)) {
		st.Outbox = append(st.Outbox, out[seq])
	}
	if len(bad) > 0 {
		return st, fmt.Errorf("store %s: %w", s.path, errors.Join(bad...))
	}
	return st, nil
}

// Commit applies b in one transaction: all it changes goes to the log as
// one entry, and the log into the tables of conversations and outbox
// when it has grown to the checkpoint size.
func (s *Store) Commit(b *agent.Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b.Empty() {
		return nil
	}
	rec, err := appendEntry(s.buf[:0], b)
	if err != nil {
		return fmt.Errorf("store %s: %w", s.path, err)
	}
	s.buf = rec
	fold := s.logged+len(rec) >= s.checkpoint
	err = s.db.Update(func(tx *bbolt.Tx) error {
		if err := putEntry(tx.Bucket(bucketLog), s.seq+1, rec); err != nil {
			return err
		}
		if fold {
			return foldLog(tx)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store %s: %w", s.path, err)
	}
	s.seq++
	s.logged += len(rec)
	if fold {
		s.logged = 0
	}
	return nil
}

// foldLog applies the log to the conversations and the outbox, each
// conversation's and each outbox entry's last record once, and empties
// the log: a message sent and acknowledged within the log's life never
// reaches the outbox table. An entry it cannot read stays in the
// log, for Load to report.
func foldLog(tx *bbolt.Tx) error {
	log, convs, outbox := tx.Bucket(bucketLog), tx.Bucket(bucketConversations), tx.Bucket(bucketOutbox)
	last, sent := map[string][]byte{}, map[uint64][]byte{}
	var gone, kept [][]byte
	if err := forEachEntry(log, func(_ uint64, keys [][]byte, v []byte, ok bool) error {
		e, err := decodeEntry(v)
		if !ok || err != nil {
			kept = append(kept, keys...)
			return nil
		}
		for _, rec := range e.put {
			if id, err := recordID(rec); err == nil {
				last[id] = rec
			}
		}
		for _, id := range e.del {
			delete(last, id)
			if err := convs.Delete([]byte(id)); err != nil {
				return err
			}
		}
		for _, o := range e.out {
			sent[o.seq] = o.json
		}
		for _, seq := range e.acked {
			delete(sent, seq)
			if err := outbox.Delete(seqKey(seq)); err != nil {
				return err
			}
		}
		gone = append(gone, keys...)
		return nil
	}); err != nil {
		return err
	}
	for id, rec := range last {
		if err := convs.Put([]byte(id), bytes.Clone(rec)); err != nil {
			return err
		}
	}
	for seq, v := range sent {
		if err := outbox.Put(seqKey(seq), bytes.Clone(v)); err != nil {
			return err
		}
	}
	if len(kept) > 0 {
		for _, k := range gone {
			if err := log.Delete(k); err != nil {
				return err
			}
		}
		return nil
	}
	if err := tx.DeleteBucket(bucketLog); err != nil {
		return err
	}
	_, err := tx.CreateBucket(bucketLog)
	return err
}

// decodeOutbox decodes the JSON of outbox entry seq.
func decodeOutbox(seq uint64, v []byte) (agent.OutboxEntry, bool) {
	var e agent.OutboxEntry
	if json.Unmarshal(v, &e) != nil || e.Message == nil || e.Seq != seq {
		return agent.OutboxEntry{}, false
	}
	return e, true
}

func seqKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }

// Close closes the file.
func (s *Store) Close() error { return s.db.Close() }

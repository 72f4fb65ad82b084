// Package bolt is the embedded default agent.Store: one bbolt file per
// agent, ACID, in pure Go. Open it and hand it to agent.WithStore:
//
//	s, err := bolt.Open("alice.db")
//	m, err := agent.NewManager("alice", agent.WithStore(s))
//	// register the policies, then
//	err = m.Resume(ctx)
//
// Every Commit is one bbolt transaction, synced to disk (fsync) before it
// returns, unless WithoutSync: then a process that crashes loses nothing
// (the operating system still writes the file), but a crash of the
// machine or a power loss can lose the last commits or, as bbolt warns
// for its NoSync mode, leave the file corrupt.
package bolt

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"go.etcd.io/bbolt"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/policy"
)

// formatVersion is the version of the records; a file of another
// version is refused.
const formatVersion = "1"

var (
	bucketConversations = []byte("conversations")
	bucketOutbox        = []byte("outbox")
	bucketMeta          = []byte("meta")
	keyVersion          = []byte("version")
)

// Option configures Open.
type Option func(*options)

type options struct {
	noSync  bool
	timeout time.Duration
}

// WithoutSync commits without fsync: faster, and safe against a crash of
// the process, not of the machine (which can lose the last commits or
// corrupt the file).
func WithoutSync() Option { return func(o *options) { o.noSync = true } }

// WithLockTimeout bounds how long Open waits for another process that
// holds the file (1 s by default): one file serves one manager at a time.
func WithLockTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// Store is an agent.Store on one bbolt file. It is safe for concurrent
// use.
type Store struct {
	db   *bbolt.DB
	path string
}

var _ agent.Store = (*Store)(nil)

// Open opens (creating if need be) the store file at path. A file that is
// not a store, is corrupt or truncated, or holds records of another
// format version is an error naming the file; Open never panics on a bad
// file.
func Open(path string, opts ...Option) (s *Store, err error) {
	o := options{timeout: time.Second}
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
	err = db.Update(func(tx *bbolt.Tx) error {
		if info, err := os.Stat(path); err == nil && info.Size() < tx.Size() {
			return fmt.Errorf("the file is truncated: %d bytes, its records need %d", info.Size(), tx.Size())
		}
		for _, b := range [][]byte{bucketConversations, bucketOutbox, bucketMeta} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bucketMeta)
		switch v := meta.Get(keyVersion); {
		case v == nil:
			return meta.Put(keyVersion, []byte(formatVersion))
		case string(v) != formatVersion:
			return fmt.Errorf("records of format %s, this version reads format %s", policy.Quote(string(v)), formatVersion)
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	return &Store{db: db, path: path}, nil
}

// Path returns the file's path.
func (s *Store) Path() string { return s.path }

// Load returns every record. A record it cannot read is left out and
// named in the error, with the file; the others are returned.
func (s *Store) Load() (st *agent.Stored, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			st, err = nil, fmt.Errorf("store %s: the file is corrupt: %v", s.path, r)
		}
	}()
	st = &agent.Stored{}
	var bad []error
	err = s.db.View(func(tx *bbolt.Tx) error {
		if err := tx.Bucket(bucketConversations).ForEach(func(k, v []byte) error {
			var sc agent.StoredConversation
			if err := json.Unmarshal(v, &sc); err != nil || sc.ID != string(k) {
				bad = append(bad, fmt.Errorf("conversation %s: unreadable record", policy.Quote(string(k))))
				return nil
			}
			st.Conversations = append(st.Conversations, sc)
			return nil
		}); err != nil {
			return err
		}
		return tx.Bucket(bucketOutbox).ForEach(func(k, v []byte) error {
			var e agent.OutboxEntry
			if len(k) != 8 || json.Unmarshal(v, &e) != nil || e.Message == nil || e.Seq != binary.BigEndian.Uint64(k) {
				bad = append(bad, fmt.Errorf("outbox entry %x: unreadable record", k))
				return nil
			}
			st.Outbox = append(st.Outbox, e)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", s.path, err)
	}
	if len(bad) > 0 {
		return st, fmt.Errorf("store %s: %w", s.path, errors.Join(bad...))
	}
	return st, nil
}

// Commit applies b in one transaction: Put, then Delete, then Send,
// Update and Acked.
func (s *Store) Commit(b *agent.Batch) error {
	err := s.db.Update(func(tx *bbolt.Tx) error {
		convs, outbox := tx.Bucket(bucketConversations), tx.Bucket(bucketOutbox)
		for i := range b.Put {
			v, err := json.Marshal(&b.Put[i])
			if err != nil {
				return fmt.Errorf("conversation %s: %w", policy.Quote(b.Put[i].ID), err)
			}
			if err := convs.Put([]byte(b.Put[i].ID), v); err != nil {
				return err
			}
		}
		for _, id := range b.Delete {
			if err := convs.Delete([]byte(id)); err != nil {
				return err
			}
		}
		for _, list := range [][]agent.OutboxEntry{b.Send, b.Update} {
			for i := range list {
				v, err := json.Marshal(&list[i])
				if err != nil {
					return fmt.Errorf("outbox entry %d: %w", list[i].Seq, err)
				}
				if err := outbox.Put(seqKey(list[i].Seq), v); err != nil {
					return err
				}
			}
		}
		for _, seq := range b.Acked {
			if err := outbox.Delete(seqKey(seq)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store %s: %w", s.path, err)
	}
	return nil
}

func seqKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }

// Close closes the file.
func (s *Store) Close() error { return s.db.Close() }

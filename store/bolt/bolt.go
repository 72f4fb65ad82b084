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
// outbox, writing each conversation's and each entry's last record once.
// The conversations' table is keyed by slot, a number each conversation
// takes when it first reaches the table, so that a checkpoint appends
// the new conversations at its end instead of rewriting a page of the
// table for each. Without sync, then a process that crashes loses nothing
// (the operating system still writes the file), but a crash of the
// machine or a power loss can lose the last commits or, as bbolt warns
// for its NoSync mode, leave the file corrupt.
//
// Besides bbolt's memory map, a Store holds in memory the log since the
// last checkpoint (WithCheckpointSize bytes and one commit's at most),
// so that a checkpoint writes from memory and reads nothing back, and
// the id and slot of every conversation of the table. A conversation id
// must have 1 to 32,768 bytes (bbolt's longest key): Commit refuses a
// batch that changes another, before it writes anything.
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
// (conversations as JSON, no log) or 2 (the conversations' table keyed
// by their ids) is converted when it is opened; a file of another
// version is refused.
const formatVersion = "3"

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
// makes checkpoints rarer and Load slower (Load reads the whole log),
// and the store holds that much more in memory (it keeps the log since
// the last checkpoint).
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
	// window holds the readable log entries since the last checkpoint,
	// one after the other, and convOps and outOps what they change, in
	// order, as slices of it. lastConv gives, for each conversation they
	// change, a cell of convLast, which holds the index of its last
	// change in convOps (a cell, so that a change does not make a new
	// string of the id); lastOut gives the index of each outbox entry's
	// last change in outOps. bad are the keys of the log's unreadable
	// entries, which stay in the log for Load to report. entry is room
	// to decode an entry in.
	window   []byte
	convOps  []convOp
	outOps   []outOp
	lastConv map[string]int
	convLast []int
	lastOut  map[uint64]int
	bad      [][]byte
	entry    entry
	json     outboxJSON
	// slots gives the slot (key) of each conversation of the table, by
	// id, and next the slot the next new one takes; moved is how a
	// checkpoint changes slots, for its commit to apply once done.
	slots map[string]uint64
	next  uint64
	moved []slotMove
}

// slotMove gives conversation id a slot, or takes it back (del).
type slotMove struct {
	id   string
	slot uint64
	del  bool
}

// convOp is a put (rec) or a delete (del) of conversation key.
type convOp struct {
	key, rec []byte
	del      bool
}

// outOp is a put (json) or a removal (del) of outbox entry seq.
type outOp struct {
	seq  uint64
	json []byte
	del  bool
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
	st := &Store{db: db, path: path, checkpoint: o.checkpoint, slots: map[string]uint64{}, lastConv: map[string]int{}, lastOut: map[uint64]int{}}
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
			if err := convertFormat2(tx); err != nil {
				return err
			}
		case string(v) == "2":
			if err := convertFormat2(tx); err != nil {
				return err
			}
		case string(v) != formatVersion:
			return fmt.Errorf("records of format %s, this version reads format %s", policy.Quote(string(v)), formatVersion)
		}
		if err := meta.Put(keyVersion, []byte(formatVersion)); err != nil {
			return err
		}
		st.indexSlots(tx.Bucket(bucketConversations))
		log := tx.Bucket(bucketLog)
		st.seq = lastSeq(log)
		return forEachEntry(log, func(_ uint64, keys [][]byte, rec []byte, ok bool) error {
			st.logged += len(rec)
			start := len(st.window)
			st.window = append(st.window, rec...)
			if !ok || st.index(st.window[start:]) != nil {
				st.window = st.window[:start]
				st.bad = append(st.bad, keys...)
			}
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

// convertFormat2 moves the conversations of a format 2 file, keyed by
// their ids, to slots: the first slots, in the order of their ids. A
// record it cannot read moves too, and Load reports it.
func convertFormat2(tx *bbolt.Tx) error {
	var recs [][]byte
	if err := tx.Bucket(bucketConversations).ForEach(func(_, v []byte) error {
		recs = append(recs, bytes.Clone(v))
		return nil
	}); err != nil {
		return err
	}
	if err := tx.DeleteBucket(bucketConversations); err != nil {
		return err
	}
	convs, err := tx.CreateBucket(bucketConversations)
	if err != nil {
		return err
	}
	convs.FillPercent = 1
	for i, rec := range recs {
		if err := convs.Put(slotKey(nil, uint64(i+1)), rec); err != nil {
			return err
		}
	}
	return nil
}

// indexSlots finds the slot of every readable conversation of convs,
// and the next slot free.
func (s *Store) indexSlots(convs *bbolt.Bucket) {
	c := convs.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if len(k) != slotKeySize {
			continue
		}
		slot := binary.BigEndian.Uint64(k)
		s.next = max(s.next, slot+1)
		if id, err := recordKey(v); err == nil {
			s.slots[string(id)] = slot
		}
	}
	s.next = max(s.next, 1)
}

// slotKeySize is the length of a key of the conversations' table: a
// slot, the number of the conversation in the order they reached the
// table, so that new conversations go to its end.
const slotKeySize = 8

func slotKey(b []byte, slot uint64) []byte { return binary.BigEndian.AppendUint64(b, slot) }

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
			if err != nil || len(k) != slotKeySize {
				bad = append(bad, fmt.Errorf("conversation record %x: unreadable record", k))
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
				delete(convs, string(id))
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
// one entry or, when the log has grown to the checkpoint size, the
// log with it into the tables of conversations and outbox.
func (s *Store) Commit(b *agent.Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b.Empty() {
		return nil
	}
	if err := checkKeys(b); err != nil {
		return fmt.Errorf("store %s: %w", s.path, err)
	}
	start, convs, outs := len(s.window), len(s.convOps), len(s.outOps)
	if n := entrySize(b); cap(s.window)-start < n {
		// double the room up to the checkpoint size: append alone would
		// grow it by a quarter, and copy it again and again
		s.window = slices.Grow(s.window, max(n, 64<<10, min(cap(s.window), s.checkpoint-cap(s.window))))
	}
	var err error
	if s.window, err = appendEntry(s.window, b, &s.json); err != nil {
		s.window = s.window[:start]
		return fmt.Errorf("store %s: %w", s.path, err)
	}
	rec := s.window[start:]
	fold := s.logged+len(rec) >= s.checkpoint
	err = s.index(rec)
	if err == nil {
		err = s.db.Update(func(tx *bbolt.Tx) error {
			if fold {
				return s.fold(tx)
			}
			return putEntry(tx.Bucket(bucketLog), s.seq+1, rec)
		})
	}
	if err != nil {
		s.window = s.window[:start]
		clear(s.convOps[convs:])
		clear(s.outOps[outs:])
		s.convOps, s.outOps = s.convOps[:convs], s.outOps[:outs]
		s.reindex()
		return fmt.Errorf("store %s: %w", s.path, err)
	}
	s.seq++
	s.logged += len(rec)
	if fold {
		for _, m := range s.moved {
			if m.del {
				delete(s.slots, m.id)
			} else {
				s.slots[m.id] = m.slot
				s.next = max(s.next, m.slot+1)
			}
		}
		clear(s.moved)
		s.logged = 0
		clear(s.convOps)
		clear(s.outOps)
		clear(s.lastConv)
		clear(s.lastOut)
		s.window, s.convOps, s.outOps, s.convLast = s.window[:0], s.convOps[:0], s.outOps[:0], s.convLast[:0]
		if cap(s.window) > 2*s.checkpoint {
			s.window = nil // one huge commit: let its room go
		}
	}
	return nil
}

// checkKeys refuses a batch that changes a conversation whose id cannot
// be a key of the table (empty, or longer than bbolt.MaxKeySize): its
// commit would go to the log, and every checkpoint after it fail.
func checkKeys(b *agent.Batch) error {
	for i := range b.Put {
		if err := checkKey(b.Put[i].ID); err != nil {
			return err
		}
	}
	for _, id := range b.Delete {
		if err := checkKey(id); err != nil {
			return err
		}
	}
	return nil
}

func checkKey(id string) error {
	if id == "" || len(id) > bbolt.MaxKeySize {
		return fmt.Errorf("conversation id %s of %d bytes: an id must have 1 to %d", policy.Quote(id), len(id), bbolt.MaxKeySize)
	}
	return nil
}

// index appends what log entry rec, a slice of the window, changes to
// the window's changes.
func (s *Store) index(rec []byte) error {
	e := &s.entry
	defer func() {
		// drop the slices of the window
		clear(e.put)
		clear(e.del)
		clear(e.out)
	}()
	if err := e.decode(rec); err != nil {
		return err
	}
	for _, r := range e.put {
		if key, err := recordKey(r); err == nil {
			s.convOp(convOp{key: key, rec: r})
		}
	}
	for _, id := range e.del {
		s.convOp(convOp{key: id, del: true})
	}
	for _, o := range e.out {
		s.outOp(outOp{seq: o.seq, json: o.json})
	}
	for _, seq := range e.acked {
		s.outOp(outOp{seq: seq, del: true})
	}
	return nil
}

// convOp adds o to the window's changes, as its conversation's last.
func (s *Store) convOp(o convOp) {
	if c, ok := s.lastConv[string(o.key)]; ok {
		s.convLast[c] = len(s.convOps)
	} else {
		s.lastConv[string(o.key)] = len(s.convLast)
		s.convLast = append(s.convLast, len(s.convOps))
	}
	s.convOps = append(s.convOps, o)
}

// outOp adds o to the window's changes, as its outbox entry's last.
func (s *Store) outOp(o outOp) {
	s.lastOut[o.seq] = len(s.outOps)
	s.outOps = append(s.outOps, o)
}

// reindex finds the last change of each key again, after the changes
// of a failed commit are taken back.
func (s *Store) reindex() {
	convs, outs := s.convOps, s.outOps
	clear(s.lastConv)
	clear(s.lastOut)
	s.convOps, s.outOps, s.convLast = convs[:0], outs[:0], s.convLast[:0]
	for _, o := range convs {
		s.convOp(o)
	}
	for _, o := range outs {
		s.outOp(o)
	}
}

// fold writes the window's changes to the conversations and the outbox,
// each key's last change once, and empties the log of the window's
// entries: a message sent and acknowledged within the window never
// reaches the outbox table. A new conversation takes the next slot, so
// that new ones go to the table's end.
func (s *Store) fold(tx *bbolt.Tx) error {
	convs, outbox := tx.Bucket(bucketConversations), tx.Bucket(bucketOutbox)
	convs.FillPercent = 1 // new conversations go to the end: fill the pages
	clear(s.moved)
	s.moved = s.moved[:0]
	next := s.next
	keys := make([]byte, 0, slotKeySize*(len(s.lastConv)+len(s.lastOut)))
	for id, c := range s.lastConv {
		o := &s.convOps[s.convLast[c]]
		slot, ok := s.slots[id]
		if !ok && o.del {
			continue
		}
		if !ok {
			slot, next = next, next+1
			s.moved = append(s.moved, slotMove{id: id, slot: slot})
		}
		keys = slotKey(keys, slot)
		k := keys[len(keys)-slotKeySize:]
		var err error
		if o.del {
			s.moved = append(s.moved, slotMove{id: id, del: true})
			err = convs.Delete(k)
		} else {
			err = convs.Put(k, o.rec)
		}
		if err != nil {
			return err
		}
	}
	for seq, i := range s.lastOut {
		keys = binary.BigEndian.AppendUint64(keys, seq)
		k := keys[len(keys)-8:]
		var err error
		if s.outOps[i].del {
			err = outbox.Delete(k)
		} else {
			err = outbox.Put(k, s.outOps[i].json)
		}
		if err != nil {
			return err
		}
	}
	if len(s.bad) > 0 {
		return deleteLogExcept(tx.Bucket(bucketLog), s.bad)
	}
	if err := tx.DeleteBucket(bucketLog); err != nil {
		return err
	}
	_, err := tx.CreateBucket(bucketLog)
	return err
}

// deleteLogExcept deletes every key of the log but those of keep.
func deleteLogExcept(log *bbolt.Bucket, keep [][]byte) error {
	kept := make(map[string]struct{}, len(keep))
	for _, k := range keep {
		kept[string(k)] = struct{}{}
	}
	var gone [][]byte
	if err := log.ForEach(func(k, _ []byte) error {
		if _, ok := kept[string(k)]; !ok {
			gone = append(gone, bytes.Clone(k))
		}
		return nil
	}); err != nil {
		return err
	}
	for _, k := range gone {
		if err := log.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// decodeOutbox decodes the JSON of outbox entry seq.
func decodeOutbox(seq uint64, v []byte) (agent.OutboxEntry, bool) {
	var e agent.OutboxEntry
	if json.Unmarshal(v, &e) != nil || e.Message == nil || e.Seq != seq {
		return agent.OutboxEntry{}, false
	}
	return e, true
}

// Close closes the file.
func (s *Store) Close() error { return s.db.Close() }

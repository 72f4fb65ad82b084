// Package bolt is the embedded default agent.Store: one bbolt file per
// agent, ACID, in pure Go, and beside it its write-ahead log, a file of
// the same path with "-wal" appended. Open it and hand it to
// agent.WithStore:
//
//	s, err := bolt.Open("alice.db") // and alice.db-wal
//	m, err := agent.NewManager("alice", agent.WithStore(s))
//	// register the policies, then
//	err = m.Resume(ctx)
//
// Every Commit appends what it changed (conversations and outbox
// entries) to the log file as one record, under the next sequence
// number, with its length and a CRC-32C, and syncs it (fdatasync, once)
// before it returns, unless WithoutSync. Once the log holds
// WithCheckpointSize bytes (8 MiB by default), it is folded into the
// bbolt file's tables of conversations and outbox, writing each
// conversation's and each entry's last record once, with the sequence
// number folded through, in one bbolt transaction (synced: bbolt syncs
// its pages, then its meta page); then the log file starts over at
// offset 0. A log of 256 KiB or more (or a 32nd of the checkpoint size)
// is folded in the background, while the commits go on at the log
// file's end, and the first commit after it folds the records those
// commits added (in the background again if they are that long); a
// smaller one is folded by the commit that fills it, with its own
// changes. The log file grows with zeros, up to 4 MiB at a time, and is
// written over in place, so that a sync writes no size; it is at most
// twice the checkpoint size and one commit, rounded up to that step (a
// commit that would take it further waits for the checkpoint under way,
// or folds the log itself). The conversations' table
// is keyed by slot, a number each conversation takes when it first
// reaches the table, so that a checkpoint appends the new conversations
// at its end instead of rewriting a page of the table for each.
//
// Close folds the log into the tables too, so that a store closed
// cleanly is whole in its bbolt file; while it is open, or after a
// crash, the last commits are in the log file only: copy, move or
// remove the two files together. A log file beside a new bbolt file, or
// beside one of an earlier format, is not its own: Open empties it.
//
// Open opens the bbolt file first (its lock keeps a second process out
// of both files), then reads the log file and takes the records after
// the checkpoint, in order. A record cut short at the log's end (a crash
// while it was written: its commit had not returned) is dropped; zeros,
// and the records of the log's earlier rounds past the last record, are
// told apart by their sequence numbers. An unreadable record that a
// later one follows is not dropped silently: Load names the log file and
// the offset in its error, as long as it is in the log and, once a
// checkpoint has folded the log, for good, and returns every readable
// record.
//
// What a crash can lose: with sync (the default), nothing committed,
// whether the process or the machine crashes. Without sync, a crash of
// the process loses nothing either (the operating system still writes
// the files); a crash of the machine or a power loss can lose the last
// commits (those the operating system had not written), can leave a
// later record written and an earlier one not (which Load reports as
// unreadable, with the offset) and, as bbolt warns for its NoSync mode,
// can leave the bbolt file corrupt if it came during a checkpoint.
//
// Besides bbolt's memory map, a Store holds in memory the log since the
// last checkpoint (WithCheckpointSize bytes and one commit's at most, or
// twice that while a checkpoint is under way in the background), so
// that a checkpoint writes from memory and reads nothing back, the room
// of two earlier windows of the log at most (each at most twice
// WithCheckpointSize bytes), for the next, the id and slot of every
// conversation of the table and the sequence number of every entry of
// the outbox table; Open reads the whole log file (at most 4 GiB) once.
// A conversation id must have 1 to 32,768 bytes (bbolt's longest key):
// Commit refuses a batch that changes another, before it writes
// anything.
package bolt

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"go.etcd.io/bbolt"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/policy"
)

// formatVersion is the version of the records. A file of format 1
// (conversations as JSON, no log), 2 (the conversations' table keyed by
// their ids) or 3 (the log inside the bbolt file) is converted when it
// is opened; one of format 4 (outbox entries as JSON) is read as it is,
// since format 5 reads both kinds of outbox entries, and marked format
// 5, which earlier releases refuse; a file of another version is
// refused.
const formatVersion = "5"

// defaultCheckpoint is the log size at which a commit folds the log into
// the conversations (WithCheckpointSize).
const defaultCheckpoint = 8 << 20

var (
	bucketConversations = []byte("conversations")
	bucketLog           = []byte("log")
	bucketOutbox        = []byte("outbox")
	bucketMeta          = []byte("meta")
	bucketUnreadable    = []byte("unreadable")
	keyVersion          = []byte("version")
	keyCheckpoint       = []byte("checkpoint")
)

// Option configures Open.
type Option func(*options)

type options struct {
	noSync     bool
	timeout    time.Duration
	checkpoint int
}

// WithoutSync commits without fsync or fdatasync: faster, and safe
// against a crash of the process, not of the machine (which can lose the
// last commits, leave a record of the log unreadable, or, during a
// checkpoint, corrupt the bbolt file).
func WithoutSync() Option { return func(o *options) { o.noSync = true } }

// WithLockTimeout bounds how long Open waits for another process that
// holds the file (1 s by default): one file serves one manager at a time.
func WithLockTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithCheckpointSize sets how many bytes of log a commit folds into the
// table of conversations (8 MiB by default; at least 1, and a size over
// 1 GiB counts as 1 GiB). A larger log makes checkpoints rarer and Open
// slower (it reads the whole log file), the log file that much longer,
// and the store holds that much more in memory (it keeps the log since
// the last checkpoint).
func WithCheckpointSize(n int) Option {
	return func(o *options) { o.checkpoint = min(max(n, 1), maxCheckpoint) }
}

// initialMmap is how much of the bbolt file is mapped from the start
// (64 MiB of address space, not of memory or disk; not on Windows,
// where bbolt would make the file that long): bbolt maps the file anew
// each time it outgrows the mapping, doubling it, and to do so copies
// every page a checkpoint's transaction has touched out of the old
// mapping, which cost a growing store's commits a quarter of their time.
// With a mapping that large bbolt grows the file 16 MiB (its allocation
// step) past its last page at a time, so the file of a new store is
// 16 MiB long, most of it unwritten: the file system allocates no room
// for it where it supports sparse files.
const initialMmap = 64 << 20

// maxCheckpoint bounds the checkpoint size, and so the records of the
// log file (a commit larger than the checkpoint size goes to the tables)
// and the log file (well under maxWAL).
const maxCheckpoint = 1 << 30

// Store is an agent.Store on one bbolt file and its log file. It is
// safe for concurrent use.
type Store struct {
	db         *bbolt.DB
	wal        *walFile
	path       string
	checkpoint int
	// mu serialises commits; seq is the last commit's number.
	mu     sync.Mutex
	closed bool
	seq    uint64
	// window holds the readable log records since the last checkpoint,
	// or since the one under way in the background (see background)
	// (header and entry, as the log file has them), one after the other,
	// and ix what their entries change. lost says what the log file holds since the last
	// checkpoint that cannot be read, for Load to report and the next
	// checkpoint to keep in the bbolt file. entry is room to decode an
	// entry in.
	window []byte
	ix     windowIndex
	lost   []walLost
	entry  entry
	out    outboxEncoder
	// background is the checkpoint under way in the background, if any,
	// and spare the index of the last one, emptied, for the next; rooms
	// holds the room of windows no longer used, two at most, for the
	// next windows (see takeRoom).
	background *background
	spare      windowIndex
	rooms      [][]byte
	// slots gives the slot (key) of each conversation of the table, by
	// id, and next the slot the next new one takes; moved is how a
	// checkpoint changes slots, for its commit to apply once done.
	slots map[string]uint64
	next  uint64
	moved []slotMove
	// tabled holds the sequence numbers of the entries of the outbox
	// table, so that a checkpoint deletes only those (most entries are
	// sent and acknowledged within one window, and never reach it);
	// outMoved is how a checkpoint changes it, for its commit to apply.
	tabled   map[uint64]struct{}
	outMoved []outMove
	// seen and seenOut are the conversations and outbox entries a
	// checkpoint has written, of those the window changes.
	seen    map[string]struct{}
	seenOut map[uint64]struct{}
}

// outMove adds outbox entry seq to the table, or takes it out (del).
type outMove struct {
	seq uint64
	del bool
}

// slotMove gives conversation id a slot, or takes it back (del).
type slotMove struct {
	id   string
	slot uint64
	del  bool
}

// windowIndex is what log records change, in order, as slices of the
// records: a checkpoint writes the last change of each key (see fold),
// so that a commit only appends its changes.
type windowIndex struct {
	convOps []convOp
	outOps  []outOp
}

// convOp is a put (rec) or a delete (del) of conversation key.
type convOp struct {
	key, rec []byte
	del      bool
}

// outOp is a put (rec) or a removal (del) of outbox entry seq.
type outOp struct {
	seq uint64
	rec []byte
	del bool
}

var _ agent.Store = (*Store)(nil)

// Open opens (creating if need be) the store file at path and its log
// file, path+"-wal". A file that is not a store, is corrupt or
// truncated, or holds records of another format version is an error
// naming the file; Open never panics on a bad file. What it cannot read
// of the log file, Load reports.
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
	bo := &bbolt.Options{Timeout: o.timeout, NoSync: o.noSync}
	if runtime.GOOS != "windows" { // where bbolt would grow the file to it
		bo.InitialMmapSize = initialMmap
	}
	db, err := bbolt.Open(path, 0o600, bo)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	st := &Store{db: db, path: path, checkpoint: o.checkpoint, slots: map[string]uint64{}, tabled: map[uint64]struct{}{}, seen: map[string]struct{}{}, seenOut: map[uint64]struct{}{}}
	// after bbolt: its lock keeps a second process from the log too; and
	// before the tables, which make a new file or one of an earlier
	// format of format 4: a log file beside such a file is not its own
	wal, log, err := openWAL(path+walSuffix, o.noSync, o.checkpoint, st.fresh())
	if err == nil {
		err = st.openTables()
	}
	if err != nil {
		if wal != nil {
			wal.f.Close()
		}
		db.Close()
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	st.wal = wal
	st.readWAL(log)
	return st, nil
}

// fresh says whether the file is new or of a format before the log file
// (1 to 3).
func (s *Store) fresh() bool {
	fresh := false
	err := s.db.View(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			fresh = true
			return nil
		}
		switch string(meta.Get(keyVersion)) {
		case "", "1", "2", "3":
			fresh = true
		}
		return nil
	})
	return err == nil && fresh
}

// openTables makes the file's buckets if need be, converts a file of an
// earlier format (folding its log into the tables) and reads the slots
// of the conversations and the sequence number checkpointed through.
func (s *Store) openTables() error {
	fresh := false
	err := s.db.Update(func(tx *bbolt.Tx) error {
		if info, err := os.Stat(s.path); err == nil && info.Size() < tx.Size() {
			return fmt.Errorf("the file is truncated: %d bytes, its records need %d", info.Size(), tx.Size())
		}
		for _, b := range [][]byte{bucketConversations, bucketLog, bucketOutbox, bucketMeta, bucketUnreadable} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bucketMeta)
		v := meta.Get(keyVersion)
		switch {
		case v == nil, string(v) == "3", string(v) == "4":
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
		s.indexSlots(tx.Bucket(bucketConversations))
		s.indexOutbox(tx.Bucket(bucketOutbox))
		if string(v) != formatVersion {
			if err := meta.Put(keyVersion, []byte(formatVersion)); err != nil {
				return err
			}
		}
		if string(v) == formatVersion || string(v) == "4" {
			cp := meta.Get(keyCheckpoint)
			if len(cp) != 8 {
				return fmt.Errorf("unreadable checkpoint %x", cp)
			}
			s.seq = binary.BigEndian.Uint64(cp)
			return nil
		}
		fresh = true
		return s.foldLog(tx)
	})
	if err == nil && fresh {
		s.checkpointed()
	}
	return err
}

// foldLog folds the log of a file of an earlier format, kept in the
// bbolt file, into the tables. Its unreadable entries stay there, for
// Load to report.
func (s *Store) foldLog(tx *bbolt.Tx) error {
	log := tx.Bucket(bucketLog)
	s.seq = lastSeq(log)
	var bad [][]byte
	if err := forEachEntry(log, func(seq uint64, keys [][]byte, rec []byte, ok bool) error {
		start := len(s.window)
		s.window = append(appendWALHeader(s.window), rec...)
		sealWAL(s.window[start:], seq)
		if !ok || s.index(s.window[start+walHeader:]) != nil {
			s.window = s.window[:start]
			bad = append(bad, keys...)
		}
		return nil
	}); err != nil {
		return err
	}
	if err := s.fold(tx, &s.ix, s.lost, s.seq); err != nil {
		return err
	}
	return deleteLogExcept(log, bad)
}

// readWAL takes the records of log, the log file's bytes, that follow
// the checkpoint, and notes what it cannot read.
func (s *Store) readWAL(log []byte) {
	sc := scanWAL(log, s.seq)
	for _, r := range sc.recs {
		start := len(s.window)
		s.window = append(s.window, log[r.off:r.off+r.n]...)
		if s.index(s.window[start+walHeader:]) != nil {
			s.window = s.window[:start]
			s.lost = append(s.lost, walLost{kind: lostEntry, off: uint64(r.off), n: uint64(r.n), seq: r.seq})
		}
	}
	for _, r := range sc.bad {
		if r.n == 0 {
			s.lost = append(s.lost, walLost{kind: lostCommits, off: uint64(r.off), n: r.seq - r.missing, seq: r.missing})
		} else {
			s.lost = append(s.lost, walLost{kind: lostBytes, off: uint64(r.off), n: uint64(r.n)})
		}
	}
	s.seq, s.wal.off = sc.seq, int64(sc.end)
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

// indexOutbox notes the sequence number of every entry of outbox.
func (s *Store) indexOutbox(outbox *bbolt.Bucket) {
	c := outbox.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		if len(k) == 8 {
			s.tabled[binary.BigEndian.Uint64(k)] = struct{}{}
		}
	}
}

// slotKeySize is the length of a key of the conversations' table: a
// slot, the number of the conversation in the order they reached the
// table, so that new conversations go to its end.
const slotKeySize = 8

func slotKey(b []byte, slot uint64) []byte { return binary.BigEndian.AppendUint64(b, slot) }

// Path returns the file's path.
func (s *Store) Path() string { return s.path }

// Load returns every record: the conversations as the last checkpoint
// left them, with the log since then applied in order, and the outbox. A
// record it cannot read is left out and named in the error, with the
// file (and, for the log file, the offset); the others are returned.
func (s *Store) Load() (st *agent.Stored, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.takeBackground(true)
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
		if err := tx.Bucket(bucketUnreadable).ForEach(func(k, v []byte) error {
			l, ok := decodeLost(v)
			if !ok {
				bad = append(bad, fmt.Errorf("unreadable record %x of what the log lost", k))
				return nil
			}
			bad = append(bad, l.error(s.wal.path))
			return nil
		}); err != nil {
			return err
		}
		// the log of an earlier format holds its unreadable entries only
		return forEachEntry(tx.Bucket(bucketLog), func(seq uint64, _ [][]byte, _ []byte, _ bool) error {
			bad = append(bad, fmt.Errorf("log entry %x: unreadable record", binary.BigEndian.AppendUint64(nil, seq)))
			return nil
		})
	})
	for off := 0; err == nil && off < len(s.window); {
		n := walHeader + int(binary.LittleEndian.Uint32(s.window[off:]))
		seq := binary.LittleEndian.Uint64(s.window[off+8:])
		bad = append(bad, s.apply(seq, s.window[off+walHeader:off+n], convs, out)...)
		off += n
	}
	for _, l := range s.lost {
		bad = append(bad, l.error(s.wal.path))
	}
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

// apply applies the entry of commit seq to convs and out, and returns
// what it cannot read.
func (s *Store) apply(seq uint64, v []byte, convs map[string]agent.StoredConversation, out map[uint64]agent.OutboxEntry) []error {
	e, err := decodeEntry(v)
	if err != nil {
		return []error{fmt.Errorf("%s commit %d: unreadable record", s.wal.path, seq)}
	}
	var bad []error
	for _, rec := range e.put {
		sc, err := decodeConversation(rec)
		if err != nil {
			bad = append(bad, fmt.Errorf("%s commit %d: unreadable conversation", s.wal.path, seq))
			continue
		}
		convs[sc.ID] = sc
	}
	for _, id := range e.del {
		delete(convs, string(id))
	}
	for _, o := range e.out {
		if oe, ok := decodeOutbox(o.seq, o.rec); ok {
			out[o.seq] = oe
		} else {
			bad = append(bad, fmt.Errorf("%s commit %d: unreadable outbox entry %d", s.wal.path, seq, o.seq))
		}
	}
	for _, seq := range e.acked {
		delete(out, seq)
	}
	return bad
}

// Commit applies b: all it changes goes to the log file as one record,
// synced (fdatasync) unless WithoutSync. When the log file has grown to
// the checkpoint size, the log since the last checkpoint is folded into
// the tables of conversations and outbox in one synced bbolt
// transaction, after which the log starts over: in the background, the
// commit's record in the log file, when the log holds at least
// minBackground bytes (the commits meanwhile go on at the log file's
// end, and the next commit after it folds what they changed), or else
// in the commit, the commit's changes with it.
func (s *Store) Commit(b *agent.Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b.Empty() {
		return nil
	}
	if err := checkKeys(b); err != nil {
		return fmt.Errorf("store %s: %w", s.path, err)
	}
	s.takeBackground(false)
	if s.background != nil && s.wal.off+int64(walHeader+entrySize(b)) >= 2*int64(s.checkpoint) {
		// the log file would outgrow twice the checkpoint size
		s.takeBackground(true)
	}
	start, convs, outs := len(s.window), len(s.ix.convOps), len(s.ix.outOps)
	if n := walHeader + entrySize(b); cap(s.window)-start < n {
		// double the room up to the checkpoint size: append alone would
		// grow it by a quarter, and copy it again and again
		s.window = slices.Grow(s.window, max(n, 64<<10, min(cap(s.window), 2*s.checkpoint-cap(s.window))))
	}
	var err error
	if s.window, err = appendEntry(appendWALHeader(s.window), b, &s.out); err != nil {
		s.window = s.window[:start]
		return fmt.Errorf("store %s: %w", s.path, err)
	}
	rec := s.window[start:]
	end := s.wal.off + int64(len(rec))
	fold, background := false, false
	switch {
	case end < int64(s.checkpoint) || s.background != nil:
	case len(rec) < s.checkpoint && len(s.window) >= s.minBackground() && end < 2*int64(s.checkpoint):
		background = true
	default:
		fold = true
	}
	err = s.index(rec[walHeader:])
	if err == nil && fold {
		err = s.db.Update(func(tx *bbolt.Tx) error { return s.fold(tx, &s.ix, s.lost, s.seq+1) })
	} else if err == nil {
		sealWAL(rec, s.seq+1)
		err = s.wal.append(rec)
	}
	if err != nil {
		s.window = s.window[:start]
		s.ix.truncate(convs, outs)
		return fmt.Errorf("store %s: %w", s.path, err)
	}
	s.seq++
	switch {
	case fold:
		s.checkpointed()
	case background:
		s.startBackground()
	}
	return nil
}

// checkpointed takes what the window changed as the tables now hold it:
// the slots and outbox entries the checkpoint gave and took back, an
// empty window, and the log file to start over.
func (s *Store) checkpointed() {
	s.moveTabled()
	s.restart()
}

// moveTabled applies what a checkpoint did to the table's slots and
// outbox entries.
func (s *Store) moveTabled() {
	for _, m := range s.moved {
		if m.del {
			delete(s.slots, m.id)
		} else {
			s.slots[m.id] = m.slot
			s.next = max(s.next, m.slot+1)
		}
	}
	clear(s.moved)
	s.moved = s.moved[:0]
	for _, m := range s.outMoved {
		if m.del {
			delete(s.tabled, m.seq)
		} else {
			s.tabled[m.seq] = struct{}{}
		}
	}
	s.outMoved = s.outMoved[:0]
}

// restart empties the window, every record of it checkpointed, and
// starts the log file over.
func (s *Store) restart() {
	s.lost = nil
	s.ix.reset()
	s.window = s.window[:0]
	if n := len(s.rooms); n > 0 && cap(s.rooms[n-1]) > cap(s.window) {
		s.window, s.rooms[n-1] = s.rooms[n-1], s.window
	}
	if cap(s.window) > 2*s.checkpoint {
		s.window = nil // one huge commit: let its room go
	}
	if s.wal != nil {
		s.wal.off = 0
	}
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
			s.ix.convOps = append(s.ix.convOps, convOp{key: key, rec: r})
		}
	}
	for _, id := range e.del {
		s.ix.convOps = append(s.ix.convOps, convOp{key: id, del: true})
	}
	for _, o := range e.out {
		s.ix.outOps = append(s.ix.outOps, outOp{seq: o.seq, rec: o.rec})
	}
	for _, seq := range e.acked {
		s.ix.outOps = append(s.ix.outOps, outOp{seq: seq, del: true})
	}
	return nil
}

// truncate takes back the changes from the convs-th and the outs-th
// on (those of a failed commit).
func (ix *windowIndex) truncate(convs, outs int) {
	clear(ix.convOps[convs:])
	clear(ix.outOps[outs:])
	ix.convOps, ix.outOps = ix.convOps[:convs], ix.outOps[:outs]
}

// reset empties ix, keeping its room, and lets go of the records.
func (ix *windowIndex) reset() { ix.truncate(0, 0) }

// fold writes the window's changes to the conversations and the outbox,
// each key's last change once, what the log lost since the last
// checkpoint (to the table of what is unreadable, which Load reports
// for good), and seq, the commit's sequence number, as the one
// checkpointed through: a message sent and acknowledged within the
// window never reaches the outbox table, and is not deleted from it. A
// new conversation takes the next slot, so that new ones go to the
// table's end.
func (s *Store) fold(tx *bbolt.Tx, ix *windowIndex, lost []walLost, seq uint64) error {
	convs, outbox := tx.Bucket(bucketConversations), tx.Bucket(bucketOutbox)
	convs.FillPercent = 1 // new conversations go to the end: fill the pages
	clear(s.moved)
	s.moved = s.moved[:0]
	next := s.next
	// room for every key at once: bbolt keeps them until the commit
	keys := make([]byte, 0, slotKeySize*(len(ix.convOps)+len(ix.outOps)))
	clear(s.seen)
	for i := len(ix.convOps) - 1; i >= 0; i-- {
		o := &ix.convOps[i]
		if _, ok := s.seen[string(o.key)]; ok {
			continue // a later change of the conversation is written
		}
		id := string(o.key)
		s.seen[id] = struct{}{}
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
	s.outMoved = s.outMoved[:0]
	clear(s.seenOut)
	for i := len(ix.outOps) - 1; i >= 0; i-- {
		o := &ix.outOps[i]
		seq := o.seq
		if _, ok := s.seenOut[seq]; ok {
			continue
		}
		s.seenOut[seq] = struct{}{}
		_, tabled := s.tabled[seq]
		if o.del && !tabled {
			continue // sent and acknowledged since the last checkpoint
		}
		keys = binary.BigEndian.AppendUint64(keys, seq)
		k := keys[len(keys)-8:]
		var err error
		if o.del {
			err = outbox.Delete(k)
		} else {
			err = outbox.Put(k, o.rec)
		}
		if err != nil {
			return err
		}
		if o.del || !tabled {
			s.outMoved = append(s.outMoved, outMove{seq: seq, del: o.del})
		}
	}
	unreadable := tx.Bucket(bucketUnreadable)
	for _, l := range lost {
		n, err := unreadable.NextSequence()
		if err == nil {
			err = unreadable.Put(binary.BigEndian.AppendUint64(nil, n), l.append(nil))
		}
		if err != nil {
			return err
		}
	}
	return tx.Bucket(bucketMeta).Put(keyCheckpoint, binary.BigEndian.AppendUint64(nil, seq))
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

// Close folds the log into the tables (a checkpoint, when the log holds
// anything since the last one), so that once closed the bbolt file holds
// every commit, syncs both files and closes them. A second Close does
// nothing.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.takeBackground(true)
	var err error
	if s.wal.off > 0 || len(s.lost) > 0 {
		if err = s.db.Update(func(tx *bbolt.Tx) error { return s.fold(tx, &s.ix, s.lost, s.seq) }); err == nil {
			s.checkpointed()
		}
	}
	if err == nil {
		err = s.db.Sync() // bbolt syncs its transactions only with sync on
	}
	return errors.Join(err, s.wal.close(), s.db.Close())
}

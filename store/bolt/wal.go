package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
)

// The write-ahead log is a file next to the bbolt file, its path with
// "-wal" appended. A commit appends one record to it, and syncs it once
// (fdatasync); a checkpoint folds the log into bbolt's tables, in one
// synced transaction that also records the sequence number folded
// through, and the log starts over at offset 0.
//
// A record is a header of walHeader bytes, then the log entry
// (appendEntry): the entry's length (4 bytes), the CRC-32C (Castagnoli)
// of the length, the sequence number and the entry (4 bytes), and the
// commit's sequence number (8 bytes), all little-endian. The file is
// grown with zeros, walStep bytes at a time, and written over in place,
// so that a sync has no size to write. Past the last record lie zeros,
// or the records of an earlier round of the log (a lower sequence
// number, at most the one checkpointed), which are told apart by their
// sequence numbers.
const (
	walSuffix = "-wal"
	walHeader = 16
	// walStep is how much the file grows by at most (the checkpoint
	// size if smaller, but at least walMinStep).
	walStep    = 4 << 20
	walMinStep = 64 << 10
	// maxWAL bounds the log file Open reads into memory.
	maxWAL = 1 << 32
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// walChecksum is the CRC of record rec's length, sequence number and
// entry.
func walChecksum(rec []byte) uint32 {
	c := crc32.Update(0, castagnoli, rec[:4])
	return crc32.Update(c, castagnoli, rec[8:])
}

// appendWALHeader appends room for a record's header, filled in by
// sealWAL once the entry follows it.
func appendWALHeader(b []byte) []byte { return append(b, make([]byte, walHeader)...) }

// sealWAL fills in the header of record rec (header and entry) of
// sequence number seq.
func sealWAL(rec []byte, seq uint64) {
	binary.LittleEndian.PutUint32(rec, uint32(len(rec)-walHeader))
	binary.LittleEndian.PutUint64(rec[8:], seq)
	binary.LittleEndian.PutUint32(rec[4:], walChecksum(rec))
}

// walRecord reads the record at the start of b: its sequence number and
// its length, header included, or ok false if none is there whole with
// its checksum.
func walRecord(b []byte) (seq uint64, n int, ok bool) {
	if len(b) < walHeader {
		return 0, 0, false
	}
	size := binary.LittleEndian.Uint32(b)
	if uint64(size) > uint64(len(b)-walHeader) {
		return 0, 0, false
	}
	n = walHeader + int(size)
	if binary.LittleEndian.Uint32(b[4:]) != walChecksum(b[:n]) {
		return 0, 0, false
	}
	return binary.LittleEndian.Uint64(b[8:]), n, true
}

// walScan is what scanWAL found in a log.
type walScan struct {
	// recs are the records after the checkpoint, in order: their offset
	// and length in the log.
	recs []walSpan
	// bad are the unreadable stretches a later record follows.
	bad []walSpan
	// end is where the next record goes: after the last record past the
	// checkpoint, or 0 if there is none.
	end int
	// seq is the last record's sequence number (at least the
	// checkpoint's).
	seq uint64
}

// walSpan is the record of n bytes at off numbered seq, or an
// unreadable stretch of n bytes at off (seq 0), or (n 0) the record at
// off numbered seq when the commits from missing on before it are
// missing.
type walSpan struct {
	off, n       int
	seq, missing uint64
}

// scanWAL reads the log b of a store checkpointed through sequence
// number cp. The records follow each other from offset 0, each
// numbered one more than the one before; those numbered cp or less were
// checkpointed, and are skipped. A record numbered higher than the next
// (and than cp + 1) says the commits between are missing (bad), and the
// log goes on with it. The log ends at the first record that is not
// whole, or is numbered lower than the next, unless a whole record
// numbered higher than any so far (and than cp) follows it: then what
// lies between is unreadable (bad), and the log goes on with that
// record. A record cut short by a crash while it was written, which its
// commit never reported done, ends the log so; so do zeros and the
// records of an earlier round of the log, numbered cp or less.
func scanWAL(b []byte, cp uint64) walScan {
	sc := walScan{seq: cp}
	var prev uint64 // the last record's number
	resync := false // after an unreadable stretch
	for off := 0; off < len(b); {
		seq, n, ok := walRecord(b[off:])
		if !ok || !(off == 0 || resync || seq == prev+1 || seq > max(prev, cp)) {
			next := nextWALRecord(b, off+1, max(prev, cp))
			if next < 0 {
				break
			}
			sc.bad = append(sc.bad, walSpan{off: off, n: next - off})
			resync, off = true, next
			continue
		}
		if !resync && seq > max(prev, cp)+1 {
			sc.bad = append(sc.bad, walSpan{off: off, seq: seq, missing: max(prev, cp) + 1})
		}
		sc.add(walSpan{off: off, n: n, seq: seq}, cp)
		prev, resync, off = seq, false, off+n
	}
	return sc
}

func (sc *walScan) add(r walSpan, cp uint64) {
	if r.seq <= cp {
		return
	}
	sc.recs = append(sc.recs, r)
	sc.end, sc.seq = r.off+r.n, r.seq
}

// nextWALRecord returns the offset of the first whole record of b at or
// after from numbered above after, or -1.
func nextWALRecord(b []byte, from int, after uint64) int {
	for off := from; off+walHeader <= len(b); off++ {
		// the number first: over zeros and other bytes, it rules out
		// nearly every offset before the checksum is worked out
		if s := binary.LittleEndian.Uint64(b[off+8:]); s <= after || s-after > uint64(len(b)) {
			continue
		}
		if seq, _, ok := walRecord(b[off:]); ok && seq > after {
			return off
		}
	}
	return -1
}

// walFile is the log file: where the next record goes, and how long the
// file is.
type walFile struct {
	f      *os.File
	path   string
	noSync bool
	step   int
	off    int64
	size   int64
}

// openWAL opens (creating if need be) the log file at path and reads it
// whole; for a fresh store (a new bbolt file, or one of an earlier
// format), it empties it instead, and syncs it.
func openWAL(path string, noSync bool, checkpoint int, fresh bool) (*walFile, []byte, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, err
	}
	w := &walFile{f: f, path: path, noSync: noSync, step: min(walStep, max(walMinStep, checkpoint))}
	var b []byte
	if fresh {
		if err = f.Truncate(0); err == nil && !noSync {
			err = f.Sync()
		}
	} else {
		b, err = w.read()
	}
	if err == nil && len(b) == 0 && !noSync {
		err = syncDir(filepath.Dir(path)) // a new file: make its name last
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return w, b, nil
}

func (w *walFile) read() ([]byte, error) {
	info, err := w.f.Stat()
	if err != nil {
		return nil, err
	}
	if info.Size() > maxWAL {
		return nil, fmt.Errorf("%s: %d bytes, more than a log holds (%d)", w.path, info.Size(), int64(maxWAL))
	}
	w.size = info.Size()
	b := make([]byte, w.size)
	if _, err := io.ReadFull(io.NewSectionReader(w.f, 0, w.size), b); err != nil {
		return nil, err
	}
	return b, nil
}

// append writes record rec where the next one goes, and syncs its data
// (unless noSync); the file grows first if need be. On an error the
// next record goes where this one went.
func (w *walFile) append(rec []byte) error {
	end := w.off + int64(len(rec))
	if end > w.size {
		if err := w.grow(end); err != nil {
			return err
		}
	}
	if _, err := w.f.WriteAt(rec, w.off); err != nil {
		return err
	}
	if !w.noSync {
		if err := fdatasync(w.f); err != nil {
			return err
		}
	}
	w.off = end
	return nil
}

// grow writes zeros to the file from its end to a multiple of step at
// least end, and syncs it, size included.
func (w *walFile) grow(end int64) error {
	step := int64(w.step)
	size := (end + step - 1) / step * step
	zeros := make([]byte, min(size-w.size, 1<<20))
	for off := w.size; off < size; off += int64(len(zeros)) {
		if _, err := w.f.WriteAt(zeros[:min(int64(len(zeros)), size-off)], off); err != nil {
			return err
		}
	}
	if !w.noSync {
		if err := w.f.Sync(); err != nil {
			return err
		}
	}
	w.size = size
	return nil
}

// close syncs and closes the file.
func (w *walFile) close() error {
	return errors.Join(w.f.Sync(), w.f.Close())
}

// syncDir syncs directory dir, so that a file created in it stays.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// walLost is what Open found unreadable in the log file: an entry whose
// record is whole but which does not decode (lostEntry: n bytes at off,
// of commit seq), a stretch of n bytes at off that a later record
// follows (lostBytes), or n commits from seq on missing before the
// record at off (lostCommits). A checkpoint keeps it in the bbolt file
// (append), so that Load goes on reporting it once the log file starts
// over.
type walLost struct {
	kind        byte
	off, n, seq uint64
}

const (
	lostEntry byte = iota + 1
	lostBytes
	lostCommits
)

func (l walLost) append(b []byte) []byte {
	b = append(b, l.kind)
	b = binary.BigEndian.AppendUint64(b, l.off)
	b = binary.BigEndian.AppendUint64(b, l.n)
	return binary.BigEndian.AppendUint64(b, l.seq)
}

func decodeLost(b []byte) (walLost, bool) {
	if len(b) != 25 || b[0] < lostEntry || b[0] > lostCommits {
		return walLost{}, false
	}
	return walLost{kind: b[0], off: binary.BigEndian.Uint64(b[1:]), n: binary.BigEndian.Uint64(b[9:]), seq: binary.BigEndian.Uint64(b[17:])}, true
}

// error says what was lost, in the log file at path.
func (l walLost) error(path string) error {
	switch l.kind {
	case lostEntry:
		return fmt.Errorf("%s offset %d: unreadable log entry of commit %d (%d bytes)", path, l.off, l.seq, l.n)
	case lostBytes:
		return fmt.Errorf("%s offset %d: %d unreadable bytes, which a later record follows", path, l.off, l.n)
	default:
		return fmt.Errorf("%s offset %d: commits %d to %d missing before it", path, l.off, l.seq, l.seq+l.n-1)
	}
}

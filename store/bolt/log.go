package bolt

import (
	"bytes"
	"encoding/binary"

	"go.etcd.io/bbolt"
)

// The log of format 3 was kept in the bbolt file, in its bucket "log":
// each entry under its sequence number, in chunks. Open folds it into
// the tables (see foldLog) and keeps there only the entries it cannot
// read, for Load to report.

// chunkSize is the size of the chunks of a format 3 log entry but the
// last.
const chunkSize = 2000

// maxChunks bounds the room made ahead for an entry, whatever its key
// says.
const maxChunks = 1 << 12

// logKeySize is the length of a log key: the entry's sequence number,
// then the chunk's index and the number of chunks.
const logKeySize = 16

// lastSeq returns the sequence number of the log's last entry.
func lastSeq(b *bbolt.Bucket) uint64 {
	if k, _ := b.Cursor().Last(); len(k) == logKeySize {
		return binary.BigEndian.Uint64(k)
	}
	return 0
}

// forEachEntry calls f with each entry of the log, in order: its
// sequence number, its keys and its bytes, whole (ok) or not: a chunk
// missing, or a key not of the log's shape (then seq is 0 and keys holds
// that key alone).
func forEachEntry(b *bbolt.Bucket, f func(seq uint64, keys [][]byte, rec []byte, ok bool) error) error {
	var (
		cur        uint64
		keys       [][]byte
		rec        []byte
		want       uint32
		whole, has bool
	)
	flush := func() error {
		if !has {
			return nil
		}
		has = false
		return f(cur, keys, rec, whole && uint32(len(keys)) == want)
	}
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if len(k) != logKeySize {
			if err := flush(); err != nil {
				return err
			}
			if err := f(0, [][]byte{bytes.Clone(k)}, nil, false); err != nil {
				return err
			}
			continue
		}
		seq, i, n := binary.BigEndian.Uint64(k), binary.BigEndian.Uint32(k[8:]), binary.BigEndian.Uint32(k[12:])
		if !has || seq != cur {
			if err := flush(); err != nil {
				return err
			}
			cur, keys, want, whole, has = seq, nil, n, true, true
			rec = make([]byte, 0, int(min(n, maxChunks))*chunkSize)
		}
		if i != uint32(len(keys)) || n != want {
			whole = false
		}
		keys = append(keys, bytes.Clone(k))
		rec = append(rec, v...)
	}
	return flush()
}

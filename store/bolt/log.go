package bolt

import (
	"bytes"
	"encoding/binary"

	"go.etcd.io/bbolt"
)

// chunkSize bounds the values a log entry is written in. bbolt keeps
// at least two keys to a leaf and rewrites the last leaf with each new
// key, so with one large value per commit every commit rewrote the
// entries of the commits before it; in chunks of this size (two to a
// page) a commit writes its own bytes and the tail page only.
const chunkSize = 2000

// maxChunks bounds the room made ahead for an entry, whatever its key
// says.
const maxChunks = 1 << 12

// logKeySize is the length of a log key: the entry's sequence number,
// then the chunk's index and the number of chunks.
const logKeySize = 16

func logKey(seq uint64, i, n uint32) []byte {
	k := binary.BigEndian.AppendUint64(make([]byte, 0, logKeySize), seq)
	k = binary.BigEndian.AppendUint32(k, i)
	return binary.BigEndian.AppendUint32(k, n)
}

// putEntry writes log entry seq, in chunks.
func putEntry(b *bbolt.Bucket, seq uint64, rec []byte) error {
	b.FillPercent = 1 // keys only ever grow: fill the pages
	n := max(1, (len(rec)+chunkSize-1)/chunkSize)
	for i := range n {
		part := rec[i*chunkSize : min(len(rec), (i+1)*chunkSize)]
		if err := b.Put(logKey(seq, uint32(i), uint32(n)), part); err != nil {
			return err
		}
	}
	return nil
}

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

package bolt

import (
	"encoding/binary"
	"errors"

	"go.etcd.io/bbolt"

	"github.com/parleyhq/parley/agent"
)

// EncodeEntry is the log entry of a commit of b.
func EncodeEntry(b *agent.Batch) ([]byte, error) { return appendEntry(nil, b, &outboxEncoder{}) }

// WriteFormat3 writes a file of format 3 at path: empty tables, and in
// the log kept inside the bbolt file the entries of log, numbered from
// 1.
func WriteFormat3(path string, log ...[]byte) error {
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		return err
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, name := range [][]byte{bucketMeta, bucketConversations, bucketLog, bucketOutbox} {
			if _, err := tx.CreateBucket(name); err != nil {
				return err
			}
		}
		if err := tx.Bucket(bucketMeta).Put(keyVersion, []byte("3")); err != nil {
			return err
		}
		for i, rec := range log {
			if err := putEntry(tx.Bucket(bucketLog), uint64(i+1), rec); err != nil {
				return err
			}
		}
		return nil
	})
	return errors.Join(err, db.Close())
}

func logKey(seq uint64, i, n uint32) []byte {
	k := binary.BigEndian.AppendUint64(make([]byte, 0, logKeySize), seq)
	k = binary.BigEndian.AppendUint32(k, i)
	return binary.BigEndian.AppendUint32(k, n)
}

// putEntry writes log entry seq of format 3, in chunks.
func putEntry(b *bbolt.Bucket, seq uint64, rec []byte) error {
	n := max(1, (len(rec)+chunkSize-1)/chunkSize)
	for i := range n {
		part := rec[i*chunkSize : min(len(rec), (i+1)*chunkSize)]
		if err := b.Put(logKey(seq, uint32(i), uint32(n)), part); err != nil {
			return err
		}
	}
	return nil
}

// Crash closes s's files as a crash would leave them: without a
// checkpoint or a sync.
func Crash(s *Store) {
	s.closed = true
	s.wal.f.Close()
	s.db.Close()
}

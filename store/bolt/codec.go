package bolt

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/parleyhq/parley/agent"
)

// The records of formats 2 to 5 are binary: a conversation is its
// fields in a fixed order, each string and byte slice as a uvarint
// length and its bytes, each number as a uvarint, the end time as Unix
// nanoseconds (0 for none). A log entry is what a commit changed (see
// appendEntry), each list as a uvarint count and its items. JSON (of
// format 1) spent a third of a commit's time, and base64 made the
// handler's snapshot a third longer. Format 3 keys the conversations'
// table by slot (8 bytes, big-endian), where format 2 keyed it by id;
// format 4 keeps the log entries in a file of their own (see wal.go),
// where format 3 kept them in the bbolt file. Outbox entries were JSON
// up to format 4, and are binary records from format 5 (see outbox.go),
// which reads both.

// maxField bounds one string or byte slice of a record (16 MiB): a
// corrupt length is an unreadable record, not an allocation.
const maxField = 16 << 20

var errRecord = errors.New("unreadable record")

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// The strings of a record before its numbers are these and, between
// them, the handler's snapshot.
func idStrings(sc *agent.StoredConversation) [4]string {
	return [4]string{sc.ID, sc.Policy, sc.Role, sc.Fingerprint}
}

func parentStrings(sc *agent.StoredConversation) [3]string {
	return [3]string{sc.Opener, sc.Parent, sc.ParentSession}
}

func appendConversation(b []byte, sc *agent.StoredConversation) []byte {
	for _, s := range idStrings(sc) {
		b = appendString(b, s)
	}
	b = append(binary.AppendUvarint(b, uint64(len(sc.Handler))), sc.Handler...)
	for _, s := range parentStrings(sc) {
		b = appendString(b, s)
	}
	b = binary.AppendUvarint(b, sc.ParentEpoch)
	b = binary.AppendUvarint(b, uint64(max(sc.Children, 0)))
	b = binary.AppendVarint(b, endedNanos(sc))
	b = appendString(b, sc.Outcome)
	b = appendString(b, sc.Abort)
	b = binary.AppendUvarint(b, uint64(len(sc.Applied)))
	for _, id := range sc.Applied {
		b = appendString(b, id)
	}
	return b
}

// conversationSize is the length of sc's record: appendConversation adds
// exactly that many bytes.
func conversationSize(sc *agent.StoredConversation) int {
	n := uvarintSize(uint64(len(sc.Handler))) + len(sc.Handler)
	for _, s := range idStrings(sc) {
		n += stringSize(s)
	}
	for _, s := range parentStrings(sc) {
		n += stringSize(s)
	}
	n += uvarintSize(sc.ParentEpoch) + uvarintSize(uint64(max(sc.Children, 0)))
	var v [binary.MaxVarintLen64]byte
	n += len(binary.AppendVarint(v[:0], endedNanos(sc)))
	n += stringSize(sc.Outcome) + stringSize(sc.Abort) + uvarintSize(uint64(len(sc.Applied)))
	for _, id := range sc.Applied {
		n += stringSize(id)
	}
	return n
}

// endedNanos is the end time a record holds: Unix nanoseconds, 0 for
// none.
func endedNanos(sc *agent.StoredConversation) int64 {
	if sc.Ended.IsZero() {
		return 0
	}
	return sc.Ended.UnixNano()
}

func uvarintSize(v uint64) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

func stringSize(s string) int { return uvarintSize(uint64(len(s))) + len(s) }

// appendEntry encodes what a commit changes: the conversations it puts,
// each record behind its length, the ids it deletes, the outbox entries
// it adds or replaces (each its sequence number and its record, as the
// outbox table holds it, behind its length) and the sequence numbers of
// those it removes. It appends to b.
func appendEntry(b []byte, c *agent.Batch, o *outboxEncoder) ([]byte, error) {
	b = binary.AppendUvarint(b, uint64(len(c.Put)))
	for i := range c.Put {
		b = binary.AppendUvarint(b, uint64(conversationSize(&c.Put[i])))
		b = appendConversation(b, &c.Put[i])
	}
	b = binary.AppendUvarint(b, uint64(len(c.Delete)))
	for _, id := range c.Delete {
		b = appendString(b, id)
	}
	b = binary.AppendUvarint(b, uint64(len(c.Send)+len(c.Update)))
	for _, list := range [][]agent.OutboxEntry{c.Send, c.Update} {
		for i := range list {
			v, err := o.encode(&list[i])
			if err != nil {
				return nil, fmt.Errorf("outbox entry %d: %w", list[i].Seq, err)
			}
			b = binary.AppendUvarint(b, list[i].Seq)
			b = append(binary.AppendUvarint(b, uint64(len(v))), v...)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(c.Acked)))
	for _, seq := range c.Acked {
		b = binary.AppendUvarint(b, seq)
	}
	return b, nil
}

// entrySize guesses how long c's log entry is, to make room for it at
// once: its handler snapshots and a little for everything else.
func entrySize(c *agent.Batch) int {
	n := 64*len(c.Delete) + 16*len(c.Acked)
	for i := range c.Put {
		n += 256 + len(c.Put[i].Handler)
	}
	return n + 256*(len(c.Send)+len(c.Update))
}

// outboxJSON encodes outbox entries as JSON, as json.Marshal does (and
// format 4 did), into one buffer it reuses.
type outboxJSON struct {
	buf bytes.Buffer
	enc *json.Encoder
}

// encode returns e's JSON, valid until the next call.
func (j *outboxJSON) encode(e *agent.OutboxEntry) ([]byte, error) {
	if j.enc == nil {
		j.enc = json.NewEncoder(&j.buf)
	}
	j.buf.Reset()
	if err := j.enc.Encode(e); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(j.buf.Bytes(), []byte("\n")), nil // Encode ends each value with a newline
}

// reader decodes a record; its first error sticks.
type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errRecord
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errRecord
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if n > maxField || n > uint64(len(r.b)) {
		r.err = errRecord
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) string() string { return string(r.bytes()) }

// count reads a list's length, which cannot exceed the bytes left (every
// item takes one at least).
func (r *reader) count() int {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.err = errRecord
		return 0
	}
	return int(n)
}

func (r *reader) conversation() agent.StoredConversation {
	var sc agent.StoredConversation
	sc.ID, sc.Policy, sc.Role, sc.Fingerprint = r.string(), r.string(), r.string(), r.string()
	if h := r.bytes(); len(h) > 0 {
		sc.Handler = append([]byte(nil), h...)
	}
	sc.Opener, sc.Parent, sc.ParentSession = r.string(), r.string(), r.string()
	sc.ParentEpoch = r.uvarint()
	children := r.uvarint()
	if children > 1<<31 {
		r.err = errRecord
	}
	sc.Children = int(children)
	if ended := r.varint(); ended != 0 {
		sc.Ended = time.Unix(0, ended).UTC()
	}
	sc.Outcome, sc.Abort = r.string(), r.string()
	if n := r.count(); n > 0 {
		sc.Applied = make([]string, n)
		for i := range sc.Applied {
			sc.Applied[i] = r.string()
		}
	}
	return sc
}

// decodeConversation decodes one conversation record, which must hold
// nothing else.
func decodeConversation(b []byte) (agent.StoredConversation, error) {
	r := reader{b: b}
	sc := r.conversation()
	if r.err == nil && len(r.b) > 0 {
		r.err = errRecord
	}
	return sc, r.err
}

// entry is a decoded log entry: the conversation records it puts,
// undecoded, the ids it deletes, the outbox entries it puts (by sequence
// number, their records, undecoded) and those it removes. Each is a
// slice of the bytes decoded.
type entry struct {
	put   [][]byte
	del   [][]byte
	out   []outRecord
	acked []uint64
}

type outRecord struct {
	seq uint64
	rec []byte
}

// decodeEntry splits a log entry into its records; it decodes none of
// them (see decodeConversation, recordKey and decodeOutbox).
func decodeEntry(b []byte) (entry, error) {
	var e entry
	err := e.decode(b)
	return e, err
}

// decode splits log entry b into e's lists, reusing their room.
func (e *entry) decode(b []byte) error {
	clear(e.put)
	clear(e.del)
	clear(e.out)
	e.put, e.del, e.out, e.acked = e.put[:0], e.del[:0], e.out[:0], e.acked[:0]
	r := reader{b: b}
	for n := r.count(); n > 0 && r.err == nil; n-- {
		e.put = append(e.put, r.bytes())
	}
	for n := r.count(); n > 0 && r.err == nil; n-- {
		e.del = append(e.del, r.bytes())
	}
	for n := r.count(); n > 0 && r.err == nil; n-- {
		seq := r.uvarint()
		e.out = append(e.out, outRecord{seq: seq, rec: r.bytes()})
	}
	for n := r.count(); n > 0 && r.err == nil; n-- {
		e.acked = append(e.acked, r.uvarint())
	}
	if r.err == nil && len(r.b) > 0 {
		r.err = errRecord
	}
	return r.err
}

// recordKey returns the id a conversation record starts with, as a
// slice of rec.
func recordKey(rec []byte) ([]byte, error) {
	r := reader{b: rec}
	id := r.bytes()
	return id, r.err
}

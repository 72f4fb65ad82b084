package bolt

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/parleyhq/parley/agent"
)

// The records of format 2 are binary: a conversation is its fields in
// a fixed order, each string and byte slice as a uvarint length and its
// bytes, each number as a uvarint, the end time as Unix nanoseconds
// (0 for none). A log entry is what a commit changed (see appendEntry),
// each list as a uvarint count and its items. JSON (of format 1) spent a
// third of a commit's time, and base64 made the handler's snapshot a
// third longer. Outbox entries stay JSON, for their messages' content.

// maxField bounds one string or byte slice of a record (16 MiB): a
// corrupt length is an unreadable record, not an allocation.
const maxField = 16 << 20

var errRecord = errors.New("unreadable record")

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendConversation(b []byte, sc *agent.StoredConversation) []byte {
	for _, s := range []string{sc.ID, sc.Policy, sc.Role, sc.Fingerprint, string(sc.Handler), sc.Opener, sc.Parent, sc.ParentSession} {
		b = appendString(b, s)
	}
	b = binary.AppendUvarint(b, sc.ParentEpoch)
	b = binary.AppendUvarint(b, uint64(max(sc.Children, 0)))
	var ended int64
	if !sc.Ended.IsZero() {
		ended = sc.Ended.UnixNano()
	}
	b = binary.AppendVarint(b, ended)
	b = appendString(b, sc.Outcome)
	b = appendString(b, sc.Abort)
	b = binary.AppendUvarint(b, uint64(len(sc.Applied)))
	for _, id := range sc.Applied {
		b = appendString(b, id)
	}
	return b
}

// appendEntry encodes what a commit changes: the conversations it puts,
// each record behind its length, the ids it deletes, the outbox entries
// it adds or replaces (their JSON, as the outbox table holds them) and
// the sequence numbers of those it removes.
func appendEntry(b []byte, c *agent.Batch) ([]byte, error) {
	b = binary.AppendUvarint(b, uint64(len(c.Put)))
	var rec []byte
	for i := range c.Put {
		rec = appendConversation(rec[:0], &c.Put[i])
		b = append(binary.AppendUvarint(b, uint64(len(rec))), rec...)
	}
	b = binary.AppendUvarint(b, uint64(len(c.Delete)))
	for _, id := range c.Delete {
		b = appendString(b, id)
	}
	b = binary.AppendUvarint(b, uint64(len(c.Send)+len(c.Update)))
	for _, list := range [][]agent.OutboxEntry{c.Send, c.Update} {
		for i := range list {
			v, err := json.Marshal(&list[i])
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
// number, their JSON) and those it removes.
type entry struct {
	put   [][]byte
	del   []string
	out   []outRecord
	acked []uint64
}

type outRecord struct {
	seq  uint64
	json []byte
}

// decodeEntry splits a log entry into its records; it decodes none of
// them (see decodeConversation and recordID).
func decodeEntry(b []byte) (entry, error) {
	var e entry
	r := reader{b: b}
	if n := r.count(); n > 0 {
		e.put = make([][]byte, 0, n)
		for range n {
			if e.put = append(e.put, r.bytes()); r.err != nil {
				break
			}
		}
	}
	if n := r.count(); n > 0 {
		e.del = make([]string, 0, n)
		for range n {
			e.del = append(e.del, r.string())
		}
	}
	if n := r.count(); n > 0 {
		e.out = make([]outRecord, 0, n)
		for range n {
			seq := r.uvarint()
			e.out = append(e.out, outRecord{seq: seq, json: r.bytes()})
		}
	}
	if n := r.count(); n > 0 {
		e.acked = make([]uint64, 0, n)
		for range n {
			e.acked = append(e.acked, r.uvarint())
		}
	}
	if r.err == nil && len(r.b) > 0 {
		r.err = errRecord
	}
	return e, r.err
}

// recordID reads the id a conversation record starts with.
func recordID(rec []byte) (string, error) {
	r := reader{b: rec}
	id := r.string()
	return id, r.err
}

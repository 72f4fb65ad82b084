package bolt

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"time"
	"unicode/utf8"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/forms"
)

// An outbox entry of format 5 is a binary record (appendOutbox), where
// formats 1 to 4 wrote its JSON; a log entry and the outbox table hold
// either, told apart by the first byte: outboxBinary, which no JSON
// value starts with, or the JSON object's '{'. Format 5 writes the JSON
// of an entry still when its binary record would not give back what its
// JSON gives (see appendOutbox).
//
// The binary record is outboxBinary, then the entry's sequence number
// (a uvarint), its conversation, the message's performative, sender,
// receivers, reply-to, content, language, encoding, ontology, protocol,
// conversation id, reply-with, in-reply-to and reply-by (RFC 3339, as
// JSON has it, or empty for none), and the receivers pending. A string
// is a uvarint length and its bytes; a list of strings a uvarint, 0 for
// none (JSON's null) or its length plus one, then its strings; the
// content a value.
//
// A value is a tag byte and what the tag says follows: valNull,
// valFalse and valTrue nothing; valNumber a float64 (8 bytes,
// little-endian; an integer is written as the float64 its JSON decodes
// to); valString a string; valObject a uvarint count and as many keys
// (strings) each followed by its value; valArray a uvarint count and as
// many values; valJSON a string holding the value's JSON, for any other
// value (a struct, a typed slice, a string that is not UTF-8, a value
// nested deeper than maxValueDepth...). Restored, a value is what
// json.Unmarshal gives for its JSON: nil, bool, float64, string,
// map[string]any and []any.
const outboxBinary byte = 0x01

const (
	valNull byte = iota
	valFalse
	valTrue
	valNumber
	valString
	valObject
	valArray
	valJSON
)

// maxValueDepth bounds the nesting of the values of a binary record: a
// value nested deeper is written as JSON (where encoding/json's own
// bounds apply), and a record that nests deeper is unreadable.
const maxValueDepth = 64

// maxPresize bounds the room made at once for an object or array by the
// count a record gives; more grows as its items are read.
const maxPresize = 1 << 10

// outboxEncoder encodes outbox entries, into room it reuses.
type outboxEncoder struct {
	json outboxJSON
	rec  []byte
	// format4 writes every entry as JSON, as format 4 did: the tests
	// write stores of format 4 with it.
	format4 bool
}

// encode returns e's record, valid until the next call: binary, or its
// JSON when the binary record would not restore as the JSON does.
func (o *outboxEncoder) encode(e *agent.OutboxEntry) ([]byte, error) {
	if !o.format4 {
		rec, ok, err := appendOutbox(o.rec[:0], e)
		o.rec = rec
		if ok || err != nil {
			return rec, err
		}
	}
	return o.json.encode(e)
}

// appendOutbox appends e's binary record to b. It reports false, having
// appended nothing, for an entry whose binary record would restore
// otherwise than its JSON: one without a message, one with a string of
// the envelope that is not UTF-8 (JSON writes U+FFFD for each byte that
// is not) or a reply-by RFC 3339 cannot write (JSON fails). An error is
// the JSON error of a value of the content (NaN, a cycle, a channel...).
func appendOutbox(b []byte, e *agent.OutboxEntry) ([]byte, bool, error) {
	m := e.Message
	if m == nil || !utf8.ValidString(e.Conversation) || !validStrings(e.Pending) || !validStrings(m.Receivers) {
		return b, false, nil
	}
	env := envelopeStrings(m)
	for _, s := range env {
		if !utf8.ValidString(s) {
			return b, false, nil
		}
	}
	start := len(b)
	b = binary.AppendUvarint(append(b, outboxBinary), e.Seq)
	b = appendString(b, e.Conversation)
	b = appendString(appendString(b, m.Performative), m.Sender)
	b = appendString(appendStrings(b, m.Receivers), m.ReplyTo)
	b, err := appendValue(b, m.Content, 1)
	if err != nil {
		return b[:start], false, err
	}
	for _, s := range env[3:] {
		b = appendString(b, s)
	}
	var at []byte
	if !m.ReplyBy.IsZero() {
		var room [40]byte // RFC 3339 with nanoseconds and an offset: 35 bytes at most
		if at, err = m.ReplyBy.AppendText(room[:0]); err != nil {
			return b[:start], false, nil
		}
	}
	b = append(binary.AppendUvarint(b, uint64(len(at))), at...)
	return appendStrings(b, e.Pending), true, nil
}

// envelopeStrings are the message's strings in a record: its
// performative, sender and reply-to (the content between those and the
// rest), then the rest in order.
func envelopeStrings(m *forms.Message) [10]string {
	return [10]string{m.Performative, m.Sender, m.ReplyTo, m.Language, m.Encoding, m.Ontology, m.Protocol, m.ConversationID, m.ReplyWith, m.InReplyTo}
}

func validStrings(list []string) bool {
	for _, s := range list {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}

// appendStrings appends a list of strings: none (nil) as 0, else its
// length plus one and its strings.
func appendStrings(b []byte, list []string) []byte {
	if list == nil {
		return append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(list))+1)
	for _, s := range list {
		b = appendString(b, s)
	}
	return b
}

// appendValue appends value v at nesting depth: as JSON's kinds of
// values when it is one of the kinds json.Unmarshal gives back or an
// integer or a float64, else as its JSON.
func appendValue(b []byte, v any, depth int) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, valNull), nil
	case bool:
		if v {
			return append(b, valTrue), nil
		}
		return append(b, valFalse), nil
	case string:
		if utf8.ValidString(v) {
			return appendString(append(b, valString), v), nil
		}
	case float64:
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			return appendNumber(b, v), nil
		}
	case int:
		return appendNumber(b, float64(v)), nil
	case int64:
		return appendNumber(b, float64(v)), nil
	case int32:
		return appendNumber(b, float64(v)), nil
	case uint64:
		return appendNumber(b, float64(v)), nil
	case uint32:
		return appendNumber(b, float64(v)), nil
	case uint:
		return appendNumber(b, float64(v)), nil
	case map[string]any:
		if v == nil {
			return append(b, valNull), nil
		}
		if depth < maxValueDepth {
			if out, ok, err := appendObject(b, v, depth); ok || err != nil {
				return out, err
			}
		}
	case []any:
		if v == nil {
			return append(b, valNull), nil
		}
		if depth < maxValueDepth {
			start := len(b)
			b = binary.AppendUvarint(append(b, valArray), uint64(len(v)))
			for _, x := range v {
				var err error
				if b, err = appendValue(b, x, depth+1); err != nil {
					return b[:start], err
				}
			}
			return b, nil
		}
	}
	j, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(binary.AppendUvarint(append(b, valJSON), uint64(len(j))), j...), nil
}

// appendObject appends object v, or reports false, having appended
// nothing, when a key of it is not UTF-8.
func appendObject(b []byte, v map[string]any, depth int) ([]byte, bool, error) {
	start := len(b)
	b = binary.AppendUvarint(append(b, valObject), uint64(len(v)))
	for k, x := range v {
		if !utf8.ValidString(k) {
			return b[:start], false, nil
		}
		var err error
		if b, err = appendValue(appendString(b, k), x, depth+1); err != nil {
			return b[:start], false, err
		}
	}
	return b, true, nil
}

func appendNumber(b []byte, f float64) []byte {
	return binary.LittleEndian.AppendUint64(append(b, valNumber), math.Float64bits(f))
}

// decodeOutbox decodes outbox entry seq's record, binary or JSON: ok
// false for one that is unreadable, has no message or is another
// entry's.
func decodeOutbox(seq uint64, v []byte) (agent.OutboxEntry, bool) {
	var e agent.OutboxEntry
	if len(v) > 0 && v[0] == outboxBinary {
		r := reader{b: v[1:]}
		e = r.outbox()
		if r.err != nil || len(r.b) > 0 || e.Seq != seq {
			return agent.OutboxEntry{}, false
		}
		return e, true
	}
	if json.Unmarshal(v, &e) != nil || e.Message == nil || e.Seq != seq {
		return agent.OutboxEntry{}, false
	}
	return e, true
}

// outbox reads a binary record after its first byte. Its strings must
// be UTF-8, as appendOutbox writes them.
func (r *reader) outbox() agent.OutboxEntry {
	e := agent.OutboxEntry{Seq: r.uvarint(), Conversation: r.text(), Message: &forms.Message{}}
	m := e.Message
	m.Performative, m.Sender = r.text(), r.text()
	m.Receivers = r.strings()
	m.ReplyTo = r.text()
	switch c := r.value(1).(type) {
	case nil:
	case map[string]any:
		m.Content = c
	default:
		r.err = errRecord
	}
	m.Language, m.Encoding, m.Ontology, m.Protocol = r.text(), r.text(), r.text(), r.text()
	m.ConversationID, m.ReplyWith, m.InReplyTo = r.text(), r.text(), r.text()
	if at := r.bytes(); len(at) > 0 && r.err == nil {
		var t time.Time
		if t.UnmarshalText(at) != nil {
			r.err = errRecord
		}
		m.ReplyBy = t
	}
	e.Pending = r.strings()
	return e
}

// text reads a string that must be UTF-8.
func (r *reader) text() string {
	b := r.bytes()
	if !utf8.Valid(b) {
		r.err = errRecord
		return ""
	}
	return string(b)
}

// strings reads a list of strings (see appendStrings).
func (r *reader) strings() []string {
	n := r.count()
	if n == 0 || r.err != nil {
		return nil
	}
	list := make([]string, n-1)
	for i := range list {
		list[i] = r.text()
	}
	return list
}

// value reads a value at nesting depth (see appendValue).
func (r *reader) value(depth int) any {
	if r.err != nil {
		return nil
	}
	if len(r.b) == 0 || depth > maxValueDepth {
		r.err = errRecord
		return nil
	}
	tag := r.b[0]
	r.b = r.b[1:]
	switch tag {
	case valNull:
		return nil
	case valFalse:
		return false
	case valTrue:
		return true
	case valNumber:
		if len(r.b) < 8 {
			r.err = errRecord
			return nil
		}
		f := math.Float64frombits(binary.LittleEndian.Uint64(r.b))
		r.b = r.b[8:]
		if math.IsNaN(f) || math.IsInf(f, 0) { // no JSON number is
			r.err = errRecord
		}
		return f
	case valString:
		return r.text()
	case valObject:
		n := r.count()
		obj := make(map[string]any, min(n, maxPresize))
		for ; n > 0 && r.err == nil; n-- {
			k := r.text()
			obj[k] = r.value(depth + 1)
		}
		return obj
	case valArray:
		n := r.count()
		arr := make([]any, 0, min(n, maxPresize))
		for ; n > 0 && r.err == nil; n-- {
			arr = append(arr, r.value(depth+1))
		}
		return arr
	case valJSON:
		j := r.bytes()
		var v any
		if r.err == nil && json.Unmarshal(j, &v) != nil {
			r.err = errRecord
		}
		return v
	}
	r.err = errRecord
	return nil
}

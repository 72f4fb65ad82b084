package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policy"
)

// Line is one line of a trace, as written.
type Line struct {
	At             string          `json:"at,omitempty"`
	Performative   string          `json:"performative"`
	Sender         string          `json:"sender"`
	Receiver       json.RawMessage `json:"receiver"`
	ConversationID string          `json:"conversation_id,omitempty"`
	ReplyWith      string          `json:"reply_with,omitempty"`
	InReplyTo      string          `json:"in_reply_to,omitempty"`
	ReplyBy        string          `json:"reply_by,omitempty"`
	Protocol       string          `json:"protocol,omitempty"`
	Language       string          `json:"language,omitempty"`
	Ontology       string          `json:"ontology,omitempty"`
	Content        json.RawMessage `json:"content,omitempty"`
}

// Entry is a parsed trace line: the message and when it was observed.
type Entry struct {
	Line    int
	At      time.Time
	Message *forms.Message
}

// Problem is a line that could not be read as a trace entry.
type Problem struct {
	Line    int
	Code    string
	Message string
}

// Codes of trace format problems.
const (
	CodeMalformed = "TR001" // a line that is not a JSON object of the trace format
	CodeMissing   = "TR002" // a required field is absent
	CodeBadTime   = "TR003" // at or reply_by is neither RFC 3339 nor a duration
	CodeContent   = "TR004" // content is not a JSON object
)

// Origin is the start of a trace whose times are all relative: durations
// count from it.
var Origin = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Read parses a trace. It returns the entries it could read and a problem
// for every line it could not; the error is for I/O only (what was read
// before it is returned too). Blank lines are skipped but counted. A line
// with a field the format does not have, or with content that is not an
// object, is reported and still read (without that field or content).
// Relative times ("1.5s") count from the trace's start: the first line's
// time when that is absolute, else Origin. A line without at happens when
// the last line read did.
func Read(r io.Reader) ([]Entry, []Problem, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	var (
		entries  []Entry
		problems []Problem
		start    time.Time
		prev     time.Time
		n        int
	)
	for sc.Scan() {
		n++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		l, unknown, err := decodeLine(raw)
		if err != nil {
			problems = append(problems, Problem{n, CodeMalformed, "not a trace line: " + err.Error()})
			continue
		}
		for _, k := range unknown {
			// The line is still read: a field the format does not have
			// is reported, and the message checked without it.
			problems = append(problems, Problem{n, CodeMalformed, unknownField(k)})
		}
		if start.IsZero() {
			start = Origin
			if t, err := time.Parse(time.RFC3339Nano, l.At); err == nil {
				start = t
			}
			prev = start
		}
		e, p := entry(n, l, start, prev)
		if p != nil {
			problems = append(problems, *p)
			if e == nil {
				continue
			}
		}
		prev = e.At
		entries = append(entries, *e)
	}
	return entries, problems, sc.Err()
}

// fields are the trace format's fields, in the order DESIGN.md §6 lists
// them.
var fields = []string{"at", "performative", "sender", "receiver", "conversation_id", "reply_with",
	"in_reply_to", "reply_by", "protocol", "language", "ontology", "content"}

var errNotObject = errors.New("a line must be a JSON object")

// decodeLine decodes one line: a JSON object with the trace format's
// fields. It returns the keys the format does not have, sorted; the error
// says why the line is no trace line at all.
func decodeLine(raw []byte) (*Line, []string, error) {
	if raw[0] != '{' {
		return nil, nil, errNotObject
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, nil, fmt.Errorf("%v (at byte %d)", se, se.Offset)
		}
		return nil, nil, errNotObject
	}
	var l Line
	if err := json.Unmarshal(raw, &l); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, nil, fmt.Errorf("%s must be a string, not %s", te.Field, a(te.Value))
		}
		return nil, nil, errors.New(strings.TrimPrefix(err.Error(), "json: "))
	}
	var unknown []string
	for k := range obj {
		if !slices.Contains(fields, k) {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	return &l, unknown, nil
}

// a puts an article before a JSON value kind ("number", "object").
func a(kind string) string {
	if kind != "" && strings.ContainsRune("aeiou", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}

func unknownField(k string) string {
	msg := fmt.Sprintf("unknown field %q, ignored", k)
	if near := policy.Suggest(k, fields); near != "" {
		msg += fmt.Sprintf("; did you mean %q?", near)
	}
	return msg
}

// ParseTime reads an RFC 3339 time, or a Go duration counted from start.
func ParseTime(s string, start time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time nor a duration after the trace's start", s)
	}
	return start.Add(d), nil
}

func entry(n int, l *Line, start, prev time.Time) (*Entry, *Problem) {
	switch {
	case l.Performative == "":
		return nil, &Problem{n, CodeMissing, "the line has no performative"}
	case l.Sender == "":
		return nil, &Problem{n, CodeMissing, "the line has no sender"}
	case len(l.Receiver) == 0 || string(l.Receiver) == "null":
		return nil, &Problem{n, CodeMissing, "the line has no receiver"}
	}
	m := &forms.Message{
		Performative: l.Performative, Sender: l.Sender, ConversationID: l.ConversationID,
		ReplyWith: l.ReplyWith, InReplyTo: l.InReplyTo, Protocol: l.Protocol, Language: l.Language, Ontology: l.Ontology,
	}
	var one string
	if err := json.Unmarshal(l.Receiver, &one); err == nil {
		m.Receivers = []string{one}
	} else if err := json.Unmarshal(l.Receiver, &m.Receivers); err != nil {
		m.Receivers = nil
	}
	if len(m.Receivers) == 0 || slices.Contains(m.Receivers, "") {
		return nil, &Problem{n, CodeMalformed, "receiver must be an agent name or a non-empty list of them"}
	}
	e := &Entry{Line: n, At: prev, Message: m}
	if l.At != "" {
		t, err := ParseTime(l.At, start)
		if err != nil {
			return nil, &Problem{n, CodeBadTime, "at: " + err.Error()}
		}
		e.At = t
	}
	if l.ReplyBy != "" {
		t, err := ParseTime(l.ReplyBy, start)
		if err != nil {
			return nil, &Problem{n, CodeBadTime, "reply_by: " + err.Error()}
		}
		m.ReplyBy = t
	}
	if len(l.Content) > 0 && string(l.Content) != "null" {
		if err := json.Unmarshal(l.Content, &m.Content); err != nil {
			return e, &Problem{n, CodeContent, "content must be a JSON object, as the FIPA policies' conventions say"}
		}
	}
	return e, nil
}

// Writer writes a trace (or journal), one message per line. It is safe
// for concurrent use.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	buf bytes.Buffer
	err error
}

// NewWriter returns a Writer appending lines to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write appends m, observed at at, as one line; a zero at leaves the
// line's at out (Read gives it the previous line's time). A message
// without a performative, sender or receiver is not written: it would be
// no trace line. The message's ReplyTo and Encoding are not written: the
// trace format has no fields for them. After a write to the underlying
// writer fails, every Write returns that error.
func (tw *Writer) Write(at time.Time, m *forms.Message) error {
	switch {
	case m == nil:
		return errors.New("trace: Write of a nil message")
	case m.Performative == "" || m.Sender == "" || len(m.Receivers) == 0 || slices.Contains(m.Receivers, ""):
		return fmt.Errorf("trace: a message needs a performative, a sender and receivers to be a trace line (got %q from %q to %q)", m.Performative, m.Sender, m.Receivers)
	}
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.err != nil {
		return tw.err
	}
	l := Line{
		Performative: m.Performative, Sender: m.Sender, ConversationID: m.ConversationID,
		ReplyWith: m.ReplyWith, InReplyTo: m.InReplyTo, Protocol: m.Protocol, Language: m.Language, Ontology: m.Ontology,
	}
	if !at.IsZero() {
		l.At = at.UTC().Format(time.RFC3339Nano)
	}
	if !m.ReplyBy.IsZero() {
		l.ReplyBy = m.ReplyBy.UTC().Format(time.RFC3339Nano)
	}
	var err error
	if len(m.Receivers) == 1 {
		l.Receiver, err = marshal(m.Receivers[0])
	} else {
		l.Receiver, err = marshal(m.Receivers)
	}
	if err == nil && m.Content != nil {
		l.Content, err = marshal(m.Content)
	}
	if err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	tw.buf.Reset()
	enc := json.NewEncoder(&tw.buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&l); err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	if _, err := tw.w.Write(tw.buf.Bytes()); err != nil {
		tw.err = fmt.Errorf("trace: %w", err)
		return tw.err
	}
	return nil
}

// marshal encodes v as JSON without escaping <, > and &, as the line
// around it is written: json.Marshal would escape them, and a RawMessage
// keeps its bytes.
func marshal(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

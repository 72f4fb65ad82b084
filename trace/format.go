package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policy"
)

// Line is one line of a trace, as written: a message line (performative,
// sender, receiver and the other envelope fields) or a timer line (timer
// and agent), never both; at and conversation_id belong to both.
type Line struct {
	At             string          `json:"at,omitempty"`
	Timer          string          `json:"timer,omitempty"`
	Agent          string          `json:"agent,omitempty"`
	Performative   string          `json:"performative,omitempty"`
	Sender         string          `json:"sender,omitempty"`
	Receiver       json.RawMessage `json:"receiver,omitempty"`
	ConversationID string          `json:"conversation_id,omitempty"`
	ReplyWith      string          `json:"reply_with,omitempty"`
	InReplyTo      string          `json:"in_reply_to,omitempty"`
	ReplyBy        string          `json:"reply_by,omitempty"`
	Protocol       string          `json:"protocol,omitempty"`
	Language       string          `json:"language,omitempty"`
	Ontology       string          `json:"ontology,omitempty"`
	Content        json.RawMessage `json:"content,omitempty"`
}

// Entry is a parsed trace line and when it happened: a message observed
// (Message is set) or a timer that fired (Timer is set). Read sets
// exactly one of them.
type Entry struct {
	Line    int
	At      time.Time
	Message *forms.Message
	Timer   *Timer
}

// Timer is a timer line: agent's timer Name fired in conversation
// Conversation at At, the time the line gives. A journal writes the line
// once the timer has fired, with the timer's deadline, so lines written
// meanwhile may be later: a timer line whose time goes back before the
// line before it is read as happening then (the entry's At), without the
// CodeBackwards problem a message line gets.
type Timer struct {
	Agent        string
	Conversation string
	Name         string
	At           time.Time
}

// Problem is a line that could not be read as a trace entry.
type Problem struct {
	Line    int
	Code    string
	Message string
}

// Codes of trace format problems. Each line that has one is reported with
// it; unless said otherwise, the line is not read as an entry.
const (
	CodeMalformed = "TR001" // a line that is not a JSON object of the trace format
	CodeMissing   = "TR002" // a required field is absent
	CodeBadTime   = "TR003" // at or reply_by is neither RFC 3339 nor a duration
	CodeContent   = "TR004" // content is not a JSON object (the line is read without it)
	CodeLimit     = "TR007" // a line, a field or the trace is larger than its limit, or nests too deep
	CodeDuplicate = "TR008" // a JSON object in the line repeats a key
	CodeTimeRange = "TR009" // a time outside the years 0001 to 9999, or a duration that overflows
	CodeBackwards = "TR010" // a message line's at is before the previous line's time (the line is read at that time)
)

// Limits bound what Read accepts, so that a hostile or broken trace cannot
// exhaust memory or make output repeat unbounded text. Exceeding one is a
// TR007 problem.
type Limits struct {
	// MaxBytes is the most of a trace read: Read stops there, reporting
	// the line it stopped in, and reads no further.
	MaxBytes int
	// MaxLineBytes is the longest line read; a longer one is skipped
	// without being held in memory.
	MaxLineBytes int
	// MaxFieldBytes is the longest envelope value: performative, sender,
	// each receiver, conversation_id, reply_with, in_reply_to, protocol,
	// language, ontology, at and reply_by. content has no limit but the
	// line's.
	MaxFieldBytes int
	// MaxDepth is the deepest nesting of JSON objects and arrays in a
	// line, the line's own object counting as 1.
	MaxDepth int
}

// DefaultLimits are the limits Read uses unless WithLimits says
// otherwise: 64 MiB of trace, 16 MiB lines, 256-byte envelope values and
// 64 levels of nesting.
var DefaultLimits = Limits{
	MaxBytes:      64 << 20,
	MaxLineBytes:  16 << 20,
	MaxFieldBytes: 256,
	MaxDepth:      64,
}

// ReadOption configures Read.
type ReadOption func(*readOptions)

type readOptions struct {
	limits Limits
}

// WithLimits replaces DefaultLimits. Zero fields keep their default.
func WithLimits(l Limits) ReadOption {
	return func(o *readOptions) {
		if l.MaxBytes > 0 {
			o.limits.MaxBytes = l.MaxBytes
		}
		if l.MaxLineBytes > 0 {
			o.limits.MaxLineBytes = l.MaxLineBytes
		}
		if l.MaxFieldBytes > 0 {
			o.limits.MaxFieldBytes = l.MaxFieldBytes
		}
		if l.MaxDepth > 0 {
			o.limits.MaxDepth = l.MaxDepth
		}
	}
}

// Origin is the start of a trace whose times are all relative: durations
// count from it.
var Origin = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Read parses a trace. It returns the entries it could read and a problem
// for every line it could not; the error is for I/O only (what was read
// before it is returned too). Blank lines are skipped but counted. A line
// with a field the format does not have, or with content that is not an
// object, is reported and still read (without that field or content).
// Relative times ("1.5s") count from the trace's start: the first line's
// time when that is absolute, else Origin. A message line without at
// happens when the last line read did; a line whose at is before that is
// read as happening then, and reported when it is a message line (see
// Timer). Read reads no more than the limits allow (see Limits), from
// any reader.
func Read(r io.Reader, opts ...ReadOption) ([]Entry, []Problem, error) {
	o := readOptions{limits: DefaultLimits}
	for _, opt := range opts {
		opt(&o)
	}
	lim := o.limits
	lr := &lineReader{br: bufio.NewReaderSize(io.LimitReader(r, int64(lim.MaxBytes)+1), 64<<10), max: lim.MaxLineBytes}
	var (
		entries  []Entry
		problems []Problem
		start    time.Time
		prev     time.Time
		n        int
	)
	report := func(code, format string, args ...any) {
		problems = append(problems, Problem{n, code, fmt.Sprintf(format, args...)})
	}
	for {
		raw, long, err := lr.next()
		if lr.read > int64(lim.MaxBytes) {
			// The line the limit cut is incomplete: it is not read.
			n++
			report(CodeLimit, "the trace is larger than the limit of %d bytes; it is not read from here on", lim.MaxBytes)
			return entries, problems, nil
		}
		if raw == nil && !long && err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return entries, problems, err
		}
		n++
		raw = bytes.TrimSpace(raw)
		switch {
		case long:
			report(CodeLimit, "the line is longer than the limit of %d bytes; it is not read", lim.MaxLineBytes)
		case len(raw) == 0:
		default:
			if e := readLine(raw, n, lim, &start, &prev, report); e != nil {
				entries = append(entries, *e)
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return entries, problems, err
		}
	}
}

// readLine reads one non-blank line n, reporting its problems, and
// returns its entry, or nil when it has none. start and prev are the
// trace's start and the time of the last entry read, which it updates.
func readLine(raw []byte, n int, lim Limits, start, prev *time.Time, report func(code, format string, args ...any)) *Entry {
	l, keys, err := decodeLine(raw, lim.MaxDepth)
	if err != nil {
		var pe *lineError
		if errors.As(err, &pe) {
			report(pe.code, "%s", pe.msg)
		} else {
			report(CodeMalformed, "not a trace line: %v", err)
		}
		return nil
	}
	const shown = 10 // unknown fields reported one by one, per line
	unknown := slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return slices.Contains(fields, k) })
	for i, k := range unknown {
		if i == shown {
			report(CodeMalformed, "%d more unknown fields, ignored", len(unknown)-shown)
			break
		}
		// The line is still read: a field the format does not have is
		// reported, and the message checked without it.
		report(CodeMalformed, "%s", unknownField(k))
	}
	timerKeys, messageKeys := only(keys, timerFields), only(keys, messageFields)
	if len(timerKeys) > 0 && len(messageKeys) > 0 {
		report(CodeMalformed, "a line is a message or a timer line, not both: it has %s of a timer line and %s of a message line; the line is not read",
			strings.Join(timerKeys, ", "), strings.Join(messageKeys, ", "))
		return nil
	}
	if name, v := l.longest(); len(v) > lim.MaxFieldBytes {
		report(CodeLimit, "%s %s is %d bytes, more than the limit of %d; the line is not read", name, policy.Quote(v), len(v), lim.MaxFieldBytes)
		return nil
	}
	if start.IsZero() {
		*start = Origin
		if t, err := time.Parse(time.RFC3339Nano, l.At); err == nil && inRange(t) {
			*start = t
		}
		*prev = *start
	}
	var (
		e *Entry
		p *Problem
	)
	if len(timerKeys) > 0 {
		e, p = timerEntry(n, l, *start)
	} else {
		e, p = entry(n, l, *start, *prev)
	}
	if p != nil {
		report(p.Code, "%s", p.Message)
		if e == nil {
			return nil
		}
	}
	if e.At.Before(*prev) {
		// A timer line gives its timer's deadline, and is written once the
		// timer has fired: lines written meanwhile may come before it.
		if e.Timer == nil {
			report(CodeBackwards, "at %s is before %s, the time of the line before; the line is read as happening then",
				e.At.UTC().Format(time.RFC3339Nano), prev.UTC().Format(time.RFC3339Nano))
		}
		e.At = *prev
	}
	*prev = e.At
	return e
}

// only returns the keys that are among names, in the order of keys.
func only(keys, names []string) []string {
	var out []string
	for _, k := range keys {
		if slices.Contains(names, k) {
			out = append(out, k)
		}
	}
	return out
}

// lineReader reads a trace line by line, never holding more than max
// bytes of one line: the rest of a longer line is read and dropped.
type lineReader struct {
	br   *bufio.Reader
	max  int
	read int64 // bytes read so far
	buf  []byte
}

// next returns the next line without its newline, and whether it was
// longer than max (then the line is nil). At the end of the input it
// returns the last line, if it has no newline, with io.EOF; a read error
// drops the line it cut short.
func (lr *lineReader) next() (line []byte, long bool, err error) {
	lr.buf = lr.buf[:0]
	got := false
	for {
		chunk, err := lr.br.ReadSlice('\n')
		lr.read += int64(len(chunk))
		got = got || len(chunk) > 0
		if !long {
			size := len(lr.buf) + len(chunk)
			if err == nil {
				size-- // the newline
			}
			if size > lr.max {
				long, lr.buf = true, lr.buf[:0]
			} else {
				lr.buf = append(lr.buf, chunk...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil && (!got || !errors.Is(err, io.EOF)):
			return nil, false, err
		case long:
			return nil, true, err
		}
		return bytes.TrimSuffix(lr.buf, []byte("\n")), false, err
	}
}

// fields are the trace format's fields, in the order the format's
// documentation lists them: those of message lines, then those of timer
// lines only.
var fields = []string{"at", "performative", "sender", "receiver", "conversation_id", "reply_with",
	"in_reply_to", "reply_by", "protocol", "language", "ontology", "content", "timer", "agent"}

// timerFields are the fields only a timer line has, and messageFields
// those only a message line has; at and conversation_id belong to both.
var (
	timerFields   = []string{"timer", "agent"}
	messageFields = []string{"performative", "sender", "receiver", "reply_with", "in_reply_to", "reply_by", "protocol", "language", "ontology", "content"}
)

var errNotObject = errors.New("a line must be a JSON object")

// lineError is a problem that makes a line no trace entry, with its own
// code.
type lineError struct {
	code, msg string
}

func (e *lineError) Error() string { return e.msg }

// decodeLine decodes one line: a JSON object with the trace format's
// fields, no key repeated in any of its objects and nested at most
// maxDepth deep. It returns the line's keys, sorted; the error says why
// the line is no trace line at all (a *lineError when it has a code of
// its own).
func decodeLine(raw []byte, maxDepth int) (*Line, []string, error) {
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
	if err := checkKeys(raw, maxDepth); err != nil {
		return nil, nil, err
	}
	var l Line
	if err := json.Unmarshal(raw, &l); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, nil, fmt.Errorf("%s must be a string, not %s", te.Field, a(te.Value))
		}
		return nil, nil, errors.New(strings.TrimPrefix(err.Error(), "json: "))
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return &l, keys, nil
}

// checkKeys walks the tokens of raw, a well-formed JSON object, and
// reports the first key an object repeats, at any depth, and nesting
// deeper than maxDepth. (encoding/json keeps the last of repeated keys
// silently, and another reader may keep the first: the line means
// different things to different readers.) It holds the keys of the open
// objects only, so it needs no more memory than the line.
func checkKeys(raw []byte, maxDepth int) error {
	type object struct {
		keys map[string]bool
		key  bool // the next token is a key
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var stack []*object // nil entries are arrays
	top := ""           // the top-level field the decoder is in
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err // cannot happen: raw is well-formed
		}
		var cur *object
		if len(stack) > 0 {
			cur = stack[len(stack)-1]
		}
		if cur != nil && cur.key {
			if d, ok := tok.(json.Delim); !ok || d != '}' {
				k, _ := tok.(string)
				if cur.keys[k] {
					where := ""
					if len(stack) > 1 {
						where = " inside " + policy.Quote(top)
					}
					return &lineError{CodeDuplicate, fmt.Sprintf("key %s is given twice%s; a key may appear once in an object", policy.Quote(k), where)}
				}
				cur.keys[k] = true
				cur.key = false
				if len(stack) == 1 {
					top = k
				}
				continue
			}
		}
		if cur != nil {
			cur.key = true // after a value, a key (or the end) follows
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) == maxDepth {
				return &lineError{CodeLimit, fmt.Sprintf("the line nests objects and arrays more than %d deep; it is not read", maxDepth)}
			}
			if tok == json.Delim('{') {
				stack = append(stack, &object{keys: map[string]bool{}, key: true})
			} else {
				stack = append(stack, nil)
			}
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
	}
}

// a puts an article before a JSON value kind ("number", "object").
func a(kind string) string {
	if kind != "" && strings.ContainsRune("aeiou", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}

func unknownField(k string) string {
	msg := fmt.Sprintf("unknown field %s, ignored", policy.Quote(k))
	if near := policy.Suggest(k, fields); near != "" {
		msg += fmt.Sprintf("; did you mean %s?", policy.Quote(near))
	}
	return msg
}

// longest returns the name and value of the line's longest envelope
// value (each receiver counted apart).
func (l *Line) longest() (name, value string) {
	for _, f := range []struct {
		name string
		v    string
	}{
		{"at", l.At}, {"timer", l.Timer}, {"agent", l.Agent}, {"performative", l.Performative}, {"sender", l.Sender}, {"conversation_id", l.ConversationID},
		{"reply_with", l.ReplyWith}, {"in_reply_to", l.InReplyTo}, {"reply_by", l.ReplyBy}, {"protocol", l.Protocol},
		{"language", l.Language}, {"ontology", l.Ontology},
	} {
		if len(f.v) > len(value) {
			name, value = f.name, f.v
		}
	}
	var receivers []string
	if json.Unmarshal(l.Receiver, &receivers) != nil {
		var one string
		if json.Unmarshal(l.Receiver, &one) == nil {
			receivers = []string{one}
		}
	}
	for _, r := range receivers {
		if len(r) > len(value) {
			name, value = "receiver", r
		}
	}
	return name, value
}

// durationRE is the syntax of a Go duration, which time.ParseDuration
// also rejects when the duration overflows.
var durationRE = regexp.MustCompile(`^[-+]?(0|((\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h))+)$`)

// inRange reports whether t, in UTC, falls in the years 0001 to 9999,
// which RFC 3339 can write.
func inRange(t time.Time) bool {
	y := t.UTC().Year()
	return y >= 1 && y <= 9999
}

// ParseTime reads an RFC 3339 time, or a Go duration counted from start.
// A time outside the years 0001 to 9999 (in UTC, after its offset), or a
// duration too large for time.Duration, is an error of its own kind (see
// IsOutOfRange).
func ParseTime(s string, start time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		if !inRange(t) {
			return time.Time{}, &rangeError{fmt.Sprintf("%s is outside the years 0001 to 9999 in UTC", policy.Quote(s))}
		}
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		if durationRE.MatchString(s) {
			return time.Time{}, &rangeError{fmt.Sprintf("duration %s is too long (at most about 292 years)", policy.Quote(s))}
		}
		return time.Time{}, fmt.Errorf("%s is neither an RFC 3339 time nor a duration after the trace's start", policy.Quote(s))
	}
	t := start.Add(d)
	if !inRange(t) {
		return time.Time{}, &rangeError{fmt.Sprintf("%s after the trace's start is outside the years 0001 to 9999", policy.Quote(s))}
	}
	return t, nil
}

// rangeError is a time that parses but is out of range.
type rangeError struct{ msg string }

func (e *rangeError) Error() string { return e.msg }

// IsOutOfRange reports whether err, from ParseTime, is for a time or
// duration that is well-formed but out of range.
func IsOutOfRange(err error) bool {
	var re *rangeError
	return errors.As(err, &re)
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
			return nil, timeProblem(n, "at", err)
		}
		e.At = t
	}
	if l.ReplyBy != "" {
		t, err := ParseTime(l.ReplyBy, start)
		if err != nil {
			return nil, timeProblem(n, "reply_by", err)
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

// timerEntry reads timer line n: it needs a timer, an agent and an at.
func timerEntry(n int, l *Line, start time.Time) (*Entry, *Problem) {
	switch {
	case l.Timer == "":
		return nil, &Problem{n, CodeMissing, "the timer line has no timer"}
	case l.Agent == "":
		return nil, &Problem{n, CodeMissing, "the timer line has no agent"}
	case l.At == "":
		return nil, &Problem{n, CodeMissing, "the timer line has no at, which says when the timer fired"}
	}
	t, err := ParseTime(l.At, start)
	if err != nil {
		return nil, timeProblem(n, "at", err)
	}
	return &Entry{Line: n, At: t, Timer: &Timer{Agent: l.Agent, Conversation: l.ConversationID, Name: l.Timer, At: t}}, nil
}

// timeProblem is the problem of a field whose time ParseTime rejected.
func timeProblem(n int, field string, err error) *Problem {
	code := CodeBadTime
	if IsOutOfRange(err) {
		code = CodeTimeRange
	}
	return &Problem{n, code, field + ": " + err.Error()}
}

// Writer writes a trace (or journal): one line per message, and one per
// timer that fired. Its Write and WriteTimer make it an agent.Journal and
// an agent.TimerJournal. It is safe for concurrent use.
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
		return fmt.Errorf("trace: a message needs a performative, a sender and receivers to be a trace line (got %s from %s to [%s])", policy.Quote(m.Performative), policy.Quote(m.Sender), policy.QuoteList(m.Receivers, maxListed))
	}
	if err := tw.failed(); err != nil {
		return err
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
	return tw.line(&l)
}

// WriteTimer appends a timer line: agent's timer fired in conversation
// at at, {"at":…,"timer":…,"agent":…,"conversation_id":…}. An
// agent.Manager journaling into the Writer calls it for every timer that
// fires, so that Check sees a conversation a timeout ended end. A zero
// at, an empty agent or an empty timer is not written: the line would be
// no trace line. After a write to the underlying writer fails, every
// WriteTimer returns that error.
func (tw *Writer) WriteTimer(at time.Time, agent, conversation, timer string) error {
	if at.IsZero() || agent == "" || timer == "" {
		return fmt.Errorf("trace: a timer line needs a time, an agent and a timer (got timer %s of %s at %s)", policy.Quote(timer), policy.Quote(agent), at.UTC().Format(time.RFC3339Nano))
	}
	return tw.line(&Line{At: at.UTC().Format(time.RFC3339Nano), Timer: timer, Agent: agent, ConversationID: conversation})
}

// failed returns the error of the write that failed, if one did.
func (tw *Writer) failed() error {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	return tw.err
}

// line encodes l and writes it, unless a write failed before.
func (tw *Writer) line(l *Line) error {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.err != nil {
		return tw.err
	}
	tw.buf.Reset()
	enc := json.NewEncoder(&tw.buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(l); err != nil {
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

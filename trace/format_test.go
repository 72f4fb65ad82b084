package trace_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/trace"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// entryAt is what a test expects of an entry: its line, time and the
// envelope fields that tests look at.
type entryAt struct {
	line      int
	at        time.Time
	perf      string
	sender    string
	receivers []string
	replyBy   time.Time
}

func summarize(es []trace.Entry) []entryAt {
	var out []entryAt
	for _, e := range es {
		out = append(out, entryAt{line: e.Line, at: e.At.UTC(), perf: e.Message.Performative, sender: e.Message.Sender,
			receivers: e.Message.Receivers, replyBy: e.Message.ReplyBy.UTC()})
	}
	return out
}

// utc returns t in UTC, leaving the zero time zero.
func utc(t time.Time) time.Time { return t.UTC() }

func TestRead(t *testing.T) {
	origin := trace.Origin
	var zero time.Time
	tests := []struct {
		name     string
		in       string
		want     []entryAt
		problems []trace.Problem
	}{
		{
			name: "absolute times",
			in: `{"at": "2026-03-01T10:00:00Z", "performative": "request", "sender": "a", "receiver": "b"}
{"at": "2026-03-01T11:00:02.5+01:00", "performative": "agree", "sender": "b", "receiver": "a"}`,
			want: []entryAt{
				{line: 1, at: t0, perf: "request", sender: "a", receivers: []string{"b"}, replyBy: utc(zero)},
				{line: 2, at: t0.Add(2500 * time.Millisecond), perf: "agree", sender: "b", receivers: []string{"a"}, replyBy: utc(zero)},
			},
		},
		{
			name: "relative times count from the first line's absolute time",
			in: `{"at": "2026-03-01T10:00:00Z", "performative": "request", "sender": "a", "receiver": "b"}
{"at": "1.5s", "performative": "agree", "sender": "b", "receiver": "a"}
{"at": "1m", "performative": "inform", "sender": "b", "receiver": "a"}`,
			want: []entryAt{
				{line: 1, at: t0, perf: "request", sender: "a", receivers: []string{"b"}, replyBy: utc(zero)},
				{line: 2, at: t0.Add(1500 * time.Millisecond), perf: "agree", sender: "b", receivers: []string{"a"}, replyBy: utc(zero)},
				{line: 3, at: t0.Add(time.Minute), perf: "inform", sender: "b", receivers: []string{"a"}, replyBy: utc(zero)},
			},
		},
		{
			name: "relative times only count from Origin",
			in: `{"at": "0s", "performative": "request", "sender": "a", "receiver": "b"}
{"at": "800ms", "performative": "agree", "sender": "b", "receiver": "a"}`,
			want: []entryAt{
				{line: 1, at: origin, perf: "request", sender: "a", receivers: []string{"b"}, replyBy: utc(zero)},
				{line: 2, at: origin.Add(800 * time.Millisecond), perf: "agree", sender: "b", receivers: []string{"a"}, replyBy: utc(zero)},
			},
		},
		{
			name: "a missing at takes the previous line's time",
			in: `{"performative": "cfp", "sender": "a", "receiver": ["b", "c"]}
{"at": "2s", "performative": "propose", "sender": "b", "receiver": "a"}
{"performative": "propose", "sender": "c", "receiver": "a"}`,
			want: []entryAt{
				{line: 1, at: origin, perf: "cfp", sender: "a", receivers: []string{"b", "c"}, replyBy: utc(zero)},
				{line: 2, at: origin.Add(2 * time.Second), perf: "propose", sender: "b", receivers: []string{"a"}, replyBy: utc(zero)},
				{line: 3, at: origin.Add(2 * time.Second), perf: "propose", sender: "c", receivers: []string{"a"}, replyBy: utc(zero)},
			},
		},
		{
			name: "a missing at after an unreadable line takes the last readable line's time",
			in: `{"at": "2026-03-01T10:00:00Z", "performative": "request", "sender": "a", "receiver": "b"}
{"at": "5s", "performative": "agree", "receiver": "a"}
{"performative": "refuse", "sender": "b", "receiver": "a"}`,
			want: []entryAt{
				{line: 1, at: t0, perf: "request", sender: "a", receivers: []string{"b"}, replyBy: utc(zero)},
				{line: 3, at: t0, perf: "refuse", sender: "b", receivers: []string{"a"}, replyBy: utc(zero)},
			},
			problems: []trace.Problem{{Line: 2, Code: trace.CodeMissing, Message: "the line has no sender"}},
		},
		{
			name: "reply_by as a duration counts from the trace's start, not the line",
			in: `{"at": "2026-03-01T10:00:00Z", "performative": "request", "sender": "a", "receiver": "b"}
{"at": "10s", "performative": "request", "sender": "a", "receiver": "b", "reply_by": "30s"}`,
			want: []entryAt{
				{line: 1, at: t0, perf: "request", sender: "a", receivers: []string{"b"}, replyBy: utc(zero)},
				{line: 2, at: t0.Add(10 * time.Second), perf: "request", sender: "a", receivers: []string{"b"}, replyBy: t0.Add(30 * time.Second)},
			},
		},
		{
			name: "reply_by as an RFC 3339 time",
			in:   `{"at": "0s", "performative": "request", "sender": "a", "receiver": "b", "reply_by": "2026-03-01T10:00:30Z"}`,
			want: []entryAt{{line: 1, at: origin, perf: "request", sender: "a", receivers: []string{"b"}, replyBy: t0.Add(30 * time.Second)}},
		},
		{
			name: "receiver as a string and as a list",
			in: `{"performative": "cfp", "sender": "a", "receiver": ["b", "c", "d"]}
{"performative": "propose", "sender": "b", "receiver": "a"}
{"performative": "propose", "sender": "c", "receiver": ["a"]}`,
			want: []entryAt{
				{line: 1, at: origin, perf: "cfp", sender: "a", receivers: []string{"b", "c", "d"}, replyBy: utc(zero)},
				{line: 2, at: origin, perf: "propose", sender: "b", receivers: []string{"a"}, replyBy: utc(zero)},
				{line: 3, at: origin, perf: "propose", sender: "c", receivers: []string{"a"}, replyBy: utc(zero)},
			},
		},
		{
			name: "blank lines are skipped but counted",
			in:   "\n{\"performative\": \"request\", \"sender\": \"a\", \"receiver\": \"b\"}\n   \n\t\n{\"performative\": \"agree\", \"sender\": \"b\", \"receiver\": \"a\"}\r\n\n",
			want: []entryAt{
				{line: 2, at: origin, perf: "request", sender: "a", receivers: []string{"b"}, replyBy: utc(zero)},
				{line: 5, at: origin, perf: "agree", sender: "b", receivers: []string{"a"}, replyBy: utc(zero)},
			},
		},
		{
			name: "an empty trace",
			in:   "",
		},
		{
			name: "unknown fields are reported and the line still read",
			in:   `{"performative": "request", "sender": "a", "receiver": "b", "reciever": "c", "encoding": "utf-8"}`,
			want: []entryAt{{line: 1, at: origin, perf: "request", sender: "a", receivers: []string{"b"}, replyBy: utc(zero)}},
			problems: []trace.Problem{
				{Line: 1, Code: trace.CodeMalformed, Message: `unknown field "encoding", ignored`},
				{Line: 1, Code: trace.CodeMalformed, Message: `unknown field "reciever", ignored; did you mean "receiver"?`},
			},
		},
		{
			name: "content that is not an object is reported and the line still read",
			in: `{"performative": "inform", "sender": "b", "receiver": "a", "content": "done"}
{"performative": "inform", "sender": "b", "receiver": "a", "content": [1, 2]}`,
			want: []entryAt{
				{line: 1, at: origin, perf: "inform", sender: "b", receivers: []string{"a"}, replyBy: utc(zero)},
				{line: 2, at: origin, perf: "inform", sender: "b", receivers: []string{"a"}, replyBy: utc(zero)},
			},
			problems: []trace.Problem{
				{Line: 1, Code: trace.CodeContent, Message: "content must be a JSON object, as the FIPA policies' conventions say"},
				{Line: 2, Code: trace.CodeContent, Message: "content must be a JSON object, as the FIPA policies' conventions say"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			entries, problems, err := trace.Read(strings.NewReader(tt.in))
			require.NoError(t, err)
			assert.Equal(t, tt.want, summarize(entries))
			assert.Equal(t, tt.problems, problems)
		})
	}
}

// TestReadProblems checks every problem code: the line is reported with
// its number, and the other lines are still read.
func TestReadProblems(t *testing.T) {
	good := `{"performative": "request", "sender": "a", "receiver": "b"}`
	tests := []struct {
		name    string
		line    string
		code    string
		message string
		kept    bool // the line is still an entry
	}{
		{name: "not JSON", line: `10:00:01 b -> a agree`, code: trace.CodeMalformed, message: "not a trace line: a line must be a JSON object"},
		{name: "truncated JSON", line: `{"performative": "agree", "sender": "b"`, code: trace.CodeMalformed, message: "not a trace line: unexpected end of JSON input (at byte 39)"},
		{name: "JSON but not an object", line: `["agree", "b", "a"]`, code: trace.CodeMalformed, message: "not a trace line: a line must be a JSON object"},
		{name: "null", line: `null`, code: trace.CodeMalformed, message: "not a trace line: a line must be a JSON object"},
		{name: "two objects on one line", line: good + " " + good, code: trace.CodeMalformed, message: "not a trace line: invalid character '{' after top-level value (at byte 61)"},
		{name: "a field of the wrong type", line: `{"performative": "agree", "sender": 7, "receiver": "a"}`, code: trace.CodeMalformed, message: "not a trace line: sender must be a string, not a number"},
		{name: "an object for a string", line: `{"performative": {"name": "agree"}, "sender": "b", "receiver": "a"}`, code: trace.CodeMalformed, message: "not a trace line: performative must be a string, not an object"},
		{name: "receiver of the wrong type", line: `{"performative": "agree", "sender": "b", "receiver": {"name": "a"}}`, code: trace.CodeMalformed, message: "receiver must be an agent name or a non-empty list of them"},
		{name: "receiver an empty list", line: `{"performative": "agree", "sender": "b", "receiver": []}`, code: trace.CodeMalformed, message: "receiver must be an agent name or a non-empty list of them"},
		{name: "receiver an empty name", line: `{"performative": "agree", "sender": "b", "receiver": ""}`, code: trace.CodeMalformed, message: "receiver must be an agent name or a non-empty list of them"},
		{name: "receiver list with an empty name", line: `{"performative": "agree", "sender": "b", "receiver": ["a", ""]}`, code: trace.CodeMalformed, message: "receiver must be an agent name or a non-empty list of them"},
		{name: "unknown field", line: `{"performative": "agree", "sender": "b", "receiver": "a", "conversationId": "c1"}`, code: trace.CodeMalformed, message: `unknown field "conversationId", ignored; did you mean "conversation_id"?`, kept: true},
		{name: "no performative", line: `{"sender": "b", "receiver": "a"}`, code: trace.CodeMissing, message: "the line has no performative"},
		{name: "empty performative", line: `{"performative": "", "sender": "b", "receiver": "a"}`, code: trace.CodeMissing, message: "the line has no performative"},
		{name: "no sender", line: `{"performative": "agree", "receiver": "a"}`, code: trace.CodeMissing, message: "the line has no sender"},
		{name: "null sender", line: `{"performative": "agree", "sender": null, "receiver": "a"}`, code: trace.CodeMissing, message: "the line has no sender"},
		{name: "no receiver", line: `{"performative": "agree", "sender": "b"}`, code: trace.CodeMissing, message: "the line has no receiver"},
		{name: "null receiver", line: `{"performative": "agree", "sender": "b", "receiver": null}`, code: trace.CodeMissing, message: "the line has no receiver"},
		{name: "bad at", line: `{"at": "soon", "performative": "agree", "sender": "b", "receiver": "a"}`, code: trace.CodeBadTime, message: `at: "soon" is neither an RFC 3339 time nor a duration after the trace's start`},
		{name: "at without a zone", line: `{"at": "2026-03-01T10:00:00", "performative": "agree", "sender": "b", "receiver": "a"}`, code: trace.CodeBadTime, message: `at: "2026-03-01T10:00:00" is neither an RFC 3339 time nor a duration after the trace's start`},
		{name: "bad reply_by", line: `{"performative": "agree", "sender": "b", "receiver": "a", "reply_by": "30"}`, code: trace.CodeBadTime, message: `reply_by: "30" is neither an RFC 3339 time nor a duration after the trace's start`},
		{name: "content not an object", line: `{"performative": "agree", "sender": "b", "receiver": "a", "content": true}`, code: trace.CodeContent, message: "content must be a JSON object, as the FIPA policies' conventions say", kept: true},
		{name: "a repeated key", line: `{"performative": "agree", "sender": "b", "sender": "mallory", "receiver": "a"}`, code: trace.CodeDuplicate, message: `key "sender" is given twice; a key may appear once in an object`},
		{name: "a repeated key in content", line: `{"performative": "agree", "sender": "b", "receiver": "a", "content": {"offer": {"price": 1, "price": 2}}}`, code: trace.CodeDuplicate, message: `key "price" is given twice inside "content"; a key may appear once in an object`},
		{name: "a repeated key in a list's object", line: `{"performative": "agree", "sender": "b", "receiver": "a", "content": {"items": [{"a": 1}, {"a": 2, "a": 3}]}}`, code: trace.CodeDuplicate, message: `key "a" is given twice inside "content"; a key may appear once in an object`},
		{name: "nested too deep", line: `{"performative": "agree", "sender": "b", "receiver": "a", "content": {"x": ` + strings.Repeat("[", 63) + strings.Repeat("]", 63) + `}}`, code: trace.CodeLimit, message: "the line nests objects and arrays more than 64 deep; it is not read"},
		{name: "at before the year 1 in UTC", line: `{"at": "0001-01-01T00:00:00+01:00", "performative": "agree", "sender": "b", "receiver": "a"}`, code: trace.CodeTimeRange, message: `at: "0001-01-01T00:00:00+01:00" is outside the years 0001 to 9999 in UTC`},
		{name: "at after the year 9999 in UTC", line: `{"at": "9999-12-31T23:30:00-01:00", "performative": "agree", "sender": "b", "receiver": "a"}`, code: trace.CodeTimeRange, message: `at: "9999-12-31T23:30:00-01:00" is outside the years 0001 to 9999 in UTC`},
		{name: "a duration that overflows", line: `{"at": "3000000h", "performative": "agree", "sender": "b", "receiver": "a"}`, code: trace.CodeTimeRange, message: `at: duration "3000000h" is too long (at most about 292 years)`},
		{name: "reply_by out of range", line: `{"performative": "agree", "sender": "b", "receiver": "a", "reply_by": "0000-12-31T23:00:00Z"}`, code: trace.CodeTimeRange, message: `reply_by: "0000-12-31T23:00:00Z" is outside the years 0001 to 9999 in UTC`},
		{name: "at before the line before", line: `{"at": "-1s", "performative": "agree", "sender": "b", "receiver": "a"}`, code: trace.CodeBackwards, message: "at 1999-12-31T23:59:59Z is before 2000-01-01T00:00:00Z, the time of the line before; the line is read as happening then", kept: true},
		{name: "a sender longer than the field limit", line: `{"performative": "agree", "sender": "` + strings.Repeat("b", 300) + `", "receiver": "a"}`, code: trace.CodeLimit, message: `sender "` + strings.Repeat("b", 64) + `"… is 300 bytes, more than the limit of 256; the line is not read`},
		{name: "a receiver longer than the field limit", line: `{"performative": "agree", "sender": "b", "receiver": ["a", "` + strings.Repeat("c", 257) + `"]}`, code: trace.CodeLimit, message: `receiver "` + strings.Repeat("c", 64) + `"… is 257 bytes, more than the limit of 256; the line is not read`},
		// Timer lines.
		{name: "timer line, no timer", line: `{"at": "1s", "agent": "a"}`, code: trace.CodeMissing, message: "the timer line has no timer"},
		{name: "timer line, an empty timer", line: `{"at": "1s", "timer": "", "agent": "a"}`, code: trace.CodeMissing, message: "the timer line has no timer"},
		{name: "timer line, no agent", line: `{"at": "1s", "timer": "reply"}`, code: trace.CodeMissing, message: "the timer line has no agent"},
		{name: "timer line, no at", line: `{"timer": "reply", "agent": "a"}`, code: trace.CodeMissing, message: "the timer line has no at, which says when the timer fired"},
		{name: "timer line, a bad at", line: `{"at": "later", "timer": "reply", "agent": "a"}`, code: trace.CodeBadTime, message: `at: "later" is neither an RFC 3339 time nor a duration after the trace's start`},
		{name: "timer line, an at out of range", line: `{"at": "3000000h", "timer": "reply", "agent": "a"}`, code: trace.CodeTimeRange, message: `at: duration "3000000h" is too long (at most about 292 years)`},
		{name: "timer line, a timer of the wrong type", line: `{"at": "1s", "timer": 30, "agent": "a"}`, code: trace.CodeMalformed, message: "not a trace line: timer must be a string, not a number"},
		{name: "timer line, a repeated key", line: `{"at": "1s", "timer": "reply", "agent": "a", "agent": "b"}`, code: trace.CodeDuplicate, message: `key "agent" is given twice; a key may appear once in an object`},
		{name: "timer line, an unknown field", line: `{"at": "1s", "timer": "reply", "agnet": "a", "agent": "a"}`, code: trace.CodeMalformed, message: `unknown field "agnet", ignored; did you mean "agent"?`, kept: true},
		{name: "timer line, an agent longer than the field limit", line: `{"at": "1s", "timer": "reply", "agent": "` + strings.Repeat("a", 257) + `"}`, code: trace.CodeLimit, message: `agent "` + strings.Repeat("a", 64) + `"… is 257 bytes, more than the limit of 256; the line is not read`},
		{name: "timer line, a timer longer than the field limit", line: `{"at": "1s", "timer": "` + strings.Repeat("t", 300) + `", "agent": "a"}`, code: trace.CodeLimit, message: `timer "` + strings.Repeat("t", 64) + `"… is 300 bytes, more than the limit of 256; the line is not read`},
		{name: "timer line, both kinds of line", line: `{"at": "1s", "timer": "reply", "agent": "a", "performative": "inform", "sender": "a", "receiver": "b"}`, code: trace.CodeMalformed,
			message: "a line is a message or a timer line, not both: it has agent, timer of a timer line and performative, receiver, sender of a message line; the line is not read"},
		{name: "timer line, an agent on a message line", line: `{"performative": "inform", "sender": "a", "receiver": "b", "agent": "a"}`, code: trace.CodeMalformed,
			message: "a line is a message or a timer line, not both: it has agent of a timer line and performative, receiver, sender of a message line; the line is not read"},
		{name: "timer line, a null receiver on a timer line", line: `{"at": "1s", "timer": "reply", "agent": "a", "receiver": null}`, code: trace.CodeMalformed,
			message: "a line is a message or a timer line, not both: it has agent, timer of a timer line and receiver of a message line; the line is not read"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := good + "\n\n" + tt.line + "\n" + good + "\n"
			entries, problems, err := trace.Read(strings.NewReader(in))
			require.NoError(t, err)
			assert.Equal(t, []trace.Problem{{Line: 3, Code: tt.code, Message: tt.message}}, problems)
			var lines []int
			for _, e := range entries {
				lines = append(lines, e.Line)
			}
			if tt.kept {
				assert.Equal(t, []int{1, 3, 4}, lines)
			} else {
				assert.Equal(t, []int{1, 4}, lines)
			}
		})
	}
}

// TestReadKeysOncePerObject checks that a key may appear again in another
// object, and that a trace whose times stay in range reads cleanly up to
// the last moment RFC 3339 can write.
func TestReadKeysOncePerObject(t *testing.T) {
	in := `{"at": "9999-12-31T23:59:58Z", "performative": "inform", "sender": "b", "receiver": "a", "content": {"x": {"a": 1}, "y": {"a": 2}, "z": [{"a": 3}, {"a": 4}]}}
{"at": "1s", "performative": "inform", "sender": "b", "receiver": "a"}`
	entries, problems, err := trace.Read(strings.NewReader(in))
	require.NoError(t, err)
	assert.Empty(t, problems)
	require.Len(t, entries, 2)
	assert.Equal(t, time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), entries[1].At.UTC())
}

// TestReadDurationOutOfRange checks a duration that takes the trace's
// start past the year 9999.
func TestReadDurationOutOfRange(t *testing.T) {
	in := `{"at": "9999-12-31T23:59:59Z", "performative": "inform", "sender": "b", "receiver": "a"}
{"at": "1h", "performative": "inform", "sender": "b", "receiver": "a"}`
	entries, problems, err := trace.Read(strings.NewReader(in))
	require.NoError(t, err)
	assert.Len(t, entries, 1)
	assert.Equal(t, []trace.Problem{{Line: 2, Code: trace.CodeTimeRange, Message: `at: "1h" after the trace's start is outside the years 0001 to 9999`}}, problems)
}

// TestReadHugeFieldsBounded is the regression test for a 5 MB sender or
// performative, which a finding would have quoted in full: the problem
// shows a prefix of it and an ellipsis.
func TestReadHugeFieldsBounded(t *testing.T) {
	huge := strings.Repeat("x", 5<<20)
	for _, tt := range []struct {
		name, line string
	}{
		{name: "sender", line: `{"performative": "agree", "sender": "` + huge + `", "receiver": "a"}`},
		{name: "performative", line: `{"performative": "` + huge + `", "sender": "b", "receiver": "a"}`},
		{name: "unknown field", line: `{"performative": "agree", "sender": "b", "receiver": "a", "` + huge + `": 1}`},
		{name: "repeated key", line: `{"performative": "agree", "sender": "b", "receiver": "a", "content": {"` + huge + `": 1, "` + huge + `": 2}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, problems, err := trace.Read(strings.NewReader(tt.line))
			require.NoError(t, err)
			require.NotEmpty(t, problems)
			for _, p := range problems {
				assert.Less(t, len(p.Message), 512, p.Message[:min(len(p.Message), 200)])
				assert.Contains(t, p.Message, `"`+strings.Repeat("x", 64)+`"…`)
			}
		})
	}
}

// TestReadLimits checks each of Read's limits: what breaks one is
// reported, and reading goes on where it can.
func TestReadLimits(t *testing.T) {
	good := `{"performative": "request", "sender": "a", "receiver": "b"}`
	t.Run("a line longer than the limit is skipped", func(t *testing.T) {
		long := `{"performative": "request", "sender": "a", "receiver": "b", "content": {"x": "` + strings.Repeat("y", 200) + `"}}`
		in := good + "\n" + long + "\n" + good
		entries, problems, err := trace.Read(strings.NewReader(in), trace.WithLimits(trace.Limits{MaxLineBytes: len(good)}))
		require.NoError(t, err)
		assert.Equal(t, []trace.Problem{{Line: 2, Code: trace.CodeLimit, Message: fmt.Sprintf("the line is longer than the limit of %d bytes; it is not read", len(good))}}, problems)
		assert.Equal(t, []int{1, 3}, lineNumbers(entries))
	})
	t.Run("a line of exactly the limit is read, with or without its newline", func(t *testing.T) {
		entries, problems, err := trace.Read(strings.NewReader(good+"\n"+good), trace.WithLimits(trace.Limits{MaxLineBytes: len(good)}))
		require.NoError(t, err)
		assert.Empty(t, problems)
		assert.Equal(t, []int{1, 2}, lineNumbers(entries))
	})
	t.Run("a trace larger than the limit is read up to it", func(t *testing.T) {
		in := strings.Repeat(good+"\n", 5)
		entries, problems, err := trace.Read(strings.NewReader(in), trace.WithLimits(trace.Limits{MaxBytes: 2*len(good) + 10}))
		require.NoError(t, err)
		assert.Equal(t, []trace.Problem{{Line: 3, Code: trace.CodeLimit, Message: fmt.Sprintf("the trace is larger than the limit of %d bytes; it is not read from here on", 2*len(good)+10)}}, problems)
		assert.Equal(t, []int{1, 2}, lineNumbers(entries))
	})
	t.Run("a trace of exactly the limit is read", func(t *testing.T) {
		in := good + "\n" + good + "\n"
		entries, problems, err := trace.Read(strings.NewReader(in), trace.WithLimits(trace.Limits{MaxBytes: len(in)}))
		require.NoError(t, err)
		assert.Empty(t, problems)
		assert.Len(t, entries, 2)
	})
	t.Run("a smaller field limit", func(t *testing.T) {
		_, problems, err := trace.Read(strings.NewReader(good), trace.WithLimits(trace.Limits{MaxFieldBytes: 5}))
		require.NoError(t, err)
		assert.Equal(t, []trace.Problem{{Line: 1, Code: trace.CodeLimit, Message: `performative "request" is 7 bytes, more than the limit of 5; the line is not read`}}, problems)
	})
	t.Run("a smaller depth limit", func(t *testing.T) {
		_, problems, err := trace.Read(strings.NewReader(`{"performative": "a", "sender": "b", "receiver": "c", "content": {"x": {}}}`), trace.WithLimits(trace.Limits{MaxDepth: 2}))
		require.NoError(t, err)
		assert.Equal(t, []trace.Problem{{Line: 1, Code: trace.CodeLimit, Message: "the line nests objects and arrays more than 2 deep; it is not read"}}, problems)
	})
	t.Run("unknown fields are reported ten at a time", func(t *testing.T) {
		var b strings.Builder
		b.WriteString(`{"performative": "request", "sender": "a", "receiver": "b"`)
		for i := range 12 {
			fmt.Fprintf(&b, `, "x%02d": 1`, i)
		}
		b.WriteString("}")
		entries, problems, err := trace.Read(strings.NewReader(b.String()))
		require.NoError(t, err)
		assert.Len(t, entries, 1)
		require.Len(t, problems, 11)
		assert.Equal(t, `unknown field "x00", ignored`, problems[0].Message)
		assert.Equal(t, "2 more unknown fields, ignored", problems[10].Message)
	})
}

func lineNumbers(es []trace.Entry) []int {
	var out []int
	for _, e := range es {
		out = append(out, e.Line)
	}
	return out
}

func TestReadAllFields(t *testing.T) {
	in := `{"at": "2026-03-01T10:00:00Z", "performative": "inform", "sender": "b", "receiver": "a", "conversation_id": "c1",` +
		` "reply_with": "b1", "in_reply_to": "r1", "reply_by": "1m", "protocol": "fipa-request", "language": "json",` +
		` "ontology": "chores", "content": {"result": {"fence": "painted"}, "n": 2, "ok": true, "none": null}}`
	entries, problems, err := trace.Read(strings.NewReader(in))
	require.NoError(t, err)
	require.Empty(t, problems)
	require.Len(t, entries, 1)
	assert.Equal(t, &forms.Message{
		Performative: "inform", Sender: "b", Receivers: []string{"a"}, ConversationID: "c1",
		ReplyWith: "b1", InReplyTo: "r1", ReplyBy: t0.Add(time.Minute), Protocol: "fipa-request", Language: "json", Ontology: "chores",
		Content: map[string]any{"result": map[string]any{"fence": "painted"}, "n": 2.0, "ok": true, "none": nil},
	}, entries[0].Message)
	assert.Equal(t, t0, entries[0].At)

	entries, problems, err = trace.Read(strings.NewReader(`{"performative": "agree", "sender": "b", "receiver": "a", "content": null}`))
	require.NoError(t, err)
	require.Empty(t, problems)
	assert.Nil(t, entries[0].Message.Content, "null content is no content")
}

type failingReader struct{ n int }

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n > 0 {
		return 0, errors.New("disk on fire")
	}
	r.n++
	return copy(p, `{"performative": "request", "sender": "a", "receiver": "b"}`+"\n"), nil
}

func TestReadIOError(t *testing.T) {
	entries, _, err := trace.Read(&failingReader{})
	require.EqualError(t, err, "disk on fire")
	assert.Len(t, entries, 1, "what was read before the error is returned")

	// A line the error cuts short is not read.
	r := io.MultiReader(strings.NewReader(`{"performative": "request", "sender": "a", "receiver": "b"}`+"\n"+`{"performative": "agree", "sen`), iotest.ErrReader(errors.New("disk on fire")))
	entries, problems, err := trace.Read(r)
	require.EqualError(t, err, "disk on fire")
	assert.Len(t, entries, 1)
	assert.Empty(t, problems)
}

func TestParseTime(t *testing.T) {
	tests := []struct {
		name       string
		in         string
		want       time.Time
		err        string
		outOfRange bool
	}{
		{name: "RFC 3339", in: "2026-03-01T10:00:00Z", want: t0},
		{name: "RFC 3339 with an offset", in: "2026-03-01T12:00:00+02:00", want: t0},
		{name: "RFC 3339 with fractions", in: "2026-03-01T10:00:00.125Z", want: t0.Add(125 * time.Millisecond)},
		{name: "duration", in: "1.5s", want: trace.Origin.Add(1500 * time.Millisecond)},
		{name: "compound duration", in: "1h2m3s", want: trace.Origin.Add(time.Hour + 2*time.Minute + 3*time.Second)},
		{name: "zero", in: "0s", want: trace.Origin},
		{name: "bare number", in: "30", err: `"30" is neither an RFC 3339 time nor a duration after the trace's start`},
		{name: "year 0 after the offset", in: "0001-01-01T00:59:59+01:00", err: `"0001-01-01T00:59:59+01:00" is outside the years 0001 to 9999 in UTC`, outOfRange: true},
		{name: "an overflowing duration", in: "99999999999s", err: `duration "99999999999s" is too long (at most about 292 years)`, outOfRange: true},
		{name: "the longest duration", in: "2562047h", want: trace.Origin.Add(2562047 * time.Hour)},
		{name: "a long name is quoted with Quote", in: strings.Repeat("z", 100), err: `"` + strings.Repeat("z", 64) + `"… is neither an RFC 3339 time nor a duration after the trace's start`},
		{name: "empty", in: "", err: `"" is neither an RFC 3339 time nor a duration after the trace's start`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := trace.ParseTime(tt.in, trace.Origin)
			if tt.err != "" {
				require.EqualError(t, err, tt.err)
				assert.Equal(t, tt.outOfRange, trace.IsOutOfRange(err))
				return
			}
			require.NoError(t, err)
			assert.True(t, tt.want.Equal(got), "got %v, want %v", got, tt.want)
		})
	}
}

func TestWriterRoundTrip(t *testing.T) {
	messages := []struct {
		at time.Time
		m  *forms.Message
	}{
		{at: t0, m: &forms.Message{
			Performative: "cfp", Sender: "buyer", Receivers: []string{"s1", "s2"}, ConversationID: "cn1", ReplyWith: "cfp1",
			ReplyBy: t0.Add(10 * time.Second), Protocol: "fipa-contract-net", Language: "json", Ontology: "logistics",
			Content: map[string]any{"task": "deliver <40> crates & more", "crates": 40.0},
		}},
		{at: t0.Add(1500 * time.Millisecond), m: &forms.Message{
			Performative: "propose", Sender: "s1", Receivers: []string{"buyer"}, ConversationID: "cn1", InReplyTo: "cfp1", ReplyWith: "p1",
			Content: map[string]any{"price": 120.5, "terms": []any{"net 30", true, nil}},
		}},
		{m: &forms.Message{ // no time: it happens when the line before did
			Performative: "refuse", Sender: "s2", Receivers: []string{"buyer"}, ConversationID: "cn1", InReplyTo: "cfp1",
		}},
		{at: time.Date(2026, 3, 1, 12, 0, 4, 0, time.FixedZone("CET", 3600)), m: &forms.Message{
			Performative: "accept-proposal", Sender: "buyer", Receivers: []string{"s1"}, ConversationID: "cn1", InReplyTo: "p1",
			Content: map[string]any{},
		}},
	}
	var buf bytes.Buffer
	w := trace.NewWriter(&buf)
	for _, x := range messages {
		require.NoError(t, w.Write(x.at, x.m))
	}
	assert.Equal(t, len(messages), strings.Count(buf.String(), "\n"), "one line per message")
	assert.Contains(t, buf.String(), `"receiver":["s1","s2"]`, "several receivers are a list")
	assert.Contains(t, buf.String(), `"receiver":"buyer"`, "one receiver is a name")
	assert.Contains(t, buf.String(), `deliver <40> crates & more`, "HTML characters are not escaped")

	entries, problems, err := trace.Read(&buf)
	require.NoError(t, err)
	require.Empty(t, problems)
	require.Len(t, entries, len(messages))
	prev := time.Time{}
	for i, e := range entries {
		assert.Equal(t, i+1, e.Line)
		want := messages[i].at
		if want.IsZero() {
			want = prev
		}
		assert.True(t, want.Equal(e.At), "line %d: at %v, want %v", i+1, e.At, want)
		prev = e.At
		got := *e.Message
		wantMsg := *messages[i].m
		assert.True(t, wantMsg.ReplyBy.Equal(got.ReplyBy), "line %d: reply_by %v, want %v", i+1, got.ReplyBy, wantMsg.ReplyBy)
		got.ReplyBy, wantMsg.ReplyBy = time.Time{}, time.Time{}
		assert.Equal(t, wantMsg, got, "line %d", i+1)
	}
}

// TestWriterRefusesNonLines is the regression test for a Writer that
// wrote "receiver": null, a line Read then rejected.
func TestWriterRefusesNonLines(t *testing.T) {
	tests := []struct {
		name string
		m    *forms.Message
	}{
		{name: "nil", m: nil},
		{name: "no performative", m: &forms.Message{Sender: "a", Receivers: []string{"b"}}},
		{name: "no sender", m: &forms.Message{Performative: "inform", Receivers: []string{"b"}}},
		{name: "no receivers", m: &forms.Message{Performative: "inform", Sender: "a"}},
		{name: "an empty receiver", m: &forms.Message{Performative: "inform", Sender: "a", Receivers: []string{"b", ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := trace.NewWriter(&buf).Write(t0, tt.m)
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), "trace: "), err.Error())
			assert.Empty(t, buf.String())
		})
	}
}

type brokenWriter struct{ calls int }

func (w *brokenWriter) Write(p []byte) (int, error) {
	w.calls++
	return 0, errors.New("pipe closed")
}

func TestWriterKeepsTheFirstError(t *testing.T) {
	bw := &brokenWriter{}
	w := trace.NewWriter(bw)
	m := &forms.Message{Performative: "inform", Sender: "a", Receivers: []string{"b"}}
	require.EqualError(t, w.Write(t0, m), "trace: pipe closed")
	require.EqualError(t, w.Write(t0, m), "trace: pipe closed")
	assert.Equal(t, 1, bw.calls, "after a failed write the Writer writes no more")
}

func TestWriterUnmarshalableContent(t *testing.T) {
	var buf bytes.Buffer
	err := trace.NewWriter(&buf).Write(t0, &forms.Message{Performative: "inform", Sender: "a", Receivers: []string{"b"},
		Content: map[string]any{"ch": make(chan int)}})
	require.Error(t, err)
	assert.Empty(t, buf.String())
}

// TestWriterConcurrent writes from several goroutines at once: every line
// is whole (run with -race).
func TestWriterConcurrent(t *testing.T) {
	const goroutines, each = 8, 200
	var buf bytes.Buffer
	w := trace.NewWriter(&buf)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				m := &forms.Message{
					Performative: "inform", Sender: fmt.Sprintf("agent-%d", g), Receivers: []string{"monitor"},
					ConversationID: fmt.Sprintf("c%d", g), ReplyWith: fmt.Sprintf("%d-%d", g, i),
					Content: map[string]any{"result": strings.Repeat("x", 100+i), "i": float64(i)},
				}
				assert.NoError(t, w.Write(t0.Add(time.Duration(i)*time.Millisecond), m))
			}
		}()
	}
	wg.Wait()

	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	require.Len(t, lines, goroutines*each)
	for _, l := range lines {
		require.True(t, json.Valid([]byte(l)), "a torn line: %s", l)
	}
	entries, problems, err := trace.Read(&buf)
	require.NoError(t, err)
	for _, p := range problems {
		// Goroutines interleave their lines, so times may go back.
		require.Equal(t, trace.CodeBackwards, p.Code, p.Message)
	}
	require.Len(t, entries, goroutines*each)
	next := map[string]int{} // each goroutine's lines stay in its order
	for _, e := range entries {
		m := e.Message
		i := next[m.Sender]
		assert.Equal(t, fmt.Sprintf("%s-%d", strings.TrimPrefix(m.Sender, "agent-"), i), m.ReplyWith)
		assert.Equal(t, float64(i), m.Content["i"])
		next[m.Sender] = i + 1
	}
	assert.Len(t, next, goroutines)
}

// TestReadTimerLines checks what Read makes of timer lines
// (TestReadProblems has their problems).
func TestReadTimerLines(t *testing.T) {
	t.Run("a timer line is an entry with a timer", func(t *testing.T) {
		entries, problems, err := trace.Read(strings.NewReader(`{"at": "2026-03-01T10:00:00Z", "performative": "request", "sender": "a", "receiver": "b", "conversation_id": "c1"}
{"at": "30s", "timer": "reply", "agent": "a", "conversation_id": "c1"}
{"at": "31s", "timer": "reply", "agent": "b"}`))
		require.NoError(t, err)
		assert.Empty(t, problems)
		require.Len(t, entries, 3)
		assert.Nil(t, entries[1].Message)
		assert.Equal(t, &trace.Timer{Agent: "a", Conversation: "c1", Name: "reply", At: t0.Add(30 * time.Second)}, entries[1].Timer)
		assert.True(t, t0.Add(30*time.Second).Equal(entries[1].At))
		assert.Equal(t, &trace.Timer{Agent: "b", Name: "reply", At: t0.Add(31 * time.Second)}, entries[2].Timer, "without conversation_id, the conversation without an id")
		assert.Nil(t, entries[0].Timer)
	})
	t.Run("a timer line that goes back is no problem, and keeps the time it gives", func(t *testing.T) {
		entries, problems, err := trace.Read(strings.NewReader(`{"at": "2026-03-01T10:00:02Z", "performative": "inform", "sender": "a", "receiver": "b"}
{"at": "2026-03-01T10:00:01Z", "timer": "reply", "agent": "a"}
{"at": "2026-03-01T10:00:01.5Z", "performative": "inform", "sender": "a", "receiver": "b"}`))
		require.NoError(t, err)
		require.Len(t, entries, 3)
		assert.Equal(t, []trace.Problem{{Line: 3, Code: trace.CodeBackwards,
			Message: "at 2026-03-01T10:00:01.5Z is before 2026-03-01T10:00:02Z, the time of the line before; the line is read as happening then"}}, problems,
			"a message line after it goes back from the time it is read at")
		assert.True(t, t0.Add(2*time.Second).Equal(entries[1].At), "read as happening when the line before did")
		assert.True(t, t0.Add(time.Second).Equal(entries[1].Timer.At), "the time the line gives")
	})
}

func TestWriterTimerRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := trace.NewWriter(&buf)
	require.NoError(t, w.Write(t0, &forms.Message{Performative: "request", Sender: "alice", Receivers: []string{"bob"}, ConversationID: "c1"}))
	require.NoError(t, w.WriteTimer(t0.Add(30*time.Second).In(time.FixedZone("CET", 3600)), "alice", "c1", "reply"))
	require.NoError(t, w.WriteTimer(t0.Add(30*time.Second+time.Nanosecond), "bob", "", "reply"))
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	require.Len(t, lines, 3)
	assert.Equal(t, `{"at":"2026-03-01T10:00:30Z","timer":"reply","agent":"alice","conversation_id":"c1"}`, lines[1], "in UTC, and no message field")
	assert.Equal(t, `{"at":"2026-03-01T10:00:30.000000001Z","timer":"reply","agent":"bob"}`, lines[2], "every digit of the time, and no empty conversation_id")
	assert.Equal(t, `{"at":"2026-03-01T10:00:00Z","performative":"request","sender":"alice","receiver":"bob","conversation_id":"c1"}`, lines[0], "a message line has no timer field")

	entries, problems, err := trace.Read(&buf)
	require.NoError(t, err)
	require.Empty(t, problems)
	require.Len(t, entries, 3)
	assert.Equal(t, &trace.Timer{Agent: "alice", Conversation: "c1", Name: "reply", At: t0.Add(30 * time.Second)}, entries[1].Timer)
	assert.True(t, t0.Add(30*time.Second).Equal(entries[1].At))
	assert.Equal(t, &trace.Timer{Agent: "bob", Name: "reply", At: t0.Add(30*time.Second + time.Nanosecond)}, entries[2].Timer)
	assert.True(t, t0.Add(30*time.Second+time.Nanosecond).Equal(entries[2].At))
}

// TestWriterRefusesNonTimerLines checks that WriteTimer writes no line
// Read would reject.
func TestWriterRefusesNonTimerLines(t *testing.T) {
	tests := []struct {
		name         string
		at           time.Time
		agent, timer string
	}{
		{name: "no time", agent: "alice", timer: "reply"},
		{name: "no agent", at: t0, timer: "reply"},
		{name: "no timer", at: t0, agent: "alice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := trace.NewWriter(&buf).WriteTimer(tt.at, tt.agent, "c1", tt.timer)
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), "trace: "), err.Error())
			assert.Empty(t, buf.String())
		})
	}
}

func TestWriterTimerKeepsTheFirstError(t *testing.T) {
	bw := &brokenWriter{}
	w := trace.NewWriter(bw)
	require.EqualError(t, w.WriteTimer(t0, "alice", "c1", "reply"), "trace: pipe closed")
	require.EqualError(t, w.Write(t0, &forms.Message{Performative: "inform", Sender: "a", Receivers: []string{"b"}}), "trace: pipe closed")
	require.EqualError(t, w.WriteTimer(t0, "alice", "c1", "reply"), "trace: pipe closed")
	require.EqualError(t, w.Write(t0, &forms.Message{Performative: "inform", Sender: "a", Receivers: []string{"b"}, Content: map[string]any{"ch": make(chan int)}}),
		"trace: pipe closed", "the first error, even for content that would not encode")
	assert.Equal(t, 1, bw.calls, "after a failed write the Writer writes no more")
}

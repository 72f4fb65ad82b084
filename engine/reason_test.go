package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policy"
)

// appendQuote must spell exactly what policy.Quote does, cut included.
func TestAppendQuoteIsQuote(t *testing.T) {
	tests := []struct{ name, s string }{
		{"empty", ""},
		{"plain", "bob"},
		{"escapes", "a\"b\n\x00"},
		{"at the limit", strings.Repeat("m", policy.MaxQuoted)},
		{"over the limit", strings.Repeat("m", policy.MaxQuoted+1)},
		{"cut inside a rune", strings.Repeat("m", policy.MaxQuoted-1) + "é" + "tail"},
		{"invalid utf-8", "\xff\xfe" + strings.Repeat("x", 100)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, policy.Quote(tt.s), string(appendQuote([]byte("prefix"), tt.s)[len("prefix"):]))
		})
	}
}

// The reasons of unexpected messages are built in the queue's reused
// buffer: a reason must not change when the queue builds the next one,
// with or without a Reset in between, and a repeated one must read the
// same.
func TestUnexpectedReasonsDoNotShareTheBuffer(t *testing.T) {
	p, ds := policy.LoadYAML("p.yaml", []byte(`policy: ping-pong
version: 1
roles: [A, B]
messages: {ping: request, pong: inform, stop: cancel}
states:
  s0:
    - {send: ping, from: A, to: B, next: s1}
    - {send: stop, from: A, to: B, next: end}
  s1:
    - {send: pong, from: A, to: B, next: s0}
  end: {terminal: done}
`))
	require.False(t, ds.HasErrors(), "%v", ds)
	prog, ds := Compile(p, "B")
	require.NotNil(t, prog, "%v", ds)
	h, err := prog.NewHandler("c1", "b")
	require.NoError(t, err)
	var q Queue
	require.NoError(t, h.Start(time.Time{}, &q))
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	send := func(perf, sender string) {
		require.NoError(t, h.Process(&MessageEvent{At: at, Message: &forms.Message{Performative: perf, Sender: sender, Receivers: []string{"b"}}}, &q))
	}
	reasons := func() []string {
		var out []string
		for _, e := range q.Events() {
			if pe, ok := e.(*ProtocolErrorEvent); ok {
				out = append(out, pe.Reason)
			}
		}
		return out
	}
	const allows = `state "s0" allows ping from A or stop from A`
	q.Reset()
	send("inform", "a")
	send("query-if", strings.Repeat("x", 100))
	send("inform", "a")
	first := reasons()
	want := []string{
		`unexpected inform from "a": ` + allows,
		`unexpected "query-if" from ` + policy.Quote(strings.Repeat("x", 100)) + `: ` + allows,
		`unexpected inform from "a": ` + allows,
	}
	assert.Equal(t, want, first)
	q.Reset()
	send("confirm", "zed")
	assert.Equal(t, []string{`unexpected "confirm" from "zed": ` + allows}, reasons())
	assert.Equal(t, want, first, "a later reason changed an earlier one")
}

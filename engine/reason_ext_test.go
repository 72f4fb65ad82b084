package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policy"
)

// The reasons of unexpected messages are built in the queue's reused
// buffer: a reason must not change when the queue builds the next one,
// with or without a Reset in between, and a repeated one must read the
// same.
func TestUnexpectedReasonsDoNotShareTheBuffer(t *testing.T) {
	h, err := mustCompile(t, pingPong, "B").NewHandler("c1", "b")
	require.NoError(t, err)
	var q engine.Queue
	require.NoError(t, h.Start(time.Time{}, &q))
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	send := func(perf, sender string) {
		require.NoError(t, h.Process(&engine.MessageEvent{At: at, Message: &forms.Message{Performative: perf, Sender: sender, Receivers: []string{"b"}}}, &q))
	}
	reasons := func() []string {
		var out []string
		for _, e := range q.Events() {
			if pe, ok := e.(*engine.ProtocolErrorEvent); ok {
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

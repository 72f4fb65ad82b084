package engine_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policies"
)

// A reply_by in the year 2250 once kept a conversation waiting for
// centuries: a deadline read from a message is bounded to the message's
// arrival (or sending) plus the maximum wait.
func TestDeadlinesFromMessagesAreBounded(t *testing.T) {
	y2250 := time.Date(2250, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		opts    []engine.CompileOption
		replyBy time.Time
		at      time.Time // when the request arrives
		want    time.Time // the reply timer's deadline
	}{
		{"the year 2250", nil, y2250, t0.Add(time.Second), t0.Add(time.Second + engine.DefaultMaxWait)},
		{"a day and a second", nil, t0.Add(24*time.Hour + time.Second), t0, t0.Add(24 * time.Hour)},
		{"a day exactly", nil, t0.Add(24 * time.Hour), t0, t0.Add(24 * time.Hour)},
		{"within the bound", nil, t0.Add(30 * time.Second), t0, t0.Add(30 * time.Second)},
		{"a deadline already past", nil, t0.Add(-time.Hour), t0, t0.Add(-time.Hour)},
		{"another bound", []engine.CompileOption{engine.WithMaxWait(time.Hour)}, y2250, t0, t0.Add(time.Hour)},
		{"no bound keeps the default", []engine.CompileOption{engine.WithMaxWait(0)}, y2250, t0, t0.Add(engine.DefaultMaxWait)},
		{"a negative bound keeps the default", []engine.CompileOption{engine.WithMaxWait(-time.Hour)}, y2250, t0, t0.Add(engine.DefaultMaxWait)},
		{"a message without a time is not bounded", nil, y2250, time.Time{}, y2250},
	}
	p, err := policies.Load("fipa-request")
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pr, ds := engine.Compile(p, "Participant", tt.opts...)
			require.NotNil(t, pr, "%v", ds)
			h, err := pr.NewHandler(convID, "bob")
			require.NoError(t, err)
			var q engine.Queue
			require.NoError(t, h.Start(t0, &q))
			q.Reset()
			m := with(msg("request", "alice", "bob", content{"action": "paint"}), func(m *forms.Message) { m.ReplyBy = tt.replyBy })
			require.NoError(t, h.Process(&engine.MessageEvent{At: tt.at, Message: &m}, &q))
			var set *engine.TimerEvent
			for _, ev := range q.Events() {
				if e, ok := ev.(*engine.TimerEvent); ok && e.Op == engine.TimerSet && e.Name == "reply" {
					set = e
				}
			}
			require.NotNil(t, set, "no reply timer in %v", q.Events())
			assert.True(t, tt.want.Equal(set.Deadline), "deadline %v, want %v", set.Deadline, tt.want)
			assert.True(t, tt.replyBy.Equal(m.ReplyBy), "the message is not changed")
		})
	}
}

// The bound holds for the sender too, and the bounded deadline is the
// one that judges lateness; a commitment's deadline read from a message
// is bounded the same way.
func TestBoundedDeadlinesInConversations(t *testing.T) {
	y2250 := time.Date(2250, 1, 1, 0, 0, 0, 0, time.UTC)
	t.Run("request", func(t *testing.T) {
		c := newConv(t, "fipa-request", cast("fipa-request"))
		c.run(t, []step{
			{do: start(), want: `
				alice: decide start [request]`},
			{do: sayBy("alice", "request", nil, y2250.Sub(t0)), want: `
				alice: send request alice->bob rw=c1/alice#1 by=+1962111h0m0s
				alice: timer set reply +24h0m0s
				alice: decide requested [cancel]
				bob: timer set reply +24h0m0s
				bob: decide requested [agree refuse not-understood inform-done inform-result failure]`},
			{at: 24*time.Hour + time.Second, do: recv("alice", msg("agree", "bob", "alice", nil)), want: `
				alice: error PE004 [requested]: agree from "bob" arrived at 2026-03-02T09:00:01Z, after the deadline 2026-03-02T09:00:00Z of state "requested"`},
		})
	})
	t.Run("contract net", func(t *testing.T) {
		c := newConv(t, "fipa-contract-net", cast("fipa-contract-net"))
		seq(start(), sayBy("alice", "cfp", content{"task": "t"}, 10*time.Minute))(c)
		c.run(t, []step{{at: time.Minute, do: answer("bob", "", decision.Answer{Choice: "propose", Content: content{"price": 1}, ReplyBy: y2250}), want: `
			bob: send propose bob->alice rw=c1/bob#1 irt=c1/alice#1 by=+1962111h0m0s {"price":1}
			bob: commitment task created bob->alice (propose)
			bob: timer set award commitment=task +24h1m0s
			bob: timer cancel proposals
			bob: timer set award +24h1m0s
			alice: commitment task/bob created bob->alice (propose)
			alice: timer set award/bob commitment=task +24h1m0s
			alice: timer cancel proposals/bob
			alice: timer set award/bob +24h1m0s`}})
	})
}

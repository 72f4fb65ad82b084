package engine_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/forms"
)

// A Queue reuses the storage of its events after Reset. What a caller
// wrote into an output event (an Answer on a decision, fields of a sent
// message) never shows in the events that reuse it.
func TestQueueReuseShowsNothingCallersWrote(t *testing.T) {
	prog := program(t, "fipa-request", "Initiator")
	var q engine.Queue
	run := func() (*engine.DecisionEvent, *forms.Message) {
		h, err := prog.NewHandler(convID, "alice", engine.WithPeers("Participant", "bob"))
		require.NoError(t, err)
		q.Reset()
		require.NoError(t, h.Start(t0, &q))
		start := q.Events()[0].(*engine.DecisionEvent)
		q.Reset()
		require.NoError(t, h.Process(&engine.DecisionEvent{At: t0, Ticket: start.Ticket, Answer: decision.Answer{Choice: "request", Content: content{"action": "paint"}}}, &q))
		var sent *forms.Message
		var next *engine.DecisionEvent
		for _, e := range q.Events() {
			switch e := e.(type) {
			case *engine.MessageEvent:
				sent = e.Message
			case *engine.DecisionEvent:
				next = e
			}
		}
		require.NotNil(t, sent)
		require.NotNil(t, next)
		return next, sent
	}
	d, m := run()
	want, wantMsg := *d, *m
	// The caller scribbles on what the queue holds.
	d.Answer = decision.Answer{Choice: "cancel", Content: content{"x": 1}, ReplyBy: time.Time{}.In(time.FixedZone("x", 3600)), Sessions: map[string]decision.SessionAnswer{"bob": {}}}
	m.ReplyTo, m.Ontology, m.Encoding, m.Language = "carol", "o", "e", "l"
	d2, m2 := run()
	assert.Same(t, d, d2, "the queue reuses its decision")
	assert.Same(t, m, m2, "and its message")
	assert.Equal(t, decision.Answer{}, d2.Answer)
	assert.Equal(t, want.Request, d2.Request)
	assert.Equal(t, wantMsg, *m2)
}

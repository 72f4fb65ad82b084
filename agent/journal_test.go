package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/policies"
	"github.com/parleyhq/parley/trace"
)

// TestJournalOfATimeoutIsComplete runs FIPA Request between two managers
// that journal into one trace.Writer: bob never answers alice's request,
// the clock passes its reply_by, and the journal, which records the
// timers that fired after the last message, checks as a conversation
// that a timeout ended. Without its timer lines the same journal ends
// mid-conversation.
func TestJournalOfATimeoutIsComplete(t *testing.T) {
	w := newWorld(t)
	var buf strings.Builder
	j := trace.NewWriter(&buf)
	held := make(chan agent.DecisionRequest, 1)
	alice := w.agent("alice", script{"start": {Choice: "request", Content: map[string]any{"action": "renew the certificate"}, ReplyBy: mt0.Add(30 * time.Second)}},
		agent.WithJournal(j, false))
	bob := w.agent("bob", script{}, agent.WithJournal(j, false),
		agent.WithAsyncDecisions(func(r agent.DecisionRequest) { held <- r }), // and never answered
		agent.WithLimits(agent.Limits{DecisionTimeout: time.Hour}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	conv, err := alice.Start(ctx, agent.StartRequest{Policy: "fipa-request", Role: "Initiator", Peers: map[string][]string{"Participant": {"bob"}}})
	require.NoError(t, err)
	w.settle()
	select {
	case r := <-held:
		require.Equal(t, conv, r.Conversation)
		require.Equal(t, "requested", r.Request.Point)
	case <-ctx.Done():
		require.FailNow(t, "bob was never asked to answer the request")
	}
	w.clock.Advance(time.Minute)
	for _, m := range []*agent.Manager{alice, bob} {
		outcome, err := m.Wait(ctx, conv)
		require.NoError(t, err)
		require.Equal(t, "timeout", outcome, m.Name())
	}

	entries, problems, err := trace.Read(strings.NewReader(buf.String()))
	require.NoError(t, err)
	require.Empty(t, problems, buf.String())
	var timers []trace.Timer
	var messages []trace.Entry
	for _, e := range entries {
		if e.Timer != nil {
			timers = append(timers, *e.Timer)
		} else {
			messages = append(messages, e)
		}
	}
	deadline := mt0.Add(30 * time.Second)
	assert.ElementsMatch(t, []trace.Timer{
		{Agent: "alice", Conversation: conv, Name: "reply", At: deadline},
		{Agent: "bob", Conversation: conv, Name: "reply", At: deadline},
	}, timers, "each agent's reply timer fired at the request's reply_by")

	p, err := policies.Load("fipa-request")
	require.NoError(t, err)
	res, err := trace.Check(p, entries, problems, trace.Options{})
	require.NoError(t, err)
	assert.Empty(t, res.Findings)
	assert.True(t, res.Summary.Conforms)
	assert.True(t, res.Summary.Complete)
	assert.Equal(t, map[string]string{"alice": "timeout", "bob": "timeout"}, res.Summary.Outcomes)

	res, err = trace.Check(p, messages, nil, trace.Options{})
	require.NoError(t, err)
	assert.False(t, res.Summary.Complete, "the message lines alone end before the timeout")
	assert.Equal(t, map[string]string{"alice": "", "bob": ""}, res.Summary.Outcomes)
}

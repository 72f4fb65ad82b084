package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/forms"
)

// syncBuffer is a buffer a logger writes to from the workers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// records returns the JSON records logged with message msg.
func (b *syncBuffer) records(t *testing.T, msg string) []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(b.buf.Bytes()), []byte("\n")) {
		var r map[string]any
		require.NoError(t, json.Unmarshal(line, &r))
		if r["msg"] == msg {
			out = append(out, r)
		}
	}
	return out
}

// TestADecisionThatFailsIsReportedWithItsPoint: a decision job does not
// keep the point of its request (decision logic may change its copy), so
// a decision that fails off the worker is reported with the point the
// handler still awaits it at, not with what decision logic left in the
// request.
func TestADecisionThatFailsIsReportedWithItsPoint(t *testing.T) {
	tests := []struct {
		name string
		err  error
		msg  string
	}{
		{"nobody decides", decision.ErrNoDecision, "no decision logic decides this point"},
		{"decision logic fails", errors.New("no budget"), "decision failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			var logs syncBuffer
			alice := w.agent("alice", decision.Func(func(_ context.Context, req *decision.Request) (decision.Answer, error) {
				req.Point = "changed by the decider"
				return decision.Answer{}, tt.err
			}), agent.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
			w.agent("bob", bobOfRequest())
			ctx := context.Background()
			_, err := alice.Start(ctx, agent.StartRequest{Policy: "fipa-request", Role: "Initiator", Peers: map[string][]string{"Participant": {"bob"}}})
			require.NoError(t, err)
			w.settle()
			recs := logs.records(t, tt.msg)
			require.Len(t, recs, 1)
			assert.Equal(t, "start", recs[0]["point"])
		})
	}
}

// kept is what decision logic kept of one decision past its call: its
// context, its request's choices and vars, and copies of both made
// during the call; round is the conversation it was made in.
type kept struct {
	round               int
	ctx                 context.Context
	choices, choicesNow []string
	vars, varsNow       map[string]any
}

// TestWhatADeciderKeepsOutlivesTheReusedJob: the manager reuses a
// decision's job for later decisions, so a context, choices or vars that
// decision logic kept past its call must not be the job's: at every
// decision, each context kept in a conversation that ended before is
// still ended, and each kept copy unchanged.
func TestWhatADeciderKeepsOutlivesTheReusedJob(t *testing.T) {
	w := newWorld(t)
	var mu sync.Mutex
	var all []kept
	var changed []string
	round := 0
	check := func() {
		for i, k := range all {
			if k.round < round && k.ctx.Err() == nil {
				changed = append(changed, fmt.Sprintf("decision %d's context", i))
			}
			if !slices.Equal(k.choicesNow, k.choices) {
				changed = append(changed, fmt.Sprintf("decision %d's choices", i))
			}
			if !maps.Equal(k.varsNow, k.vars) {
				changed = append(changed, fmt.Sprintf("decision %d's vars", i))
			}
		}
	}
	keep := func(d decision.Decider) decision.Decider {
		return decision.Func(func(ctx context.Context, req *decision.Request) (decision.Answer, error) {
			mu.Lock()
			check()
			all = append(all, kept{round: round, ctx: ctx, choices: req.Choices, choicesNow: slices.Clone(req.Choices), vars: req.Vars, varsNow: maps.Clone(req.Vars)})
			mu.Unlock()
			return d.Decide(ctx, req)
		})
	}
	w.agent("bob", keep(bobOfRequest()))
	alice := w.agent("alice", keep(script{"start": {Choice: "request", Content: map[string]any{"action": "x"}, ReplyBy: mt0.Add(time.Minute)}}))
	ctx := context.Background()
	for i := range 8 {
		mu.Lock()
		round = i
		mu.Unlock()
		_, err := alice.Start(ctx, agent.StartRequest{Policy: "fipa-request", Role: "Initiator", Peers: map[string][]string{"Participant": {"bob"}}})
		require.NoError(t, err)
		w.settle()
	}
	mu.Lock()
	defer mu.Unlock()
	round++
	check()
	require.GreaterOrEqual(t, len(all), 24, "alice decides at least once in each conversation, bob twice")
	assert.Empty(t, changed)
}

// TestADecisionBehindABlockedOneIsTaken: a worker hands the decisions of
// a batch of its inputs to the pool together; one that blocks in
// decision logic holds up none of the others, here the decisions of the
// conversations opened after it on bob's one worker, which all end.
func TestADecisionBehindABlockedOneIsTaken(t *testing.T) {
	w := newWorld(t)
	release := make(chan struct{})
	defer close(release)
	bobs := bobOfRequest()
	bob := w.agent("bob", decision.Func(func(ctx context.Context, req *decision.Request) (decision.Answer, error) {
		if req.ConversationID == "c0" {
			<-release
		}
		return bobs.Decide(ctx, req)
	}), agent.WithWorkers(1))
	w.agent("alice", nil)
	const n = 8
	for i := range n {
		req := &forms.Message{Performative: "request", Sender: "alice", Receivers: []string{"bob"}, Protocol: "fipa-request",
			ConversationID: fmt.Sprintf("c%d", i), ReplyWith: fmt.Sprintf("r%d", i), Content: map[string]any{"action": "x"}}
		require.NoError(t, bob.Deliver("alice", req))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := 1; i < n; i++ {
		outcome, err := bob.Wait(ctx, fmt.Sprintf("c%d", i))
		require.NoError(t, err, "conversation c%d", i)
		assert.Equal(t, "result", outcome, "conversation c%d", i)
	}
	st, err := bob.Status(ctx, "c0")
	require.NoError(t, err)
	assert.Equal(t, "requested", st.States[""], "c0's decision is still blocked")
}

package a2a_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/a2a"
	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/policies"
)

// initiator starts fipa-request conversations with the request content
// it is given and never cancels.
func initiator(_ context.Context, req *decision.Request) (decision.Answer, error) {
	if req.Point == "start" {
		return decision.Answer{Choice: "request", Content: req.Content, ReplyBy: time.Now().Add(10 * time.Second)}, nil
	}
	return decision.Answer{}, decision.ErrNoDecision
}

// received is what alice received, in order: performative and content.
type received struct {
	mu   sync.Mutex
	msgs []string
	last map[string]any
}

func (r *received) observe(o agent.Observation) {
	if me, ok := o.Event.(*engine.MessageEvent); ok && o.Input && me.Message.Sender == "painter" {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.msgs = append(r.msgs, me.Message.Performative)
		r.last = me.Message.Content
	}
}

// call plays the Initiator of fipa-request against the A2A agent at url
// and returns the outcome (or Wait's error) and what alice received.
func call(t *testing.T, url string, data map[string]any, opts ...a2a.ClientOption) (string, *received) {
	t.Helper()
	c, err := a2a.NewClient(append([]a2a.ClientOption{a2a.WithPeer("painter", url), a2a.WithClientLogger(nil)}, opts...)...)
	require.NoError(t, err)
	defer c.Close()
	r := &received{}
	m, err := agent.NewManager("alice", agent.WithTransport(c), agent.WithLogger(nil), agent.WithDecider(decision.Func(initiator)), agent.WithObserver(r.observe))
	require.NoError(t, err)
	defer func() { require.NoError(t, m.Close(context.Background())) }()
	c.Attach(m)
	fr, err := policies.Load("fipa-request")
	require.NoError(t, err)
	require.NoError(t, m.Register(fr))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conv, err := m.Start(ctx, agent.StartRequest{Policy: "fipa-request", Role: "Initiator", Peers: map[string][]string{"Participant": {"painter"}}, Data: data})
	require.NoError(t, err)
	outcome, err := m.Wait(ctx, conv)
	if err != nil {
		return err.Error(), r
	}
	return outcome, r
}

// callCase is one call of the Initiator, and what it must end with and
// receive.
type callCase struct {
	name, action, outcome string
	msgs                  []string
	last                  map[string]any
}

// checkCalls plays the Initiator against the agent at url for each case.
func checkCalls(t *testing.T, url string, tests []callCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			outcome, r := call(t, url, map[string]any{"action": tc.action})
			assert.Equal(t, tc.outcome, outcome)
			assert.Equal(t, tc.msgs, r.msgs)
			assert.Equal(t, tc.last, r.last)
		})
	}
}

func TestClientParleyServer(t *testing.T) {
	url := serve(t)
	checkCalls(t, url, []callCase{
		{name: "paint", action: "paint the shed", outcome: "result", msgs: []string{"agree", "inform"}, last: map[string]any{"result": "paint the shed: done"}},
		{name: "mow", action: "mow the lawn", outcome: "refused", msgs: []string{"refuse"}, last: map[string]any{"reason": "I only paint"}},
	})
}

// plainAgent is an A2A agent built on the SDK alone, knowing nothing of
// Parley: it paints (a completed task with an artifact), works slowly on
// "slow" actions (polled), answers "hello" with a message and rejects
// the rest.
type plainAgent struct{}

func (plainAgent) Execute(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	var action string
	for _, p := range rc.Message.Parts {
		if d, ok := p.(sdk.DataPart); ok {
			action, _ = d.Data["action"].(string)
		}
	}
	if action == "hello" {
		return q.Write(ctx, sdk.NewMessage(sdk.MessageRoleAgent, sdk.DataPart{Data: map[string]any{"result": "hi"}}))
	}
	if err := q.Write(ctx, sdk.NewSubmittedTask(rc, rc.Message)); err != nil {
		return err
	}
	if strings.HasPrefix(action, "slow") {
		working := sdk.NewStatusUpdateEvent(rc, sdk.TaskStateWorking, nil)
		if err := q.Write(ctx, working); err != nil {
			return err
		}
		time.Sleep(300 * time.Millisecond)
	}
	if strings.HasPrefix(action, "paint") || strings.HasPrefix(action, "slow") {
		if err := q.Write(ctx, sdk.NewArtifactEvent(rc, sdk.DataPart{Data: map[string]any{"result": action + " done"}})); err != nil {
			return err
		}
		done := sdk.NewStatusUpdateEvent(rc, sdk.TaskStateCompleted, nil)
		done.Final = true
		return q.Write(ctx, done)
	}
	no := sdk.NewStatusUpdateEvent(rc, sdk.TaskStateRejected, sdk.NewMessageForTask(sdk.MessageRoleAgent, rc, sdk.TextPart{Text: "I only paint"}))
	no.Final = true
	return q.Write(ctx, no)
}

func (plainAgent) Cancel(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	ev := sdk.NewStatusUpdateEvent(rc, sdk.TaskStateCanceled, nil)
	ev.Final = true
	return q.Write(ctx, ev)
}

func TestClientPlainServer(t *testing.T) {
	hs := httptest.NewServer(a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(plainAgent{})))
	defer hs.Close()
	checkCalls(t, hs.URL, []callCase{
		{name: "completed with an artifact", action: "paint the shed", outcome: "result", msgs: []string{"inform"}, last: map[string]any{"result": "paint the shed done"}},
		{name: "working, then completed", action: "slow paint", outcome: "result", msgs: []string{"inform"}, last: map[string]any{"result": "slow paint done"}},
		{name: "a message instead of a task", action: "hello", outcome: "result", msgs: []string{"inform"}, last: map[string]any{"result": "hi"}},
		{name: "rejected", action: "mow the lawn", outcome: "refused", msgs: []string{"refuse"}, last: map[string]any{"reason": "I only paint"}},
	})
}

func TestClientErrors(t *testing.T) {
	tests := []struct {
		name string
		opts []a2a.ClientOption
		want string
	}{
		{name: "an empty peer", opts: []a2a.ClientOption{a2a.WithPeer("", "")}, want: "empty name or URL"},
		{name: "a negative limit", opts: []a2a.ClientOption{a2a.WithClientLimits(a2a.ClientLimits{MaxTasks: -1})}, want: "a2a: WithClientLimits: MaxTasks is -1, not positive"},
		{name: "a nil HTTP client", opts: []a2a.ClientOption{a2a.WithHTTPClient(nil)}, want: "nil client"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := a2a.NewClient(tc.opts...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestClientUnreachablePeerAborts(t *testing.T) {
	outcome, _ := call(t, "http://127.0.0.1:1/", map[string]any{"action": "paint"})
	assert.Contains(t, outcome, "aborted")
	assert.Contains(t, outcome, "send failed")
}

func TestClientResponseLimit(t *testing.T) {
	outcome, r := call(t, serve(t), map[string]any{"action": "paint"}, a2a.WithClientLimits(a2a.ClientLimits{MaxResponseBytes: 64}))
	assert.Contains(t, outcome, "aborted")
	assert.Contains(t, outcome, "response larger than ClientLimits.MaxResponseBytes")
	assert.Empty(t, r.msgs)
}

// TestServerForwardsToClient runs a broker that serves A2A clients and,
// through WithForward, calls the painter over A2A from the same manager:
// to answer a request, it asks the painter and relays the outcome.
func TestServerForwardsToClient(t *testing.T) {
	painterURL := serve(t)
	fr, err := policies.Load("fipa-request")
	require.NoError(t, err)
	c, err := a2a.NewClient(a2a.WithPeer("painter", painterURL), a2a.WithClientLogger(nil))
	require.NoError(t, err)
	defer c.Close()
	srv, err := a2a.NewServer(a2a.Info{Name: "broker"}, a2a.WithForward(c))
	require.NoError(t, err)
	var broker *agent.Manager
	relay := func(ctx context.Context, req *decision.Request) (decision.Answer, error) {
		switch {
		case req.Role == "Initiator":
			return initiator(ctx, req)
		case req.Point == "requested":
			conv, err := broker.Start(ctx, agent.StartRequest{Policy: "fipa-request", Role: "Initiator", Peers: map[string][]string{"Participant": {"painter"}}, Data: req.Content})
			if err != nil {
				return decision.Answer{}, err
			}
			outcome, err := broker.Wait(ctx, conv)
			if err != nil {
				return decision.Answer{}, err
			}
			return decision.Answer{Choice: "inform-result", Content: map[string]any{"result": "the painter says " + outcome}}, nil
		}
		return decision.Answer{}, decision.ErrNoDecision
	}
	broker, err = agent.NewManager("broker", append(srv.ManagerOptions(), agent.WithLogger(nil), agent.WithDecider(decision.Func(relay)))...)
	require.NoError(t, err)
	defer func() { require.NoError(t, broker.Close(context.Background())) }()
	c.Attach(broker)
	require.NoError(t, srv.Attach(broker, fr))
	hs := httptest.NewServer(srv)
	defer hs.Close()

	tests := []struct{ name, action, result string }{
		{name: "painted", action: "paint the barn", result: "the painter says result"},
		{name: "refused", action: "mow the lawn", result: "the painter says refused"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			task, err := send(t, client(hs.URL+"/"), dataMessage(map[string]any{"action": tc.action}, nil))
			require.NoError(t, err)
			assert.Equal(t, sdk.TaskStateCompleted, task.Status.State)
			require.Len(t, task.Artifacts, 1)
			assert.Equal(t, sdk.DataPart{Data: map[string]any{"result": tc.result}}, task.Artifacts[0].Parts[0])
		})
	}
}

package a2a_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/a2a"
	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/policies"
	"github.com/parleyhq/parley/policy"
)

// decide plays the Participant of fipa-request (agrees to actions that
// start with "paint", refuses others, never answers "wait") and the
// Seller of quote (offers pens at 2, refuses the rest).
func decide(_ context.Context, req *decision.Request) (decision.Answer, error) {
	action, _ := req.Content["action"].(string)
	switch req.Point {
	case "requested":
		switch {
		case action == "wait":
			return decision.Answer{}, decision.ErrNoDecision
		case strings.HasPrefix(action, "paint"):
			return decision.Answer{Choice: "agree", Content: map[string]any{"action": action}}, nil
		}
		return decision.Answer{Choice: "refuse", Content: map[string]any{"reason": "I only paint"}}, nil
	case "agreed":
		return decision.Answer{Choice: "inform-result", Content: map[string]any{"result": action + ": done"}}, nil
	case "cancelling":
		return decision.Answer{Choice: "inform-done", Content: map[string]any{"done": true}}, nil
	case "asked":
		if req.Content["item"] == "pen" {
			return decision.Answer{Choice: "offer", Content: map[string]any{"price": 2}}, nil
		}
		return decision.Answer{Choice: "refuse", Content: map[string]any{"reason": "no such item"}}, nil
	}
	return decision.Answer{}, decision.ErrNoDecision
}

func loadQuote(t *testing.T) *policy.Policy {
	t.Helper()
	p, ds, err := policy.LoadFile("testdata/quote.yaml")
	require.NoError(t, err)
	require.NoError(t, ds.Err())
	return p
}

// serve starts a painter agent behind an A2A server on loopback and
// returns its URL.
func serve(t *testing.T, opts ...a2a.ServerOption) string {
	t.Helper()
	fr, err := policies.Load("fipa-request")
	require.NoError(t, err)
	srv, err := a2a.NewServer(a2a.Info{Name: "painter", Description: "paints"}, opts...)
	require.NoError(t, err)
	m, err := agent.NewManager("painter", append(srv.ManagerOptions(), agent.WithLogger(nil), agent.WithDecider(decision.Func(decide)))...)
	require.NoError(t, err)
	require.NoError(t, srv.Attach(m, fr, loadQuote(t)))
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		require.NoError(t, m.Close(context.Background()))
	})
	return hs.URL + "/"
}

func client(url string) a2aclient.Transport {
	return a2aclient.NewJSONRPCTransport(url, &http.Client{Timeout: 20 * time.Second})
}

func dataMessage(data map[string]any, meta *a2a.Meta) *sdk.Message {
	m := sdk.NewMessage(sdk.MessageRoleUser, sdk.DataPart{Data: data})
	if meta != nil {
		b, _ := json.Marshal(meta)
		var md map[string]any
		_ = json.Unmarshal(b, &md)
		m.Metadata = map[string]any{a2a.ExtensionURI: md}
	}
	return m
}

func send(t *testing.T, c a2aclient.Transport, m *sdk.Message) (*sdk.Task, error) {
	t.Helper()
	res, err := c.SendMessage(context.Background(), &sdk.MessageSendParams{Message: m})
	if err != nil {
		return nil, err
	}
	task, ok := res.(*sdk.Task)
	require.True(t, ok, "message/send returned %T, not a task", res)
	return task, nil
}

func taskMeta(t *testing.T, task *sdk.Task) a2a.TaskMeta {
	t.Helper()
	b, err := json.Marshal(task.Metadata[a2a.ExtensionURI])
	require.NoError(t, err)
	var tm a2a.TaskMeta
	require.NoError(t, json.Unmarshal(b, &tm))
	return tm
}

func types(task *sdk.Task) []string {
	var out []string
	for _, m := range task.History {
		md, _ := m.Metadata[a2a.ExtensionURI].(map[string]any)
		typ, _ := md["type"].(string)
		out = append(out, string(m.Role)+":"+typ)
	}
	return out
}

func TestServerOutcomes(t *testing.T) {
	url := serve(t)
	c := client(url)
	tests := []struct {
		name      string
		data      map[string]any
		meta      *a2a.Meta
		state     sdk.TaskState
		outcome   string
		history   []string
		artifacts int
	}{
		{name: "paint is completed", data: map[string]any{"action": "paint the fence"}, state: sdk.TaskStateCompleted, outcome: "result",
			history: []string{"user:request", "agent:agree", "agent:inform-result"}, artifacts: 1},
		{name: "other actions are rejected", data: map[string]any{"action": "mow the lawn"}, state: sdk.TaskStateRejected, outcome: "refused",
			history: []string{"user:request", "agent:refuse"}},
		{name: "a quote waits for the client", data: map[string]any{"item": "pen"}, meta: &a2a.Meta{Protocol: "quote"}, state: sdk.TaskStateInputRequired,
			history: []string{"user:ask", "agent:offer"}},
		{name: "a refused quote is rejected", data: map[string]any{"item": "moon"}, meta: &a2a.Meta{Protocol: "quote", Type: "ask"}, state: sdk.TaskStateRejected, outcome: "refused",
			history: []string{"user:ask", "agent:refuse"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			task, err := send(t, c, dataMessage(tc.data, tc.meta))
			require.NoError(t, err)
			assert.Equal(t, tc.state, task.Status.State)
			assert.Equal(t, tc.history, types(task))
			assert.Len(t, task.Artifacts, tc.artifacts)
			assert.Equal(t, tc.outcome, taskMeta(t, task).Outcome)
			got, err := c.GetTask(context.Background(), &sdk.TaskQueryParams{ID: task.ID})
			require.NoError(t, err)
			assert.Equal(t, task.Status.State, got.Status.State, "tasks/get")
			assert.Equal(t, task.ContextID, got.ContextID)
		})
	}
}

func TestServerCompletedResult(t *testing.T) {
	c := client(serve(t))
	task, err := send(t, c, dataMessage(map[string]any{"action": "paint the fence"}, nil))
	require.NoError(t, err)
	require.Len(t, task.Artifacts, 1)
	require.Len(t, task.Artifacts[0].Parts, 1)
	assert.Equal(t, sdk.DataPart{Data: map[string]any{"result": "paint the fence: done"}}, task.Artifacts[0].Parts[0])
	assert.Equal(t, "inform-result", task.Artifacts[0].Name)
	require.NotNil(t, task.Status.Message)
	assert.Equal(t, sdk.MessageRoleAgent, task.Status.Message.Role)
	assert.NotEmpty(t, task.ContextID)
	one := 1
	got, err := c.GetTask(context.Background(), &sdk.TaskQueryParams{ID: task.ID, HistoryLength: &one})
	require.NoError(t, err)
	assert.Equal(t, []string{"agent:inform-result"}, types(got))
}

func TestServerInputRequired(t *testing.T) {
	c := client(serve(t))
	task, err := send(t, c, dataMessage(map[string]any{"item": "pen"}, &a2a.Meta{Protocol: "quote"}))
	require.NoError(t, err)
	require.Equal(t, sdk.TaskStateInputRequired, task.Status.State)
	tm := taskMeta(t, task)
	assert.Equal(t, []string{"accept", "decline"}, tm.Allowed)
	assert.Equal(t, "offered", tm.State)
	assert.Equal(t, "Seller", tm.Role)
	assert.Equal(t, "Buyer", tm.ClientRole)

	next := func(data map[string]any, meta *a2a.Meta) *sdk.Message {
		m := dataMessage(data, meta)
		m.TaskID, m.ContextID = task.ID, task.ContextID
		return m
	}
	tests := []struct {
		name string
		msg  *sdk.Message
		want string
	}{
		{name: "content that fits two messages needs a type", msg: next(map[string]any{"pay": 2}, nil), want: `fits several messages ("accept", "decline")`},
		{name: "content that does not fit the form", msg: next(map[string]any{"pay": "two"}, &a2a.Meta{Type: "accept"}), want: `field "pay" of "accept" is a string, not a number (state "offered")`},
		{name: "a message the state does not allow", msg: next(map[string]any{"item": "ink"}, &a2a.Meta{Type: "ask"}), want: `message type "ask" is not allowed now; allowed: "accept", "decline"`},
		{name: "a message whose guard does not hold", msg: next(map[string]any{"pay": 1}, &a2a.Meta{Type: "accept"}), want: "the conversation refused the message: PE"},
		{name: "another protocol", msg: next(map[string]any{"pay": 2}, &a2a.Meta{Protocol: "fipa-request", Type: "accept"}), want: `is a conversation of "quote", not "fipa-request"`},
		{name: "a file part", msg: &sdk.Message{ID: "f", TaskID: task.ID, Role: sdk.MessageRoleUser, Parts: sdk.ContentParts{sdk.FilePart{File: sdk.FileURI{URI: "http://x/y"}}}}, want: "file parts are not supported"},
		{name: "text alone", msg: &sdk.Message{ID: "t", TaskID: task.ID, Role: sdk.MessageRoleUser, Parts: sdk.ContentParts{sdk.TextPart{Text: "yes"}}}, want: "holds no data part"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := send(t, c, tc.msg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			got, err := c.GetTask(context.Background(), &sdk.TaskQueryParams{ID: task.ID})
			require.NoError(t, err)
			assert.Equal(t, sdk.TaskStateInputRequired, got.Status.State, "the task is unchanged")
			assert.Equal(t, []string{"user:ask", "agent:offer"}, types(got))
		})
	}

	accept := next(map[string]any{"pay": 2}, &a2a.Meta{Type: "accept"})
	done, err := send(t, c, accept)
	require.NoError(t, err)
	assert.Equal(t, sdk.TaskStateCompleted, done.Status.State)
	assert.Equal(t, "sold", taskMeta(t, done).Outcome)
	again, err := send(t, c, accept)
	require.NoError(t, err, "a repeated messageId is answered, not refused")
	assert.Equal(t, types(done), types(again), "and applied once")

	_, err = send(t, c, next(map[string]any{"pay": 3}, &a2a.Meta{Type: "accept"}))
	require.ErrorIs(t, err, sdk.ErrInvalidRequest)
	assert.Contains(t, err.Error(), "is completed and takes no more messages")
}

func TestServerErrors(t *testing.T) {
	c := client(serve(t))
	tests := []struct {
		name string
		call func() error
		is   error
		want string
	}{
		{name: "unknown task", is: sdk.ErrTaskNotFound, call: func() error {
			m := dataMessage(map[string]any{"action": "paint"}, nil)
			m.TaskID = "task-nope"
			_, err := send(t, c, m)
			return err
		}},
		{name: "tasks/get of an unknown task", is: sdk.ErrTaskNotFound, call: func() error {
			_, err := c.GetTask(context.Background(), &sdk.TaskQueryParams{ID: "task-nope"})
			return err
		}},
		{name: "tasks/cancel of an unknown task", is: sdk.ErrTaskNotFound, call: func() error {
			_, err := c.CancelTask(context.Background(), &sdk.TaskIDParams{ID: "task-nope"})
			return err
		}},
		{name: "an unknown protocol", is: sdk.ErrInvalidParams, want: `accepts no conversation of "nope"; it accepts "fipa-request", "quote"`, call: func() error {
			_, err := send(t, c, dataMessage(map[string]any{"action": "paint"}, &a2a.Meta{Protocol: "nope"}))
			return err
		}},
		{name: "an opening that does not fit", is: sdk.ErrInvalidParams, want: `field "item" of "ask" is required but missing`, call: func() error {
			_, err := send(t, c, dataMessage(map[string]any{"what": "pen"}, &a2a.Meta{Protocol: "quote"}))
			return err
		}},
		{name: "a message the policy does not open with", is: sdk.ErrInvalidParams, want: `message type "cancel" is not allowed now; allowed: "request"`, call: func() error {
			_, err := send(t, c, dataMessage(map[string]any{}, &a2a.Meta{Type: "cancel"}))
			return err
		}},
		{name: "tasks/cancel of an ended task", is: sdk.ErrTaskNotCancelable, call: func() error {
			task, err := send(t, c, dataMessage(map[string]any{"action": "mow"}, nil))
			require.NoError(t, err)
			_, err = c.CancelTask(context.Background(), &sdk.TaskIDParams{ID: task.ID})
			return err
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			require.ErrorIs(t, err, tc.is)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestServerCancel(t *testing.T) {
	c := client(serve(t, a2a.WithLimits(a2a.Limits{MaxWait: 300 * time.Millisecond})))
	task, err := send(t, c, dataMessage(map[string]any{"action": "wait"}, nil))
	require.NoError(t, err)
	require.Equal(t, sdk.TaskStateWorking, task.Status.State, "the agent never answers")
	assert.Equal(t, []string{"cancel"}, taskMeta(t, task).Allowed)

	plain := dataMessage(map[string]any{"more": true}, nil)
	plain.TaskID = task.ID
	_, err = send(t, c, plain)
	require.ErrorIs(t, err, sdk.ErrInvalidParams)
	assert.Contains(t, err.Error(), "taken only when the task is input-required")

	got, err := c.CancelTask(context.Background(), &sdk.TaskIDParams{ID: task.ID})
	require.NoError(t, err)
	assert.Equal(t, sdk.TaskStateCanceled, got.Status.State)
	assert.Equal(t, []string{"user:request", "user:cancel"}, types(got)[:2])
	_, err = c.CancelTask(context.Background(), &sdk.TaskIDParams{ID: task.ID})
	require.ErrorIs(t, err, sdk.ErrTaskNotCancelable)
}

func TestServerRepeatedOpening(t *testing.T) {
	c := client(serve(t))
	m := dataMessage(map[string]any{"action": "paint the door"}, nil)
	first, err := send(t, c, m)
	require.NoError(t, err)
	second, err := send(t, c, m)
	require.NoError(t, err)
	assert.Equal(t, first.ID, second.ID, "the same message opens one task")
	assert.Equal(t, types(first), types(second))
}

func TestServerLimits(t *testing.T) {
	tests := []struct {
		name   string
		limits a2a.Limits
		run    func(t *testing.T, url string)
	}{
		{name: "live tasks per client", limits: a2a.Limits{MaxTasksPerClient: 1, MaxWait: 100 * time.Millisecond}, run: func(t *testing.T, url string) {
			c := client(url)
			_, err := send(t, c, dataMessage(map[string]any{"action": "wait"}, nil))
			require.NoError(t, err)
			_, err = send(t, c, dataMessage(map[string]any{"action": "wait"}, nil))
			require.ErrorIs(t, err, sdk.ErrServerError)
			assert.Contains(t, err.Error(), "the client has 1 live tasks (the limit)")
		}},
		{name: "tasks held", limits: a2a.Limits{MaxTasks: 1}, run: func(t *testing.T, url string) {
			c := client(url)
			_, err := send(t, c, dataMessage(map[string]any{"action": "mow"}, nil))
			require.NoError(t, err)
			_, err = send(t, c, dataMessage(map[string]any{"action": "mow"}, nil))
			require.ErrorIs(t, err, sdk.ErrServerError)
			assert.Contains(t, err.Error(), "the agent holds 1 tasks (the limit)")
		}},
		{name: "request size", limits: a2a.Limits{MaxRequestBytes: 512}, run: func(t *testing.T, url string) {
			_, err := send(t, client(url), dataMessage(map[string]any{"action": "paint " + strings.Repeat("x", 1024)}, nil))
			require.ErrorIs(t, err, sdk.ErrParseError)
		}},
		{name: "messages per task", limits: a2a.Limits{MaxMessagesPerTask: 1}, run: func(t *testing.T, url string) {
			c := client(url)
			task, err := send(t, c, dataMessage(map[string]any{"item": "pen"}, &a2a.Meta{Protocol: "quote"}))
			require.NoError(t, err)
			m := dataMessage(map[string]any{"pay": 2}, &a2a.Meta{Type: "accept"})
			m.TaskID = task.ID
			_, err = send(t, c, m)
			require.ErrorIs(t, err, sdk.ErrInvalidRequest)
			assert.Contains(t, err.Error(), "has taken 1 messages (the limit)")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, serve(t, a2a.WithLimits(tc.limits)))
		})
	}
}

func TestServerAgentCard(t *testing.T) {
	url := serve(t)
	resp, err := http.Get(url + ".well-known/agent-card.json")
	require.NoError(t, err)
	defer resp.Body.Close()
	var card sdk.AgentCard
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&card))
	assert.Equal(t, "painter", card.Name)
	assert.Equal(t, url, card.URL, "without Info.URL, the card gives the host asked")
	assert.True(t, card.Capabilities.Streaming)
	assert.Equal(t, a2a.ProtocolVersion, card.ProtocolVersion)
	require.Len(t, card.Skills, 2)
	assert.Equal(t, "fipa-request/Participant", card.Skills[0].ID)
	assert.Equal(t, "quote/Seller", card.Skills[1].ID)
	assert.Contains(t, card.Skills[0].Description, "the client plays Initiator and opens with request")
	require.Len(t, card.Capabilities.Extensions, 1)
	assert.Equal(t, a2a.ExtensionURI, card.Capabilities.Extensions[0].URI)
}

func TestServerTaskOfAnotherClient(t *testing.T) {
	fr, err := policies.Load("fipa-request")
	require.NoError(t, err)
	srv, err := a2a.NewServer(a2a.Info{}, a2a.WithClientID(func(r *http.Request) string { return r.Header.Get("X-Client") }))
	require.NoError(t, err)
	m, err := agent.NewManager("painter", append(srv.ManagerOptions(), agent.WithLogger(nil), agent.WithDecider(decision.Func(decide)))...)
	require.NoError(t, err)
	require.NoError(t, srv.Attach(m, fr))
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer func() { require.NoError(t, m.Close(context.Background())) }()
	post := func(client, body string) map[string]any {
		req, err := http.NewRequest(http.MethodPost, hs.URL, bytes.NewBufferString(body))
		require.NoError(t, err)
		req.Header.Set("X-Client", client)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var out map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		return out
	}
	res := post("alice", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"data","data":{"action":"paint it"}}]}}}`)
	task, _ := res["result"].(map[string]any)
	require.NotNil(t, task, "%v", res)
	id, _ := task["id"].(string)
	res = post("bob", `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"id":"`+id+`"}}`)
	e, _ := res["error"].(map[string]any)
	require.NotNil(t, e, "bob must not see alice's task: %v", res)
	assert.Equal(t, float64(-32001), e["code"])
}

func TestNewServerErrors(t *testing.T) {
	tests := []struct {
		name string
		opts []a2a.ServerOption
		want string
	}{
		{name: "a negative limit", opts: []a2a.ServerOption{a2a.WithLimits(a2a.Limits{MaxWait: -time.Second})}, want: "a2a: WithLimits: MaxWait is -1s, not positive"},
		{name: "a nil client id", opts: []a2a.ServerOption{a2a.WithClientID(nil)}, want: "a2a: WithClientID: nil function"},
		{name: "a nil forward", opts: []a2a.ServerOption{a2a.WithForward(nil)}, want: "a2a: WithForward: nil transport"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := a2a.NewServer(a2a.Info{}, tc.opts...)
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
		})
	}
}

func TestAttachErrors(t *testing.T) {
	fr, err := policies.Load("fipa-request")
	require.NoError(t, err)
	tests := []struct {
		name string
		run  func(srv *a2a.Server, m *agent.Manager) error
		want string
	}{
		{name: "no policy", run: func(srv *a2a.Server, m *agent.Manager) error { return srv.Attach(m) }, want: "a2a: Attach: no policy"},
		{name: "twice", run: func(srv *a2a.Server, m *agent.Manager) error {
			require.NoError(t, srv.Attach(m, fr))
			return srv.Attach(m, fr)
		}, want: "a2a: Attach: the server is attached already"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := a2a.NewServer(a2a.Info{})
			require.NoError(t, err)
			m, err := agent.NewManager("painter", append(srv.ManagerOptions(), agent.WithLogger(nil))...)
			require.NoError(t, err)
			defer func() { require.NoError(t, m.Close(context.Background())) }()
			assert.EqualError(t, tc.run(srv, m), tc.want)
		})
	}
}

func TestServerBeforeAttach(t *testing.T) {
	srv, err := a2a.NewServer(a2a.Info{})
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/.well-known/agent-card.json", nil))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Nil(t, srv.Card())
}

// events collects a stream: the agent messages' types, in order (those
// of the first task's history, then of the status updates), and the
// last event's state and finality.
func events(t *testing.T, seq func(func(sdk.Event, error) bool)) (msgs []string, state sdk.TaskState, final bool, artifacts int, err error) {
	t.Helper()
	for ev, e := range seq {
		if e != nil {
			return msgs, state, final, artifacts, e
		}
		switch ev := ev.(type) {
		case *sdk.Task:
			for _, m := range ev.History {
				if m.Role == sdk.MessageRoleAgent {
					msgs = append(msgs, metaTypeOf(m))
				}
			}
			state, final, artifacts = ev.Status.State, false, artifacts+len(ev.Artifacts)
		case *sdk.TaskStatusUpdateEvent:
			if ev.Status.Message != nil {
				msgs = append(msgs, metaTypeOf(ev.Status.Message))
			}
			state, final = ev.Status.State, ev.Final
		case *sdk.TaskArtifactUpdateEvent:
			artifacts++
		}
	}
	return msgs, state, final, artifacts, nil
}

func metaTypeOf(m *sdk.Message) string {
	md, _ := m.Metadata[a2a.ExtensionURI].(map[string]any)
	typ, _ := md["type"].(string)
	return typ
}

func TestServerStream(t *testing.T) {
	c := client(serve(t))
	ctx := context.Background()
	tests := []struct {
		name      string
		data      map[string]any
		meta      *a2a.Meta
		msgs      []string
		state     sdk.TaskState
		artifacts int
	}{
		{name: "completed", data: map[string]any{"action": "paint the gate"}, msgs: []string{"agree", "inform-result"}, state: sdk.TaskStateCompleted, artifacts: 1},
		{name: "rejected", data: map[string]any{"action": "mow"}, msgs: []string{"refuse"}, state: sdk.TaskStateRejected},
		{name: "input-required", data: map[string]any{"item": "pen"}, meta: &a2a.Meta{Protocol: "quote"}, msgs: []string{"offer"}, state: sdk.TaskStateInputRequired},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msgs, state, final, artifacts, err := events(t, c.SendStreamingMessage(ctx, &sdk.MessageSendParams{Message: dataMessage(tc.data, tc.meta)}))
			require.NoError(t, err)
			assert.Equal(t, tc.msgs, msgs)
			assert.Equal(t, tc.state, state)
			assert.True(t, final, "the stream ends with a final status update")
			assert.Equal(t, tc.artifacts, artifacts)
		})
	}
	t.Run("resubscribe", func(t *testing.T) {
		task, err := send(t, c, dataMessage(map[string]any{"action": "paint the roof"}, nil))
		require.NoError(t, err)
		msgs, state, final, _, err := events(t, c.ResubscribeToTask(ctx, &sdk.TaskIDParams{ID: task.ID}))
		require.NoError(t, err)
		assert.Equal(t, []string{"agree", "inform-result"}, msgs)
		assert.Equal(t, sdk.TaskStateCompleted, state)
		assert.True(t, final)
	})
	t.Run("resubscribe to an unknown task", func(t *testing.T) {
		_, _, _, _, err := events(t, c.ResubscribeToTask(ctx, &sdk.TaskIDParams{ID: "task-nope"}))
		require.ErrorIs(t, err, sdk.ErrTaskNotFound)
	})
}

func TestServerStreamLimit(t *testing.T) {
	c := client(serve(t, a2a.WithLimits(a2a.Limits{MaxStreams: 1, MaxWait: 100 * time.Millisecond})))
	task, err := send(t, c, dataMessage(map[string]any{"action": "wait"}, nil))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	open := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range c.ResubscribeToTask(ctx, &sdk.TaskIDParams{ID: task.ID}) {
			close(open) // the first event: the stream is open, and stays open
			<-ctx.Done()
			return
		}
	}()
	<-open
	_, _, _, _, err = events(t, c.ResubscribeToTask(context.Background(), &sdk.TaskIDParams{ID: task.ID}))
	require.ErrorIs(t, err, sdk.ErrServerError)
	assert.Contains(t, err.Error(), "1 streams are open (the limit)")
	cancel()
	<-done
}

func TestServerWithoutForwardAborts(t *testing.T) {
	fr, err := policies.Load("fipa-request")
	require.NoError(t, err)
	srv, err := a2a.NewServer(a2a.Info{})
	require.NoError(t, err)
	m, err := agent.NewManager("painter", append(srv.ManagerOptions(), agent.WithLogger(nil), agent.WithDecider(decision.Func(initiator)))...)
	require.NoError(t, err)
	defer func() { require.NoError(t, m.Close(context.Background())) }()
	require.NoError(t, srv.Attach(m, fr))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conv, err := m.Start(ctx, agent.StartRequest{Policy: "fipa-request", Role: "Initiator", Peers: map[string][]string{"Participant": {"bob"}}, Data: map[string]any{"action": "paint"}})
	require.NoError(t, err)
	_, err = m.Wait(ctx, conv)
	require.ErrorIs(t, err, agent.ErrAborted)
	assert.Contains(t, err.Error(), `"bob" is not the client of a task this server holds`)
}

package engine_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policies"
)

func TestProcessMisuse(t *testing.T) {
	pr := program(t, "fipa-request", "Initiator")
	var q engine.Queue
	h, err := pr.NewHandler(convID, "alice", engine.WithPeers("Participant", "bob"))
	require.NoError(t, err)
	assert.ErrorIs(t, h.Process(&engine.TimerEvent{}, &q), engine.ErrNotStarted)
	require.NoError(t, h.Start(t0, &q))
	assert.EqualError(t, h.Start(t0, &q), "engine: handler already started")
	tests := []struct {
		name string
		in   engine.Event
		want string
	}{
		{"nil event", nil, "engine: nil event"},
		{"message event without a message", &engine.MessageEvent{At: t0}, "engine: MessageEvent without a Message"},
		{"output event", &engine.ProtocolErrorEvent{}, "engine: *engine.ProtocolErrorEvent is an output event, not an input"},
		{"load event", &engine.LoadCPEvent{}, "engine: *engine.LoadCPEvent is an output event, not an input"},
		{"commitment event", &engine.CommitmentEvent{}, "engine: *engine.CommitmentEvent is an output event, not an input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q.Reset()
			assert.EqualError(t, h.Process(tt.in, &q), tt.want)
			assert.Zero(t, q.Len())
		})
	}

	t.Run("sending to a role no agent plays", func(t *testing.T) {
		h, err := pr.NewHandler(convID, "alice")
		require.NoError(t, err)
		q.Reset()
		require.NoError(t, h.Start(t0, &q))
		ticket := q.Events()[0].(*engine.DecisionEvent).Ticket
		q.Reset()
		err = h.Process(&engine.DecisionEvent{At: t0, Ticket: ticket, Answer: decisionChoice("request")}, &q)
		assert.EqualError(t, err, `engine: no agent plays Participant in conversation "c1": bind one with WithPeers`)
		assert.Zero(t, q.Len())
	})
}

func TestWithPeers(t *testing.T) {
	request := program(t, "fipa-request", "Initiator")
	cn := program(t, "fipa-contract-net", "Initiator")
	tests := []struct {
		name string
		prog *engine.Program
		opt  engine.HandlerOption
		want string
	}{
		{"unknown role", request, engine.WithPeers("Bystander", "eve"), `engine: WithPeers: policy "fipa-request" has no role "Bystander"`},
		{"two agents for a role that is not many", request, engine.WithPeers("Participant", "bob", "carol"), `engine: WithPeers: role "Participant" is not many, so one agent plays it, not 2`},
		{"no agent for a role that is not many", request, engine.WithPeers("Participant"), `engine: WithPeers: role "Participant" is not many, so one agent plays it, not 0`},
		{"many agents for the many role", cn, engine.WithPeers("Participant", "bob", "carol", "bob"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := tt.prog.NewHandler(convID, "alice", tt.opt)
			if tt.want != "" {
				assert.EqualError(t, err, tt.want)
				assert.Nil(t, h)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, []string{"bob", "carol"}, h.Sessions(), "a peer named twice has one session")
		})
	}
}

func TestHandlerAccessors(t *testing.T) {
	request := program(t, "fipa-request", "Initiator")
	cn := program(t, "fipa-contract-net", "Initiator")
	h, err := request.NewHandler("c9", "alice", engine.WithPeers("Participant", "bob"))
	require.NoError(t, err)
	assert.Equal(t, "c9", h.ConversationID())
	assert.Same(t, request, h.Program())
	assert.Equal(t, "", h.State(""), "not started")
	var q engine.Queue
	require.NoError(t, h.Start(t0, &q))
	assert.Equal(t, "start", h.State(""))
	assert.Equal(t, "", h.State("bob"), "one session: no session per peer")
	assert.Equal(t, "", h.Outcome(""))
	assert.Nil(t, h.Sessions())
	assert.False(t, h.Done())

	assert.Equal(t, "fipa-request", request.Policy().Name)
	assert.Equal(t, "Initiator", request.Role())
	assert.Equal(t, "", request.ManyRole())
	assert.Equal(t, []string{"Participant"}, request.Peers())
	assert.Equal(t, "start", request.States()[0])
	assert.True(t, request.HasState("cancelling"))
	assert.False(t, request.HasState("limbo"))
	assert.Equal(t, "Participant", cn.ManyRole())
	assert.Equal(t, "", program(t, "fipa-contract-net", "Participant").ManyRole())

	c, err := cn.NewHandler(convID, "alice", engine.WithPeers("Participant", "bob", "carol"))
	require.NoError(t, err)
	require.NoError(t, c.Start(t0, &q))
	assert.Equal(t, []string{"bob", "carol"}, c.Sessions())
	assert.Equal(t, "start", c.State("bob"))
	assert.Equal(t, "", c.State(""), "many sessions: name one")
	assert.Equal(t, "", c.State("dave"))
}

// A monitor that overhears the conversation feeds what its own agent
// sent as MessageEvents with Sent set: the handler follows without
// asking for decisions of its own.
func TestMonitorSentMessages(t *testing.T) {
	c := newConv(t, "fipa-request", []agent{{"alice", "Initiator", []engine.HandlerOption{engine.WithMode(engine.Observe)}}})
	request := forms.Message{Performative: "request", Sender: "alice", Receivers: []string{"bob"}, ConversationID: convID, ReplyWith: "a1"}
	c.run(t, []step{
		{do: start(), want: `
			alice: decide start [request]`},
		{do: sent("alice", request), want: `
			alice: timer set reply +30s
			alice: decide requested [cancel]`},
		{at: time.Second, do: sent("alice", with(request, func(m *forms.Message) { m.Performative = "agree" })), want: `
			alice: error PE002 [requested]: "alice" sent agree, which only Participant sends here`},
		{at: time.Second, do: recv("alice", with(msg("agree", "bob", "alice", nil), func(m *forms.Message) { m.InReplyTo = "a1" })), want: `
			alice: commitment perform created bob->alice (agree)
			alice: commitment perform detached bob->alice (agree)
			alice: timer set result commitment=perform +5m1s
			alice: timer cancel reply
			alice: timer set result +5m1s
			alice: decide agreed [cancel]`},
		{at: 2 * time.Second, do: sent("alice", with(request, func(m *forms.Message) { m.Performative = "agree" })), want: `
			alice: error PE001 [agreed]: unexpected agree sent by "alice" in state "agreed": it may send cancel`},
		{at: 2 * time.Second, do: sent("alice", with(request, func(m *forms.Message) { m.ConversationID = "c2" })), want: `
			alice: error PE011: message for conversation "c2" reached conversation "c1"`},
		{at: 3 * time.Second, do: sent("alice", with(request, func(m *forms.Message) { m.Performative = "cancel" })), want: `
			alice: timer cancel result commitment=perform
			alice: commitment perform released bob->alice (cancel)
			alice: timer cancel result
			alice: timer set cancel-reply +33s`},
		{at: 4 * time.Second, do: sent("alice", with(request, func(m *forms.Message) { m.Performative = "cancel" })), want: `
			alice: error PE001 [cancelling]: unexpected cancel sent by "alice" in state "cancelling": it may send nothing here`},
	})
}

// sent feeds agent's handler a message its own agent sent.
func sent(name string, m forms.Message) action {
	return func(c *conv) { c.process(name, &engine.MessageEvent{At: c.now, Message: &m, Sent: true}) }
}

// A policy whose first state runs a child policy: the handler asks for
// the child with LoadCPEvent and continues when the child's end comes
// back as a CPDoneEvent with the same session and epoch.
func TestChildPolicy(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
	}{
		{name: "the child accepts", steps: []step{
			{do: start(), want: `
				alice: load conversation-setup as Caller
				bob: load conversation-setup as Responder`},
			{at: time.Second, do: childEnds("alice", "accepted", 0), want: `
				alice: decide ready [request]`},
			{at: time.Second, do: childEnds("bob", "accepted", 0), want: ``},
			{at: 2 * time.Second, do: say("alice", "request", nil), want: `
				alice: send request alice->bob rw=c1/alice#1
				alice: timer set reply +32s
				bob: timer set reply +32s
				bob: decide requested [inform-done failure]`},
		}},
		{name: "the child declines", steps: []step{
			{do: start(), want: `
				alice: load conversation-setup as Caller
				bob: load conversation-setup as Responder`},
			{at: time.Second, do: childEnds("alice", "declined", 0), want: `
				alice: done declined`},
			{at: 2 * time.Second, do: childEnds("alice", "accepted", 0), want: ``},
		}},
		{name: "an outcome the state does not handle", steps: []step{
			{do: start(), want: `
				alice: load conversation-setup as Caller
				bob: load conversation-setup as Responder`},
			{at: time.Second, do: childEnds("alice", "exploded", 0), want: `
				alice: error PE001 [start]: child policy "conversation-setup" ended with outcome "exploded", which state "start" does not handle`},
		}},
		{name: "a stale child end is ignored", steps: []step{
			{do: start(), want: `
				alice: load conversation-setup as Caller
				bob: load conversation-setup as Responder`},
			{at: time.Second, do: childEnds("alice", "accepted", 1), want: ``},
			{at: time.Second, do: childEnds("alice", "accepted", 0), want: `
				alice: decide ready [request]`},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			progs := map[string]*engine.Program{
				"alice": fuzzProgram(t, "setup-then-request", "Initiator"),
				"bob":   fuzzProgram(t, "setup-then-request", "Participant"),
			}
			c := newConvOf(t, progs,
				agent{"alice", "Initiator", []engine.HandlerOption{engine.WithPeers("Participant", "bob")}},
				agent{"bob", "Participant", []engine.HandlerOption{engine.WithPeers("Initiator", "alice")}})
			c.run(t, tt.steps)
		})
	}
}

// childEnds feeds agent's handler the end of the child it loaded last,
// with the epoch skewed by skew (non-zero: a stale end).
func childEnds(name, outcome string, skew uint64) action {
	return func(c *conv) {
		c.t.Helper()
		l, ok := c.loads[name]
		require.True(c.t, ok, "%s loaded no child", name)
		c.process(name, &engine.CPDoneEvent{At: c.now, Policy: l.Policy, Outcome: outcome, Session: l.Session, Epoch: l.Epoch + skew})
	}
}

func TestCompile(t *testing.T) {
	p, err := policies.Load("fipa-request")
	require.NoError(t, err)

	t.Run("unknown role", func(t *testing.T) {
		pr, ds := engine.Compile(p, "Bystander")
		assert.Nil(t, pr)
		require.True(t, ds.HasErrors())
		assert.Contains(t, ds.Error(), `policy "fipa-request" has no role "Bystander" (roles: [Initiator Participant])`)
	})

	t.Run("WithTimer overrides a deadline's default and a fixed timer", func(t *testing.T) {
		opts := []engine.CompileOption{engine.WithTimer("reply", 5*time.Second), engine.WithTimer("result", time.Minute)}
		ini, ds := engine.Compile(p, "Initiator", opts...)
		require.NotNil(t, ini, "%v", ds)
		par, ds := engine.Compile(p, "Participant", opts...)
		require.NotNil(t, par, "%v", ds)
		c := newConvOf(t, map[string]*engine.Program{"alice": ini, "bob": par},
			agent{"alice", "Initiator", []engine.HandlerOption{engine.WithPeers("Participant", "bob")}},
			agent{"bob", "Participant", nil})
		c.run(t, []step{
			{do: start(), want: `
				alice: decide start [request]`},
			{do: say("alice", "request", nil), want: `
				alice: send request alice->bob rw=c1/alice#1
				alice: timer set reply +5s
				alice: decide requested [cancel]
				bob: timer set reply +5s
				bob: decide requested [agree refuse not-understood inform-done inform-result failure]`},
			{at: time.Second, do: say("bob", "agree", nil), want: `
				bob: send agree bob->alice rw=c1/bob#1 irt=c1/alice#1
				bob: commitment perform created bob->alice (agree)
				bob: commitment perform detached bob->alice (agree)
				bob: timer set result commitment=perform +1m1s
				bob: timer cancel reply
				bob: timer set result +1m1s
				bob: decide agreed [inform-done inform-result failure]
				alice: commitment perform created bob->alice (agree)
				alice: commitment perform detached bob->alice (agree)
				alice: timer set result commitment=perform +1m1s
				alice: timer cancel reply
				alice: timer set result +1m1s
				alice: decide agreed [cancel]`},
		})
	})
}

func TestWithContent(t *testing.T) {
	pr := program(t, "fipa-request", "Initiator")
	h, err := pr.NewHandler(convID, "alice", engine.WithPeers("Participant", "bob"), engine.WithContent(map[string]any{"task": "paint"}))
	require.NoError(t, err)
	var q engine.Queue
	require.NoError(t, h.Start(t0, &q))
	require.Equal(t, 1, q.Len())
	assert.Equal(t, `decide start [request] {"task":"paint"}`, render(q.Events()[0]))
}

// WithContent gives every session of a many role the data, whether it
// comes before or after the WithPeers that makes them, as it does the one
// session of another role.
func TestWithContentForEverySessionOfAManyRole(t *testing.T) {
	cn := program(t, "fipa-contract-net", "Initiator")
	data := map[string]any{"task": "paint"}
	peers, content := engine.WithPeers("Participant", "bob", "carol"), engine.WithContent(data)
	tests := []struct {
		name string
		opts []engine.HandlerOption
	}{
		{"content after the peers", []engine.HandlerOption{peers, content}},
		{"content before the peers", []engine.HandlerOption{content, peers}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := cn.NewHandler(convID, "alice", tt.opts...)
			require.NoError(t, err)
			var q engine.Queue
			require.NoError(t, h.Start(t0, &q))
			require.Equal(t, 1, q.Len())
			d, ok := q.Events()[0].(*engine.DecisionEvent)
			require.True(t, ok, "%T", q.Events()[0])
			assert.Equal(t, data, d.Request.Content)
		})
	}
}

// Of options that fail, NewHandler returns the last one's error, having
// run every option.
func TestNewHandlerReturnsTheLastOptionError(t *testing.T) {
	request := program(t, "fipa-request", "Initiator")
	h, err := request.NewHandler(convID, "alice",
		engine.WithPeers("Bystander", "eve"),
		engine.WithPeers("Participant", "bob"),
		engine.WithPeers("Participant", "bob", "carol"),
		engine.WithContent(map[string]any{"task": "paint"}))
	assert.EqualError(t, err, `engine: WithPeers: role "Participant" is not many, so one agent plays it, not 2`)
	assert.Nil(t, h)
}

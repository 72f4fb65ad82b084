package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/policies"
)

// script is decision logic that answers by decision point and has
// nothing to say (decision.ErrNoDecision) anywhere else.
type script map[string]decision.Answer

func (s script) Decide(_ context.Context, req *decision.Request) (decision.Answer, error) {
	if a, ok := s[req.Point]; ok {
		return a, nil
	}
	return decision.Answer{}, decision.ErrNoDecision
}

// driven is a driver with a record of what it did.
type driven struct {
	*engine.Driver
	// delivered are the messages handlers received: "performative
	// sender->receiver".
	delivered []string
	// fired are the timers that fired: "agent name +offset".
	fired []string
	// set are the latest TimerSets by "agent name[/session]".
	set map[string]engine.TimerEvent
	// outcomes are the CPDoneEvents' outcomes by agent, and ended their
	// times.
	outcomes map[string]string
	ended    map[string]time.Time
	// steps renders every step.
	steps []string
}

// drive hosts agents (handlers of shipped policy policyName in the
// harness's conversation) on a new driver starting at t0; deciders gives
// each agent's scripted decisions.
func drive(t *testing.T, policyName string, agents []agent, deciders map[string]script, opts ...engine.DriverOption) *driven {
	t.Helper()
	r := &driven{outcomes: map[string]string{}, set: map[string]engine.TimerEvent{}}
	opts = append(opts, engine.WithObserver(r.observe))
	for name, s := range deciders {
		opts = append(opts, engine.WithAgentDecider(name, s))
	}
	r.Driver = engine.NewDriver(t0, opts...)
	for _, a := range agents {
		h, err := program(t, policyName, a.role).NewHandler(convID, a.name, a.opts...)
		require.NoError(t, err)
		require.NoError(t, r.Add(h))
	}
	return r
}

func (r *driven) observe(s engine.Step) {
	r.steps = append(r.steps, fmt.Sprintf("%s %s/%s %s %s", s.Kind, s.Agent, s.Conversation, s.To, render(s.Event)))
	switch e := s.Event.(type) {
	case *engine.MessageEvent:
		if s.Kind == engine.StepInput {
			r.delivered = append(r.delivered, fmt.Sprintf("%s %s->%s", e.Message.Performative, e.Message.Sender, s.Agent))
		}
	case *engine.TimerEvent:
		switch {
		case s.Kind == engine.StepInput:
			r.fired = append(r.fired, fmt.Sprintf("%s %s %s", s.Agent, timerKeyOf(e), offset(e.At)))
		case e.Op == engine.TimerSet:
			r.set[s.Agent+" "+timerKey(e.Name, e.Session)] = *e
		}
	case *engine.CPDoneEvent:
		if r.ended == nil {
			r.ended = map[string]time.Time{}
		}
		r.outcomes[s.Agent] = e.Outcome
		r.ended[s.Agent] = e.At
	}
}

// startAll starts every hosted handler, in the order added.
func (r *driven) startAll(t *testing.T) {
	t.Helper()
	for k := range r.Handlers() {
		require.NoError(t, r.Start(k.Agent, k.Conversation))
	}
}

func TestDriverConversations(t *testing.T) {
	tests := []struct {
		name      string
		policy    string
		deciders  map[string]script
		advanceTo time.Duration // after settling, move the clock this far from t0
		delivered []string
		fired     []string
		outcomes  map[string]string
	}{
		{
			name:   "request agreed then done with a result",
			policy: "fipa-request",
			deciders: map[string]script{
				"alice": {"start": {Choice: "request", Content: content{"action": "paint"}}},
				"bob":   {"requested": {Choice: "agree"}, "agreed": {Choice: "inform-result", Content: content{"result": "painted"}}},
			},
			delivered: []string{"request alice->bob", "agree bob->alice", "inform bob->alice"},
			outcomes:  map[string]string{"alice": "result", "bob": "result"},
		},
		{
			name:   "request refused",
			policy: "fipa-request",
			deciders: map[string]script{
				"alice": {"start": {Choice: "request", Content: content{"action": "paint"}}},
				"bob":   {"requested": {Choice: "refuse", Content: content{"reason": "busy"}}},
			},
			delivered: []string{"request alice->bob", "refuse bob->alice"},
			outcomes:  map[string]string{"alice": "refused", "bob": "refused"},
		},
		{
			name:   "request unanswered times out",
			policy: "fipa-request",
			deciders: map[string]script{
				"alice": {"start": {Choice: "request", Content: content{"action": "paint"}}},
			},
			advanceTo: 31 * time.Second,
			delivered: []string{"request alice->bob"},
			fired:     []string{"alice reply +30s", "bob reply +30s"},
			outcomes:  map[string]string{"alice": "timeout", "bob": "timeout"},
		},
		{
			name:   "request agreed, result never comes",
			policy: "fipa-request",
			deciders: map[string]script{
				"alice": {"start": {Choice: "request", Content: content{"action": "paint"}}},
				"bob":   {"requested": {Choice: "agree"}},
			},
			advanceTo: 6 * time.Minute,
			delivered: []string{"request alice->bob", "agree bob->alice"},
			// Equal deadlines fire in the order set: bob set his when he
			// agreed, alice hers when the agree reached her.
			fired:    []string{"bob result commitment=perform +5m0s", "bob result +5m0s", "alice result commitment=perform +5m0s", "alice result +5m0s"},
			outcomes: map[string]string{"alice": "timeout", "bob": "timeout"},
		},
		{
			name:   "query-if answered",
			policy: "fipa-query",
			deciders: map[string]script{
				"alice": {"start": {Choice: "query-if", Content: content{"proposition": "the fence is painted"}}},
				"bob":   {"if-queried": {Choice: "inform-tf", Content: content{"holds": true}}},
			},
			delivered: []string{"query-if alice->bob", "inform bob->alice"},
			outcomes:  map[string]string{"alice": "answered", "bob": "answered"},
		},
		{
			name:   "query-ref agreed then answered",
			policy: "fipa-query",
			deciders: map[string]script{
				"alice": {"start": {Choice: "query-ref", Content: content{"expression": "painted fences"}}},
				"bob":   {"ref-queried": {Choice: "agree"}, "ref-agreed": {Choice: "inform-result", Content: content{"result": []any{"north"}}}},
			},
			delivered: []string{"query-ref alice->bob", "agree bob->alice", "inform bob->alice"},
			outcomes:  map[string]string{"alice": "answered", "bob": "answered"},
		},
		{
			name:   "contract net: one award, one rejection, one refusal",
			policy: "fipa-contract-net",
			deciders: map[string]script{
				"alice": {
					"start": {Choice: "cfp", Content: content{"task": "deliver"}},
					"proposed": {Sessions: map[string]decision.SessionAnswer{
						"bob":   {Choice: "reject-proposal", Content: content{"reason": "too dear"}},
						"carol": {Choice: "accept-proposal"},
					}},
				},
				"bob":   {"solicited": {Choice: "propose", Content: content{"price": 10}}},
				"carol": {"solicited": {Choice: "propose", Content: content{"price": 8}}, "awarded": {Choice: "inform-done", Content: content{"done": true}}},
				"dave":  {"solicited": {Choice: "refuse", Content: content{"reason": "busy"}}},
			},
			delivered: []string{
				"cfp alice->bob", "cfp alice->carol", "cfp alice->dave",
				"propose bob->alice", "propose carol->alice", "refuse dave->alice",
				"reject-proposal alice->bob", "accept-proposal alice->carol", "inform carol->alice",
			},
			outcomes: map[string]string{"alice": "done=1,refused=1,rejected=1", "bob": "rejected", "carol": "done", "dave": "refused"},
		},
		{
			name:   "contract net: no proposal in time",
			policy: "fipa-contract-net",
			deciders: map[string]script{
				"alice": {"start": {Choice: "cfp", Content: content{"task": "deliver"}, ReplyBy: t0.Add(time.Minute)}},
				"bob":   {"solicited": {Choice: "refuse"}},
			},
			advanceTo: 2 * time.Minute,
			delivered: []string{"cfp alice->bob", "cfp alice->carol", "cfp alice->dave", "refuse bob->alice"},
			fired:     []string{"alice proposals/carol +1m0s", "alice proposals/dave +1m0s", "carol proposals +1m0s", "dave proposals +1m0s"},
			outcomes:  map[string]string{"alice": "no-bid=2,refused=1", "bob": "refused", "carol": "no-bid", "dave": "no-bid"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := drive(t, tc.policy, cast(tc.policy), tc.deciders)
			r.startAll(t)
			require.NoError(t, r.Settle())
			if tc.advanceTo > 0 {
				require.NoError(t, r.AdvanceTo(t0.Add(tc.advanceTo)))
				assert.Equal(t, t0.Add(tc.advanceTo), r.Now())
			}
			assert.Equal(t, tc.delivered, r.delivered, "messages delivered")
			assert.Equal(t, tc.fired, r.fired, "timers fired")
			assert.Equal(t, tc.outcomes, r.outcomes, "outcomes")
			for k, h := range r.Handlers() {
				assert.True(t, h.Done(), "%s is done", k.Agent)
			}
			_, ok := r.NextDeadline()
			assert.False(t, ok, "no timer is left once the handlers ended")
			assert.Empty(t, r.Pending(), "no decision is left pending")
			assert.Zero(t, r.InFlight())
			assert.Empty(t, r.TakeUnrouted())
		})
	}
}

// A Contract Net with many participants: the initiator keeps more timers
// than a host lists (they go in a map). The even ones propose, the odd
// ones never answer and time out; the first proposal wins.
func TestDriverContractNetManyParticipants(t *testing.T) {
	const n = 20
	var peers []string
	for i := range n {
		peers = append(peers, fmt.Sprintf("p%02d", i))
	}
	agents := []agent{{"alice", "Initiator", []engine.HandlerOption{engine.WithPeers("Participant", peers...)}}}
	award := map[string]decision.SessionAnswer{}
	deciders := map[string]script{}
	for i, p := range peers {
		agents = append(agents, agent{name: p, role: "Participant"})
		if i%2 == 1 {
			continue
		}
		deciders[p] = script{"solicited": {Choice: "propose", Content: content{"price": i}}, "awarded": {Choice: "inform-done"}}
		award[p] = decision.SessionAnswer{Choice: "reject-proposal"}
	}
	award["p00"] = decision.SessionAnswer{Choice: "accept-proposal"}
	deciders["alice"] = script{"start": {Choice: "cfp", Content: content{"task": "deliver"}, ReplyBy: t0.Add(time.Minute)}, "proposed": {Sessions: award}}
	r := drive(t, "fipa-contract-net", agents, deciders)
	r.startAll(t)
	require.NoError(t, r.Settle())
	assert.Equal(t, "solicited", r.Handler("alice", convID).State("p01"))
	require.NoError(t, r.AdvanceTo(t0.Add(time.Hour)))
	assert.Len(t, r.fired, n, "the proposals timers of the odd ones, at alice and at each")
	assert.Equal(t, "done=1,no-bid=10,rejected=9", r.outcomes["alice"])
	for i, p := range peers {
		want := map[bool]string{true: "no-bid", false: "rejected"}[i%2 == 1]
		if p == "p00" {
			want = "done"
		}
		assert.Equal(t, want, r.outcomes[p], p)
	}
	_, ok := r.NextDeadline()
	assert.False(t, ok)
}

// The same calls give the same steps.
func TestDriverIsDeterministic(t *testing.T) {
	run := func() []string {
		r := drive(t, "fipa-contract-net", cast("fipa-contract-net"), map[string]script{
			"alice": {"start": {Choice: "cfp", Content: content{"task": "deliver"}}, "proposed": {Sessions: map[string]decision.SessionAnswer{
				"bob": {Choice: "accept-proposal"}, "carol": {Choice: "reject-proposal"}, "dave": {Choice: "reject-proposal"},
			}}},
			"bob":   {"solicited": {Choice: "propose", Content: content{"price": 1}}},
			"carol": {"solicited": {Choice: "propose", Content: content{"price": 2}}},
			"dave":  {"solicited": {Choice: "propose", Content: content{"price": 3}}},
		})
		r.startAll(t)
		require.NoError(t, r.Settle())
		require.NoError(t, r.AdvanceTo(t0.Add(10*time.Minute)))
		return r.steps
	}
	first := run()
	require.NotEmpty(t, first)
	for range 5 {
		assert.Equal(t, first, run())
	}
}

// A timer cancelled when its state is left never fires, even once its
// deadline has passed.
func TestDriverStaleTimerDoesNotFire(t *testing.T) {
	r := drive(t, "fipa-request", cast("fipa-request"), map[string]script{
		"alice": {"start": {Choice: "request", Content: content{"action": "paint"}}},
		"bob":   {"requested": {Choice: "agree"}},
	})
	r.startAll(t)
	require.NoError(t, r.Settle())
	require.NoError(t, r.AdvanceTo(t0.Add(time.Minute))) // past the reply timers, cancelled by the agree
	assert.Empty(t, r.fired)
	assert.Equal(t, "agreed", r.Handler("alice", convID).State(""))
	next, ok := r.NextDeadline()
	require.True(t, ok)
	assert.Equal(t, t0.Add(5*time.Minute), next)
}

// A timer fired by hand through Process does not fire again, even when
// its expiry changes nothing.
func TestDriverTimerFiredByHandFiresOnce(t *testing.T) {
	const idle = `policy: idle
version: 1
roles: [A, B]
messages: {ping: request}
timers:
  t: 10s
states:
  s0:
    arm: t
    on:
      - {send: ping, from: A, to: B, next: end}
      - {timeout: t, next: end, guard: "false"}
  end: {terminal: done}
`
	r := &driven{set: map[string]engine.TimerEvent{}}
	r.Driver = engine.NewDriver(t0, engine.WithObserver(r.observe))
	h, err := mustCompile(t, idle, "A").NewHandler(convID, "a", engine.WithPeers("B", "b"))
	require.NoError(t, err)
	require.NoError(t, r.Add(h))
	require.NoError(t, r.Start("a", convID))
	set, ok := r.set["a t"]
	require.True(t, ok)
	require.NoError(t, r.Process("a", convID, &engine.TimerEvent{At: t0.Add(time.Second), Name: set.Name, Session: set.Session, Epoch: set.Epoch}))
	assert.Equal(t, "s0", h.State(""), "the expiry changed nothing")
	require.NoError(t, r.AdvanceTo(t0.Add(time.Hour)))
	assert.Equal(t, []string{"a t +1s"}, r.fired)
}

// A decision the decider leaves stays pending until Answer answers it;
// answered or overtaken, it is no longer pending.
func TestDriverPendingDecisionAnsweredLater(t *testing.T) {
	r := drive(t, "fipa-request", cast("fipa-request"), map[string]script{
		"alice": {"start": {Choice: "request", Content: content{"action": "paint"}}},
	})
	r.startAll(t)
	require.NoError(t, r.Settle())
	pending := func() []string {
		var out []string
		for _, p := range r.Pending() {
			out = append(out, fmt.Sprintf("%s %s [%s]", p.Agent, p.Request.Point, strings.Join(p.Request.Choices, " ")))
		}
		return out
	}
	assert.Equal(t, []string{"alice requested [cancel]", "bob requested [agree refuse not-understood inform-done inform-result failure]"}, pending())
	bobs := r.Pending()[1]
	assert.Equal(t, convID, bobs.Conversation)
	assert.Equal(t, content{"action": "paint"}, bobs.Request.Content)

	require.NoError(t, r.AdvanceTo(t0.Add(10*time.Second)))
	require.NoError(t, r.Answer("bob", convID, bobs.Ticket, decision.Answer{Choice: "agree"}))
	assert.Equal(t, 1, r.InFlight(), "Answer queues what it sends")
	require.NoError(t, r.Settle())
	assert.Equal(t, []string{"request alice->bob", "agree bob->alice"}, r.delivered)
	assert.Equal(t, []string{"alice agreed [cancel]", "bob agreed [inform-done inform-result failure]"}, pending())
	next, ok := r.NextDeadline()
	require.True(t, ok)
	assert.Equal(t, t0.Add(10*time.Second+5*time.Minute), next, "answered at the driver's time")

	// The old ticket is stale now: the handler says so, and it is no error.
	before := len(r.steps)
	require.NoError(t, r.Answer("bob", convID, bobs.Ticket, decision.Answer{Choice: "agree"}))
	assert.Contains(t, strings.Join(r.steps[before:], "\n"), "error "+string(engine.CodeStaleDecision))

	done := r.Pending()[1]
	require.NoError(t, r.Answer("bob", convID, done.Ticket, decision.Answer{Choice: "inform-done"}))
	require.NoError(t, r.Settle())
	assert.Equal(t, map[string]string{"alice": "done", "bob": "done"}, r.outcomes)
	assert.Empty(t, r.Pending())
}

// A message for an agent or conversation the driver does not host is
// reported, to the observer and by TakeUnrouted, never dropped.
func TestDriverReportsUnroutedMessages(t *testing.T) {
	tests := []struct {
		name   string
		bobsID string // bob's conversation; "" hosts no bob
	}{
		{name: "receiver not hosted"},
		{name: "receiver hosted in another conversation", bobsID: "c2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			agents := cast("fipa-request")
			r := drive(t, "fipa-request", agents[:1], map[string]script{
				"alice": {"start": {Choice: "request", Content: content{"action": "paint"}}},
			})
			if tc.bobsID != "" {
				h, err := program(t, "fipa-request", "Participant").NewHandler(tc.bobsID, "bob")
				require.NoError(t, err)
				require.NoError(t, r.Add(h))
			}
			r.startAll(t)
			require.NoError(t, r.Settle())
			assert.Empty(t, r.delivered)
			var seen []string
			for _, s := range r.steps {
				if strings.HasPrefix(s, "unrouted ") {
					seen = append(seen, s)
				}
			}
			assert.Equal(t, []string{"unrouted alice/c1 bob send request alice->bob rw=c1/alice#1 {\"action\":\"paint\"}"}, seen, "observed")
			un := r.TakeUnrouted()
			require.Len(t, un, 1)
			assert.Equal(t, engine.Step{Kind: engine.StepUnrouted, Agent: "alice", Conversation: convID, To: "bob", Event: un[0].Event}, un[0])
			m := un[0].Event.(*engine.MessageEvent)
			assert.Equal(t, "request", m.Message.Performative)
			assert.Equal(t, []string{"bob"}, m.Message.Receivers)
			assert.Equal(t, t0, m.At)
			assert.Empty(t, r.TakeUnrouted(), "taken once")
		})
	}
}

func TestDriverAddRefusesDuplicates(t *testing.T) {
	d := engine.NewDriver(t0)
	pr := program(t, "fipa-request", "Participant")
	h1, err := pr.NewHandler(convID, "bob")
	require.NoError(t, err)
	h2, err := pr.NewHandler(convID, "bob")
	require.NoError(t, err)
	other, err := pr.NewHandler("c2", "bob")
	require.NoError(t, err)
	require.NoError(t, d.Add(h1))
	assert.EqualError(t, d.Add(h2), `engine: the driver already hosts agent "bob" in conversation "c1"`)
	assert.EqualError(t, d.Add(h1), `engine: the driver already hosts agent "bob" in conversation "c1"`)
	assert.NoError(t, d.Add(other), "another conversation of the same agent")
	assert.Error(t, d.Add(nil))
	assert.Same(t, h1, d.Handler("bob", convID))
	assert.Same(t, other, d.Handler("bob", "c2"))
	assert.Nil(t, d.Handler("alice", convID))
}

// A conversation that never ends hits the step limit, an error; the work
// left stays queued and the next call goes on with it.
func TestDriverStepLimit(t *testing.T) {
	// echo is pingPong with B answering A's pings.
	echo := strings.Replace(pingPong, "{send: pong, from: A, to: B", "{send: pong, from: B, to: A", 1)
	require.NotEqual(t, pingPong, echo)
	tests := []struct {
		name   string
		policy string
		// hosts are the agents, each as agent:role.
		hosts    []string
		deciders map[string]script
		// settle says the limit is hit in Settle (messages going back and
		// forth), not in Start (one agent answering its own decisions).
		settle bool
	}{
		{name: "messages back and forth", policy: echo, hosts: []string{"a:A", "b:B"}, settle: true,
			deciders: map[string]script{"a": {"s0": {Choice: "ping"}}, "b": {"s1": {Choice: "pong"}}}},
		{name: "one agent's own decisions", policy: pingPong, hosts: []string{"a:A"},
			deciders: map[string]script{"a": {"s0": {Choice: "ping"}, "s1": {Choice: "pong"}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var opts []engine.DriverOption
			for name, s := range tc.deciders {
				opts = append(opts, engine.WithAgentDecider(name, s))
			}
			steps := 0
			opts = append(opts, engine.WithStepLimit(50), engine.WithObserver(func(s engine.Step) {
				if s.Kind == engine.StepInput {
					steps++
				}
			}))
			d := engine.NewDriver(t0, opts...)
			for _, host := range tc.hosts {
				name, role, _ := strings.Cut(host, ":")
				h, err := mustCompile(t, tc.policy, role).NewHandler(convID, name, engine.WithPeers("A", "a"), engine.WithPeers("B", "b"))
				require.NoError(t, err)
				require.NoError(t, d.Add(h))
			}
			var err error
			for _, host := range tc.hosts {
				name, _, _ := strings.Cut(host, ":")
				steps = 0
				if err = d.Start(name, convID); err != nil {
					break
				}
			}
			if tc.settle {
				require.NoError(t, err)
				steps = 0
				err = d.Settle()
			}
			require.ErrorIs(t, err, engine.ErrStepLimit)
			assert.Contains(t, []int{49, 50}, steps, "inputs fed (a Start is a step, not an input)")
			steps = 0
			again := d.Settle()
			require.ErrorIs(t, again, engine.ErrStepLimit, "the next call goes on")
			assert.Equal(t, 50, steps)
		})
	}
}

// A decider's error is returned; its decision stays pending.
func TestDriverDeciderError(t *testing.T) {
	boom := errors.New("boom")
	d := engine.NewDriver(t0, engine.WithDecider(decision.Func(func(context.Context, *decision.Request) (decision.Answer, error) {
		return decision.Answer{}, boom
	})))
	h, err := program(t, "fipa-request", "Initiator").NewHandler(convID, "alice", engine.WithPeers("Participant", "bob"))
	require.NoError(t, err)
	require.NoError(t, d.Add(h))
	err = d.Start("alice", convID)
	require.ErrorIs(t, err, boom)
	assert.EqualError(t, err, `agent "alice", conversation "c1": deciding "start": boom`)
	require.Len(t, d.Pending(), 1)
	assert.Equal(t, "start", d.Pending()[0].Request.Point)
}

// A message for a handler not started yet stays in flight until it is.
func TestDriverMessageBeforeStart(t *testing.T) {
	r := drive(t, "fipa-request", cast("fipa-request"), map[string]script{
		"alice": {"start": {Choice: "request", Content: content{"action": "paint"}}},
	})
	require.NoError(t, r.Start("alice", convID))
	err := r.Settle()
	assert.EqualError(t, err, `agent "bob", conversation "c1": "request" from "alice" arrived before Start`)
	assert.Equal(t, 1, r.InFlight())
	require.NoError(t, r.Start("bob", convID))
	require.NoError(t, r.Settle())
	assert.Equal(t, []string{"request alice->bob"}, r.delivered)
}

func TestDriverMisuse(t *testing.T) {
	r := drive(t, "fipa-request", cast("fipa-request"), nil)
	r.startAll(t)
	assert.EqualError(t, r.Start("alice", convID), `agent "alice", conversation "c1": engine: handler already started`)
	assert.EqualError(t, r.Start("zoe", convID), `engine: the driver hosts no agent "zoe" in conversation "c1"`)
	assert.EqualError(t, r.Process("alice", "c9", &engine.TimerEvent{}), `engine: the driver hosts no agent "alice" in conversation "c9"`)
	assert.EqualError(t, r.Answer("zoe", convID, 1, decision.Answer{}), `engine: the driver hosts no agent "zoe" in conversation "c1"`)
	assert.EqualError(t, r.Process("alice", convID, &engine.ProtocolErrorEvent{}), `agent "alice", conversation "c1": engine: *engine.ProtocolErrorEvent is an output event, not an input`)
	require.NoError(t, r.AdvanceTo(t0.Add(time.Second)))
	assert.EqualError(t, r.AdvanceTo(t0), "engine: AdvanceTo 2026-03-01T09:00:00Z is before the driver's time 2026-03-01T09:00:01Z")
}

// The decider and the observer run inside the driver's calls: calling the
// driver from them is refused.
func TestDriverRefusesReentry(t *testing.T) {
	var d *engine.Driver
	var errs []error
	d = engine.NewDriver(t0, engine.WithDecider(decision.Func(func(context.Context, *decision.Request) (decision.Answer, error) {
		errs = append(errs, d.Settle(), d.AdvanceTo(t0), d.Start("alice", convID), d.Answer("alice", convID, 1, decision.Answer{}), d.Abort("alice", convID, "x"))
		assert.False(t, d.Remove("alice", convID))
		return decision.Answer{}, decision.ErrNoDecision
	})))
	h, err := program(t, "fipa-request", "Initiator").NewHandler(convID, "alice", engine.WithPeers("Participant", "bob"))
	require.NoError(t, err)
	require.NoError(t, d.Add(h))
	require.NoError(t, d.Start("alice", convID))
	require.Len(t, errs, 5)
	for _, err := range errs {
		assert.EqualError(t, err, "engine: the driver was called from its own decider or observer")
	}
}

// Remove drops a handler with its timers and pending decisions; the key
// can be hosted again.
func TestDriverRemove(t *testing.T) {
	r := drive(t, "fipa-request", cast("fipa-request")[:1], map[string]script{
		"alice": {"start": {Choice: "request", Content: content{"action": "paint"}}},
	})
	r.startAll(t)
	require.NotEmpty(t, r.Pending())
	_, ok := r.NextDeadline()
	require.True(t, ok)
	assert.True(t, r.Remove("alice", convID))
	assert.False(t, r.Remove("alice", convID))
	assert.Nil(t, r.Handler("alice", convID))
	assert.Empty(t, r.Pending())
	_, ok = r.NextDeadline()
	assert.False(t, ok)
	require.NoError(t, r.AdvanceTo(t0.Add(time.Hour)))
	assert.Empty(t, r.fired)

	h, err := program(t, "fipa-request", "Initiator").NewHandler(convID, "alice", engine.WithPeers("Participant", "bob"))
	require.NoError(t, err)
	require.NoError(t, r.Add(h))
	require.NoError(t, r.Start("alice", convID))
	assert.Len(t, r.Pending(), 1)
}

// BenchmarkDriverRequest runs one whole FIPA Request conversation
// (request, agree, inform-result) through a driver, as
// BenchmarkRequestConversation does by hand.
func BenchmarkDriverRequest(b *testing.B) {
	p, err := policies.Load("fipa-request")
	if err != nil {
		b.Fatal(err)
	}
	ini, _ := engine.Compile(p, "Initiator")
	par, _ := engine.Compile(p, "Participant")
	request := decision.Answer{Choice: "request", Content: map[string]any{"action": "x"}}
	agree := decision.Answer{Choice: "agree"}
	result := decision.Answer{Choice: "inform-result", Content: map[string]any{"result": 42}}
	d := engine.NewDriver(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), engine.WithDecider(decision.Func(func(_ context.Context, req *decision.Request) (decision.Answer, error) {
		switch req.Point {
		case "start":
			return request, nil
		case "requested":
			if req.Role == "Participant" {
				return agree, nil
			}
		case "agreed":
			if req.Role == "Participant" {
				return result, nil
			}
		}
		return decision.Answer{}, decision.ErrNoDecision
	})))
	b.ReportAllocs()
	for b.Loop() {
		hi, err := ini.NewHandler("c1", "alice", engine.WithPeers("Participant", "bob"))
		if err != nil {
			b.Fatal(err)
		}
		hp, err := par.NewHandler("c1", "bob")
		if err != nil {
			b.Fatal(err)
		}
		if err := errors.Join(d.Add(hp), d.Add(hi), d.Start("bob", "c1"), d.Start("alice", "c1"), d.Settle()); err != nil {
			b.Fatal(err)
		}
		if !hi.Done() || !hp.Done() {
			b.Fatalf("conversation did not end: %s / %s", hi.State(""), hp.State(""))
		}
		d.Remove("alice", "c1")
		d.Remove("bob", "c1")
	}
}

// The driver runs no child policy: a LoadCPEvent is reported unrouted,
// and the parent goes on when the caller feeds the child's end.
func TestDriverReportsChildPolicies(t *testing.T) {
	d := engine.NewDriver(t0,
		engine.WithAgentDecider("alice", script{"ready": {Choice: "request"}}),
		engine.WithAgentDecider("bob", script{"requested": {Choice: "inform-done"}}))
	for _, a := range cast("setup-then-request") {
		h, err := fuzzProgram(t, "setup-then-request", a.role).NewHandler(convID, a.name, a.opts...)
		require.NoError(t, err)
		require.NoError(t, d.Add(h))
		require.NoError(t, d.Start(a.name, convID))
	}
	un := d.TakeUnrouted()
	require.Len(t, un, 2)
	for i, who := range []string{"alice", "bob"} {
		assert.Equal(t, who, un[i].Agent)
		load, ok := un[i].Event.(*engine.LoadCPEvent)
		require.True(t, ok, "%T", un[i].Event)
		assert.Equal(t, "conversation-setup", load.Policy)
		require.NoError(t, d.Process(who, convID, &engine.CPDoneEvent{At: t0, Policy: load.Policy, Outcome: "accepted", Session: load.Session, Epoch: load.Epoch}))
	}
	require.NoError(t, d.Settle())
	assert.Equal(t, "done", d.Handler("alice", convID).Outcome(""))
	assert.Equal(t, "done", d.Handler("bob", convID).Outcome(""))
}

// TakeInFlight takes what is still to be delivered, one step per
// receiver not reached yet, and leaves nothing in flight.
func TestDriverTakeInFlight(t *testing.T) {
	tests := []struct {
		name string
		// limit is the driver's step limit (0: the default).
		limit int
		// settle says Settle runs before TakeInFlight.
		settle    bool
		delivered []string
		taken     []string
	}{
		{name: "nothing delivered yet", taken: []string{"bob", "carol", "dave"}},
		{name: "a settle the step limit cut short", limit: 2, settle: true,
			delivered: []string{"cfp alice->bob", "cfp alice->carol"}, taken: []string{"dave"}},
		{name: "settled", settle: true, delivered: []string{"cfp alice->bob", "cfp alice->carol", "cfp alice->dave"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := drive(t, "fipa-contract-net", cast("fipa-contract-net"), nil, engine.WithStepLimit(tc.limit))
			r.startAll(t)
			cfp := r.Pending()[0]
			require.NoError(t, r.Process("alice", convID, &engine.DecisionEvent{At: t0, Ticket: cfp.Ticket, Answer: decision.Answer{Choice: "cfp", Content: content{"task": "deliver"}}}))
			require.Equal(t, 1, r.InFlight())
			if tc.settle {
				err := r.Settle()
				if tc.limit > 0 {
					require.ErrorIs(t, err, engine.ErrStepLimit)
				} else {
					require.NoError(t, err)
				}
			}
			steps := r.TakeInFlight()
			var taken []string
			for _, s := range steps {
				taken = append(taken, s.To)
				assert.Equal(t, engine.StepOutput, s.Kind)
				assert.Equal(t, "alice", s.Agent)
				assert.Equal(t, convID, s.Conversation)
				m, ok := s.Event.(*engine.MessageEvent)
				require.True(t, ok, "%T", s.Event)
				assert.Equal(t, t0, m.At, "sent at")
				assert.Equal(t, "cfp", m.Message.Performative)
				assert.Equal(t, []string{"bob", "carol", "dave"}, m.Message.Receivers)
			}
			assert.Equal(t, tc.taken, taken)
			assert.Zero(t, r.InFlight())
			assert.Empty(t, r.TakeInFlight(), "taken once")
			require.NoError(t, r.Settle())
			assert.Equal(t, tc.delivered, r.delivered, "taken messages are not delivered")
		})
	}
}

// Messages taken out of flight are the caller's: delivered late, twice or
// never, each as a copy of its own.
func TestDriverDeliversTakenMessagesAsTold(t *testing.T) {
	r := drive(t, "fipa-contract-net", cast("fipa-contract-net"), map[string]script{
		"alice": {"start": {Choice: "cfp", Content: content{"task": "deliver"}}},
	})
	r.startAll(t)
	steps := r.TakeInFlight()
	require.Len(t, steps, 3)
	steps[0].Event.(*engine.MessageEvent).Message.Receivers[0] = "zoe"
	assert.Equal(t, []string{"bob", "carol", "dave"}, steps[1].Event.(*engine.MessageEvent).Message.Receivers, "each step has its own message")

	deliver := func(s engine.Step, at time.Duration) {
		t.Helper()
		m := s.Event.(*engine.MessageEvent)
		m.At = t0.Add(at)
		require.NoError(t, r.Process(s.To, m.Message.ConversationID, m))
		require.NoError(t, r.Settle())
	}
	deliver(steps[2], 0)
	before := len(r.steps)
	deliver(steps[2], time.Second)
	assert.Contains(t, strings.Join(r.steps[before:], "\n"), "error "+string(engine.CodeDuplicate), "dave got it twice")
	deliver(steps[1], 10*time.Second)
	assert.Equal(t, []string{"cfp alice->dave", "cfp alice->dave", "cfp alice->carol"}, r.delivered)
	assert.Equal(t, "start", r.Handler("bob", convID).State(""), "bob's was dropped")
	assert.Equal(t, "solicited", r.Handler("carol", convID).State(""))
	assert.Equal(t, t0.Add(10*time.Second).Add(30*time.Second), r.set["carol proposals"].Deadline, "carol got hers late")
}

// TakeInFlight from the observer takes nothing: the delivery under way
// goes on.
func TestDriverTakeInFlightFromTheObserver(t *testing.T) {
	var d *engine.Driver
	var taken [][]engine.Step
	delivered := 0
	d = engine.NewDriver(t0,
		engine.WithAgentDecider("alice", script{"start": {Choice: "cfp", Content: content{"task": "deliver"}}}),
		engine.WithObserver(func(s engine.Step) {
			if _, ok := s.Event.(*engine.MessageEvent); ok && s.Kind == engine.StepInput {
				delivered++
				taken = append(taken, d.TakeInFlight())
			}
		}))
	for _, a := range cast("fipa-contract-net") {
		h, err := program(t, "fipa-contract-net", a.role).NewHandler(convID, a.name, a.opts...)
		require.NoError(t, err)
		require.NoError(t, d.Add(h))
		require.NoError(t, d.Start(a.name, convID))
	}
	require.NoError(t, d.Settle())
	assert.Equal(t, 3, delivered)
	assert.Equal(t, [][]engine.Step{nil, nil, nil}, taken)
}

// Abort ends a handler at the driver's time: its timers never fire, its
// decisions are no longer pending, and what reaches it later is refused.
func TestDriverAbort(t *testing.T) {
	r := drive(t, "fipa-request", cast("fipa-request"), map[string]script{
		"alice": {"start": {Choice: "request", Content: content{"action": "paint"}}},
		"bob":   {"requested": {Choice: "agree"}},
	})
	r.startAll(t)
	require.NoError(t, r.Settle())
	require.Len(t, r.Pending(), 2, "alice may cancel, bob may report")
	require.NoError(t, r.AdvanceTo(t0.Add(time.Minute)))
	before := len(r.steps)
	require.NoError(t, r.Abort("alice", convID, "the send of cancel failed"))
	assert.Equal(t, []string{
		"output alice/c1  timer cancel result",
		"output alice/c1  timer cancel result commitment=perform",
		"output alice/c1  commitment perform violated bob->alice (aborted)",
		"output alice/c1  done aborted: the send of cancel failed",
	}, r.steps[before:], "no input step")
	assert.True(t, r.Handler("alice", convID).Aborted())
	assert.Equal(t, "aborted", r.outcomes["alice"])
	assert.Equal(t, t0.Add(time.Minute), r.ended["alice"], "at the driver's time")
	pending := r.Pending()
	require.Len(t, pending, 1)
	assert.Equal(t, "bob", pending[0].Agent)

	before = len(r.steps)
	require.NoError(t, r.Abort("alice", convID, "again"))
	assert.Len(t, r.steps, before, "a handler that is done")

	require.NoError(t, r.Answer("bob", convID, pending[0].Ticket, decision.Answer{Choice: "inform-done"}))
	require.NoError(t, r.Settle())
	assert.Contains(t, r.steps[len(r.steps)-1], "error "+string(engine.CodeEnded))
	require.NoError(t, r.AdvanceTo(t0.Add(time.Hour)))
	assert.Empty(t, r.fired, "alice's timers were dropped, bob's cancelled")

	assert.EqualError(t, r.Abort("zoe", convID, "x"), `engine: the driver hosts no agent "zoe" in conversation "c1"`)
	h, err := program(t, "fipa-request", "Participant").NewHandler("c2", "bob")
	require.NoError(t, err)
	require.NoError(t, r.Add(h))
	err = r.Abort("bob", "c2", "x")
	require.ErrorIs(t, err, engine.ErrNotStarted)
	assert.EqualError(t, err, `agent "bob", conversation "c2": engine: handler not started`)
}

package trace_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/policies"
	"github.com/parleyhq/parley/policy"
	"github.com/parleyhq/parley/trace"
)

// greeting is a policy either role may open, so no role initiates it.
const greeting = `policy: greeting
version: 1
roles: [Left, Right]
messages:
  hello: inform
  hello-back: confirm
timers:
  answer: 10s
states:
  start:
    - {send: hello, from: Left, to: Right, next: left-greeted}
    - {send: hello, from: Right, to: Left, next: right-greeted}
  left-greeted:
    arm: answer
    on:
      - {send: hello-back, from: Right, to: Left, next: done}
      - {timeout: answer, next: ignored}
  right-greeted:
    arm: answer
    on:
      - {send: hello-back, from: Left, to: Right, next: done}
      - {timeout: answer, next: ignored}
  done: {terminal: done}
  ignored: {terminal: ignored}
`

// relay has three roles: once its first line binds the Sender, two are
// left.
const relay = `policy: relay
version: 1
roles: [Sender, Relay, Receiver]
messages:
  note: inform
  ack: confirm
states:
  start:
    - {send: note, from: Sender, to: Relay, next: relaying}
  relaying:
    - {send: note, from: Relay, to: Receiver, next: delivered}
  delivered:
    - {send: ack, from: Receiver, to: Sender, next: done}
  done: {terminal: done}
`

func shipped(t *testing.T, name string) *policy.Policy {
	t.Helper()
	p, err := policies.Load(name)
	require.NoError(t, err)
	return p
}

func inline(t *testing.T, src string) *policy.Policy {
	t.Helper()
	p, ds := policy.LoadYAML("inline.yaml", []byte(src))
	require.NotNil(t, p, ds.Error())
	require.False(t, ds.HasErrors(), ds.Error())
	return p
}

// check reads tr and checks it against p.
func check(t *testing.T, p *policy.Policy, tr string, bind map[string][]string) *trace.Result {
	t.Helper()
	res, err := checkErr(t, p, tr, bind)
	require.NoError(t, err)
	return res
}

func checkErr(t *testing.T, p *policy.Policy, tr string, bind map[string][]string) (*trace.Result, error) {
	t.Helper()
	entries, problems, err := trace.Read(strings.NewReader(tr))
	require.NoError(t, err)
	return trace.Check(p, entries, problems, trace.Options{Bind: bind, Resolve: policies.Resolve})
}

// rolesOf returns the role each agent of the findings plays.
func rolesOf(res *trace.Result) map[string]string {
	out := map[string]string{}
	for _, f := range res.Findings {
		if f.Agent != "" {
			out[f.Agent] = f.Role
		}
	}
	return out
}

// finding is a Finding without its message, to compare lists of them.
type finding struct {
	Line     int
	Severity string
	Code     string
	Agent    string
	Role     string
}

func findingsOf(res *trace.Result) []finding {
	var out []finding
	for _, f := range res.Findings {
		out = append(out, finding{f.Line, f.Severity.String(), f.Code, f.Agent, f.Role})
	}
	return out
}

// TestCheckBinding reads who plays which role off the findings of traces
// that stop early: every agent gets an unfinished finding in its role.
func TestCheckBinding(t *testing.T) {
	tests := []struct {
		name   string
		policy *policy.Policy
		trace  string
		bind   map[string][]string
		roles  map[string]string
	}{
		{
			name:   "the first line's sender plays the initiating role, the other the remaining one",
			policy: shipped(t, "fipa-request"),
			trace:  `{"performative": "request", "sender": "alice", "receiver": "bob", "conversation_id": "c1"}`,
			roles:  map[string]string{"alice": "Initiator", "bob": "Participant"},
		},
		{
			name:   "names do not matter, the first line does",
			policy: shipped(t, "fipa-request"),
			trace:  `{"performative": "request", "sender": "zed", "receiver": "amy", "conversation_id": "c1"}`,
			roles:  map[string]string{"zed": "Initiator", "amy": "Participant"},
		},
		{
			name:   "any number of agents play a many role",
			policy: shipped(t, "fipa-contract-net"),
			trace:  `{"performative": "cfp", "sender": "buyer", "receiver": ["s1", "s2", "s3"], "conversation_id": "cn1", "reply_by": "10s"}`,
			roles:  map[string]string{"buyer": "Initiator", "s1": "Participant", "s2": "Participant", "s3": "Participant"},
		},
		{
			name:   "query-ref opens a query as well as query-if",
			policy: shipped(t, "fipa-query"),
			trace:  `{"performative": "query-ref", "sender": "ui", "receiver": "db", "conversation_id": "q1"}`,
			roles:  map[string]string{"ui": "Initiator", "db": "Participant"},
		},
		{
			name:   "explicit binding",
			policy: inline(t, greeting),
			trace:  `{"performative": "inform", "sender": "ann", "receiver": "ben", "conversation_id": "g1"}`,
			bind:   map[string][]string{"Right": {"ann"}, "Left": {"ben"}},
			roles:  map[string]string{"ann": "Right", "ben": "Left"},
		},
		{
			name:   "one role bound, the other agent plays the one role left",
			policy: inline(t, greeting),
			trace:  `{"performative": "inform", "sender": "ann", "receiver": "ben", "conversation_id": "g1"}`,
			bind:   map[string][]string{"Right": {"ann"}},
			roles:  map[string]string{"ann": "Right", "ben": "Left"},
		},
		{
			name:   "explicit binding against the first line",
			policy: shipped(t, "fipa-request"),
			trace:  `{"performative": "request", "sender": "bob", "receiver": "alice", "conversation_id": "c1"}`,
			bind:   map[string][]string{"Initiator": {"bob"}, "Participant": {"alice"}},
			roles:  map[string]string{"bob": "Initiator", "alice": "Participant"},
		},
		{
			name:   "a role that is not many bound to several agents, each in its own conversation",
			policy: shipped(t, "fipa-request"),
			trace: `{"at": "0s", "performative": "request", "sender": "alice", "receiver": "bob", "conversation_id": "c1"}
{"at": "1s", "performative": "request", "sender": "alice", "receiver": "carol", "conversation_id": "c2"}`,
			bind:  map[string][]string{"Participant": {"bob", "carol"}},
			roles: map[string]string{"alice": "Initiator", "bob": "Participant", "carol": "Participant"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := check(t, tt.policy, tt.trace, tt.bind)
			assert.Equal(t, tt.roles, rolesOf(res))
			assert.False(t, res.Summary.Complete)
			for _, f := range res.Findings {
				if f.Code != trace.CodeUnfinished {
					assert.Fail(t, "unexpected finding", "%+v", f)
				}
			}
		})
	}
}

func TestCheckBindingErrors(t *testing.T) {
	request := `{"performative": "request", "sender": "alice", "receiver": "bob", "conversation_id": "c1"}`
	tests := []struct {
		name   string
		policy *policy.Policy
		trace  string
		bind   map[string][]string
		msg    string
	}{
		{
			name:   "the first line is not from the initiating role",
			policy: shipped(t, "fipa-request"),
			trace:  `{"performative": "agree", "sender": "bob", "receiver": "alice", "conversation_id": "c1"}`,
			msg:    `cannot tell who plays Initiator: the trace's first line (line 1, agree from "bob") is not a message Initiator opens "fipa-request" with (request); add -bind Initiator=AGENT`,
		},
		{
			name:   "the first line is another role's opening message",
			policy: shipped(t, "fipa-query"),
			trace:  "\n" + `{"performative": "inform", "sender": "db", "receiver": "ui", "content": {"holds": true}}`,
			msg:    `the trace's first line (line 2, inform from "db") is not a message Initiator opens "fipa-query" with (query-if or query-ref); add -bind Initiator=AGENT`,
		},
		{
			name:   "three agents and no many role",
			policy: shipped(t, "fipa-request"),
			trace:  request + "\n" + `{"performative": "request", "sender": "alice", "receiver": "carol", "conversation_id": "c2"}`,
			msg:    `cannot tell who plays Participant: "bob" and "carol" would both play it, but it is not a many role; add -bind Participant=AGENT[,AGENT...] naming the agents that play it (each in its own conversations)`,
		},
		{
			name:   "four agents and no many role",
			policy: shipped(t, "fipa-request"),
			trace:  `{"performative": "request", "sender": "alice", "receiver": ["bob", "carol", "dave"], "conversation_id": "c1"}`,
			msg:    `"bob", "carol" and "dave" would all play it`,
		},
		{
			name:   "one role bound and two agents left for a role that is not many",
			policy: shipped(t, "fipa-request"),
			trace:  request + "\n" + `{"performative": "request", "sender": "alice", "receiver": "carol", "conversation_id": "c2"}`,
			bind:   map[string][]string{"Initiator": {"alice"}},
			msg:    `add -bind Participant=AGENT[,AGENT...]`,
		},
		{
			name:   "no single initiating role",
			policy: inline(t, greeting),
			trace:  `{"performative": "inform", "sender": "ann", "receiver": "ben", "conversation_id": "g1"}`,
			msg:    `cannot tell which agents play which role: policy "greeting" has no single initiating role; add -bind ROLE=agent for "ann", "ben"`,
		},
		{
			name:   "two roles left",
			policy: inline(t, relay),
			trace:  `{"performative": "inform", "sender": "sam", "receiver": "rita", "conversation_id": "n1"}`,
			msg:    `cannot tell which role "rita" plays (candidates: Relay, Receiver); add -bind ROLE=agent[,agent...]`,
		},
		{
			name:   "two roles left for two agents",
			policy: inline(t, relay),
			trace:  `{"performative": "inform", "sender": "sam", "receiver": ["rita", "rob"], "conversation_id": "n1"}`,
			msg:    `cannot tell which role "rita", "rob" play (candidates: Relay, Receiver)`,
		},
		{
			name:   "an unknown role",
			policy: shipped(t, "fipa-request"),
			trace:  request,
			bind:   map[string][]string{"Initator": {"alice"}},
			msg:    `-bind Initator=...: policy "fipa-request" has no role "Initator"; did you mean "Initiator"? (roles: Initiator, Participant)`,
		},
		{
			name:   "an unknown role unlike any",
			policy: shipped(t, "fipa-request"),
			trace:  request,
			bind:   map[string][]string{"Buyer": {"alice"}},
			msg:    `-bind Buyer=...: policy "fipa-request" has no role "Buyer" (roles: Initiator, Participant)`,
		},
		{
			name:   "an agent bound to two roles",
			policy: shipped(t, "fipa-request"),
			trace:  request,
			bind:   map[string][]string{"Initiator": {"alice"}, "Participant": {"bob", "alice"}},
			msg:    `-bind: agent "alice" is bound to both Initiator and Participant`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := checkErr(t, tt.policy, tt.trace, tt.bind)
			assert.Nil(t, res)
			var be *trace.BindingError
			require.ErrorAs(t, err, &be)
			assert.Contains(t, be.Error(), tt.msg)
		})
	}
}

// TestCheckOneAgentPerConversation is the regression test for a second
// agent of a role that is not many getting its own handler in a
// conversation another agent of that role already plays.
func TestCheckOneAgentPerConversation(t *testing.T) {
	p := shipped(t, "fipa-request")
	res := check(t, p, `{"at": "0s", "performative": "request", "sender": "alice", "receiver": "bob", "conversation_id": "c1", "reply_with": "r1"}
{"at": "1s", "performative": "refuse", "sender": "carol", "receiver": "alice", "conversation_id": "c1", "in_reply_to": "r1"}
{"at": "2s", "performative": "agree", "sender": "bob", "receiver": "alice", "conversation_id": "c1", "in_reply_to": "r1"}
{"at": "3s", "performative": "request", "sender": "alice", "receiver": "carol", "conversation_id": "c2", "reply_with": "r2"}
{"at": "4s", "performative": "refuse", "sender": "carol", "receiver": "alice", "conversation_id": "c2", "in_reply_to": "r2"}
{"at": "5s", "performative": "inform", "sender": "bob", "receiver": "alice", "conversation_id": "c1", "in_reply_to": "r1", "content": {"done": true}}`,
		map[string][]string{"Participant": {"bob", "carol"}})
	require.NotEmpty(t, res.Findings)
	f := res.Findings[0]
	assert.Equal(t, finding{2, "error", "PE003", "carol", "Participant"}, findingsOf(res)[0])
	assert.Equal(t, `"carol" is not an agent of conversation "c1": "bob" plays Participant in it, and Participant is played by one agent in each conversation`, f.Message)
	// alice's handler saw carol's refuse too, and says so; in observe mode
	// it applied it.
	assert.Equal(t, finding{2, "error", "PE003", "alice", "Initiator"}, findingsOf(res)[1])
	assert.False(t, res.Summary.Conforms)
	assert.True(t, res.Summary.Complete, "carol has no handler in c1 to leave unfinished")
	assert.Equal(t, "refused", res.Summary.Outcomes["carol"], "carol's own conversation is c2 only")
	assert.Equal(t, "done", res.Summary.Outcomes["bob"])
}

// TestCheckAgentsOutsideAFullBinding is the regression test for agents
// that -bind leaves out once every role is bound: they used to make the
// binding fail; they are findings where they send.
func TestCheckAgentsOutsideAFullBinding(t *testing.T) {
	p := shipped(t, "fipa-request")
	res := check(t, p, `{"at": "0s", "performative": "request", "sender": "alice", "receiver": "bob", "conversation_id": "c1", "reply_with": "r1"}
{"at": "1s", "performative": "agree", "sender": "bob", "receiver": "alice", "conversation_id": "c1", "in_reply_to": "r1"}
{"at": "2s", "performative": "cancel", "sender": "mallory", "receiver": "bob", "conversation_id": "c1"}
{"at": "3s", "performative": "cancel", "sender": "mallory", "receiver": "bob", "conversation_id": "c1"}
{"at": "4s", "performative": "request", "sender": "mallory", "receiver": "bob", "conversation_id": "c9"}`,
		map[string][]string{"Initiator": {"alice"}, "Participant": {"bob"}})
	got := findingsOf(res)
	require.NotEmpty(t, got)
	assert.Equal(t, finding{3, "error", "PE003", "mallory", ""}, got[0])
	assert.Equal(t, `agent "mallory" plays no role of "fipa-request"; bind it with -bind ROLE=mallory`, res.Findings[0].Message)
	// Reported once per conversation, not per line.
	n := 0
	for _, f := range got {
		if f.Agent == "mallory" {
			n++
		}
	}
	assert.Equal(t, 2, n, "once in c1, once for the conversation it cannot open: %+v", got)
	assert.Contains(t, got, finding{5, "error", "PE001", "mallory", ""})
	assert.NotContains(t, res.Summary.Outcomes, "mallory")
}

// TestCheckTimers checks that timers fire from the lines' times, and only
// from them.
func TestCheckTimers(t *testing.T) {
	request := `{"at": "2026-03-01T10:00:00Z", "performative": "request", "sender": "alice", "receiver": "bob", "conversation_id": "c1", "reply_with": "r1", "reply_by": "30s"}`
	tests := []struct {
		name     string
		policy   string
		trace    string
		findings []finding
		outcomes map[string]string
	}{
		{
			name:     "a reply exactly at the deadline is late",
			policy:   "fipa-request",
			trace:    request + "\n" + `{"at": "30s", "performative": "agree", "sender": "bob", "receiver": "alice", "conversation_id": "c1", "in_reply_to": "r1"}`,
			findings: []finding{{2, "error", "PE004", "bob", "Participant"}, {2, "error", "PE004", "alice", "Initiator"}},
			outcomes: map[string]string{"alice": "timeout", "bob": "timeout"},
		},
		{
			name:   "a reply a nanosecond before the deadline is on time",
			policy: "fipa-request",
			trace: request + "\n" + `{"at": "29.999999999s", "performative": "agree", "sender": "bob", "receiver": "alice", "conversation_id": "c1", "in_reply_to": "r1"}
{"at": "1m", "performative": "inform", "sender": "bob", "receiver": "alice", "conversation_id": "c1", "in_reply_to": "r1", "content": {"done": true}}`,
			outcomes: map[string]string{"alice": "done", "bob": "done"},
		},
		{
			name:   "without reply_by the timer's default applies",
			policy: "fipa-request",
			trace: `{"at": "0s", "performative": "request", "sender": "alice", "receiver": "bob", "conversation_id": "c1"}
{"at": "30s", "performative": "refuse", "sender": "bob", "receiver": "alice", "conversation_id": "c1"}`,
			findings: []finding{{2, "error", "PE004", "bob", "Participant"}, {2, "error", "PE004", "alice", "Initiator"}},
			outcomes: map[string]string{"alice": "timeout", "bob": "timeout"},
		},
		{
			name:     "a timer does not fire when no line comes after its deadline",
			policy:   "fipa-request",
			trace:    request,
			findings: []finding{{1, "info", "TR006", "alice", "Initiator"}, {1, "info", "TR006", "bob", "Participant"}},
			outcomes: map[string]string{"alice": "", "bob": ""},
		},
		{
			name:   "a line of another conversation fires the timer",
			policy: "fipa-request",
			trace: request + "\n" + `{"at": "2026-03-01T10:01:00Z", "performative": "request", "sender": "alice", "receiver": "bob", "conversation_id": "c2", "reply_with": "r2"}
{"at": "2026-03-01T10:01:01Z", "performative": "refuse", "sender": "bob", "receiver": "alice", "conversation_id": "c2", "in_reply_to": "r2"}`,
			outcomes: map[string]string{"alice": "c1=timeout,c2=refused", "bob": "c1=timeout,c2=refused"},
		},
		{
			name:   "a commitment's deadline fires from a later line",
			policy: "fipa-request",
			trace: request + "\n" + `{"at": "2s", "performative": "agree", "sender": "bob", "receiver": "alice", "conversation_id": "c1", "in_reply_to": "r1"}
{"at": "5m2s", "performative": "inform", "sender": "bob", "receiver": "alice", "conversation_id": "c1", "in_reply_to": "r1", "content": {"result": 1}}`,
			findings: []finding{
				{3, "warning", "TR005", "bob", "Participant"}, {3, "warning", "TR005", "alice", "Initiator"},
				{3, "error", "PE004", "bob", "Participant"}, {3, "error", "PE004", "alice", "Initiator"},
			},
			outcomes: map[string]string{"alice": "timeout", "bob": "timeout"},
		},
		{
			name:   "the cfp's deadline closes the proposals",
			policy: "fipa-contract-net",
			trace: `{"at": "0s", "performative": "cfp", "sender": "buyer", "receiver": ["s1", "s2"], "conversation_id": "cn1", "reply_with": "cfp1", "reply_by": "10s"}
{"at": "1s", "performative": "propose", "sender": "s1", "receiver": "buyer", "conversation_id": "cn1", "in_reply_to": "cfp1", "reply_with": "p1"}
{"at": "10s", "performative": "accept-proposal", "sender": "buyer", "receiver": "s1", "conversation_id": "cn1", "in_reply_to": "p1"}
{"performative": "propose", "sender": "s2", "receiver": "buyer", "conversation_id": "cn1", "in_reply_to": "cfp1", "reply_with": "p2"}
{"at": "20s", "performative": "inform", "sender": "s1", "receiver": "buyer", "conversation_id": "cn1", "content": {"done": true}}`,
			findings: []finding{{4, "error", "PE004", "s2", "Participant"}, {4, "error", "PE004", "buyer", "Initiator"}},
			outcomes: map[string]string{"buyer": "done=1,no-bid=1", "s1": "done", "s2": "no-bid"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := check(t, shipped(t, tt.policy), tt.trace, nil)
			assert.Equal(t, tt.findings, findingsOf(res))
			assert.Equal(t, tt.outcomes, res.Summary.Outcomes)
		})
	}
}

func TestCheckSummary(t *testing.T) {
	tests := []struct {
		name     string
		policy   string
		trace    string
		conforms bool
		complete bool
		outcomes map[string]string
	}{
		{
			name:     "an empty trace",
			policy:   "fipa-request",
			conforms: true, complete: true,
			outcomes: map[string]string{},
		},
		{
			name:   "one conversation",
			policy: "fipa-request",
			trace: `{"performative": "request", "sender": "alice", "receiver": "bob", "conversation_id": "c1", "reply_with": "r1"}
{"performative": "refuse", "sender": "bob", "receiver": "alice", "conversation_id": "c1", "in_reply_to": "r1"}`,
			conforms: true, complete: true,
			outcomes: map[string]string{"alice": "refused", "bob": "refused"},
		},
		{
			name:   "two interleaved conversations",
			policy: "fipa-request",
			trace: `{"performative": "request", "sender": "alice", "receiver": "bob", "conversation_id": "c1", "reply_with": "r1"}
{"performative": "request", "sender": "alice", "receiver": "bob", "conversation_id": "c2", "reply_with": "r2"}
{"performative": "inform", "sender": "bob", "receiver": "alice", "conversation_id": "c2", "in_reply_to": "r2", "content": {"result": 2}}
{"performative": "refuse", "sender": "bob", "receiver": "alice", "conversation_id": "c1", "in_reply_to": "r1"}`,
			conforms: true, complete: true,
			outcomes: map[string]string{"alice": "c1=refused,c2=result", "bob": "c1=refused,c2=result"},
		},
		{
			name:   "one conversation unfinished",
			policy: "fipa-request",
			trace: `{"performative": "request", "sender": "alice", "receiver": "bob", "conversation_id": "c1", "reply_with": "r1"}
{"performative": "request", "sender": "alice", "receiver": "bob", "conversation_id": "c2", "reply_with": "r2"}
{"performative": "refuse", "sender": "bob", "receiver": "alice", "conversation_id": "c1", "in_reply_to": "r1"}`,
			conforms: true, complete: false,
			outcomes: map[string]string{"alice": "c1=refused,c2=", "bob": "c1=refused,c2="},
		},
		{
			name:   "a many role: the initiator's outcome counts its sessions'",
			policy: "fipa-contract-net",
			trace: `{"performative": "cfp", "sender": "buyer", "receiver": ["s1", "s2", "s3"], "conversation_id": "cn1", "reply_with": "cfp1"}
{"performative": "refuse", "sender": "s1", "receiver": "buyer", "conversation_id": "cn1", "in_reply_to": "cfp1"}
{"performative": "refuse", "sender": "s2", "receiver": "buyer", "conversation_id": "cn1", "in_reply_to": "cfp1"}
{"performative": "not-understood", "sender": "s3", "receiver": "buyer", "conversation_id": "cn1", "in_reply_to": "cfp1"}`,
			conforms: true, complete: true,
			outcomes: map[string]string{"buyer": "not-understood=1,refused=2", "s1": "refused", "s2": "refused", "s3": "not-understood"},
		},
		{
			name:   "a warning conforms",
			policy: "fipa-request",
			trace: `{"performative": "request", "sender": "alice", "receiver": "bob", "conversation_id": "c1", "reply_with": "r1"}
{"performative": "agree", "sender": "bob", "receiver": "alice", "conversation_id": "c1", "in_reply_to": "r1"}
{"performative": "failure", "sender": "bob", "receiver": "alice", "conversation_id": "c1", "in_reply_to": "r1"}`,
			conforms: true, complete: true,
			outcomes: map[string]string{"alice": "failed", "bob": "failed"},
		},
		{
			name:   "an error does not",
			policy: "fipa-query",
			trace: `{"performative": "query-if", "sender": "ui", "receiver": "db", "conversation_id": "q1", "reply_with": "q1"}
{"performative": "inform", "sender": "db", "receiver": "ui", "conversation_id": "q1", "in_reply_to": "q1", "content": {"holds": "yes"}}`,
			conforms: false, complete: true,
			outcomes: map[string]string{"ui": "answered", "db": "answered"},
		},
		{
			name:   "a format problem does not",
			policy: "fipa-request",
			trace: `{"performative": "request", "sender": "alice", "receiver": "bob", "conversation_id": "c1", "reply_with": "r1"}
{"performative": "refuse", "sender": "bob", "receiver": "alice", "conversation_id": "c1", "in_reply_to": "r1"}
oops`,
			conforms: false, complete: true,
			outcomes: map[string]string{"alice": "refused", "bob": "refused"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := check(t, shipped(t, tt.policy), tt.trace, nil)
			assert.Equal(t, tt.conforms, res.Summary.Conforms, "%+v", res.Findings)
			assert.Equal(t, tt.complete, res.Summary.Complete)
			assert.Equal(t, tt.outcomes, res.Summary.Outcomes)
		})
	}
}

// TestCheckFindings checks what each finding carries: its line, severity,
// code, agent and role, sorted by line.
func TestCheckFindings(t *testing.T) {
	res := check(t, shipped(t, "fipa-request"), `{"at": "0s", "performative": "request", "sender": "alice", "receiver": "bob", "conversation_id": "c1", "reply_with": "r1", "reply_by": "30s"}
{"at": "1s", "performative": "agree", "sender": "alice", "receiver": "bob", "conversation_id": "c1", "in_reply_to": "r1"}
not json
{"at": "2s", "performative": "agree", "sender": "bob", "receiver": "alice", "conversation_id": "c1", "in_reply_to": "r2"}
{"at": "3s", "performative": "refuse", "sender": "bob", "receiver": "alice", "conversation_id": "c1", "in_reply_to": "r1", "content": {"reason": 42}}
{"at": "4s", "performative": "request", "sender": "alice", "receiver": "bob", "conversation_id": "c2", "reply_with": "r3", "content": "paint"}
{"at": "5s", "performative": "agree", "sender": "bob", "receiver": "alice", "conversation_id": "c3"}`, nil)
	assert.Equal(t, []finding{
		{2, "error", "PE002", "alice", "Initiator"},
		{2, "error", "PE002", "bob", "Participant"},
		{3, "error", "TR001", "", ""},
		{4, "error", "PE010", "alice", "Initiator"},
		{5, "error", "PE001", "bob", "Participant"},
		{5, "error", "PE001", "alice", "Initiator"},
		{6, "error", "TR004", "", ""},
		{7, "error", "PE001", "bob", "Participant"},
		{7, "info", "TR006", "alice", "Initiator"},
		{7, "info", "TR006", "bob", "Participant"},
		{7, "info", "TR006", "alice", "Initiator"},
		{7, "info", "TR006", "bob", "Participant"},
	}, findingsOf(res))
	for _, f := range res.Findings {
		assert.NotEmpty(t, f.Message)
		assert.Equal(t, strings.ToLower(f.Message[:1]), f.Message[:1], "messages are lower case: %q", f.Message)
		assert.False(t, strings.HasSuffix(f.Message, "."), "no final period: %q", f.Message)
	}
	assert.Equal(t, `agree from "bob" is in conversation "c3" the trace never opened, and cannot open one (a conversation of "fipa-request" opens with request from Initiator)`, res.Findings[7].Message)
	assert.Equal(t, `the trace ends before "alice" finishes conversation "c1" (in state agreed)`, res.Findings[8].Message)
	assert.Equal(t, `the trace ends before "bob" finishes conversation "c2" (in state requested)`, res.Findings[11].Message)
}

// TestFindingJSON pins the JSON shape of findings: all six keys, always,
// and the severity as a word. It is the regression test for findings
// without an agent (format problems), which used to leave out "agent" and
// "role".
func TestFindingJSON(t *testing.T) {
	b, err := json.Marshal(trace.Finding{Line: 3, Severity: policy.SeverityError, Code: "TR001", Message: "not a trace line"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"line": 3, "severity": "error", "code": "TR001", "message": "not a trace line", "agent": "", "role": ""}`, string(b))

	b, err = json.Marshal(trace.Summary{Conforms: true, Outcomes: map[string]string{"a": "done"}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"conforms": true, "complete": false, "outcomes": {"a": "done"}}`, string(b))
}

func TestCheckPolicyThatDoesNotCompile(t *testing.T) {
	p, _ := policy.LoadYAML("broken.yaml", []byte(`policy: broken
version: 1
roles: [A, B]
messages:
  m: inform
states:
  start:
    - {send: m, from: A, to: B, next: nowhere}
  done: {terminal: done}
`))
	require.NotNil(t, p)
	entries, problems, err := trace.Read(strings.NewReader(`{"performative": "inform", "sender": "a", "receiver": "b"}`))
	require.NoError(t, err)
	res, err := trace.Check(p, entries, problems, trace.Options{})
	assert.Nil(t, res)
	require.Error(t, err)
	var be *trace.BindingError
	assert.NotErrorAs(t, err, &be)
	assert.Contains(t, err.Error(), `policy "broken" does not compile for role "A"`)
}

// TestCheckSummaryBounded is the regression test for a summary that grew
// with every agent and conversation: it lists at most MaxOutcomes agents,
// says how many it left out in a TR011 info finding, and lists at most
// MaxConversationOutcomes conversations per agent.
func TestCheckSummaryBounded(t *testing.T) {
	const n = trace.MaxOutcomes + 20
	var b strings.Builder
	var participants []string
	for i := range n {
		p := fmt.Sprintf("p%03d", i)
		participants = append(participants, p)
		fmt.Fprintf(&b, `{"performative": "request", "sender": "alice", "receiver": %q, "conversation_id": "c%03d", "reply_with": "r%d"}`+"\n", p, i, i)
		fmt.Fprintf(&b, `{"performative": "refuse", "sender": %q, "receiver": "alice", "conversation_id": "c%03d", "in_reply_to": "r%d"}`+"\n", p, i, i)
	}
	res := check(t, shipped(t, "fipa-request"), b.String(), map[string][]string{"Initiator": {"alice"}, "Participant": participants})
	assert.True(t, res.Summary.Conforms)
	assert.True(t, res.Summary.Complete)
	assert.Len(t, res.Summary.Outcomes, trace.MaxOutcomes)
	assert.Equal(t, "c000=refused,c001=refused,c002=refused,c003=refused,c004=refused,c005=refused,c006=refused,c007=refused,c008=refused,c009=refused,… and 110 more",
		res.Summary.Outcomes["alice"])
	assert.Equal(t, "refused", res.Summary.Outcomes["p098"], "alice and the first 99 participants are listed")
	assert.NotContains(t, res.Summary.Outcomes, "p099")
	assert.Equal(t, []finding{{2 * n, "info", trace.CodeOmitted, "", ""}}, findingsOf(res))
	assert.Equal(t, "the summary lists the outcomes of the first 100 agents; 21 more agents are left out", res.Findings[0].Message)
}

// TestCheckTimeGoingBackIsAWarning checks that a line whose at is before
// the line before it is a warning: the trace still conforms, and the
// line is checked as happening when the line before did.
func TestCheckTimeGoingBackIsAWarning(t *testing.T) {
	res := check(t, shipped(t, "fipa-request"), `{"at": "2026-03-01T10:00:00Z", "performative": "request", "sender": "alice", "receiver": "bob", "conversation_id": "c1", "reply_with": "r1", "reply_by": "30s"}
{"at": "20s", "performative": "agree", "sender": "bob", "receiver": "alice", "conversation_id": "c1", "in_reply_to": "r1"}
{"at": "10s", "performative": "inform", "sender": "bob", "receiver": "alice", "conversation_id": "c1", "in_reply_to": "r1", "content": {"done": true}}`, nil)
	assert.True(t, res.Summary.Conforms, "%+v", res.Findings)
	assert.Equal(t, []finding{{3, "warning", trace.CodeBackwards, "", ""}}, findingsOf(res))
	assert.Equal(t, "at 2026-03-01T10:00:10Z is before 2026-03-01T10:00:20Z, the time of the line before; the line is read as happening then", res.Findings[0].Message)
}

// treadmill's timeouts lead from state to state without time passing once
// the request's reply_by is past: its timer is due again as soon as it is
// armed.
const treadmill = `policy: treadmill
version: 1
roles: [A, B]
messages:
  go: request
  stop: inform
timers:
  t: {deadline: go.reply_by, default: 10s}
states:
  start:
    - {send: go, from: A, to: B, next: left}
  left:
    arm: t
    on:
      - {timeout: t, next: right}
      - {send: stop, from: B, to: A, next: done}
  right:
    arm: t
    on:
      - {timeout: t, next: left}
      - {send: stop, from: B, to: A, next: done}
  done: {terminal: done}
`

// TestCheckTimeoutsWithoutTimePassingStop is the regression test for a
// policy whose timeouts fire one another for ever at one instant: Check
// used to fire them without end. It stops at the line that finds the
// handlers past Options.MaxSteps, with a TR007 error.
func TestCheckTimeoutsWithoutTimePassingStop(t *testing.T) {
	entries, problems, err := trace.Read(strings.NewReader(`{"at": "0s", "performative": "request", "sender": "a", "receiver": "b", "conversation_id": "c1", "reply_by": "1s"}
{"at": "5s", "performative": "inform", "sender": "b", "receiver": "a", "conversation_id": "c1"}
{"at": "6s", "performative": "inform", "sender": "b", "receiver": "a", "conversation_id": "c1"}`))
	require.NoError(t, err)
	res, err := trace.Check(inline(t, treadmill), entries, problems, trace.Options{MaxSteps: 1000})
	require.NoError(t, err)
	assert.Equal(t, []finding{
		{2, "error", trace.CodeLimit, "", ""},
		{2, "info", trace.CodeUnfinished, "a", "A"},
		{2, "info", trace.CodeUnfinished, "b", "B"},
	}, findingsOf(res))
	assert.Equal(t, "checking stops here: the handlers have taken more than the limit of 1000 inputs (messages, and timers that fired), as when timeouts lead from state to state without time passing; this line and the ones after it are not checked", res.Findings[0].Message)
	assert.False(t, res.Summary.Conforms)
	assert.False(t, res.Summary.Complete)
}

// TestCheckManyTimersAtOnce checks that more timers than the driver
// fires in one call (engine.DefaultStepLimit) all fire when one line
// passes their deadline: Check calls the driver again.
func TestCheckManyTimersAtOnce(t *testing.T) {
	const n = engine.DefaultStepLimit/2 + 1 // two handlers each: more timers than one call fires
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"at": "2026-03-01T10:00:00Z", "performative": "request", "sender": "alice", "receiver": "p%d", "conversation_id": "c%d", "reply_by": "2026-03-01T10:00:30Z"}`+"\n", i, i)
	}
	b.WriteString(`{"at": "2026-03-01T10:01:00Z", "performative": "request", "sender": "alice", "receiver": "p0", "conversation_id": "last"}` + "\n")
	entries, problems, err := trace.Read(strings.NewReader(b.String()))
	require.NoError(t, err)
	require.Empty(t, problems)
	participants := make([]string, n)
	for i := range participants {
		participants[i] = fmt.Sprintf("p%d", i)
	}
	res, err := trace.Check(shipped(t, "fipa-request"), entries, nil, trace.Options{Bind: map[string][]string{"Initiator": {"alice"}, "Participant": participants}})
	require.NoError(t, err)
	assert.Equal(t, []finding{
		{n + 1, "info", trace.CodeUnfinished, "alice", "Initiator"},
		{n + 1, "info", trace.CodeUnfinished, "p0", "Participant"},
		{n + 1, "info", trace.CodeOmitted, "", ""},
	}, findingsOf(res), "every conversation but the last timed out")
	assert.Equal(t, "c0=timeout,last=", res.Summary.Outcomes["p0"])
	assert.Equal(t, "timeout", res.Summary.Outcomes["p1"])
}

// TestCheckTimerLines checks the lines a journal writes for timers that
// fired: each moves the clock to its time, and must name a timer of its
// agent's that fired then in its conversation.
func TestCheckTimerLines(t *testing.T) {
	request := `{"at": "2026-03-01T10:00:00Z", "performative": "request", "sender": "alice", "receiver": "bob", "conversation_id": "c1", "reply_with": "r1", "reply_by": "30s"}`
	agree := `{"at": "1s", "performative": "agree", "sender": "bob", "receiver": "alice", "conversation_id": "c1", "in_reply_to": "r1"}`
	timer := func(at, agent, name string) string {
		return fmt.Sprintf(`{"at": %q, "timer": %q, "agent": %q, "conversation_id": "c1"}`, at, name, agent)
	}
	tests := []struct {
		name     string
		trace    string
		bind     map[string][]string
		findings []finding
		complete bool
		outcomes map[string]string
		message  string // of the first finding, when set
	}{
		{
			name:     "a timeout after the last message is seen",
			trace:    request + "\n" + timer("30s", "alice", "reply"),
			complete: true,
			outcomes: map[string]string{"alice": "timeout", "bob": "timeout"},
		},
		{
			name:     "both agents' timers, in either order",
			trace:    request + "\n" + timer("30s", "bob", "reply") + "\n" + timer("30s", "alice", "reply"),
			complete: true,
			outcomes: map[string]string{"alice": "timeout", "bob": "timeout"},
		},
		{
			name:     "a commitment's timer",
			trace:    request + "\n" + agree + "\n" + timer("5m1s", "bob", "result"),
			complete: true,
			findings: []finding{{3, "warning", "TR005", "bob", "Participant"}, {3, "warning", "TR005", "alice", "Initiator"}},
			outcomes: map[string]string{"alice": "timeout", "bob": "timeout"},
		},
		{
			name: "a timer line written after a later line of another agent's",
			trace: request + "\n" + `{"at": "10s", "performative": "request", "sender": "alice", "receiver": "bob", "conversation_id": "c2", "reply_by": "1m"}` + "\n" +
				`{"at": "30.5s", "performative": "refuse", "sender": "bob", "receiver": "alice", "conversation_id": "c2"}` + "\n" + timer("30s", "alice", "reply"),
			complete: true,
			outcomes: map[string]string{"alice": "c1=timeout,c2=refused", "bob": "c1=timeout,c2=refused"},
		},
		{
			name:     "before the deadline",
			trace:    request + "\n" + timer("29s", "alice", "reply"),
			findings: []finding{{2, "error", "TR012", "alice", "Initiator"}, {2, "info", "TR006", "alice", "Initiator"}, {2, "info", "TR006", "bob", "Participant"}},
			outcomes: map[string]string{"alice": "", "bob": ""},
			message:  `the trace says timer "reply" of "alice" fired in conversation "c1" at 2026-03-01T10:00:29Z, but the policy fires no such timer then (in state requested)`,
		},
		{
			name:     "after the deadline",
			trace:    request + "\n" + timer("31s", "alice", "reply"),
			findings: []finding{{2, "error", "TR012", "alice", "Initiator"}},
			complete: true,
			outcomes: map[string]string{"alice": "timeout", "bob": "timeout"},
			message:  `the trace says timer "reply" of "alice" fired in conversation "c1" at 2026-03-01T10:00:31Z, but the policy fires no such timer then: the conversation had ended with outcome timeout`,
		},
		{
			name:     "one firing answers one line",
			trace:    request + "\n" + timer("30s", "alice", "reply") + "\n" + timer("30s", "alice", "reply"),
			findings: []finding{{3, "error", "TR012", "alice", "Initiator"}},
			complete: true,
			outcomes: map[string]string{"alice": "timeout", "bob": "timeout"},
		},
		{
			name:     "a timer the state does not arm",
			trace:    request + "\n" + timer("30s", "alice", "result"),
			findings: []finding{{2, "error", "TR012", "alice", "Initiator"}},
			complete: true,
			outcomes: map[string]string{"alice": "timeout", "bob": "timeout"},
		},
		{
			name:     "a timer the policy does not have",
			trace:    request + "\n" + timer("30s", "alice", "patience"),
			findings: []finding{{2, "error", "TR012", "alice", "Initiator"}},
			complete: true,
			outcomes: map[string]string{"alice": "timeout", "bob": "timeout"},
			message:  `the trace says timer "patience" of "alice" fired in conversation "c1" at 2026-03-01T10:00:30Z, but policy "fipa-request" has no timer "patience"`,
		},
		{
			name:     "an agent the trace does not bind",
			trace:    request + "\n" + timer("30s", "mallory", "reply"),
			findings: []finding{{2, "error", "TR012", "mallory", ""}},
			complete: true,
			outcomes: map[string]string{"alice": "timeout", "bob": "timeout"},
			message:  `the trace says timer "reply" of "mallory" fired in conversation "c1" at 2026-03-01T10:00:30Z, but "mallory" plays no role of "fipa-request"`,
		},
		{
			name:     "an agent of another conversation",
			trace:    request + "\n" + strings.ReplaceAll(strings.ReplaceAll(request, `"bob"`, `"carol"`), `"c1"`, `"c2"`) + "\n" + timer("30s", "carol", "reply"),
			bind:     map[string][]string{"Participant": {"bob", "carol"}},
			findings: []finding{{3, "error", "TR012", "carol", "Participant"}},
			complete: true,
			outcomes: map[string]string{"alice": "c1=timeout,c2=timeout", "bob": "timeout", "carol": "timeout"},
			message:  `the trace says timer "reply" of "carol" fired in conversation "c1" at 2026-03-01T10:00:30Z, but "carol" takes no part in it`,
		},
		{
			name:     "a conversation the trace never opened",
			trace:    request + "\n" + strings.Replace(timer("30s", "alice", "reply"), `"c1"`, `"c9"`, 1),
			findings: []finding{{2, "error", "TR012", "alice", "Initiator"}},
			complete: true,
			outcomes: map[string]string{"alice": "timeout", "bob": "timeout"},
			message:  `the trace says timer "reply" of "alice" fired in conversation "c9" at 2026-03-01T10:00:30Z, but the trace never opened that conversation`,
		},
		{
			name:     "a many role's sessions each fire theirs",
			trace:    `{"at": "0s", "performative": "cfp", "sender": "buyer", "receiver": ["s1", "s2"], "conversation_id": "c1", "reply_with": "cfp1", "reply_by": "10s"}` + "\n" + timer("10s", "buyer", "proposals") + "\n" + timer("10s", "buyer", "proposals") + "\n" + timer("10s", "buyer", "proposals"),
			findings: []finding{{4, "error", "TR012", "buyer", "Initiator"}},
			complete: true,
			outcomes: map[string]string{"buyer": "no-bid=2", "s1": "no-bid", "s2": "no-bid"},
			message:  `the trace says timer "proposals" of "buyer" fired in conversation "c1" at 2000-01-01T00:00:10Z, but the policy fires no such timer then: the conversation had ended with outcome no-bid=2`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := "fipa-request"
			if strings.Contains(tt.trace, "cfp") {
				p = "fipa-contract-net"
			}
			res := check(t, shipped(t, p), tt.trace, tt.bind)
			assert.Equal(t, tt.findings, findingsOf(res))
			assert.Equal(t, tt.complete, res.Summary.Complete)
			assert.Equal(t, !slices.ContainsFunc(tt.findings, func(f finding) bool { return f.Severity == "error" }), res.Summary.Conforms)
			assert.Equal(t, tt.outcomes, res.Summary.Outcomes)
			if tt.message != "" {
				require.NotEmpty(t, res.Findings)
				assert.Equal(t, tt.message, res.Findings[0].Message)
			}
		})
	}
}

// TestCheckTimerLinesBindNoOne checks that the agent of a timer line is
// not bound by it: a trace whose first line is a timer line binds from
// its first message line.
func TestCheckTimerLinesBindNoOne(t *testing.T) {
	res := check(t, shipped(t, "fipa-request"), `{"at": "2026-03-01T10:00:00Z", "timer": "reply", "agent": "zed"}
{"performative": "request", "sender": "alice", "receiver": "bob", "conversation_id": "c1", "reply_with": "r1"}
{"performative": "refuse", "sender": "bob", "receiver": "alice", "conversation_id": "c1", "in_reply_to": "r1"}`, nil)
	assert.Equal(t, []finding{{1, "error", "TR012", "zed", ""}}, findingsOf(res))
	assert.Equal(t, map[string]string{"alice": "refused", "bob": "refused"}, res.Summary.Outcomes)
}

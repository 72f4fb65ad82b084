package policy_test

import (
	"testing"
)

// pingYAML is a policy with a loop: the Monitor pings until the Service
// reports it is stopping.
const pingYAML = `policy: ping
version: 1
roles: [Monitor, Service]
messages:
  ping: query-if
  pong: {performative: inform, fields: {healthy: bool}}
  stopping: {performative: inform, fields: {reason: string}, match: '"reason" in content'}
timers:
  interval: {after: 10s}
states:
  start:
    - {send: ping, from: Monitor, to: Service, next: waiting}
  waiting:
    - {send: pong, from: Service, to: Monitor, next: idle}
    - {send: stopping, from: Service, to: Monitor, next: stopped}
  idle:
    arm: interval
    on:
      - {timeout: interval, next: start}
  stopped: {terminal: done}
`

func TestCheckInitialState(t *testing.T) {
	runCheckCases(t, []checkCase{
		{name: "the first state by default"},
		{
			name:  "an explicit initial state other than the first",
			edits: []edit{{"states:\n  start:\n", "initial: start\nstates:\n  done: {terminal: done}\n  start:\n"}, {"  done: {terminal: done}\n  refused", "  refused"}},
		},
		{
			name:  "undeclared initial state",
			edits: []edit{{"states:\n", "initial: strat\nstates:\n"}},
			want:  []string{`test.yaml:11:10: error: initial state "strat" is not declared; did you mean "start"? [CP011]`},
		},
		{
			name:  "terminal initial state: the states it cuts off are not reported again",
			edits: []edit{{"states:\n", "initial: done\nstates:\n"}},
			want:  []string{`test.yaml:11:10: error: initial state "done" is terminal, so no message can ever be exchanged [CP011]`},
		},
		{
			name: "XML: no initial attribute means the first state",
			src:  xmlBase,
		},
		{
			name:  "XML: undeclared initial attribute",
			src:   xmlBase,
			edits: []edit{{`<policy name="test" version="1">`, `<policy name="test" version="1" initial="begin">`}},
			want:  []string{`test.xml:1:42: error: initial state "begin" is not declared [CP011]`},
		},
	})
}

func TestCheckTerminalStates(t *testing.T) {
	runCheckCases(t, []checkCase{
		{name: "a loop with an exit", src: pingYAML},
		{
			name:  "no terminal state: the loop is not reported again as CP014",
			src:   pingYAML,
			edits: []edit{{"    - {send: stopping, from: Service, to: Monitor, next: stopped}\n", ""}, {"  stopped: {terminal: done}\n", ""}, {"  stopping: {performative: inform, fields: {reason: string}, match: '\"reason\" in content'}\n", ""}},
			want:  []string{`test.yaml:1:9: error: policy "ping" has no terminal state, so no conversation can end; add one such as done: {terminal: done} [CP012]`},
		},
		{
			name:  "a terminal state only the XML kind attribute declares",
			src:   xmlBase,
			edits: []edit{{`<state name="refused" outcome="refused"/>`, `<state name="refused" kind="terminal" outcome="refused"/>`}},
		},
	})
}

func TestCheckReachability(t *testing.T) {
	runCheckCases(t, []checkCase{
		{name: "every state reachable"},
		{
			name:  "a leftover terminal state",
			edits: []edit{{"  timed-out: {terminal: timeout}\n", "  timed-out: {terminal: timeout}\n  cancelled: {terminal: cancelled}\n"}},
			want:  []string{`test.yaml:25:3: warning: state "cancelled" is unreachable from the initial state "start" [CP013]`},
		},
		{
			name:  "an island of states reaching each other but not reached",
			edits: []edit{{"  done: {terminal: done}\n", "  done: {terminal: done}\n  island:\n    - {send: agree, from: Participant, to: Initiator, next: shore}\n  shore:\n    - {send: refuse, from: Participant, to: Initiator, next: done}\n"}},
			want: []string{
				`test.yaml:23:3: warning: state "island" is unreachable from the initial state "start" [CP013]`,
				`test.yaml:25:3: warning: state "shore" is unreachable from the initial state "start" [CP013]`,
			},
		},
		{
			name: "a state reached only through a loop back is reachable",
			src:  pingYAML,
		},
		{
			name:  "nothing is reported unreachable when the initial state is unresolved",
			edits: []edit{{"states:\n", "initial: begin\nstates:\n"}},
			want:  []string{`test.yaml:11:10: error: initial state "begin" is not declared [CP011]`},
		},
	})
}

func TestCheckDeadEnds(t *testing.T) {
	runCheckCases(t, []checkCase{
		{name: "terminal states need no transitions"},
		{
			name:  "a state with an empty list of transitions",
			edits: []edit{{"  agreed:\n    - {send: inform-result, from: Participant, to: Initiator, next: done}\n", "  agreed: []\n"}},
			want: []string{
				`test.yaml:8:3: warning: message type "inform-result" is never sent [CP022]`,
				`test.yaml:20:3: error: normal state "agreed" has no transitions, so a conversation that enters it never ends; add transitions or make it terminal [CP015]`,
				`test.yaml:21:3: warning: state "done" is unreachable from the initial state "start" [CP013]`,
			},
		},
		{
			name:  "a state whose on list is empty",
			edits: []edit{{"  agreed:\n    - {send: inform-result, from: Participant, to: Initiator, next: done}\n", "  agreed:\n    on:\n"}},
			want: []string{
				`test.yaml:8:3: warning: message type "inform-result" is never sent [CP022]`,
				`test.yaml:20:3: error: normal state "agreed" has no transitions, so a conversation that enters it never ends; add transitions or make it terminal [CP015]`,
				`test.yaml:22:3: warning: state "done" is unreachable from the initial state "start" [CP013]`,
			},
		},
		{
			name:  "an in-child state with no child-return",
			src:   purchaseYAML,
			edits: []edit{{"    on:\n      - {return: agreement, next: bought}\n      - {return: no-deal, next: declined}\n", ""}},
			want: []string{
				`test.yaml:14:3: error: in-child state "negotiating" has no transitions, so a conversation that enters it never ends; add transitions or make it terminal [CP015]`,
				`test.yaml:18:3: warning: state "bought" is unreachable from the initial state "start" [CP013]`,
			},
		},
	})
}

func TestCheckTermination(t *testing.T) {
	runCheckCases(t, []checkCase{
		{name: "a loop with an exit", src: pingYAML},
		{
			name: "a loop with no exit, reported once at the first state met",
			src: `policy: ping
version: 1
roles: [Monitor, Service]
messages:
  ping: query-if
  pong: {performative: inform, fields: {healthy: bool}}
  stopping: {performative: inform, fields: {reason: string}, match: '"reason" in content'}
timers:
  interval: {after: 10s}
states:
  start:
    - {send: stopping, from: Service, to: Monitor, next: stopped}
    - {send: ping, from: Monitor, to: Service, next: waiting}
  waiting:
    - {send: pong, from: Service, to: Monitor, next: idle}
  idle:
    arm: interval
    on:
      - {timeout: interval, next: pinging}
  pinging:
    - {send: ping, from: Monitor, to: Service, next: waiting}
  stopped: {terminal: done}
`,
			want: []string{
				`test.yaml:14:3: error: no terminal state can be reached from state "waiting" (nor from "idle", "pinging" it leads to): a conversation that enters it never ends; add a transition to a terminal state [CP014]`,
			},
		},
		{
			name:  "a self-loop with no exit",
			edits: []edit{{"{send: inform-result, from: Participant, to: Initiator, next: done}", "{send: inform-result, from: Participant, to: Initiator, next: agreed}"}},
			want: []string{
				`test.yaml:20:3: error: no terminal state can be reached from state "agreed": a conversation that enters it never ends; add a transition to a terminal state [CP014]`,
				`test.yaml:22:3: warning: state "done" is unreachable from the initial state "start" [CP013]`,
			},
		},
		{
			name:  "an unreachable loop is only unreachable",
			edits: []edit{{"  done: {terminal: done}\n", "  done: {terminal: done}\n  spin:\n    - {send: agree, from: Participant, to: Initiator, next: spin}\n"}},
			want:  []string{`test.yaml:23:3: warning: state "spin" is unreachable from the initial state "start" [CP013]`},
		},
		{
			name:  "a state whose only way out is unresolved is not also a trap",
			edits: []edit{{"{send: inform-result, from: Participant, to: Initiator, next: done}", "{send: inform-result, from: Participant, to: Initiator, next: dnoe}"}},
			want:  []string{`test.yaml:21:69: error: state "dnoe" is not declared; did you mean "done"? [CP010]`},
		},
		{
			name:  "a timeout is a way out",
			edits: []edit{{"  agreed:\n    - {send: inform-result, from: Participant, to: Initiator, next: done}\n", "  agreed:\n    arm: reply\n    on:\n      - {send: inform-result, from: Participant, to: Initiator, next: agreed}\n      - {timeout: reply, next: done}\n"}},
		},
	})
}

package policy_test

import "testing"

func TestCheckDeterminism(t *testing.T) {
	runCheckCases(t, []checkCase{
		{name: "clean"},
		{
			name: "two inform types with different match rules are deterministic",
			edits: []edit{
				{"  inform-result: {performative: inform, fields: {result: any}}\n", `  inform-result: {performative: inform, fields: {result: any}, match: '"result" in content'}
  inform-done: {performative: inform, fields: {done: optional bool}, match: '!("result" in content)'}
`},
				{"    - {send: inform-result, from: Participant, to: Initiator, next: done}\n", "    - {send: inform-result, from: Participant, to: Initiator, next: done}\n    - {send: inform-done, from: Participant, to: Initiator, next: done}\n"},
			},
		},
		{
			name: "two inform types without match rules cannot be told apart",
			edits: []edit{
				{"  inform-result: {performative: inform, fields: {result: any}}\n", "  inform-result: {performative: inform, fields: {result: any}}\n  inform-done: {performative: inform, fields: {done: optional bool}}\n"},
				{"    - {send: inform-result, from: Participant, to: Initiator, next: done}\n", "    - {send: inform-result, from: Participant, to: Initiator, next: done}\n    - {send: inform-done, from: Participant, to: Initiator, next: done}\n"},
			},
			want: []string{`test.yaml:23:7: error: in state "agreed", "Initiator" cannot tell "inform-result" from "inform-done": both are inform messages from "Participant" and neither has a match rule; add match to one of the message types [CP016]`},
			related: []string{
				"test.yaml:22:7: the other transition",
				"test.yaml:9:3: message type \"inform-done\"",
			},
		},
		{
			name: "two inform types with the same match rule cannot be told apart",
			edits: []edit{
				{"  inform-result: {performative: inform, fields: {result: any}}\n", `  inform-result: {performative: inform, fields: {result: any}, match: '"result" in content'}
  inform-done: {performative: inform, fields: {result: any}, match: '"result" in content'}
`},
				{"    - {send: inform-result, from: Participant, to: Initiator, next: done}\n", "    - {send: inform-result, from: Participant, to: Initiator, next: done}\n    - {send: inform-done, from: Participant, to: Initiator, next: done}\n"},
			},
			want:    []string{`test.yaml:23:7: error: in state "agreed", "Initiator" cannot tell "inform-result" from "inform-done": both are inform messages from "Participant" with the same match rule [CP016]`},
			related: []string{"test.yaml:22:7: the other transition"},
		},
		{
			// A type with a match rule is tried before one without: the
			// one without is the fallback, so the pair is deterministic.
			name: "a match rule tells a type apart from one without",
			edits: []edit{
				{"  inform-result: {performative: inform, fields: {result: any}}\n", `  inform-result: {performative: inform, fields: {result: any}, match: '"result" in content'}
  inform-done: inform
`},
				{"    - {send: inform-result, from: Participant, to: Initiator, next: done}\n", "    - {send: inform-result, from: Participant, to: Initiator, next: done}\n    - {send: inform-done, from: Participant, to: Initiator, next: done}\n"},
			},
		},
		{
			name: "the same performative from different senders is deterministic",
			edits: []edit{
				{"  agree: agree\n", "  agree: agree\n  cancel: {performative: cancel}\n  withdraw: {performative: cancel}\n"},
				{"      - {timeout: reply, next: timed-out}\n", "      - {timeout: reply, next: timed-out}\n      - {send: cancel, from: Initiator, to: Participant, next: refused}\n"},
				{"    - {send: inform-result, from: Participant, to: Initiator, next: done}\n", "    - {send: inform-result, from: Participant, to: Initiator, next: done}\n    - {send: withdraw, from: Participant, to: Initiator, next: refused}\n    - {send: cancel, from: Initiator, to: Participant, next: refused}\n"},
			},
		},
		{
			name:  "a guarded duplicate trigger is not shadowed",
			edits: []edit{{"      - {send: agree, from: Participant, to: Initiator, next: agreed}\n", "      - {send: agree, from: Participant, to: Initiator, guard: content.price > 100, next: agreed}\n      - {send: agree, from: Participant, to: Initiator, guard: content.price <= 100, next: done}\n"}},
		},
		{
			name:  "an unguarded fallback after a guarded transition is not shadowed",
			edits: []edit{{"      - {send: agree, from: Participant, to: Initiator, next: agreed}\n", "      - {send: agree, from: Participant, to: Initiator, guard: content.price == 0, next: done}\n      - {send: agree, from: Participant, to: Initiator, next: agreed}\n"}},
		},
		{
			name:    "a transition after an unguarded one with the same message and next state is shadowed",
			edits:   []edit{{"      - {send: agree, from: Participant, to: Initiator, next: agreed}\n", "      - {send: agree, from: Participant, to: Initiator, next: agreed}\n      - {send: agree, from: Participant, to: Initiator, guard: content.price == 0, next: agreed}\n"}},
			want:    []string{`test.yaml:18:9: warning: this send-message transition in state "requested" is never taken: an earlier one with the same message ("agree" from "Participant" to "Initiator") and no guard always matches first [CP017]`},
			related: []string{"test.yaml:17:9: the earlier transition"},
		},
		{
			name:    "the same message twice leading to different states is an error",
			edits:   []edit{{"      - {send: agree, from: Participant, to: Initiator, next: agreed}\n", "      - {send: agree, from: Participant, to: Initiator, next: agreed}\n      - {send: agree, from: Participant, to: Initiator, guard: content.price == 0, next: done}\n"}},
			want:    []string{`test.yaml:18:9: error: state "requested" has the same message ("agree" from "Participant" to "Initiator") twice, leading to "agreed" and to "done": the earlier one has no guard and always matches first, so this branch can never be taken; give the earlier one a guard, or send another message here [CP016]`},
			related: []string{"test.yaml:17:9: the earlier transition"},
		},
		{
			name:  "a second handler of the same timer is shadowed",
			edits: []edit{{"      - {timeout: reply, next: timed-out}\n", "      - {timeout: reply, next: timed-out}\n      - {timeout: reply, next: refused}\n"}},
			want:  []string{`test.yaml:20:9: warning: this on-timeout transition in state "requested" is never taken: an earlier one with the same timer ("reply") and no guard always matches first [CP017]`},
		},
		{
			name: "a second handler of the same child outcome is shadowed",
			src:  purchaseYAML,
			edits: []edit{{"      - {return: no-deal, next: declined}\n",
				"      - {return: no-deal, next: declined}\n      - {return: no-deal, next: bought}\n"}},
			want: []string{`test.yaml:21:9: warning: this child-return transition in state "negotiating" is never taken: an earlier one with the same outcome ("no-deal") and no guard always matches first [CP017]`},
		},
		{
			name: "two choices of one sender with the same key to different receivers",
			src: `policy: test
version: 1
roles: [Buyer, Seller, Bank]
messages:
  order: request
  pay: {performative: request, fields: {amount: number}}
  confirm: confirm
states:
  start:
    - {send: order, from: Buyer, to: Seller, next: ordered}
  ordered:
    - {send: pay, from: Buyer, to: Seller, key: settle, next: paid}
    - {send: pay, from: Buyer, to: Bank, key: settle, next: paid}
  paid:
    - {send: confirm, from: Seller, to: Buyer, next: done}
    - {send: confirm, from: Bank, to: Buyer, next: done}
  done: {terminal: done}
`,
			want:    []string{`test.yaml:13:7: error: state "ordered" offers "Buyer" two choices named "settle" ("pay" to "Seller" and "pay" to "Bank"); give one a distinct key [CP016]`},
			related: []string{"test.yaml:12:7: the other choice"},
		},
		{
			name:  "two choices of one sender with the same key for different messages",
			edits: []edit{{"      - {send: agree, from: Participant, to: Initiator, next: agreed}\n      - {send: refuse, from: Participant, to: Initiator, next: refused}\n", "      - {send: agree, from: Participant, to: Initiator, key: answer, next: agreed}\n      - {send: refuse, from: Participant, to: Initiator, key: answer, next: refused}\n"}},
			want:  []string{`test.yaml:18:9: error: state "requested" offers "Participant" two choices named "answer" ("agree" to "Initiator" and "refuse" to "Initiator"); give one a distinct key [CP016]`},
		},
		{
			name:  "two guarded choices of one message with distinct keys",
			edits: []edit{{"      - {send: agree, from: Participant, to: Initiator, next: agreed}\n", "      - {send: agree, from: Participant, to: Initiator, key: agree-now, guard: content.price > 100, next: agreed}\n      - {send: agree, from: Participant, to: Initiator, key: agree-later, guard: content.price <= 100, next: agreed}\n"}},
		},
	})
}

func TestCheckReflexiveMessages(t *testing.T) {
	runCheckCases(t, []checkCase{
		{name: "clean"},
		{
			name:  "a role sending to itself",
			edits: []edit{{"{send: refuse, from: Participant, to: Initiator,", "{send: refuse, from: Participant, to: Participant,"}},
			want:  []string{`test.yaml:18:47: error: role "Participant" sends "refuse" to itself; a message goes from one role to another [CP018]`},
		},
		{
			name: "a many role sending to its own kind is still reflexive",
			src: `policy: test
version: 1
roles:
  Coordinator: {}
  Peer: {many: true}
messages:
  call: cfp
  gossip: inform
states:
  start:
    - {send: call, from: Coordinator, to: Peer, next: called}
  called:
    - {send: gossip, from: Peer, to: Peer, next: done}
  done: {terminal: done}
`,
			want: []string{`test.yaml:13:38: error: role "Peer" sends "gossip" to itself; a message goes from one role to another [CP018]`},
		},
	})
}

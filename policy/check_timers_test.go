package policy_test

import "testing"

// contractNetYAML is a small Contract Net: the Participant role is many,
// and the Initiator decides on all proposals at once in a join state.
const contractNetYAML = `policy: test
version: 1
roles:
  Initiator: {}
  Participant: {many: true}
messages:
  cfp: {performative: cfp, fields: {task: string}}
  propose: {performative: propose, fields: {price: number}}
  refuse: refuse
  accept: accept-proposal
  reject: reject-proposal
timers:
  bids: {after: 1m}
states:
  start:
    - {send: cfp, from: Initiator, to: Participant, next: called}
  called:
    - {send: propose, from: Participant, to: Initiator, next: proposed}
    - {send: refuse, from: Participant, to: Initiator, next: refused}
  proposed:
    join: true
    arm: bids
    on:
      - {send: accept, from: Initiator, to: Participant, next: accepted}
      - {send: reject, from: Initiator, to: Participant, next: rejected}
  accepted: {terminal: accepted}
  rejected: {terminal: rejected}
  refused: {terminal: refused}
`

func TestCheckTimers(t *testing.T) {
	runCheckCases(t, []checkCase{
		{name: "clean"},
		{
			name:  "armed but not handled",
			edits: []edit{{"      - {timeout: reply, next: timed-out}\n", ""}, {"  timed-out: {terminal: timeout}\n", ""}},
			want:  []string{`test.yaml:15:10: warning: state "requested" arms timer "reply" but has no on-timeout transition for it, so its expiry does nothing [CP020]`},
		},
		{
			name: "a join state's timer ends the wait without a transition",
			src:  contractNetYAML,
		},
		{
			name:  "handled but not armed, though an earlier state arms it",
			edits: []edit{{"    - {send: inform-result, from: Participant, to: Initiator, next: done}\n", "    - {send: inform-result, from: Participant, to: Initiator, next: done}\n    - {timeout: reply, next: timed-out}\n"}},
			want:  []string{`test.yaml:22:17: error: state "agreed" handles timer "reply" but does not arm it, so this transition can never be taken; add arm: reply to the state [CP021]`},
		},
		{
			name: "a timer armed by several states",
			edits: []edit{{"  agreed:\n    - {send: inform-result, from: Participant, to: Initiator, next: done}\n",
				"  agreed:\n    arm: reply\n    on:\n      - {send: inform-result, from: Participant, to: Initiator, next: done}\n      - {timeout: reply, next: timed-out}\n"}},
		},
		{
			name:  "deadline from the ACL reply_by with a default",
			edits: []edit{{"reply: {after: 30s}", "reply: {deadline: request.reply_by, default: 30s}"}},
		},
		{
			name:  "deadline from the ACL reply_by without a default",
			edits: []edit{{"reply: {after: 30s}", "reply: {deadline: request.reply_by}"}},
			want:  []string{`test.yaml:10:3: error: timer "reply" needs a default duration for when "request.reply_by" is absent; every wait must be bounded [CP031]`},
		},
		{
			name:  "deadline from an optional time field without a default",
			edits: []edit{{"reply: {after: 30s}", "reply: {deadline: request.due}"}},
			want:  []string{`test.yaml:10:3: error: timer "reply" needs a default duration for when "request.due" is absent; every wait must be bounded [CP031]`},
		},
		{
			name:  "deadline from a required time field needs no default",
			edits: []edit{{"due: optional time", "due: time"}, {"reply: {after: 30s}", "reply: {deadline: request.due}"}},
		},
		{
			name:  "deadline from a field that is not a time",
			edits: []edit{{"reply: {after: 30s}", "reply: {deadline: request.price, default: 30s}"}},
			want:  []string{`test.yaml:10:21: error: timer "reply" reads "request.price", which is a number, not a time [CP031]`},
		},
		{
			name:  "deadline from a field the message type does not have",
			edits: []edit{{"reply: {after: 30s}", "reply: {deadline: request.deu, default: 30s}"}},
			want:  []string{`test.yaml:10:21: error: timer "reply" reads "request.deu", but message type "request" has no field "deu" (a deadline reads reply_by or a time field); did you mean "due"? [CP031]`},
		},
		{
			name:  "deadline misspelling reply_by",
			edits: []edit{{"reply: {after: 30s}", "reply: {deadline: request.replyby, default: 30s}"}},
			want:  []string{`test.yaml:10:21: error: timer "reply" reads "request.replyby", but message type "request" has no field "replyby" (a deadline reads reply_by or a time field); did you mean "reply_by"? [CP031]`},
		},
		{
			name:  "deadline from an undeclared message is only unresolved",
			edits: []edit{{"reply: {after: 30s}", "reply: {deadline: query.reply_by}"}},
			want:  []string{`test.yaml:10:21: error: message type "query" is not declared [CP010]`},
		},
	})
}

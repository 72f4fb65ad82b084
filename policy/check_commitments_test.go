package policy_test

import "testing"

// commitment adds a commitment (one flow mapping) to baseYAML.
func commitment(body string) edit {
	return edit{"states:\n", "commitments:\n  perform: {" + body + "}\nstates:\n"}
}

func TestCheckCommitments(t *testing.T) {
	runCheckCases(t, []checkCase{
		{
			name:  "created by the debtor's agree, discharged by its result",
			edits: []edit{commitment("debtor: Participant, creditor: Initiator, create: agree, discharge: inform-result")},
		},
		{
			name:  "detached by the creditor, released by the creditor, cancelled by the debtor",
			edits: []edit{commitment("debtor: Participant, creditor: Initiator, create: agree, detach: request, discharge: inform-result, cancel: refuse, release: request")},
		},
		{
			name:  "debtor and creditor the same role",
			edits: []edit{commitment("debtor: Participant, creditor: Participant, create: agree, discharge: inform-result")},
			want:  []string{`test.yaml:12:44: error: commitment "perform" has "Participant" as both debtor and creditor; a commitment binds one role to another [CP026]`},
		},
		{
			name:  "created by a message the creditor sends",
			edits: []edit{commitment("debtor: Participant, creditor: Initiator, create: request, discharge: inform-result")},
			want:  []string{`test.yaml:12:63: error: commitment "perform" is created by "request", which "Initiator" sends; only the debtor ("Participant") can create it [CP027]`},
		},
		{
			name:  "discharged by a message the creditor sends",
			edits: []edit{commitment("debtor: Participant, creditor: Initiator, create: agree, discharge: [inform-result, request]")},
			want: []string{
				`test.yaml:12:97: error: commitment "perform" is discharged by "request", which "Initiator" sends; only the debtor ("Participant") can discharge it [CP027]`,
			},
		},
		{
			name:  "cancelled by a message the creditor sends",
			edits: []edit{commitment("debtor: Participant, creditor: Initiator, create: agree, discharge: inform-result, cancel: request")},
			want:  []string{`test.yaml:12:104: error: commitment "perform" is cancelled by "request", which "Initiator" sends; only the debtor ("Participant") can cancel it [CP027]`},
		},
		{
			name:  "released by a message the debtor sends",
			edits: []edit{commitment("debtor: Participant, creditor: Initiator, create: agree, discharge: inform-result, release: refuse")},
			want:  []string{`test.yaml:12:105: error: commitment "perform" is released by "refuse", which "Participant" sends; only the creditor ("Initiator") can release it [CP027]`},
		},
		{
			name:  "an undeclared debtor is only unresolved",
			edits: []edit{commitment("debtor: Provider, creditor: Initiator, create: agree, discharge: inform-result")},
			want:  []string{`test.yaml:12:21: error: debtor "Provider" is not a declared role [CP019]`},
		},
		{
			name:    "no discharge after the creating message",
			edits:   []edit{commitment("debtor: Participant, creditor: Initiator, create: refuse, discharge: inform-result")},
			want:    []string{`test.yaml:20:9: error: commitment "perform" is created by "refuse" here, but no path from state "refused" sends a discharge message ("inform-result"), so it can only end violated [CP028]`},
			related: []string{`test.yaml:12:3: commitment "perform"`},
		},
		{
			name: "a discharge reachable through a loop",
			edits: []edit{
				commitment("debtor: Participant, creditor: Initiator, create: agree, discharge: inform-result"),
				{"    - {send: inform-result, from: Participant, to: Initiator, next: done}\n", "    - {send: inform-result, from: Participant, to: Initiator, next: done}\n    - {send: request, from: Initiator, to: Participant, next: requested}\n"},
			},
		},
		{
			name: "a creating transition in an unreachable state is not reported",
			edits: []edit{
				commitment("debtor: Participant, creditor: Initiator, create: agree, discharge: inform-result"),
				{"  done: {terminal: done}\n", "  done: {terminal: done}\n  stray:\n    - {send: agree, from: Participant, to: Initiator, next: refused}\n"},
			},
			want: []string{`test.yaml:25:3: warning: state "stray" is unreachable from the initial state "start" [CP013]`},
		},
	})
}

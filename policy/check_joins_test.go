package policy_test

import "testing"

func TestCheckJoins(t *testing.T) {
	runCheckCases(t, []checkCase{
		{name: "a join where the many role answers", src: contractNetYAML},
		{
			name: "a join entered by a timeout, whose own transitions reach the many role",
			src:  contractNetYAML,
			edits: []edit{
				{"    - {send: refuse, from: Participant, to: Initiator, next: refused}\n", "    - {send: refuse, from: Participant, to: Initiator, next: refused}\n    - {timeout: bids, next: proposed}\n"},
				{"  called:\n", "  called:\n    arm: bids\n    on:\n"},
				{"    - {send: propose, from: Participant, to: Initiator, next: proposed}\n", "      - {send: propose, from: Participant, to: Initiator, next: proposed}\n"},
				{"    - {send: refuse, from: Participant, to: Initiator, next: refused}\n", "      - {send: refuse, from: Participant, to: Initiator, next: refused}\n"},
				{"    - {timeout: bids, next: proposed}\n", "      - {timeout: bids, next: proposed}\n"},
			},
		},
		{
			name:  "a join without a many role",
			src:   contractNetYAML,
			edits: []edit{{"  Participant: {many: true}", "  Participant: {}"}},
			want:  []string{`test.yaml:20:3: error: state "proposed" is a join, but no role declared many sends or receives a message in or into it; a join gathers the sessions of a many role [CP025]`},
		},
		{
			name:  "a join state in a two-party policy",
			edits: []edit{{"  agreed:\n", "  agreed:\n    join: true\n    on:\n"}, {"    - {send: inform-result, from: Participant, to: Initiator, next: done}\n", "      - {send: inform-result, from: Participant, to: Initiator, next: done}\n"}},
			want:  []string{`test.yaml:20:3: error: state "agreed" is a join, but no role declared many sends or receives a message in or into it; a join gathers the sessions of a many role [CP025]`},
		},
	})
}

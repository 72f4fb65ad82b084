package policy_test

import "testing"

func TestCheckUnused(t *testing.T) {
	runCheckCases(t, []checkCase{
		{name: "clean"},
		{
			name:  "a role in no transition",
			edits: []edit{{"roles: [Initiator, Participant]", "roles: [Initiator, Participant, Auditor]"}},
			want:  []string{`test.yaml:3:33: warning: role "Auditor" takes part in no transition [CP022]`},
		},
		{
			name:  "a role used only in a commitment still takes part in no transition",
			edits: []edit{{"roles: [Initiator, Participant]", "roles: [Initiator, Participant, Auditor]"}, {"states:\n", "commitments:\n  audit: {debtor: Participant, creditor: Auditor, create: agree, discharge: inform-result}\nstates:\n"}},
			want:  []string{`test.yaml:3:33: warning: role "Auditor" takes part in no transition [CP022]`},
		},
		{
			name:  "a role used only as the parent of a child binding is used",
			src:   purchaseYAML,
			edits: []edit{{"roles: [Customer, Vendor]", "roles: [Customer, Vendor, Broker]"}, {"Seller: Vendor}", "Seller: Broker}"}},
		},
		{
			name:  "a message type never sent",
			edits: []edit{{"  agree: agree\n", "  agree: agree\n  cancel: cancel\n"}},
			want:  []string{`test.yaml:7:3: warning: message type "cancel" is never sent [CP022]`},
		},
		{
			name:  "a message type only a commitment names is never sent",
			edits: []edit{{"  agree: agree\n", "  agree: agree\n  cancel: cancel\n"}, {"states:\n", "commitments:\n  perform: {debtor: Participant, creditor: Initiator, create: agree, discharge: inform-result, release: cancel}\nstates:\n"}},
			want:  []string{`test.yaml:7:3: warning: message type "cancel" is never sent [CP022]`},
		},
		{
			name:  "a message type only a timer deadline reads is used",
			edits: []edit{{"  agree: agree\n", "  agree: agree\n  offer: {performative: propose, fields: {until: time}}\n"}, {"  reply: {after: 30s}\n", "  reply: {deadline: offer.until}\n"}},
		},
		{
			name:  "a timer never armed",
			edits: []edit{{"  reply: {after: 30s}\n", "  reply: {after: 30s}\n  result: {after: 5m}\n"}},
			want:  []string{`test.yaml:11:3: warning: timer "result" is never armed [CP022]`},
		},
		{
			name:  "a timer only a commitment deadline names is used",
			edits: []edit{{"  reply: {after: 30s}\n", "  reply: {after: 30s}\n  result: {after: 5m}\n"}, {"states:\n", "commitments:\n  perform: {debtor: Participant, creditor: Initiator, create: agree, discharge: inform-result, deadline: result}\nstates:\n"}},
		},
		{
			name:  "a variable never set or read",
			edits: []edit{{"states:\n", "vars: {total: number}\nstates:\n"}},
			want:  []string{`test.yaml:11:8: warning: variable "total" is never set or read [CP022]`},
		},
		{
			name:  "a variable read but never set",
			edits: []edit{{"states:\n", "vars: {total: number}\nstates:\n"}, {"{send: agree, from: Participant, to: Initiator, next: agreed}", "{send: agree, from: Participant, to: Initiator, guard: vars.total > 0, next: agreed}"}},
			want:  []string{`test.yaml:11:8: warning: variable "total" is read but never set, so it is always empty [CP022]`},
		},
		{
			name:  "a variable set but never read",
			edits: []edit{{"states:\n", "vars: {total: number}\nstates:\n"}, {"next: requested}", "next: requested, set: {total: content.price}}"}},
			want:  []string{`test.yaml:11:8: warning: variable "total" is set but never read [CP022]`},
		},
		{
			name:  "a variable set and read by a decide",
			edits: []edit{{"states:\n", "vars: {total: number}\nstates:\n"}, {"next: requested}", "next: requested, set: {total: content.price}}"}, {"  requested:\n", "  requested:\n    decide: 'vars.total > 100 ? \"refuse\" : \"agree\"'\n"}},
		},
	})
}

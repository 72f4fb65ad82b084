package policy_test

import (
	"testing"

	"github.com/parleyhq/parley/policy"
)

// purchaseYAML runs the haggle child policy (testdata/diagnostics/child)
// from an in-child state.
const purchaseYAML = `policy: purchase
version: 1
roles: [Customer, Vendor]
messages:
  enquire: query-ref
  interested: agree
  decline: refuse
states:
  start:
    - {send: enquire, from: Customer, to: Vendor, next: enquired}
  enquired:
    - {send: decline, from: Vendor, to: Customer, next: declined}
    - {send: interested, from: Vendor, to: Customer, next: negotiating}
  negotiating:
    child:
      policy: haggle
      roles: {Buyer: Customer, Seller: Vendor}
    on:
      - {return: agreement, next: bought}
      - {return: no-deal, next: declined}
  bought: {terminal: done}
  declined: {terminal: declined}
`

func TestCheckReferences(t *testing.T) {
	withHaggle := []policy.CheckOption{policy.WithPolicies(childPolicies(t))}
	runCheckCases(t, []checkCase{
		{name: "clean"},
		{name: "clean with a child policy", src: purchaseYAML, opts: withHaggle},
		{
			// One misspelling is one error: the state meant, and the states
			// behind it, are not also reported unreachable.
			name:  "undeclared next state is one error, without follow-on unreachable states",
			edits: []edit{{"next: agreed}", "next: agred}"}},
			want:  []string{`test.yaml:17:63: error: state "agred" is not declared; did you mean "agreed"? [CP010]`},
		},
		{
			name:  "undeclared next state like no declared one hides every unreachable state",
			edits: []edit{{"next: agreed}", "next: xyzzy}"}, {"  done: {terminal: done}\n", "  done: {terminal: done}\n  spare: {terminal: spare}\n"}},
			want:  []string{`test.yaml:17:63: error: state "xyzzy" is not declared [CP010]`},
		},
		{
			name:  "a state unreachable whatever the misspelling meant is still reported",
			edits: []edit{{"next: agreed}", "next: agred}"}, {"  done: {terminal: done}\n", "  done: {terminal: done}\n  spare: {terminal: spare}\n"}},
			want: []string{
				`test.yaml:17:63: error: state "agred" is not declared; did you mean "agreed"? [CP010]`,
				`test.yaml:23:3: warning: state "spare" is unreachable from the initial state "start" [CP013]`,
			},
		},
		{
			name:  "undeclared message type, with the declared one now unused",
			edits: []edit{{"{send: inform-result,", "{send: inform-reslt,"}},
			want: []string{
				`test.yaml:8:3: warning: message type "inform-result" is never sent [CP022]`,
				`test.yaml:21:14: error: message type "inform-reslt" is not declared; did you mean "inform-result"? [CP010]`,
			},
		},
		{
			name:  "undeclared message type far from any declared one",
			edits: []edit{{"{send: inform-result,", "{send: confirm,"}},
			want: []string{
				`test.yaml:8:3: warning: message type "inform-result" is never sent [CP022]`,
				`test.yaml:21:14: error: message type "confirm" is not declared [CP010]`,
			},
		},
		{
			name:  "undeclared timer armed",
			edits: []edit{{"arm: reply", "arm: replay"}},
			want: []string{
				`test.yaml:10:3: warning: timer "reply" is never armed [CP022]`,
				`test.yaml:15:10: error: timer "replay" is not declared; did you mean "reply"? [CP010]`,
				`test.yaml:19:19: error: state "requested" handles timer "reply" but does not arm it, so this transition can never be taken; add arm: reply to the state [CP021]`,
			},
		},
		{
			name:  "undeclared timer handled",
			edits: []edit{{"{timeout: reply,", "{timeout: rpely,"}},
			want: []string{
				`test.yaml:15:10: warning: state "requested" arms timer "reply" but has no on-timeout transition for it, so its expiry does nothing [CP020]`,
				`test.yaml:19:19: error: timer "rpely" is not declared; did you mean "reply"? [CP010]`,
			},
		},
		{
			name:  "timer deadline reading an undeclared message",
			edits: []edit{{"reply: {after: 30s}", "reply: {deadline: requst.reply_by, default: 30s}"}},
			want:  []string{`test.yaml:10:21: error: message type "requst" is not declared; did you mean "request"? [CP010]`},
		},
		{
			name:  "undeclared sender",
			edits: []edit{{"{send: refuse, from: Participant,", "{send: refuse, from: Particpant,"}},
			want:  []string{`test.yaml:18:30: error: sender "Particpant" is not a declared role; did you mean "Participant"? [CP019]`},
		},
		{
			name:  "undeclared receiver",
			edits: []edit{{"from: Initiator, to: Participant, next: requested}", "from: Initiator, to: Provider, next: requested}"}},
			want:  []string{`test.yaml:13:44: error: receiver "Provider" is not a declared role [CP019]`},
		},
		{
			name:  "undeclared variable set",
			edits: []edit{{"next: agreed}", "next: agreed, set: {reason: content.reason}}"}},
			want:  []string{`test.yaml:17:77: error: variable "reason" is not declared (declare it under vars) [CP010]`},
		},
		{
			name: "commitment naming undeclared roles, messages and timers",
			edits: []edit{{"states:\n", `commitments:
  perform:
    debtor: Particpant
    creditor: Initator
    create: agre
    discharge: [inform-result, inform-done]
    deadline: result
states:
`}},
			want: []string{
				`test.yaml:13:13: error: debtor "Particpant" is not a declared role; did you mean "Participant"? [CP019]`,
				`test.yaml:14:15: error: creditor "Initator" is not a declared role; did you mean "Initiator"? [CP019]`,
				`test.yaml:15:13: error: message type "agre" is not declared; did you mean "agree"? [CP010]`,
				`test.yaml:16:32: error: message type "inform-done" is not declared [CP010]`,
				`test.yaml:17:15: error: timer "result" is not declared [CP010]`,
			},
		},
		{
			name:  "unknown child policy",
			src:   purchaseYAML,
			opts:  withHaggle,
			edits: []edit{{"policy: haggle", "policy: hagle"}},
			want:  []string{`test.yaml:16:15: error: child policy "hagle" is not known: check it together with this one (name both files to cpvalidate), or give the checks a resolver that finds it (policy.WithPolicies, engine.WithPolicies) [CP010]`},
		},
		{
			name:  "child policies are not resolved without WithPolicies",
			src:   purchaseYAML,
			edits: []edit{{"policy: haggle", "policy: hagle"}},
		},
		{
			name:  "child role bound to an undeclared role",
			src:   purchaseYAML,
			opts:  withHaggle,
			edits: []edit{{"Seller: Vendor}", "Seller: Vendr}"}},
			want:  []string{`test.yaml:17:40: error: the role bound to child role "Seller", "Vendr" is not a declared role; did you mean "Vendor"? [CP019]`},
		},
	})
}

package policy_test

import (
	"testing"

	"github.com/parleyhq/parley/policy"
)

// xmlBase is baseYAML's policy in CP-XML, for the shapes only XML can
// express.
const xmlBase = `<policy name="test" version="1">
  <role name="Initiator"/>
  <role name="Participant"/>
  <message name="request" performative="request">
    <field name="price" type="number"/>
  </message>
  <message name="agree" performative="agree"/>
  <message name="refuse" performative="refuse"/>
  <var name="price" type="number"/>
  <state name="start">
    <send-message message="request" from="Initiator" to="Participant" next="requested">
      <set var="price">content.price</set>
    </send-message>
  </state>
  <state name="requested">
    <send-message message="agree" from="Participant" to="Initiator" next="agreed">
      <guard>vars.price &gt; 0</guard>
    </send-message>
    <send-message message="refuse" from="Participant" to="Initiator" next="refused"/>
  </state>
  <state name="agreed" outcome="done"/>
  <state name="refused" outcome="refused"/>
</policy>
`

func TestCheckDeclarations(t *testing.T) {
	runCheckCases(t, []checkCase{
		{name: "clean"},
		{name: "clean XML", src: xmlBase},
		{
			name:  "a message type and a state may share a name",
			edits: []edit{{"next: agreed}", "next: agree}"}, {"  agreed:\n", "  agree:\n"}},
		},
		{
			name:  "names may hold digits, hyphens and underscores",
			edits: []edit{{"next: timed-out}", "next: timed_out-2}"}, {"  timed-out: {", "  timed_out-2: {"}},
		},
		{
			name:  "policy name with a space",
			edits: []edit{{"policy: test", "policy: my test"}},
			want:  []string{`test.yaml:1:9: error: policy name "my test" is not a valid name (letters, digits, _ and -, starting with a letter) [CP003]`},
		},
		{
			name:  "state name starting with a digit",
			edits: []edit{{"next: refused}", "next: 2nd-refusal}"}, {"  refused: {terminal", "  2nd-refusal: {terminal"}},
			want:  []string{`test.yaml:23:3: error: state name "2nd-refusal" is not a valid name (letters, digits, _ and -, starting with a letter) [CP003]`},
		},
		{
			name:    "message type declared twice",
			edits:   []edit{{"  agree: agree\n", "  agree: agree\n  agree: {performative: agree}\n"}},
			want:    []string{`test.yaml:7:3: error: message type "agree" is declared twice [CP005]`},
			related: []string{"test.yaml:6:3: first declared here"},
		},
		{
			name:    "role declared twice in the list form",
			edits:   []edit{{"roles: [Initiator, Participant]", "roles: [Initiator, Participant, Initiator]"}},
			want:    []string{`test.yaml:3:33: error: role "Initiator" is declared twice [CP005]`},
			related: []string{"test.yaml:3:9: first declared here"},
		},
		{
			name:  "state declared twice: the second is also unreachable",
			edits: []edit{{"  timed-out: {terminal: timeout}\n", "  timed-out: {terminal: timeout}\n  done: {terminal: finished}\n"}},
			want: []string{
				`test.yaml:25:3: error: state "done" is declared twice [CP005]`,
				`test.yaml:25:3: warning: state "done" is unreachable from the initial state "start" [CP013]`,
			},
		},
		{
			name:  "timer declared twice",
			edits: []edit{{"  reply: {after: 30s}\n", "  reply: {after: 30s}\n  reply: {after: 1m}\n"}},
			want:  []string{`test.yaml:11:3: error: timer "reply" is declared twice [CP005]`},
		},
		{
			name:  "field declared twice in one message type",
			edits: []edit{{"fields: {price: number, due: optional time}", "fields: {price: number, price: int}"}},
			want:  []string{`test.yaml:5:60: error: field "price" of message type "request" is declared twice [CP005]`},
		},
		{
			name:  "the same field name in two message types is fine",
			edits: []edit{{"fields: {reason: optional string}", "fields: {price: number}"}},
		},
		{
			name:  "performative that is not FIPA's",
			edits: []edit{{"  agree: agree\n", "  agree: agre\n"}},
			want:  []string{`test.yaml:6:3: error: message type "agree" has performative "agre", which is not a FIPA communicative act; did you mean "agree"? [CP003]`},
		},
		{
			name: "variable set twice by one transition (XML)",
			src:  xmlBase,
			edits: []edit{{`<set var="price">content.price</set>`,
				`<set var="price">content.price</set>
      <set var="price">content.price * 2</set>`}},
			want:    []string{`test.xml:13:17: error: variable "price" is set twice by one transition [CP005]`},
			related: []string{"test.xml:12:17: first set here"},
		},
		{
			name: "variable declared twice (XML)",
			src:  xmlBase,
			edits: []edit{{`<var name="price" type="number"/>`, `<var name="price" type="number"/>
  <var name="price" type="int"/>`}},
			want: []string{`test.xml:10:14: error: variable "price" is declared twice [CP005]`},
		},
		{
			name: "child role bound twice (XML)",
			src: `<policy name="test" version="1">
  <role name="Customer"/>
  <role name="Vendor"/>
  <message name="enquire" performative="query-ref"/>
  <state name="start">
    <send-message message="enquire" from="Customer" to="Vendor" next="haggling"/>
  </state>
  <state name="haggling">
    <child policy="haggle">
      <bind role="Buyer" to="Customer"/>
      <bind role="Buyer" to="Vendor"/>
    </child>
    <child-return outcome="agreement" next="done"/>
  </state>
  <state name="done" outcome="done"/>
</policy>
`,
			want:    []string{`test.xml:11:19: error: child role "Buyer" is bound twice [CP005]`},
			related: []string{"test.xml:10:19: first bound here"},
		},
	})
}

// TestCheckStateShapes covers the shapes the YAML form cannot express,
// written in CP-XML.
func TestCheckStateShapes(t *testing.T) {
	runCheckCases(t, []checkCase{
		{name: "clean", src: xmlBase},
		{
			name: "terminal state with a transition",
			src:  xmlBase,
			edits: []edit{{`<state name="refused" outcome="refused"/>`, `<state name="refused" outcome="refused">
    <send-message message="agree" from="Participant" to="Initiator" next="agreed"/>
  </state>`}},
			want: []string{`test.xml:23:5: error: terminal state "refused" has transitions: a terminal state ends the conversation [CP003]`},
		},
		{
			name:  "terminal state without an outcome",
			src:   xmlBase,
			edits: []edit{{`<state name="refused" outcome="refused"/>`, `<state name="refused" kind="terminal"/>`}},
			want:  []string{`test.xml:22:16: error: terminal state "refused" has no outcome (such as done, refused or timeout) [CP004]`},
		},
		{
			name: "in-child state without a child policy",
			src:  xmlBase,
			edits: []edit{{`<state name="agreed" outcome="done"/>`, `<state name="agreed" kind="in-child">
    <child-return outcome="agreement" next="refused"/>
  </state>`}},
			want: []string{`test.xml:21:16: error: in-child state "agreed" names no child policy [CP004]`},
		},
		{
			name: "in-child state sending a message",
			src:  xmlBase,
			edits: []edit{{`<state name="agreed" outcome="done"/>`, `<state name="agreed">
    <child policy="haggle"/>
    <send-message message="refuse" from="Participant" to="Initiator" next="refused"/>
    <child-return outcome="agreement" next="done"/>
  </state>
  <state name="done" outcome="done"/>`}},
			want: []string{`test.xml:23:5: error: in-child state "agreed" cannot send "refuse": while the child policy runs, only child-return and on-timeout transitions apply [CP003]`},
		},
		{
			name: "normal state with a child-return",
			src:  xmlBase,
			edits: []edit{{`<send-message message="refuse" from="Participant" to="Initiator" next="refused"/>`,
				`<send-message message="refuse" from="Participant" to="Initiator" next="refused"/>
    <child-return outcome="agreement" next="agreed"/>`}},
			want: []string{`test.xml:20:5: error: state "requested" runs no child policy, so it cannot have a child-return transition [CP003]`},
		},
		{
			name: "decide on a terminal state",
			src:  xmlBase,
			edits: []edit{{`<state name="agreed" outcome="done"/>`, `<state name="agreed" outcome="done">
    <decide>"x"</decide>
  </state>`}},
			want: []string{`test.xml:22:13: error: only a normal state can be a decision point with decide; "agreed" is terminal [CP003]`},
		},
		{
			name:  "join on a terminal state",
			src:   xmlBase,
			edits: []edit{{`<state name="agreed" outcome="done"/>`, `<state name="agreed" outcome="done" join="true"/>`}},
			want: []string{
				`test.xml:21:16: error: only a normal state can be a join; "agreed" is terminal [CP003]`,
				// And, having no transitions at all, it joins no many role.
				`test.xml:21:16: error: state "agreed" is a join, but no role declared many sends or receives a message in or into it; a join gathers the sessions of a many role [CP025]`,
			},
		},
		{
			name: "in-child state with child-return and on-timeout is fine",
			src: `<policy name="test" version="1">
  <role name="Customer"/>
  <role name="Vendor"/>
  <message name="enquire" performative="query-ref"/>
  <timer name="patience" after="5m"/>
  <state name="start">
    <send-message message="enquire" from="Customer" to="Vendor" next="haggling"/>
  </state>
  <state name="haggling">
    <arm timer="patience"/>
    <child policy="haggle">
      <bind role="Buyer" to="Customer"/>
      <bind role="Seller" to="Vendor"/>
    </child>
    <child-return outcome="agreement" next="done"/>
    <on-timeout timer="patience" next="gave-up"/>
  </state>
  <state name="done" outcome="done"/>
  <state name="gave-up" outcome="timeout"/>
</policy>
`,
		},
	})
}

var _ = policy.Codes

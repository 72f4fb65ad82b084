package policy_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/policy"
)

// loadCase is one table case of a loader test: a file and exactly the
// diagnostics loading it reports, rendered as d.Error().
type loadCase struct {
	name string
	src  string
	opts []policy.LoadOption
	want []string
	// nilPolicy says the loader must give up (the file is not a policy at
	// all, or a limit stopped it before it began).
	nilPolicy bool
}

func runLoadCases(t *testing.T, cases []loadCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, ds := policy.Load(fileName(tc.src), []byte(tc.src), tc.opts...)
			want := tc.want
			if want == nil {
				want = []string{}
			}
			assert.Equal(t, want, lines(ds))
			assert.Equal(t, tc.nilPolicy, p == nil, "policy returned")
			for _, d := range ds {
				assert.NotZero(t, d.Severity, d.Error())
				assert.True(t, d.Pos.IsValid(), d.Error())
			}
		})
	}
}

// minimal is the smallest clean policy, which the loader cases extend.
const minimal = `policy: tiny
version: 1
roles: [A, B]
messages: {m: inform}
states:
  s:
    - {send: m, from: A, to: B, next: done}
  done: {terminal: done}
`

func TestLoadYAMLSyntax(t *testing.T) {
	runLoadCases(t, []loadCase{
		{name: "clean", src: minimal},
		{name: "empty file", src: "", nilPolicy: true, want: []string{`test.yaml:1:1: error: empty document: a policy file starts with "policy: <name>" [CP001]`}},
		{name: "only comments", src: "# nothing yet\n", nilPolicy: true, want: []string{`test.yaml:1:1: error: empty document: a policy file starts with "policy: <name>" [CP001]`}},
		{
			name:      "an unclosed flow mapping is reported on its line",
			src:       strings.Replace(minimal, "next: done}", "next: done", 1),
			nilPolicy: true,
			want:      []string{`test.yaml:7:1: error: did not find expected ',' or '}' [CP001]`},
		},
		{
			name:      "a tab in the indentation",
			src:       strings.Replace(minimal, "  done:", "\tdone:", 1),
			nilPolicy: true,
			want:      []string{`test.yaml:8:1: error: found character that cannot start any token [CP001]`},
		},
		{
			name:      "an alias to an anchor never defined",
			src:       strings.Replace(minimal, "roles: [A, B]", "roles: *parties", 1),
			nilPolicy: true,
			want:      []string{`test.yaml:3:8: error: unknown anchor 'parties' referenced [CP001]`},
		},
		{
			name: "a second document",
			src:  minimal + "---\npolicy: other\n",
			want: []string{`test.yaml:9:1: error: a policy file holds one YAML document; found a second one [CP001]`},
		},
		{
			name: "not a mapping",
			src:  "- policy: tiny\n",
			want: []string{`test.yaml:1:1: error: the policy must be a mapping, not a list [CP003]`},
			// A document that is not a mapping has nothing to check.
			nilPolicy: true,
		},
	})
}

func TestLoadYAMLKeys(t *testing.T) {
	runLoadCases(t, []loadCase{
		{
			name: "unknown policy key with a suggestion",
			src:  strings.Replace(minimal, "messages:", "mesages:", 1),
			want: []string{`test.yaml:4:1: error: unknown key "mesages" in the policy; did you mean "messages"? [CP002]`},
		},
		{
			name: "no roles and no states",
			src:  "policy: p\nversion: 1\nroles: []\nstates: {}\n",
			want: []string{
				`test.yaml:3:8: error: the policy declares no roles [CP004]`,
				`test.yaml:4:9: error: the policy declares no states [CP004]`,
			},
		},
		{
			name: "unknown key far from any known one",
			src:  minimal + "author: me\n",
			want: []string{`test.yaml:9:1: error: unknown key "author" in the policy [CP002]`},
		},
		{
			name: "unknown state key",
			src:  strings.Replace(minimal, "  s:\n    - {send", "  s:\n    arms: [t]\n    on:\n    - {send", 1),
			want: []string{`test.yaml:7:5: error: unknown key "arms" in state "s"; did you mean "arm"? [CP002]`},
		},
		{
			name: "unknown transition key",
			src:  strings.Replace(minimal, "next: done}", "nxet: done}", 1),
			want: []string{
				`test.yaml:7:7: error: the send-message transition has no next state [CP004]`,
				`test.yaml:7:33: error: unknown key "nxet" in a transition; did you mean "next"? [CP002]`,
			},
		},
		{
			name: "a key of another kind of transition",
			src:  strings.Replace(minimal, "    - {send: m, from: A, to: B, next: done}\n", "    - {send: m, from: A, to: B, next: done}\n    - {timeout: t, from: A, next: done}\n", 1),
			want: []string{`test.yaml:8:20: error: "from" does not apply to an on-timeout transition [CP002]`},
		},
		{
			name: "unknown role key",
			src:  strings.Replace(minimal, "roles: [A, B]", "roles: {A: {many: true}, B: {mnay: true}}", 1),
			want: []string{`test.yaml:3:30: error: unknown key "mnay" in role "B"; did you mean "many"? [CP002]`},
		},
		{
			name: "missing policy keys",
			src:  "doc: hi\n",
			want: []string{
				`test.yaml:1:1: error: the policy has no "policy" key [CP004]`,
				`test.yaml:1:1: error: the policy has no "roles" key [CP004]`,
				`test.yaml:1:1: error: the policy has no "states" key [CP004]`,
				`test.yaml:1:1: error: the policy has no "version" key [CP004]`,
			},
		},
		{
			name: "a transition without a kind",
			src:  strings.Replace(minimal, "{send: m, from: A, to: B, next: done}", "{from: A, to: B, next: done}", 1),
			want: []string{`test.yaml:7:7: error: a transition needs one of send, timeout or return [CP004]`},
		},
		{
			name: "a transition of two kinds",
			src:  strings.Replace(minimal, "{send: m, from: A,", "{send: m, timeout: t, from: A,", 1),
			want: []string{`test.yaml:7:7: error: a transition takes one of send, timeout or return, not send and timeout [CP003]`},
		},
		{
			name: "a send without from and to",
			src:  strings.Replace(minimal, "{send: m, from: A, to: B, next: done}", "{send: m, next: done}", 1),
			want: []string{
				`test.yaml:7:7: error: the send-message transition for "m" has no from (the sending role) [CP004]`,
				`test.yaml:7:7: error: the send-message transition for "m" has no to (the receiving role) [CP004]`,
			},
		},
		{
			name: "a message type without a performative",
			src:  strings.Replace(minimal, "messages: {m: inform}", "messages: {m: {fields: {x: int}}}", 1),
			want: []string{`test.yaml:4:12: error: message type "m" has no performative [CP004]`},
		},
		{
			name: "a commitment missing its parts",
			src:  minimal + "commitments:\n  c: {doc: nothing yet}\n",
			want: []string{
				`test.yaml:10:3: error: commitment "c" has no create message [CP004]`,
				`test.yaml:10:3: error: commitment "c" has no creditor [CP004]`,
				`test.yaml:10:3: error: commitment "c" has no debtor [CP004]`,
				`test.yaml:10:3: error: commitment "c" has no discharge message [CP004]`,
			},
		},
		{
			name: "a commitment that is not a mapping is reported once",
			src:  minimal + "commitments:\n  c: [m]\n",
			want: []string{`test.yaml:10:6: error: commitment "c" must be a mapping, not a list [CP003]`},
		},
		{
			name: "a timer with neither after nor deadline",
			src:  minimal + "timers:\n  t: {default: 5s}\n",
			want: []string{`test.yaml:10:3: error: timer "t" needs after (a duration) or deadline (a message field) [CP004]`},
		},
		{
			name: "a timer with both after and deadline",
			src:  minimal + "timers:\n  t: {after: 5s, deadline: m.reply_by}\n",
			want: []string{`test.yaml:10:3: error: timer "t" has both after and deadline; a timer fires after a duration or at a deadline [CP003]`},
		},
		{
			name: "a state with neither transitions nor terminal",
			src:  strings.Replace(minimal, "  done: {terminal: done}", "  done: {doc: the end}", 1),
			want: []string{`test.yaml:8:9: error: state "done" has neither transitions (on) nor terminal [CP004]`},
		},
		{
			name: "a terminal state with transitions",
			src:  strings.Replace(minimal, "  done: {terminal: done}", "  done: {terminal: done, on: []}", 1),
			want: []string{`test.yaml:8:26: error: terminal state "done" cannot have "on": a terminal state ends the conversation [CP003]`},
		},
		{
			name: "an empty on list is no transitions (reported by the dead-ends check)",
			src:  strings.Replace(minimal, "  done: {terminal: done}", "  done: {terminal: done}\n  later:\n    on:\n", 1),
		},
		{
			name: "a child without a policy",
			src:  strings.Replace(minimal, "  done: {terminal: done}", "  done: {terminal: done}\n  sub:\n    child: {roles: {X: A}}\n    on: [{return: ok, next: done}]\n", 1),
			want: []string{`test.yaml:10:12: error: child has no policy [CP004]`},
		},
	})
}

func TestLoadYAMLTypes(t *testing.T) {
	runLoadCases(t, []loadCase{
		{
			name: "collections of the wrong kind",
			src:  "policy: tiny\nversion: 1\nroles: A\nmessages: [m]\ntimers: 5\nstates:\n  s: 3\n",
			want: []string{
				`test.yaml:3:8: error: roles must be a list of names or a mapping of role names, not "A" [CP003]`,
				`test.yaml:4:11: error: messages must be a mapping of message type names, not a list [CP003]`,
				`test.yaml:5:9: error: timers must be a mapping of timer names, not "5" [CP003]`,
				`test.yaml:7:6: error: state "s" must be a list of transitions or a mapping, not "3" [CP003]`,
			},
		},
		{
			name: "a boolean written yes",
			src:  strings.Replace(minimal, "roles: [A, B]", "roles: {A: {many: yes}, B: {}}", 1),
			want: []string{`test.yaml:3:19: error: many must be true or false, not "yes" [CP003]`},
		},
		{
			name: "an empty name",
			src:  strings.Replace(minimal, "to: B,", "to: '',", 1),
			want: []string{`test.yaml:7:30: error: to (a role) must be a non-empty string, not "" [CP003]`},
		},
		{
			name: "a field type with a suggestion",
			src:  strings.Replace(minimal, "messages: {m: inform}", "messages: {m: {performative: inform, fields: {x: strng, y: optional int}}}", 1),
			want: []string{`test.yaml:4:50: error: unknown type "strng" (types: string, number, int, bool, time, duration, list, map, any, each may be preceded by optional); did you mean "string"? [CP003]`},
		},
		{
			name: "a duration in words",
			src:  minimal + "timers:\n  t: {after: 5 minutes}\n",
			want: []string{`test.yaml:10:14: error: after: "5 minutes" is not a duration (write it like 30s, 500ms or 1m30s) [CP003]`},
		},
		{
			name: "a negative duration",
			src:  minimal + "timers:\n  t: -5s\n",
			want: []string{`test.yaml:10:6: error: timer "t": duration "-5s" must be positive [CP003]`},
		},
		{
			name: "a deadline that is not message.field",
			src:  minimal + "timers:\n  t: {deadline: reply_by}\n",
			want: []string{`test.yaml:10:17: error: deadline: "reply_by" must name a message field as <message>.<field>, such as request.reply_by [CP003]`},
		},
		{
			name: "a default on an after timer",
			src:  minimal + "timers:\n  t: {after: 5s, default: 10s}\n",
			want: []string{`test.yaml:10:3: error: timer "t": default applies only to a deadline timer [CP003]`},
		},
		{
			name: "a mapping key that is not a name",
			src:  minimal + "[x]: 1\n",
			want: []string{`test.yaml:9:1: error: a mapping key must be a plain name [CP003]`},
		},
		{
			name: "a transition that is not a mapping",
			src:  strings.Replace(minimal, "    - {send: m, from: A, to: B, next: done}", "    - send m to B", 1),
			want: []string{`test.yaml:7:7: error: a transition must be a mapping such as {send: m, from: A, to: B, next: s}, not "send m to B" [CP003]`},
		},
		{
			name: "on that is not a list",
			src:  strings.Replace(minimal, "  s:\n    - {send: m, from: A, to: B, next: done}", "  s:\n    on: {send: m, from: A, to: B, next: done}", 1),
			want: []string{`test.yaml:7:9: error: on must be a list of transitions, not a mapping [CP003]`},
		},
	})
}

func TestLoadYAMLDuplicateKeys(t *testing.T) {
	runLoadCases(t, []loadCase{
		{
			name: "a policy key given twice",
			src:  strings.Replace(minimal, "version: 1\n", "version: 1\nversion: 2\n", 1),
			want: []string{`test.yaml:3:1: error: duplicate key "version" [CP005]`},
		},
		{
			name: "a transition key given twice",
			src:  strings.Replace(minimal, "next: done}", "next: done, next: s}", 1),
			want: []string{`test.yaml:7:45: error: duplicate key "next" [CP005]`},
		},
		{
			// A name declared twice in a user-named mapping (states,
			// messages) is left to the declarations check, so that both
			// file formats report it the same way.
			name: "a state declared twice loads both",
			src:  minimal + "  done: {terminal: finished}\n",
		},
	})
	t.Run("related position", func(t *testing.T) {
		_, ds := policy.Load("test.yaml", []byte(strings.Replace(minimal, "version: 1\n", "version: 1\nversion: 2\n", 1)))
		require.Len(t, ds, 1)
		assert.Equal(t, []policy.Related{{Pos: policy.Pos{File: "test.yaml", Line: 2, Col: 1}, Message: "first given here"}}, ds[0].Related)
	})
}

func TestLoadYAMLAliasesAndMergeKeys(t *testing.T) {
	src := `policy: tiny
version: 1
roles: [A, B]
messages: {m: inform, n: agree}
states:
  s: &both
    - &send {send: m, from: A, to: B, next: t}
    - {<<: *send, send: n, next: done}
  t: *both
  u:
    - {<<: [*send], from: B, to: A, next: done}
  done: {terminal: done}
`
	p, ds := policy.Load("test.yaml", []byte(src))
	require.Empty(t, ds)
	require.Len(t, p.States, 4)
	s, tState, u := p.States[0], p.States[1], p.States[2]

	// The alias gives t the same transitions as s.
	require.Len(t, tState.Transitions, 2)
	for i, tr := range s.Transitions {
		assert.Equal(t, tr.Message.Name, tState.Transitions[i].Message.Name)
		assert.Equal(t, tr.Next.Name, tState.Transitions[i].Next.Name)
	}
	// A merge key fills in what the mapping does not give itself.
	merged := s.Transitions[1]
	assert.Equal(t, "n", merged.Message.Name)
	assert.Equal(t, "A", merged.From.Name)
	assert.Equal(t, "B", merged.To.Name)
	assert.Equal(t, "done", merged.Next.Name)
	// Merged values keep the position where they are written.
	assert.Equal(t, policy.Pos{File: "test.yaml", Line: 7, Col: 29}, merged.From.Pos)
	assert.Equal(t, policy.Pos{File: "test.yaml", Line: 8, Col: 25}, merged.Message.Pos)
	// A list of merged mappings.
	require.Len(t, u.Transitions, 1)
	assert.Equal(t, "m", u.Transitions[0].Message.Name)
	assert.Equal(t, "B", u.Transitions[0].From.Name)
	assert.Equal(t, "A", u.Transitions[0].To.Name)

	runLoadCases(t, []loadCase{
		{
			name: "a merge key that is not a mapping",
			src:  strings.Replace(minimal, "{send: m, from: A, to: B, next: done}", "{<<: 5, send: m, from: A, to: B, next: done}", 1),
			want: []string{`test.yaml:7:12: error: a merge key (<<) takes a mapping or a list of mappings [CP003]`},
		},
	})
}

// laughs returns a YAML "billion laughs" under vars: each of n levels
// merges the one before it ten times.
func laughs(n int) string {
	var b strings.Builder
	b.WriteString(minimal + "vars:\n  <<:\n    - &l0 {x: int}\n")
	for i := 1; i <= n; i++ {
		refs := strings.Repeat("*l"+string(rune('0'+i-1))+", ", 9) + "*l" + string(rune('0'+i-1))
		b.WriteString("    - &l" + string(rune('0'+i)) + " {<<: [" + refs + "]}\n")
	}
	return b.String()
}

func TestLoadLimits(t *testing.T) {
	deepXML := `<policy name="tiny" version="1"><doc>` + strings.Repeat("<b>", 10) + strings.Repeat("</b>", 10) + `</doc></policy>`
	runLoadCases(t, []loadCase{
		{
			name: "an alias bomb stops at the node limit",
			src:  laughs(9),
			opts: []policy.LoadOption{policy.WithLimits(policy.Limits{MaxNodes: 1000})},
			want: []string{`test.yaml:12:16: error: more than 1000 YAML nodes (counting alias expansions); the file is too large or expands aliases too often [CP006]`},
		},
		{
			name: "an alias bomb stops at the default node limit",
			src:  laughs(9),
			want: []string{`test.yaml:12:16: error: more than 5000000 YAML nodes (counting alias expansions); the file is too large or expands aliases too often [CP006]`},
		},
		{
			name: "a small expansion is within the limit",
			src:  laughs(2),
		},
		{
			name: "nesting deeper than the depth limit",
			src:  strings.Replace(minimal, "  s:\n    - {send: m, from: A, to: B, next: done}", "  s:\n    on:\n      - {send: m, from: A, to: B, next: done}", 1),
			opts: []policy.LoadOption{policy.WithLimits(policy.Limits{MaxDepth: 3})},
			want: []string{`test.yaml:8:9: error: nesting deeper than 3 levels [CP006]`},
		},
		{
			name: "merge keys nested deeper than the depth limit",
			src:  minimal + "vars: " + strings.Repeat("{<<: ", 70) + "{x: int}" + strings.Repeat("}", 70) + "\n",
			want: []string{`test.yaml:9:327: error: nesting deeper than 64 levels [CP006]`},
		},
		{
			name:      "a file larger than the byte limit",
			src:       minimal,
			opts:      []policy.LoadOption{policy.WithLimits(policy.Limits{MaxBytes: 64})},
			nilPolicy: true,
			want:      []string{fmt.Sprintf("test.yaml:1:1: error: file is %d bytes, more than the limit of 64 [CP006]", len(minimal))},
		},
		{
			name: "more states than the state limit",
			src:  minimal,
			opts: []policy.LoadOption{policy.WithLimits(policy.Limits{MaxStates: 1})},
			want: []string{`test.yaml:6:3: error: 2 states, more than the limit of 1 [CP006]`},
		},
		{
			name: "an expression longer than the expression limit",
			src:  strings.Replace(minimal, "next: done}", "guard: content.amount > 1000, next: done}", 1),
			opts: []policy.LoadOption{policy.WithLimits(policy.Limits{MaxExprBytes: 16})},
			want: []string{`test.yaml:7:40: error: guard is 21 bytes, more than the limit of 16 [CP006]`},
		},
		{
			name:      "XML elements nested deeper than the depth limit",
			src:       deepXML,
			opts:      []policy.LoadOption{policy.WithLimits(policy.Limits{MaxDepth: 8})},
			nilPolicy: true,
			want:      []string{`test.xml:1:56: error: elements nested deeper than 8 levels [CP006]`},
		},
		{
			name:      "more XML elements than the node limit",
			src:       deepXML,
			opts:      []policy.LoadOption{policy.WithLimits(policy.Limits{MaxNodes: 5})},
			nilPolicy: true,
			want:      []string{`test.xml:1:47: error: more than 5 elements [CP006]`},
		},
		{
			name: "more XML states than the state limit, reported once",
			src:  `<policy name="tiny" version="1"><role name="A"/><state name="a" outcome="a"/><state name="b" outcome="b"/><state name="c" outcome="c"/><state name="d" outcome="d"/></policy>`,
			opts: []policy.LoadOption{policy.WithLimits(policy.Limits{MaxStates: 2})},
			want: []string{`test.xml:1:107: error: more than 2 states [CP006]`},
		},
	})
}

// minimalXML is minimal in CP-XML.
const minimalXML = `<?xml version="1.0" encoding="UTF-8"?>
<policy name="tiny" version="1">
  <role name="A"/>
  <role name="B"/>
  <message name="m" performative="inform">
    <field name="amount" type="number"/>
  </message>
  <state name="s">
    <send-message message="m" from="A" to="B" next="done">
      <guard>content.amount &gt; 0</guard>
    </send-message>
  </state>
  <state name="done" outcome="done"/>
</policy>
`

func TestLoadXML(t *testing.T) {
	runLoadCases(t, []loadCase{
		{name: "clean", src: minimalXML},
		{
			name:      "a mismatched end tag",
			src:       strings.Replace(minimalXML, "</send-message>", "</send-mesage>", 1),
			nilPolicy: true,
			want:      []string{`test.xml:11:19: error: element <send-message> closed by </send-mesage> [CP001]`},
		},
		{
			name:      "an unescaped && in a guard",
			src:       strings.Replace(minimalXML, "&gt; 0", "&gt; 0 && content.amount &lt; 9", 1),
			nilPolicy: true,
			want:      []string{`test.xml:10:37: error: invalid character entity & (no semicolon); in an expression, write && as &amp;&amp; or put the expression in <![CDATA[ ... ]]> [CP001]`},
		},
		{
			name:      "an unescaped < in a guard",
			src:       strings.Replace(minimalXML, "&gt; 0", "&gt; 0 and content.amount < 9", 1),
			nilPolicy: true,
			want:      []string{`test.xml:10:56: error: expected element name after <; in an expression, write < as &lt; or put the expression in <![CDATA[ ... ]]> [CP001]`},
		},
		{
			name:      "an unclosed element",
			src:       strings.Replace(minimalXML, "</policy>\n", "", 1),
			nilPolicy: true,
			want:      []string{`test.xml:14:1: error: unexpected end of file: 1 element(s) not closed [CP001]`},
		},
		{
			name:      "a DOCTYPE",
			src:       strings.Replace(minimalXML, "<policy", "<!DOCTYPE policy [<!ENTITY lol \"lol\">]>\n<policy", 1),
			nilPolicy: true,
			want:      []string{`test.xml:2:1: error: DOCTYPE declarations are not allowed in CP-XML [CP001]`},
		},
		{
			name:      "a second root element",
			src:       minimalXML + "<policy name=\"other\" version=\"1\"/>\n",
			nilPolicy: true,
			want:      []string{`test.xml:15:1: error: a second root element <policy>: a CP-XML file holds one <policy> element [CP001]`},
		},
		{
			name: "an element inside an expression",
			src:  strings.Replace(minimalXML, "content.amount &gt; 0</guard>", "content.amount <b/> &gt; 0</guard>", 1),
			want: []string{`test.xml:10:29: error: <guard> cannot hold elements such as <b>; write markup in expressions and docs as &lt; or in CDATA [CP002]`},
		},
		{
			name: "a guard given twice: the second used to replace the first silently",
			src:  strings.Replace(minimalXML, `<guard>content.amount &gt; 0</guard>`, `<guard>content.amount &gt; 0</guard><guard>true</guard>`, 1),
			want: []string{`test.xml:10:43: error: <guard> is given twice in <send-message> [CP005]`},
		},
		{
			name: "a doc given twice",
			src:  strings.Replace(minimalXML, `<role name="B"/>`, `<role name="B"><doc>b</doc><doc>again</doc></role>`, 1),
			want: []string{`test.xml:4:30: error: <doc> is given twice in <role> [CP005]`},
		},
		{
			name: "an element inside an attribute-only element",
			src:  strings.Replace(minimalXML, `<guard>content.amount &gt; 0</guard>`, `<guard>content.amount &gt; 0</guard><set var="x">1<x/></set>`, 1),
			want: []string{
				`test.xml:10:57: error: <set> cannot hold elements such as <x>; write markup in expressions and docs as &lt; or in CDATA [CP002]`,
			},
		},
		{
			name: "no roles and no states",
			src:  `<policy name="p" version="1"/>`,
			want: []string{
				`test.xml:1:15: error: the policy declares no roles (add <role name="..."/> elements) [CP004]`,
				`test.xml:1:15: error: the policy declares no states (add <state name="..."> elements) [CP004]`,
			},
		},
		{
			name:      "another root element",
			src:       `<protocol name="tiny"/>`,
			nilPolicy: true,
			want:      []string{`test.xml:1:1: error: the root element is <protocol>; a CP-XML file holds one <policy> element [CP003]`},
		},
		{
			name: "unknown attributes and elements with suggestions",
			src:  strings.Replace(strings.Replace(minimalXML, `<role name="B"/>`, `<role nmae="B"/>`, 1), "guard>", "gaurd>", 2),
			want: []string{
				`test.xml:4:3: error: <role> has no "name" attribute [CP004]`,
				`test.xml:4:15: error: unknown attribute "nmae" on <role>; did you mean "name"? [CP002]`,
				`test.xml:10:7: error: unknown element <gaurd> in <send-message>; did you mean "guard"? [CP002]`,
			},
		},
		{
			name: "an attribute given twice",
			src:  strings.Replace(minimalXML, `<state name="done" outcome="done"/>`, `<state name="done" outcome="done" outcome="finished"/>`, 1),
			want: []string{`test.xml:13:46: error: attribute "outcome" is given twice on <state> [CP005]`},
		},
		{
			name: "missing required attributes",
			src:  strings.Replace(minimalXML, `<send-message message="m" from="A" to="B" next="done">`, `<send-message message="m">`, 1),
			want: []string{
				`test.xml:9:5: error: <send-message> has no "from" attribute [CP004]`,
				`test.xml:9:5: error: <send-message> has no "next" attribute [CP004]`,
				`test.xml:9:5: error: <send-message> has no "to" attribute [CP004]`,
			},
		},
		{
			name: "values of the wrong form",
			src: strings.Replace(strings.Replace(minimalXML, `<role name="A"/>`, `<role name="A" many="yes"/>`, 1),
				`<field name="amount" type="number"/>`, `<field name="amount" type="numbr"/>`, 1),
			want: []string{
				`test.xml:3:24: error: many must be true or false, not "yes" [CP003]`,
				`test.xml:6:32: error: unknown type "numbr" (types: string, number, int, bool, time, duration, list, map, any; use optional="true" for an optional value); did you mean "number"? [CP003]`,
			},
		},
		{
			name: "a misspelt state kind is reported once",
			src:  strings.Replace(minimalXML, `<state name="done" outcome="done"/>`, `<state name="done" kind="termnal" outcome="done"/>`, 1),
			want: []string{`test.xml:13:28: error: state kind "termnal" is not one of normal, in-child, terminal; did you mean "terminal"? [CP003]`},
		},
		{
			name: "a bad duration is reported once",
			src:  strings.Replace(minimalXML, `<state name="s">`, `<timer name="t" after="5 minutes"/>`+"\n  "+`<state name="s">`, 1),
			want: []string{`test.xml:8:26: error: after: "5 minutes" is not a duration (write it like 30s, 500ms or 1m30s) [CP003]`},
		},
		{
			name: "stray text",
			src:  strings.Replace(minimalXML, `<role name="A"/>`, `<role name="A"/> and B`, 1),
			want: []string{`test.xml:2:1: error: <policy> holds text "and B" outside any element [CP003]`},
		},
		{
			name: "an empty expression",
			src:  strings.Replace(minimalXML, "<guard>content.amount &gt; 0</guard>", "<guard> </guard>", 1),
			want: []string{`test.xml:10:7: error: <guard> is empty: it holds an expression [CP004]`},
		},
		{
			name: "namespace declarations are allowed",
			src:  strings.Replace(minimalXML, `<policy name="tiny"`, `<policy xmlns="urn:parley:cp" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="urn:parley:cp policy.xsd" name="tiny"`, 1),
		},
	})
}

// TestLoadXMLPositions checks where the XML loader places model nodes:
// names at their attribute values, transitions at their elements, and
// expressions at their first character, inside CDATA where it is used.
func TestLoadXMLPositions(t *testing.T) {
	src := `<policy name="tiny" version="1" initial="s">
  <role name="A"/>
  <role
      name="B"/>
  <message name="m" performative="inform">
    <field name="amount" type="number"/>
    <match>"amount" in content</match>
  </message>
  <state name="s">
    <send-message message="m" from="A" to='B' next="done">
      <guard><![CDATA[content.amount > 0 &&
        content.amount < 10]]></guard>
      <set var="total">
        content.amount
      </set>
    </send-message>
  </state>
  <state name="done" outcome="done"/>
</policy>
`
	p, ds := policy.Load("test.xml", []byte(src))
	require.Empty(t, ds)
	pos := func(line, col int) policy.Pos { return policy.Pos{File: "test.xml", Line: line, Col: col} }
	assert.Equal(t, pos(1, 15), p.Pos, "policy name")
	assert.Equal(t, pos(1, 42), p.Initial.Pos, "initial attribute")
	assert.Equal(t, pos(2, 15), p.Roles[0].Pos, "role name")
	assert.Equal(t, pos(4, 13), p.Roles[1].Pos, "attribute on a continuation line")
	assert.Equal(t, pos(5, 18), p.Messages[0].Pos, "message name")
	assert.Equal(t, pos(6, 18), p.Messages[0].Fields[0].Pos, "field name")
	assert.Equal(t, pos(7, 12), p.Messages[0].Match.Pos, "match text")
	s := p.States[0]
	assert.Equal(t, pos(9, 16), s.Pos, "state name")
	tr := s.Transitions[0]
	assert.Equal(t, pos(10, 5), tr.Pos, "transition element")
	assert.Equal(t, pos(10, 28), tr.Message.Pos, "message attribute")
	assert.Equal(t, pos(10, 44), tr.To.Pos, "single-quoted attribute")
	assert.Equal(t, pos(10, 53), tr.Next.Pos, "next attribute")
	assert.Equal(t, pos(11, 23), tr.Guard.Pos, "CDATA expression")
	assert.Equal(t, pos(12, 9), tr.Guard.PosAt(2, 8), "continuation line of a CDATA expression")
	assert.Equal(t, pos(14, 9), tr.Set[0].Expr.Pos, "expression after blank lines")
	assert.Equal(t, pos(13, 17), tr.Set[0].Var.Pos, "set var attribute")
}

// TestLoadYAMLExprPositions checks where the YAML loader places
// expressions: at their first character, after the quote of a quoted
// scalar, and on the first line of a literal block.
func TestLoadYAMLExprPositions(t *testing.T) {
	src := `policy: tiny
version: 1
roles: [A, B]
messages:
  m: {performative: inform, fields: {amount: number}, match: '"amount" in content'}
vars: {total: number}
states:
  s:
    - {send: m, from: A, to: B, guard: content.amount > 0, next: t}
  t:
    - send: m
      from: A
      to: B
      guard: "content.amount < 10"
      set:
        total: |
          content.amount +
            1
      next: done
  done: {terminal: done}
`
	p, ds := policy.Load("test.yaml", []byte(src))
	require.Empty(t, ds)
	pos := func(line, col int) policy.Pos { return policy.Pos{File: "test.yaml", Line: line, Col: col} }
	assert.Equal(t, pos(5, 63), p.Messages[0].Match.Pos, "single-quoted")
	assert.Equal(t, pos(9, 40), p.States[0].Transitions[0].Guard.Pos, "plain")
	tr := p.States[1].Transitions[0]
	assert.Equal(t, pos(14, 15), tr.Guard.Pos, "double-quoted")
	set := tr.Set[0].Expr
	assert.Equal(t, pos(17, 11), set.Pos, "literal block")
	assert.Equal(t, "content.amount +\n  1", set.Src, "a literal block's final newline is not part of the expression")
	assert.Equal(t, pos(18, 13), set.PosAt(2, 2), "continuation line of a literal block")
}

// TestLoadFormatsAgree checks that a policy written in both formats loads
// to the same model.
func TestLoadFormatsAgree(t *testing.T) {
	py := mustLoad(t, minimal)
	px := mustLoad(t, strings.Replace(strings.Replace(strings.Replace(minimalXML,
		"\n    <field name=\"amount\" type=\"number\"/>\n  ", "", 1),
		"<message name=\"m\" performative=\"inform\"></message>", "<message name=\"m\" performative=\"inform\"/>", 1),
		"\n      <guard>content.amount &gt; 0</guard>\n    </send-message>", "</send-message>", 1))
	assert.Equal(t, py.Fingerprint(), px.Fingerprint())
}

package policy_test

import "testing"

// The request transition of baseYAML is on line 13; its guard, when
// added, starts at column 64: "    - {send: request, from: Initiator, to:
// Participant, guard: " is 63 bytes.
const requestTransition = "    - {send: request, from: Initiator, to: Participant, next: requested}\n"

func guarded(guard string) edit {
	return edit{requestTransition, "    - {send: request, from: Initiator, to: Participant, guard: " + guard + ", next: requested}\n"}
}

func TestCheckExpressions(t *testing.T) {
	withVars := edit{"states:\n", "vars: {count: int, reason: optional string}\nstates:\n"}
	// useVars sets and reads both variables, so the unused check stays
	// quiet.
	useVars := edit{"{send: refuse, from: Participant, to: Initiator, next: refused}",
		"{send: refuse, from: Participant, to: Initiator, guard: vars.count > 0 && vars.reason != nil, next: refused, set: {reason: content.reason, count: 1}}"}
	runCheckCases(t, []checkCase{
		{name: "clean"},
		{
			name:  "a guard over the message's typed content",
			edits: []edit{guarded("content.price > 0 && content.due != nil")},
		},
		{
			name:  "a guard over the envelope",
			edits: []edit{guarded(`'msg.reply_with != "" && len(msg.receivers) > 0 && msg.reply_by.Year() > 2000'`)},
		},
		{
			name:  "syntax error, plain scalar: points at the bad token",
			edits: []edit{guarded("content.price =< 100")},
			want:  []string{`test.yaml:13:78: error: guard: unexpected token Operator("=") [CP023]`},
		},
		{
			name:  "syntax error, single-quoted scalar",
			edits: []edit{guarded("'content.price =< 100'")},
			want:  []string{`test.yaml:13:79: error: guard: unexpected token Operator("=") [CP023]`},
		},
		{
			name:  "syntax error, double-quoted scalar",
			edits: []edit{guarded(`"content.price =< 100"`)},
			want:  []string{`test.yaml:13:79: error: guard: unexpected token Operator("=") [CP023]`},
		},
		{
			name: "syntax error, literal block: points into the continuation line",
			edits: []edit{{requestTransition, `    - send: request
      from: Initiator
      to: Participant
      guard: |
        content.price > 0 &&
          content.price =< 100
      next: requested
`}},
			want: []string{`test.yaml:18:25: error: guard: unexpected token Operator("=") [CP023]`},
		},
		{
			name:  "unknown content field with a suggestion",
			edits: []edit{guarded("content.prise > 0")},
			want:  []string{`test.yaml:13:72: error: guard: the message content has no field "prise"; did you mean "price"? [CP024]`},
		},
		{
			name:  "columns count bytes, so a multi-byte character before the error does not shift it",
			edits: []edit{guarded(`'"café" != "" && content.prce > 0'`)},
			want:  []string{`test.yaml:13:90: error: guard: the message content has no field "prce"; did you mean "price"? [CP024]`},
		},
		{
			name:  "unknown envelope parameter",
			edits: []edit{guarded("msg.replyby != nil")},
			want:  []string{`test.yaml:13:68: error: guard: the message envelope has no parameter "replyby"; did you mean "reply_by"? [CP024]`},
		},
		{
			name:  "undeclared variable",
			edits: []edit{withVars, useVars, guarded("vars.cuont > 0")},
			want:  []string{`test.yaml:14:69: error: guard: there is no variable "cuont" (declare it under vars); did you mean "count"? [CP024]`},
		},
		{
			name:  "a guard that is not a bool",
			edits: []edit{guarded("content.price")},
			want:  []string{`test.yaml:13:64: error: guard is a number, but must be a bool [CP024]`},
		},
		{
			name:  "a guard on an optional field's value",
			edits: []edit{guarded("content.due")},
			want:  []string{`test.yaml:13:64: error: guard is an optional time, but must be a bool [CP024]`},
		},
		{
			name:  "a value of the wrong type for its variable",
			edits: []edit{withVars, useVars, {"{send: agree, from: Participant, to: Initiator, next: agreed}", "{send: agree, from: Participant, to: Initiator, next: agreed, set: {count: 1.5}}"}},
			want:  []string{`test.yaml:18:84: error: value of "count" is a number, but must be an int [CP024]`},
		},
		{
			name:  "a value of a message without fields is checked at run time",
			edits: []edit{withVars, useVars, {"{send: agree, from: Participant, to: Initiator, next: agreed}", "{send: agree, from: Participant, to: Initiator, next: agreed, set: {count: content.anything}}"}},
		},
		{
			name: "a match rule that is not a bool",
			edits: []edit{{"  inform-result: {performative: inform, fields: {result: any}}",
				"  inform-result: {performative: inform, fields: {result: any}, match: '\"result\"'}"}},
			want: []string{`test.yaml:8:72: error: match rule is a string, but must be a bool [CP024]`},
		},
		{
			name:  "a match rule cannot read variables",
			edits: []edit{withVars, useVars, {"  inform-result: {performative: inform, fields: {result: any}}", "  inform-result: {performative: inform, fields: {result: any}, match: vars.count > 0}"}},
			want:  []string{`test.yaml:8:71: error: match rule: vars cannot be read here: a match rule classifies a message by itself, before any state is known, so it can read only content and msg [CP024]`},
		},
		{
			name:  "an on-timeout guard sees only variables",
			edits: []edit{{"{timeout: reply, next: timed-out}", "{timeout: reply, guard: content.price > 0, next: timed-out}"}},
			want:  []string{`test.yaml:19:33: error: guard: content cannot be read here: no message comes with a timeout or a child policy's return, so this expression can read only vars [CP024]`},
		},
		{
			name:  "an on-timeout guard cannot read the envelope either",
			edits: []edit{{"{timeout: reply, next: timed-out}", "{timeout: reply, guard: msg.sender == 'x', next: timed-out}"}},
			want:  []string{`test.yaml:19:33: error: guard: msg cannot be read here: no message comes with a timeout or a child policy's return, so this expression can read only vars [CP024]`},
		},
		{
			name:  "an unknown name no place provides keeps expr's message",
			edits: []edit{{"{timeout: reply, next: timed-out}", "{timeout: reply, guard: contnet.price > 0, next: timed-out}"}},
			want:  []string{`test.yaml:19:33: error: guard: unknown name contnet [CP024]`},
		},
		{
			name:  "decide may read choices, peer and sessions",
			edits: []edit{{"  requested:\n", "  requested:\n    decide: 'len(sessions) > 1 ? choices[0] : peer'\n"}},
		},
		{
			name:  "decide syntax error",
			edits: []edit{{"  requested:\n", "  requested:\n    decide: (choices[0]\n"}},
			want:  []string{`test.yaml:15:23: error: decide: unexpected token EOF [CP023]`},
		},
		{
			// Entities are decoded before checking; a position after one
			// is off by the entity's extra length (see docs), which is why
			// guards using < or && are better written in CDATA.
			name:  "XML text",
			src:   xmlBase,
			edits: []edit{{`<guard>vars.price &gt; 0</guard>`, `<guard>vars.prise &gt; 0</guard>`}},
			want: []string{
				`test.xml:9:14: warning: variable "price" is set but never read [CP022]`,
				`test.xml:17:19: error: guard: there is no variable "prise" (declare it under vars); did you mean "price"? [CP024]`,
			},
		},
		{
			name: "XML CDATA: points into the CDATA section",
			src:  xmlBase,
			edits: []edit{{`<guard>vars.price &gt; 0</guard>`, `<guard><![CDATA[
        vars.price > 0 &&
          vars.prise < 100
      ]]></guard>`}},
			want: []string{`test.xml:19:16: error: guard: there is no variable "prise" (declare it under vars); did you mean "price"? [CP024]`},
		},
	})
}

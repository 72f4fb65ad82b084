package policy_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/policy"
)

// sum returns a guard of 2n+1 syntax nodes: n ones, the n-1 pluses
// between them, a > and a 0.
func sum(n int) string {
	return strings.Repeat("1+", n-1) + "1 > 0"
}

// TestCheckRejectsWhatTheEngineRejects is the regression test for a guard
// over the engine's node limit that passed validation and then failed to
// compile in the engine, reported at the policy's name: the expressions
// check must report it, at the guard, exactly when the engine refuses it.
func TestCheckRejectsWhatTheEngineRejects(t *testing.T) {
	tests := []struct {
		name  string
		guard string
		want  []string
	}{
		{name: "at the limit", guard: sum(policy.MaxExprNodes/2 - 1)},
		{name: "over the limit", guard: sum(policy.MaxExprNodes / 2),
			want: []string{fmt.Sprintf("test.yaml:13:64: error: guard has more than %d syntax nodes (policy.MaxExprNodes); split it into several, or simplify it [CP006]", policy.MaxExprNodes)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustLoad(t, patch(t, baseYAML, guarded(tt.guard)))
			ds := policy.CheckPolicy(p)
			guard := p.State("start").Transitions[0].Guard
			require.NotNil(t, guard)
			_, err := decision.Compile(guard)
			if tt.want == nil {
				assert.Empty(t, lines(ds))
				assert.NoError(t, err)
				return
			}
			assert.Equal(t, tt.want, lines(ds))
			var ee *decision.EvalError
			require.ErrorAs(t, err, &ee)
			assert.ErrorIs(t, err, policy.ErrExprLimit)
			assert.Equal(t, ds[0].Pos, ee.Pos(), "the engine reports it where validation does")
		})
	}
}

// TestCheckAndEngineAgreeOnExpressions compiles guards of every kind the
// bounding rewrites (concatenation, builtins that build, loops, method
// calls, patterns, aggregates) both ways: validation accepts them, which
// it would not had the bounding changed their type from bool, and the
// engine compiles them.
func TestCheckAndEngineAgreeOnExpressions(t *testing.T) {
	tests := []struct {
		name, guard string
		want        []string // when set, the diagnostics (the same as without the bounding)
	}{
		{name: "a string builtin keeps its type", guard: `'upper(content.note)'`,
			want: []string{"test.yaml:13:65: error: guard is a string, but must be a bool [CP024]"}},
		{name: "a loop keeps its type", guard: `'map(content.tags, # + "")'`,
			want: []string{"test.yaml:13:65: error: guard is a list, but must be a bool [CP024]"}},
		{name: "an error inside a bounded builtin", guard: `'upper(content.nte) == ""'`,
			want: []string{`test.yaml:13:79: error: guard: the message content has no field "nte"; did you mean "note"? [CP024]`}},
		{name: "concatenation", guard: `'content.note + "!" == "ok!"'`},
		{name: "a string builtin", guard: `'upper(content.note) == "OK" && len(repeat(content.note, 2)) > 0'`},
		{name: "a list builtin", guard: `'len(split(content.note, ",")) > 1 && len(values({"a": content.note})) > 0'`},
		{name: "a loop", guard: `'all(content.tags, len(# + "") > 0) && sum(content.tags, len(#)) > 0'`},
		{name: "nested loops", guard: `'any(content.tags, none(content.tags, # == "x"))'`},
		{name: "a method call", guard: `'msg.reply_by.Format("2006") != ""'`},
		{name: "a pattern from the content", guard: `'content.note matches content.tags[0]'`},
		{name: "an aggregate", guard: `'max(map(content.tags, len(#))) > 0'`},
		{name: "an optional field", guard: `'content.memo + "" != ""'`},
	}
	withFields := edit{"request: {performative: request, fields: {price: number, due: optional time}}",
		"request: {performative: request, fields: {price: number, due: optional time, note: string, memo: optional string, tags: list}}"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustLoad(t, patch(t, baseYAML, withFields, guarded(tt.guard)))
			ds := policy.CheckPolicy(p)
			if tt.want != nil {
				assert.Equal(t, tt.want, lines(ds))
				return
			}
			assert.Empty(t, lines(ds))
			_, err := decision.Compile(p.State("start").Transitions[0].Guard)
			assert.NoError(t, err)
		})
	}
}

// TestExpressionLimitsAreDocumented checks that the table of expression
// limits in docs/diagnostics.md shows the constants' values.
func TestExpressionLimitsAreDocumented(t *testing.T) {
	src, err := os.ReadFile(docPath)
	require.NoError(t, err)
	for name, value := range map[string]string{
		"MaxExprNodes":     fmt.Sprint(policy.MaxExprNodes),
		"ExprMemoryBudget": fmt.Sprint(policy.ExprMemoryBudget),
		"MaxExprElements":  fmt.Sprint(policy.MaxExprElements),
		"MaxExprString":    fmt.Sprint(policy.MaxExprString),
		"MaxExprSteps":     fmt.Sprint(policy.MaxExprSteps),
		"ExprTimeLimit":    fmt.Sprint(policy.ExprTimeLimit),
		"MaxExprPattern":   fmt.Sprint(policy.MaxExprPattern),
	} {
		assert.Contains(t, string(src), fmt.Sprintf("| `%s` | %s", name, value), "the expression limits table of docs/diagnostics.md is out of date")
	}
	assert.Equal(t, 100*time.Millisecond, policy.ExprTimeLimit)
}

package decision_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/policy"
)

// at is an expression as a loader reads it from line 12, column 10 of
// p.yaml, with continuation lines indented to column 5.
func at(src string) *policy.Expr {
	return &policy.Expr{Src: src, Pos: policy.Pos{File: "p.yaml", Line: 12, Col: 10}, Indent: 5}
}

func TestCompileErrorsCarryThePolicyPosition(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string
	}{
		{"syntax", `content.price >`, `p.yaml:12:24: expression "content.price >": unexpected token EOF`},
		{"unknown name", `cost > 3`, `p.yaml:12:10: expression "cost > 3": unknown name cost`},
		{"second line", "content.price > 3 &&\n  nope", "p.yaml:13:7: expression \"content.price > 3 &&\\n  nope\": unknown name nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decision.Compile(at(tt.src))
			require.Error(t, err)
			assert.Equal(t, tt.want, err.Error())
			var ee *decision.EvalError
			require.ErrorAs(t, err, &ee)
			assert.Equal(t, tt.src, ee.Expr.Src)
		})
	}
}

func TestCompileLimitsSize(t *testing.T) {
	src := strings.Repeat("1 + ", policy.MaxExprNodes) + "1"
	_, err := decision.Compile(at(src))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "p.yaml:12:")
}

func TestEval(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		env     decision.Env
		want    any
		wantErr string
	}{
		{name: "content", src: `content.price * 2`, env: decision.Env{Content: map[string]any{"price": 21}}, want: 42},
		{name: "missing content is nil", src: `content.price`, want: nil},
		{name: "in", src: `"result" in content`, env: decision.Env{Content: map[string]any{"result": nil}}, want: true},
		{name: "msg", src: `msg.sender + ">" + msg.receivers[0]`, env: decision.Env{Msg: policy.Envelope{Sender: "bob", Receivers: []string{"alice"}}}, want: "bob>alice"},
		{name: "vars", src: `vars.n + 1`, env: decision.Env{Vars: map[string]any{"n": 1}}, want: 2},
		{name: "choices and peer", src: `peer + ":" + choices[1]`, env: decision.Env{Peer: "bob", Choices: []string{"agree", "refuse"}}, want: "bob:refuse"},
		{name: "sessions", src: `len(sessions)`, env: decision.Env{Sessions: []map[string]any{{}, {}}}, want: 2},
		{name: "runtime error", src: `content.items[3]`, env: decision.Env{Content: map[string]any{"items": []any{1}}},
			wantErr: `p.yaml:12:23: expression "content.items[3]": index out of range: 3 (array length is 1)`},
		{name: "runtime error on the second line", src: "content.price > 3 &&\n  content.items[3] > 0", env: decision.Env{Content: map[string]any{"price": 5, "items": []any{1}}},
			wantErr: "p.yaml:13:20: expression \"content.price > 3 &&\\n  content.items[3] > 0\": index out of range: 3 (array length is 1)"},
		{name: "type error", src: `content.price + 1`, env: decision.Env{Content: map[string]any{"price": "cheap"}},
			wantErr: `p.yaml:12:24: expression "content.price + 1": invalid operation: string + int`},
		{name: "memory budget", src: `len(map(1..1000000, # * 2))`,
			wantErr: `p.yaml:12:19: expression "len(map(1..1000000, # * 2))": over the expression limits: more than 262144 list, map and range elements built`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog, err := decision.Compile(at(tt.src))
			require.NoError(t, err)
			got, err := prog.Eval(&tt.env)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Equal(t, tt.wantErr, err.Error())
				var ee *decision.EvalError
				require.ErrorAs(t, err, &ee)
				assert.NotNil(t, errors.Unwrap(err))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestBool(t *testing.T) {
	yes, err := decision.Compile(at(`content.price < 5`))
	require.NoError(t, err)
	ok, err := yes.Bool(&decision.Env{Content: map[string]any{"price": 3}})
	require.NoError(t, err)
	assert.True(t, ok)

	str, err := decision.Compile(at(`"yes"`))
	require.NoError(t, err)
	_, err = str.Bool(&decision.Env{})
	assert.EqualError(t, err, `p.yaml:12:10: expression "\"yes\"": result is string, not bool`)

	bad, err := decision.Compile(at(`content.price < 5`))
	require.NoError(t, err)
	_, err = bad.Bool(&decision.Env{Content: map[string]any{"price": "x"}})
	assert.ErrorContains(t, err, "p.yaml:12:")
}

func TestProgramIsSafeForConcurrentUse(t *testing.T) {
	prog, err := decision.Compile(at(`content.n * 2`))
	require.NoError(t, err)
	done := make(chan struct{})
	for i := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 100 {
				out, err := prog.Eval(&decision.Env{Content: map[string]any{"n": i}})
				assert.NoError(t, err)
				assert.Equal(t, i*2, out)
			}
		}()
	}
	for range 8 {
		<-done
	}
}

// TestExpressionsTypedNativelyEvaluateAsCompiled checks the expressions
// Compile leaves to be compiled on first use (the shapes
// policy.ExprTypeOf types) against the same source compiled at once: the
// same value or the same error, from many goroutines at once.
func TestExpressionsTypedNativelyEvaluateAsCompiled(t *testing.T) {
	tests := []struct {
		name string
		src  string
		env  decision.Env
	}{
		{"a guard the native form decides", `vars.last < 100`, decision.Env{Vars: map[string]any{"last": 7}}},
		{"a guard on a missing variable", `vars.last < 100`, decision.Env{Vars: map[string]any{}}},
		{"a guard on a variable of another type", `vars.last < 100`, decision.Env{Vars: map[string]any{"last": "seven"}}},
		{"an assignment", `content.n + 5`, decision.Env{Content: map[string]any{"n": 42}}},
		{"an assignment of a string", `content.n + 5`, decision.Env{Content: map[string]any{"n": "x"}}},
		{"a division", `content.n / 4`, decision.Env{Content: map[string]any{"n": 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree, err := parser.Parse(tt.src)
			require.NoError(t, err)
			_, typed := policy.ExprTypeOf(tree.Node, decision.Env{})
			require.True(t, typed, "the case is one Compile leaves for later")
			prog, err := policy.CompileExpr(tt.src, decision.Env{})
			require.NoError(t, err)
			env := tt.env
			want, wantErr := vm.Run(prog, &env)

			x, err := decision.Compile(at(tt.src))
			require.NoError(t, err)
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					env := tt.env
					got, err := x.Eval(&env)
					if wantErr != nil {
						var ee *decision.EvalError
						if assert.ErrorAs(t, err, &ee) {
							assert.Equal(t, wantErr.Error(), ee.Err.Error())
						}
						return
					}
					assert.NoError(t, err)
					assert.Equal(t, want, got)
				})
			}
			wg.Wait()
		})
	}
}

// TestCompilerCompilesAsCompile checks that a Compiler given the checks'
// trees compiles each expression of a policy as Compile does: whether
// it reads msg, and its value in an environment, or the same error; and
// that an expression the checks did not lend it compiles from source.
func TestCompilerCompilesAsCompile(t *testing.T) {
	p, ds := policy.LoadYAML("c.yaml", []byte(`policy: c
version: 1
roles: [A, B]
messages:
  ask: {performative: request, fields: {n: int, who: string}}
  ok: {performative: inform, fields: {result: any}, match: '"result" in content && msg.sender != ""'}
vars: {last: int, name: optional string}
states:
  start:
    decide: 'len(choices) > 0 ? choices[0] : ""'
    on:
      - {send: ask, from: A, to: B, next: asked, guard: 'vars.last < 10', set: {last: content.n + 1, name: content.who}}
  asked:
    - {send: ok, from: B, to: A, next: done, guard: 'vars.last < 10 || msg.sender == vars.name'}
  done: {terminal: done}
`))
	require.False(t, ds.HasErrors(), "%v", ds)
	var c decision.Compiler
	lent := 0
	a := policy.Analyze(p, policy.WithExprTrees(func(e *policy.Expr, tree ast.Node) {
		lent++
		c.Parsed(e, tree)
	}))
	require.Empty(t, a.Diagnostics)
	require.Equal(t, 6, lent, "the checks lend every expression of the policy")
	env := decision.Env{
		Content: map[string]any{"n": 4, "who": "bob", "result": 1},
		Vars:    map[string]any{"last": 3},
		Msg:     policy.Envelope{Sender: "alice"},
		Choices: []string{"ask"},
	}
	exprs := []*policy.Expr{p.Messages[1].Match, p.States[0].Decide, p.States[0].Transitions[0].Guard, p.States[1].Transitions[0].Guard}
	for _, set := range p.States[0].Transitions[0].Set {
		exprs = append(exprs, set.Expr)
	}
	exprs = append(exprs, at(`content.n * 2`), at(`content.n =< 2`))
	for _, e := range exprs {
		t.Run(e.Src, func(t *testing.T) {
			want, wantErr := decision.Compile(e)
			got, err := c.Compile(e)
			if wantErr != nil {
				assert.EqualError(t, err, wantErr.Error())
				return
			}
			require.NoError(t, err)
			assert.Equal(t, want.ReadsMsg(), got.ReadsMsg())
			wv, werr := want.Eval(&env)
			gv, gerr := got.Eval(&env)
			assert.Equal(t, werr, gerr)
			assert.Equal(t, wv, gv)
		})
	}
}

// TestCompilerHandsOutEachLentExpressionOnce checks that a Compiler
// asked for the expressions in the order the checks lent them, or in
// another, gives each compiled tree once and compiles an expression
// asked for again from its source.
func TestCompilerHandsOutEachLentExpressionOnce(t *testing.T) {
	p, ds := policy.LoadYAML("c.yaml", []byte(`policy: c
version: 1
roles: [A, B]
messages:
  ask: {performative: request, fields: {n: int}}
vars: {last: int}
states:
  start:
    - {send: ask, from: A, to: B, next: asked, guard: 'vars.last < 10', set: {last: content.n + 1}}
  asked:
    - {send: ask, from: B, to: A, next: done, guard: 'vars.last > 2'}
  done: {terminal: done}
`))
	require.False(t, ds.HasErrors(), "%v", ds)
	tr0, tr1 := p.States[0].Transitions[0], p.States[1].Transitions[0]
	inOrder := []*policy.Expr{tr0.Guard, tr0.Set[0].Expr, tr1.Guard}
	tests := []struct {
		name  string
		order []*policy.Expr
	}{
		{name: "in the order lent", order: inOrder},
		{name: "in reverse", order: []*policy.Expr{inOrder[2], inOrder[1], inOrder[0]}},
		{name: "one skipped then asked", order: []*policy.Expr{inOrder[0], inOrder[2], inOrder[1]}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c decision.Compiler
			a := policy.Analyze(p, policy.WithExprTrees(c.Parsed))
			require.Empty(t, a.Diagnostics)
			first := map[*policy.Expr]*decision.Expression{}
			for _, e := range tt.order {
				x, err := c.Compile(e)
				require.NoError(t, err)
				assert.Same(t, e, x.Src)
				first[e] = x
			}
			for _, e := range tt.order {
				x, err := c.Compile(e)
				require.NoError(t, err)
				assert.NotSame(t, first[e], x, "%s is handed out once", e.Src)
			}
		})
	}
}

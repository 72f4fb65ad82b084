package policy_test

import (
	"testing"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/policy"
)

// treesYAML has an expression of every place: a match rule, a decide, a
// guard and assignments, one guard repeated, and one expression that
// does not parse.
const treesYAML = `policy: trees
version: 1
roles: [A, B]
messages:
  ask: {performative: request, fields: {n: int, who: string}}
  ok:
    performative: inform
    fields: {result: any}
    match: '"result" in content'
vars: {last: int, name: optional string}
states:
  start:
    decide: 'len(choices) > 0 ? choices[0] : ""'
    on:
      - {send: ask, from: A, to: B, next: asked, guard: 'vars.last < 10', set: {last: content.n + 1, name: content.who}}
  asked:
    - {send: ok, from: B, to: A, next: done, guard: 'vars.last < 10'}
    - {send: ask, from: A, to: B, next: asked, guard: 'vars.last =< 3'}
  done: {terminal: done}
`

// TestWithExprTreesLendsEachParsedTree checks that the expressions check
// lends every expression it parses, with the tree expr's parser gives
// for its source, once for each source and place, and that lending them
// changes nothing the checks report.
func TestWithExprTreesLendsEachParsedTree(t *testing.T) {
	p, ds := policy.LoadYAML("trees.yaml", []byte(treesYAML))
	require.False(t, ds.HasErrors(), "%v", ds)
	lent := map[string]int{}
	a := policy.Analyze(p, policy.WithExprTrees(func(e *policy.Expr, tree ast.Node) {
		want, err := parser.Parse(e.Src)
		require.NoError(t, err)
		assert.Equal(t, want.Node.String(), tree.String(), e.Src)
		lent[e.Src]++
	}))
	assert.Equal(t, map[string]int{
		`"result" in content`:                1,
		`len(choices) > 0 ? choices[0] : ""`: 1,
		`vars.last < 10`:                     2, // the message types differ, so the environments do
		`content.n + 1`:                      1,
		`content.who`:                        1,
	}, lent)
	assert.Equal(t, policy.Analyze(p).Diagnostics, a.Diagnostics)
	require.True(t, a.Diagnostics.HasErrors(), "the guard that does not parse is reported")
}

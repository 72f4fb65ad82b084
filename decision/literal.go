package decision

import (
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"

	"github.com/parleyhq/parley/policy"
)

// Literal reports whether e is a literal (true, 1, -0.5, "x", nil) and
// returns the value Eval gives it, boxed once: a caller that evaluates it
// often (the engine, an assignment's value) can take the value instead of
// running the VM each time, with the same result.
func Literal(e *policy.Expr) (any, bool) {
	tree, err := parser.Parse(e.Src)
	if err != nil {
		return nil, false
	}
	switch n := tree.Node.(type) {
	case *ast.NilNode:
		return nil, true
	case *ast.BoolNode:
		return n.Value, true
	case *ast.StringNode:
		return n.Value, true
	}
	l, ok := literalOf(tree.Node)
	switch {
	case !ok:
		return nil, false
	case l.kind == litInt:
		return l.i, true
	case l.kind == litFloat:
		return l.f, true
	}
	return nil, false
}

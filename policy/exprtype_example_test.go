package policy_test

import (
	"fmt"

	"github.com/expr-lang/expr/parser"

	"github.com/parleyhq/parley/policy"
)

// ExamplePrepareExprEnv types several expressions against one
// environment, prepared once: the same answers as policy.ExprTypeOf.
func ExamplePrepareExprEnv() {
	type vars struct {
		Last int `expr:"last"`
	}
	env := policy.PrepareExprEnv(map[string]any{policy.EnvVars: vars{}})
	for _, src := range []string{`vars.last < 100`, `vars.last + 1`, `vars.missing > 1`} {
		tree, err := parser.Parse(src)
		if err != nil {
			fmt.Println(err)
			continue
		}
		t, ok := env.TypeOf(tree.Node)
		fmt.Println(src, "->", t, ok)
	}
	// Output:
	// vars.last < 100 -> bool true
	// vars.last + 1 -> int true
	// vars.missing > 1 -> <nil> false
}

package decision_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/policy"
)

// Literal gives a literal the value Eval gives it, of the same Go type,
// and says no for every other expression.
func TestLiteral(t *testing.T) {
	tests := []struct {
		src     string
		literal bool
	}{
		{`true`, true},
		{`false`, true},
		{`nil`, true},
		{`0`, true},
		{`300`, true},
		{`-1`, true},
		{`1.5`, true},
		{`-0.5`, true},
		{`1e3`, true},
		{`"x"`, true},
		{`""`, true},
		{`'single'`, true},
		{`!true`, false},
		{`1 + 1`, false},
		{`-(-1)`, false},
		{`[1]`, false},
		{`{"a": 1}`, false},
		{`content.a`, false},
		{`content.a > 1`, false},
		{`vars.agreed != true`, false},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			e := &policy.Expr{Src: tt.src}
			got, ok := decision.Literal(e)
			require.Equal(t, tt.literal, ok)
			if !ok {
				return
			}
			prog, err := decision.Compile(e)
			require.NoError(t, err)
			want, err := prog.Eval(&decision.Env{Content: map[string]any{"a": 2}})
			require.NoError(t, err)
			assert.Equal(t, want, got)
		})
	}
}

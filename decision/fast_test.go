package decision

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/policy"
)

// TestPresenceAgreesWithTheVM checks the native evaluation of presence
// expressions against expr's own, on every combination of keys.
func TestPresenceAgreesWithTheVM(t *testing.T) {
	tests := []struct {
		src  string
		fast bool
	}{
		{`"result" in content`, true},
		{`!("result" in content)`, true},
		{`not ("result" in content)`, true},
		{`!("result" in content) && !("holds" in content)`, true},
		{`"a" in content or "b" in content`, true},
		{`"a" in content and not ("b" in content)`, true},
		{`!(!("a" in content))`, true},
		{`"a" in vars`, false},
		{`content.a > 1`, false},
		{`!("a" in content && "b" in content)`, false},
	}
	contents := []map[string]any{nil, {}, {"result": 1}, {"holds": true}, {"a": 1}, {"b": 2}, {"a": 1, "b": 2}, {"result": nil, "holds": false}}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			prog, err := Compile(&policy.Expr{Src: tt.src})
			require.NoError(t, err)
			assert.Equal(t, tt.fast, prog.fast != nil)
			slow := &Expression{Src: prog.Src, prog: prog.prog}
			for _, c := range contents {
				want, werr := slow.Bool(&Env{Content: c})
				got, gerr := prog.Bool(&Env{Content: c})
				if werr != nil {
					continue // the VM rejects it (vars is nil): nothing to compare
				}
				require.NoError(t, gerr)
				assert.Equal(t, want, got, "content %v", c)
			}
		})
	}
}

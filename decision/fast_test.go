package decision

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/policy"
)

// TestFastPathAgreesWithTheVM checks the native evaluation of presence
// tests and field-against-literal comparisons against expr's own, on
// contents and vars with every kind of value those read (missing, nil,
// integers and floats of several Go types, strings, booleans, NaN): where
// the VM gives a result the fast path gives the same one, and where the
// VM fails so does the fast path.
func TestFastPathAgreesWithTheVM(t *testing.T) {
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
		{`!("a" in content && "b" in content)`, true},
		{`content.a > 1`, true},
		{`content.a >= 1`, true},
		{`content.a < 1.5`, true},
		{`content.a <= -1`, true},
		{`content.a == 1`, true},
		{`content.a != 1`, true},
		{`1 < content.a`, true},
		{`-0.5 >= content.a`, true},
		{`content["a"] > 0`, true},
		{`content.s == "x"`, true},
		{`content.s != "x"`, true},
		{`content.s < "m"`, true},
		{`content.holds == true`, true},
		{`content.holds != false`, true},
		{`vars.a > 1`, true},
		{`vars.s == "x"`, true},
		{`"a" in content && content.a > 0`, true},
		{`content.a > 0 || content.s == "x"`, true},
		{`!(content.a > 0)`, true},
		{`content.a > 0 and not (content.b == 2)`, true},
		{`"a" in vars`, false},
		{`content.a > vars.a`, false},
		{`content.a + 1 > 2`, false},
		{`content?.a > 1`, false},
		{`content.x.y > 1`, false},
		{`msg.sender == "a"`, false},
	}
	values := []any{nil, 0, 1, 2, -1, int64(1), int32(-3), uint8(2), uint64(1 << 63), 0.5, 1.0, -0.5, float32(1.5), math.NaN(), "x", "a", "z", "", true, false, []any{1}, map[string]any{}}
	var contents []map[string]any
	contents = append(contents, nil, map[string]any{})
	for _, v := range values {
		contents = append(contents, map[string]any{"a": v}, map[string]any{"s": v}, map[string]any{"holds": v}, map[string]any{"a": v, "b": 2, "s": "x", "result": 1})
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			prog, err := Compile(&policy.Expr{Src: tt.src})
			require.NoError(t, err)
			assert.Equal(t, tt.fast, prog.fast != nil)
			slow := &Expression{Src: prog.Src, prog: prog.prog}
			for _, c := range contents {
				for _, vars := range []map[string]any{c, nil} {
					env := Env{Content: c, Vars: vars, Msg: policy.Envelope{Sender: "a"}}
					want, werr := slow.Bool(&env)
					got, gerr := prog.Bool(&env)
					if werr != nil {
						assert.Error(t, gerr, "content %v, vars %v: the VM fails, the fast path does not", c, vars)
						continue
					}
					require.NoError(t, gerr, "content %v, vars %v", c, vars)
					assert.Equal(t, want, got, "content %v, vars %v", c, vars)
				}
			}
		})
	}
}

// TestReadsMsg checks which expressions are said to read the envelope:
// only those that cannot be evaluated without it may skip it.
func TestReadsMsg(t *testing.T) {
	tests := []struct {
		name, src string
		want      bool
	}{
		{"content only", `content.n > 0`, false},
		{"vars and content", `vars.n + content.n > 0`, false},
		{"sender", `msg.sender == "a"`, true},
		{"nested", `"x" in content && msg.performative == "inform"`, true},
		{"whole environment", `$env.msg.sender == "a"`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog, err := Compile(&policy.Expr{Src: tt.src})
			require.NoError(t, err)
			assert.Equal(t, tt.want, prog.ReadsMsg())
		})
	}
}

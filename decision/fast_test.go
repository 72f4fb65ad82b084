package decision

import (
	"math"
	"strconv"
	"strings"
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

// TestBoolFieldIsBool checks ContentField and BoolField: the field is
// the one content field an expression's native form reads, and
// BoolField with the value content holds there gives what Bool gives,
// result or failure, on contents and vars with every kind of value.
func TestBoolFieldIsBool(t *testing.T) {
	tests := []struct {
		src   string
		field string
		ok    bool
	}{
		{`content.a > 1`, "a", true},
		{`1 < content.a`, "a", true},
		{`content["a"] == "x"`, "a", true},
		{`"a" in content`, "a", true},
		{`!("a" in content)`, "a", true},
		{`"a" in content && content.a > 0`, "a", true},
		{`content.a > 0 && content.a < 10 || content.a == -1`, "a", true},
		{`vars.s == "x" && content.a >= 1`, "a", true},
		{`not (content.a != true)`, "a", true},
		{`content.a > 0 || content.s == "x"`, "", false},
		{`vars.a > 1`, "", false},
		{`"a" in vars`, "", false},
		{`content.a + 1 > 2`, "", false},
	}
	values := []any{nil, 0, 1, 2, 10, -1, int64(1), int32(-3), uint8(2), uint64(1 << 63), 0.5, 1.0, -1.0, float32(1.5), math.NaN(), "x", "", true, false, []any{1}, map[string]any{}}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			prog, err := Compile(&policy.Expr{Src: tt.src})
			require.NoError(t, err)
			field, ok := prog.ContentField()
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.field, field)
			for _, v := range values {
				c := map[string]any{"a": v, "s": "x"}
				for _, vars := range []map[string]any{nil, {"s": "x", "a": 2}, {"s": "y"}} {
					env := Env{Content: c, Vars: vars}
					want, werr := prog.Bool(&env)
					got, gerr := prog.BoolField(c, vars, v)
					if werr != nil {
						assert.Error(t, gerr, "value %v, vars %v: Bool fails, BoolField does not", v, vars)
						continue
					}
					require.NoError(t, gerr, "value %v, vars %v", v, vars)
					assert.Equal(t, want, got, "value %v, vars %v", v, vars)
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

// FuzzFastPathAgreesWithTheVM builds a comparison of a content field
// with a literal, and a value for the field, from the fuzzer's input, and
// checks the fast path against expr's VM: the same result, or both fail.
func FuzzFastPathAgreesWithTheVM(f *testing.F) {
	f.Add(uint8(0), uint8(0), int64(0), 0.0, "", uint8(0), int64(1), 1.5, "x", false)
	f.Add(uint8(4), uint8(1), int64(-3), -0.5, "a", uint8(2), int64(-3), math.NaN(), "a", true)
	f.Add(uint8(2), uint8(2), int64(7), 2.0, "m", uint8(3), int64(1<<62), math.Inf(1), "z", false)
	f.Add(uint8(5), uint8(3), int64(1), 1.0, "", uint8(4), int64(0), 0.0, "", true)
	f.Fuzz(func(t *testing.T, opIdx, litKind uint8, li int64, lf float64, ls string, valKind uint8, vi int64, vf float64, vs string, vb bool) {
		ops := []string{"==", "!=", "<", "<=", ">", ">="}
		var lit string
		switch litKind % 4 {
		case 0:
			lit = strconv.FormatInt(li, 10)
		case 1:
			if math.IsNaN(lf) || math.IsInf(lf, 0) {
				t.Skip()
			}
			lit = strconv.FormatFloat(lf, 'f', -1, 64)
			if !strings.ContainsAny(lit, ".") {
				lit += ".0"
			}
		case 2:
			lit = strconv.Quote(ls)
		case 3:
			lit = strconv.FormatBool(vb)
		}
		src := "content.v " + ops[int(opIdx)%len(ops)] + " " + lit
		prog, err := Compile(&policy.Expr{Src: src})
		if err != nil {
			t.Skip()
		}
		values := []any{vi, int(vi), int32(vi), uint64(vi), uint8(vi), vf, float32(vf), vs, vb, nil}
		content := map[string]any{"v": values[int(valKind)%len(values)]}
		slow := &Expression{Src: prog.Src, prog: prog.prog}
		want, werr := slow.Bool(&Env{Content: content})
		got, gerr := prog.Bool(&Env{Content: content})
		if werr != nil {
			require.Error(t, gerr, "%s on %#v", src, content["v"])
			return
		}
		require.NoError(t, gerr, "%s on %#v", src, content["v"])
		require.Equal(t, want, got, "%s on %#v", src, content["v"])
	})
}

// TestPresence checks Presence: the expressions whose native form tests
// one key's presence and nothing else have it, and what it says they
// give with the key and without it is what Bool gives, without error,
// on contents with the key holding every kind of value, without it,
// with other fields, with vars and an envelope.
func TestPresence(t *testing.T) {
	tests := []struct {
		src             string
		key             string
		present, absent bool
		ok              bool
	}{
		{`"result" in content`, "result", true, false, true},
		{`!("result" in content)`, "result", false, true, true},
		{`not ("result" in content)`, "result", false, true, true},
		{`!(!("result" in content))`, "result", true, false, true},
		{`"result" in content && "result" in content`, "result", true, false, true},
		{`"result" in content || !("result" in content)`, "result", true, true, true},
		{`"result" in content and not ("result" in content)`, "result", false, false, true},
		{`"a" in content || "b" in content`, "", false, false, false},
		{`"result" in content && content.result > 0`, "", false, false, false},
		{`content.result > 0`, "", false, false, false},
		{`"result" in vars`, "", false, false, false},
		{`msg.sender == "a"`, "", false, false, false},
	}
	values := []any{nil, 0, 1, -1.5, math.NaN(), "x", "", true, false, []any{1}, map[string]any{}}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			prog, err := Compile(&policy.Expr{Src: tt.src})
			require.NoError(t, err)
			key, present, absent, ok := prog.Presence()
			require.Equal(t, tt.ok, ok, "has a presence test")
			assert.Equal(t, tt.key, key)
			assert.Equal(t, tt.present, present, "with the key")
			assert.Equal(t, tt.absent, absent, "without the key")
			if !ok {
				return
			}
			slow := &Expression{Src: prog.Src, prog: prog.prog}
			var contents []map[string]any
			contents = append(contents, nil, map[string]any{}, map[string]any{"other": 1})
			for _, v := range values {
				contents = append(contents, map[string]any{key: v}, map[string]any{key: v, "other": 1})
			}
			for _, c := range contents {
				_, has := c[key]
				want := absent
				if has {
					want = present
				}
				for _, vars := range []map[string]any{nil, {key: 1}} {
					env := Env{Content: c, Vars: vars, Msg: policy.Envelope{Sender: "a"}}
					got, err := slow.Bool(&env)
					require.NoError(t, err, "the VM on content %v", c)
					assert.Equal(t, want, got, "the VM on content %v, vars %v", c, vars)
					got, err = prog.Bool(&env)
					require.NoError(t, err, "Bool on content %v", c)
					assert.Equal(t, want, got, "Bool on content %v, vars %v", c, vars)
				}
			}
		})
	}
}

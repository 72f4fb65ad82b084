package policy

import (
	"reflect"
	"testing"

	"github.com/expr-lang/expr/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runtimeEnv is shaped as the engine's environment (decision.Env, which
// this package cannot import): untyped content and vars, and a method.
type runtimeEnv struct {
	Content map[string]any   `expr:"content"`
	Msg     Envelope         `expr:"msg"`
	Vars    map[string]any   `expr:"vars"`
	Choices []string         `expr:"choices"`
	Peer    string           `expr:"peer"`
	Many    []map[string]any `expr:"sessions"`
	meter   ExprMeter
}

func (e *runtimeEnv) ExprMeter() *ExprMeter { return &e.meter }

// exprTypeEnvs are the environments ExprTypeOf is tried in: the checks'
// (typed content and vars, and content of a message without fields) and
// the engine's.
func exprTypeEnvs() map[string]any {
	content := fieldsStruct([]*Field{
		{Name: "n", Type: TypeInt}, {Name: "f", Type: TypeNumber}, {Name: "s", Type: TypeString},
		{Name: "b", Type: TypeBool}, {Name: "o", Type: TypeInt, Optional: true}, {Name: "os", Type: TypeString, Optional: true},
		{Name: "a", Type: TypeAny}, {Name: "m", Type: TypeMap}, {Name: "l", Type: TypeList},
		{Name: "t", Type: TypeTime}, {Name: "d", Type: TypeDuration},
	})
	vars := zero(fieldsStruct([]*Field{{Name: "last", Type: TypeInt}, {Name: "name", Type: TypeString}, {Name: "ok", Type: TypeBool}}))
	return map[string]any{
		"typed":   map[string]any{EnvContent: zero(content), EnvMsg: Envelope{}, EnvVars: vars},
		"untyped": map[string]any{EnvContent: map[string]any{}, EnvMsg: Envelope{}},
		"engine":  runtimeEnv{},
	}
}

// exprTypeSeeds are expressions of the shapes ExprTypeOf types and of
// shapes near them that it must leave to expr.
var exprTypeSeeds = []string{
	`vars.last < 100`, `100 > vars.last`, `vars.last < -3`, `content.n + 5`, `content.n + 1.5`, `content.f * content.n`,
	`content.n / 2`, `content.n % 3`, `content.f % 3`, `content.n ** 2`, `-content.n`, `+content.f`, `!content.b`,
	`not content.b`, `!content.n`, `-content.s`, `content.s + "x"`, `content.s + 1`, `content.s < "m"`, `content.s < 1`,
	`content.n == "x"`, `content.n == 1.5`, `content.b == true`, `content.b != 1`, `content.o > 1`, `content.o`, `content.os + "x"`,
	`"result" in content`, `"n" in content && content.n > 0`, `1 in content`, `content.n in content`, `"x" in content.m`,
	`"x" in content.a`, `content.a.b.c > 1`, `content.a + 1`, `content.a + "x"`, `content.a && true`, `content.a || content.b`,
	`content.b && content.n`, `content.m.x + 1`, `content.l[0] > 1`, `content.t < content.t`, `content.d + content.d`,
	`content.missing < 1`, `vars.missing`, `vars.last`, `vars.name + "!"`, `vars.ok or vars.last > 1`, `msg.sender == "bob"`,
	`msg.reply_by`, `msg.nope == "x"`, `msg.receivers`, `peer == "bob"`, `choices`, `1 + 2`, `-1 < 2`, `1 % 0`, `"a" + "b"`,
	`content.n % 0`, `content?.n > 1`, `content.n.x`, `content["n"] > 1`, `sessions`, `meter`, `content.n < 1 ? 1 : 2`,
	`len(content.s) > 1`, `content.n > 1 and content.f < 2 or !content.b`, `vars.last < 1 == true`, `content.a ?? 1`,
}

// TestExprTypeOfAgreesWithTheCompiler checks, for expressions of many
// shapes in each environment, that what ExprTypeOf types compiles in
// that environment to a program of that type, and that it types the
// shapes the ladder of guards and assignments takes.
func TestExprTypeOfAgreesWithTheCompiler(t *testing.T) {
	for envName, env := range exprTypeEnvs() {
		for _, src := range exprTypeSeeds {
			t.Run(envName+"/"+src, func(t *testing.T) {
				assertTypeAgrees(t, src, env)
			})
		}
	}
	tests := []struct {
		name, src, env string
		want           reflect.Type
	}{
		{"a guard on a variable", `vars.last < 100`, "typed", typeBool},
		{"a guard on a variable, at run time", `vars.last < 100`, "engine", typeBool},
		{"a presence test", `"result" in content`, "untyped", typeBool},
		{"sums of ints", `content.n + 5`, "typed", typeInt},
		{"a sum of unknowns", `content.n + 5`, "engine", typeAny},
		{"a division", `content.n / 2`, "typed", typeFloat},
		{"a concatenation", `content.s + "x"`, "typed", typeString},
	}
	envs := exprTypeEnvs()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree, err := parser.Parse(tt.src)
			require.NoError(t, err)
			got, ok := ExprTypeOf(tree.Node, envs[tt.env])
			require.True(t, ok)
			assert.Equal(t, tt.want, got)
		})
	}
	for _, src := range []string{`1 + 2`, `1 % 0`, `content.missing < 1`, `!content.n`, `content.o`, `msg.receivers`, `len(content.s) > 1`} {
		t.Run("left to expr/"+src, func(t *testing.T) {
			tree, err := parser.Parse(src)
			require.NoError(t, err)
			_, ok := ExprTypeOf(tree.Node, envs["typed"])
			assert.False(t, ok)
		})
	}
}

// FuzzExprTypeOf checks that whatever ExprTypeOf types compiles, in
// every environment, to a program of the type it said, and that it
// types every source as the reference does.
func FuzzExprTypeOf(f *testing.F) {
	for _, src := range exprTypeSeeds {
		f.Add(src)
	}
	envs := exprTypeEnvs()
	f.Fuzz(func(t *testing.T, src string) {
		for _, env := range envs {
			assertTypeAgrees(t, src, env)
			assertTypedAsReference(t, src, env)
		}
	})
}

// manyMethods has more methods and fields than structInfo finds by
// comparing names, so that its index is read.
type manyMethods struct {
	A, B, C, D, E, F, G, H, I int
	J                         string `expr:"m1"`
	K                         int    `expr:"M2"` // hidden by the method
}

func (*manyMethods) M1() {}
func (*manyMethods) M2() {}
func (*manyMethods) M3() {}
func (*manyMethods) M4() {}
func (*manyMethods) M5() {}
func (*manyMethods) M6() {}
func (*manyMethods) M7() {}
func (*manyMethods) M8() {}
func (*manyMethods) M9() {}

// TestExprTypeOfAgreesWithTheReference checks that ExprTypeOf types
// every source of the seeds, of the parser's seeds and of the shipped
// and test policies, and sources on struct shapes of every kind, as
// the reference typer (the one before types were read by class) does,
// in every environment.
func TestExprTypeOfAgreesWithTheReference(t *testing.T) {
	envs := exprTypeEnvs()
	envs["shapes"] = map[string]any{"x": fieldShapes{}, "many": manyMethods{}, "p": &fieldShapes{}, "e": Envelope{}, "none": nil}
	envs["many"] = manyMethods{}
	envs["a struct of shapes"] = fieldShapes{}
	envs["not a struct"] = 3
	envs["nothing"] = nil
	srcs := append(append(append([]string(nil), exprTypeSeeds...), exprParseSeeds...), policyExprs(t)...)
	for _, src := range []string{`x.t + "s"`, `x.Tagged`, `x.Plain + 1`, `x.Again`, `x.hidden`, `x.Meter * 2`, `x.ExprMeter`,
		`x.Meter2`, `x.After`, `x.Envelope`, `-x.Plain`, `!x.Plain`, `"t" in x`, `"t" in p`, `p.Plain`, `many.A + many.I`,
		`many.m1 + "s"`, `many.M1`, `many.J`, `many.M2`, `many.K`, `many.M9`, `many.Z`, `A + I > 2`, `M1`, `m1 == "x"`, `e.sender == e.protocol`,
		`e.receivers`, `e.reply_by`, `"sender" in e`, `e.nope`, `none`, `none.x`, `x.Plain + many.A`} {
		srcs = append(srcs, src)
	}
	for envName, env := range envs {
		for _, src := range srcs {
			t.Run(envName+"/"+src, func(t *testing.T) {
				assertTypedAsReference(t, src, env)
			})
		}
	}
}

// assertTypedAsReference checks that ExprTypeOf types src in env as the
// reference does, twice (the second time from the caches), and so does
// env prepared (PrepareExprEnv, and newExprEnv for a map, as the checks
// prepare theirs).
func assertTypedAsReference(t *testing.T, src string, env any) {
	tree, err := parser.Parse(src)
	if err != nil {
		return
	}
	want, wantOK := refExprTypeOf(tree.Node, env)
	for range 2 {
		got, ok := ExprTypeOf(tree.Node, env)
		assert.Equal(t, wantOK, ok, src)
		assert.Equal(t, want, got, src)
	}
	got, ok := PrepareExprEnv(env).TypeOf(tree.Node)
	assert.Equal(t, wantOK, ok, "prepared: %s", src)
	assert.Equal(t, want, got, "prepared: %s", src)
	if m, isMap := env.(map[string]any); isMap {
		got, ok := newExprEnv(m).typeOf(tree.Node)
		assert.Equal(t, wantOK, ok, "prepared by the checks: %s", src)
		assert.Equal(t, want, got, "prepared by the checks: %s", src)
	}
}

// assertTypeAgrees checks that when ExprTypeOf types src in env, src
// compiles in env to a program of that type (a program of unknown type
// for unknown).
func assertTypeAgrees(t *testing.T, src string, env any) {
	tree, err := parser.Parse(src)
	if err != nil {
		return
	}
	want, ok := ExprTypeOf(tree.Node, env)
	if !ok {
		return
	}
	prog, err := CompileExpr(src, env)
	require.NoError(t, err, "ExprTypeOf typed %s as %v", src, want)
	got := prog.Node().Type()
	if want == typeAny {
		assert.True(t, got == nil || got.Kind() == reflect.Interface, "%s: ExprTypeOf says unknown, expr %v", src, got)
		return
	}
	assert.Equal(t, want, got, src)
}

// fieldShapes has what fieldOf must tell apart: a tag and a name, a
// repeated tag (the first counts), an unexported field, a method, and an
// embedded field behind which nothing is found.
type fieldShapes struct {
	Tagged string `expr:"t"`
	Plain  int
	Again  bool `expr:"t"`
	hidden int  //lint:ignore U1000 the unexported field fieldOf must skip
	Meter  int
	Envelope
	After int
}

func (*fieldShapes) Meter2() {}

func (*fieldShapes) ExprMeter() {}

// TestFieldOfReadsAStructAsExprDoes checks fieldOf, whose reading of a
// struct type is cached, on each shape, twice (the second from the
// cache).
func TestFieldOfReadsAStructAsExprDoes(t *testing.T) {
	typ := reflect.TypeFor[fieldShapes]()
	tests := []struct {
		name string
		want reflect.Type
		ok   bool
	}{
		{name: "t", want: reflect.TypeFor[string](), ok: true},
		{name: "Tagged"},
		{name: "Plain", want: reflect.TypeFor[int](), ok: true},
		{name: "hidden"},
		{name: "Meter", want: reflect.TypeFor[int](), ok: true},
		{name: "ExprMeter"},
		{name: "Meter2"},
		{name: "After"},
		{name: "missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 2 {
				got, ok := fieldOf(typ, tt.name)
				assert.Equal(t, tt.ok, ok)
				assert.Equal(t, tt.want, got)
			}
		})
	}
}

package policy

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// exprParseSeeds are sources near the edges of what exprParser reads:
// precedence and associativity, "not in" where its precedence is too low
// to take it yet, spaces of every kind, literals of every kind, and the
// constructs it leaves to expr.
var exprParseSeeds = []string{
	`a`, `a.b.c`, `(a).b`, `("s").b`, `!true.x`, `- 1 .x`, `-(1).x`, `1.5`, `007`, `0`, `0x1F`, `0b1`, `0o7`, `1_000`,
	`1e3`, `1.`, `1.x`, `1..2`, `.5`, `9223372036854775807`, `9223372036854775808`, `1.5.x`, `a + b * c - d / e % f`,
	`a ** b ** c`, `a ^ b ^ c`, `-a ** 2`, `!a == b`, `not a and b or c`, `a || b && c`, `a < b`, `a < b < c`,
	`a < b == c`, `a <= b`, `a >= -1`, `a<-1`, `a==!b`, `!!a`, `a !b`, `a + b not in c`, `a not in b`, `not a in b`,
	`a not b`, `a in b in c`, `"x" in content`, `'it"s' == a`, `"it's" == a`, `"a\"b"`, "\"a\tb\"", "\"a\rb\"",
	"a\n&&\tb\r\n|| c\v\f", `a.not`, `a.in`, `a.true`, `a.nil`, `a.if`, `a.b()`, `a()`, `len(a)`, `a[0]`, `a?.b`,
	`a ?? b`, `a ? b : c`, `a | b`, `a; b`, `let x = 1; x`, `if a { b } else { c }`, `nil`, `a == nil`, `$env`,
	`a$b`, `b"x"`, `B'x'`, `b'`, "`raw`", `a matches "x"`, `a contains "x"`, `a startsWith "x"`, `a endsWith "x"`,
	`a // c`, `a /* c */`, `a / b`, `a & b`, `a <* b`, `a =* b`, `a = b`, `a ** * b`, `#a`, `::a`, `a..b`, `[1]`,
	`{a: 1}`, `(a`, `a)`, `()`, `"unterminated`, `'`, `café == a`, `a == "café"`, `a.`, `.a`, `+`, ``, ` `, `((a))`,
	`content.n > 1 and content.f < 2 or !content.b`, `vars.last < 100`, `content.n + 5`, `true`, `false`, `-true`,
	`999999999999999999`, `1000000000000000000`, `000000000000000000123`, `a < 0123456789012345678`,
	`a é`, `"é" == a`, `'x é' + a`, `a.é`, `1é`, "a && \"\x80\"",
}

// TestExprParserBuildsExprsTree checks, on every source of the seeds,
// the expression seeds of ExprTypeOf and every expression of the shipped
// and test policies, that what exprParser reads, expr's parser reads to
// the same tree, and that it reads the shapes of guards and assignments.
func TestExprParserBuildsExprsTree(t *testing.T) {
	srcs := append(append(append([]string(nil), exprParseSeeds...), exprTypeSeeds...), policyExprs(t)...)
	var p exprParser
	for _, src := range srcs {
		t.Run(src, func(t *testing.T) {
			assertParsesAsExpr(t, &p, src)
		})
	}
	tests := []struct {
		name, src string
		read      bool
	}{
		{"a guard", `vars.last < 100`, true},
		{"a presence test", `"result" in content`, true},
		{"an absence test", `"result" not in content`, true},
		{"a sum", `content.n + 5`, true},
		{"a float", `content.f * 1.5`, true},
		{"nested", `!(content.n > 1 && content.s == 'x') || content.b`, true},
		{"a call", `len(content.s) > 1`, false},
		{"an index", `content.l[0] > 1`, false},
		{"a chain of comparisons", `1 < content.n < 3`, false},
		{"an escape", `content.s == "a\nb"`, false},
		{"not ASCII", `content.s == "é"`, false},
		{"a syntax error", `vars.last =< 3`, false},
		{"deeper than the limit", strings.Repeat("(", maxNativeDepth+1) + "a" + strings.Repeat(")", maxNativeDepth+1), false},
		{"more nodes than the limit", strings.Repeat("a + ", MaxExprNodes/4) + "a", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ok := p.parse(tt.src)
			assert.Equal(t, tt.read, ok)
		})
	}
}

// FuzzExprParser checks that whatever exprParser reads, expr's parser
// reads to the same tree.
func FuzzExprParser(f *testing.F) {
	for _, src := range append(append([]string(nil), exprParseSeeds...), exprTypeSeeds...) {
		f.Add(src)
	}
	var p exprParser
	f.Fuzz(func(t *testing.T, src string) {
		assertParsesAsExpr(t, &p, src)
	})
}

// assertParsesAsExpr checks that when p reads src, expr's parser, with
// the checks' configuration, reads it without error to an equal tree:
// the same nodes, values and locations.
func assertParsesAsExpr(t *testing.T, p *exprParser, src string) {
	got, ok := p.parse(src)
	if !ok {
		return
	}
	want, err := parser.ParseWithConfig(src, newExprConfig(map[string]any{}))
	require.NoError(t, err, "exprParser read %s", src)
	if !reflect.DeepEqual(want.Node, got) {
		assert.Fail(t, "exprParser's tree differs from expr's", "%s\nexpr:   %s\nnative: %s", src, ast.Dump(want.Node), ast.Dump(got))
	}
}

// policyExprs returns the source of every expression of the shipped and
// test policies that load.
func policyExprs(t *testing.T) []string {
	var srcs []string
	for _, pattern := range []string{"../policies/*", "../testdata/*/*", "../testdata/*/*/*", "testdata/*/*"} {
		files, err := filepath.Glob(pattern)
		require.NoError(t, err)
		for _, file := range files {
			if ext := filepath.Ext(file); ext != ".yaml" && ext != ".xml" {
				continue
			}
			src, err := os.ReadFile(file)
			require.NoError(t, err)
			p, _ := Load(file, src)
			if p == nil {
				continue
			}
			add := func(e *Expr) {
				if e != nil {
					srcs = append(srcs, e.Src)
				}
			}
			for _, m := range p.Messages {
				add(m.Match)
			}
			for _, s := range p.States {
				add(s.Decide)
				for _, tr := range s.Transitions {
					add(tr.Guard)
					for _, a := range tr.Set {
						add(a.Expr)
					}
				}
			}
		}
	}
	require.NotEmpty(t, srcs)
	return srcs
}

// TestVarReadsWalksAsASTWalk checks that varReads' own walk records the
// variables ast.Walk does, in the same order, on the trees of expr's
// parser and of exprParser, for every source of the seeds and of the
// shipped and test policies.
func TestVarReadsWalksAsASTWalk(t *testing.T) {
	srcs := append(append(append([]string(nil), exprParseSeeds...), exprTypeSeeds...), policyExprs(t)...)
	srcs = append(srcs, `vars.a + vars.b.c - -vars.a`, `len(vars.l) > vars.n ? vars.x : vars.y`, `vars["k"] + vars?.o`)
	var p exprParser
	for _, src := range srcs {
		t.Run(src, func(t *testing.T) {
			var trees []ast.Node
			if tree, err := parser.Parse(src); err == nil {
				trees = append(trees, tree.Node)
			}
			if tree, ok := p.parse(src); ok {
				trees = append(trees, tree)
			}
			for _, tree := range trees {
				var want, got varReads
				ast.Walk(&tree, &want)
				got.walk(&tree)
				assert.Equal(t, want, got)
			}
		})
	}
}

// TestShortDecimalIsParseInt checks shortDecimal against
// strconv.ParseInt on numbers of every length it reads, with leading
// zeros, nines and every digit.
func TestShortDecimalIsParseInt(t *testing.T) {
	for n := 1; n <= maxShortDigits; n++ {
		for _, digits := range []string{"9", "0", "1", "0123456789", "9876543210", "5"} {
			text := strings.Repeat(digits, n)[:n]
			want, err := strconv.ParseInt(text, 10, 64)
			require.NoError(t, err)
			assert.Equal(t, want, shortDecimal(text), text)
		}
	}
}

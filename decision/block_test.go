package decision

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/policy"
)

// TestCompileFromBlocksAsAlone checks that compile, with the nodes of
// the native forms from a block (as a Compiler does) and the envelope
// found by msgReader's own walk, builds each expression of the shipped
// and test policies, and sources of every native shape, as with each
// node allocated alone and ast.Walk: the same native form, field, and
// whether it reads msg.
func TestCompileFromBlocksAsAlone(t *testing.T) {
	srcs := append(policyExprs(t), `"result" in content`, `!("a" in content) && not ("b" in content)`,
		`"a" in content or "b" in content || content.n > 1`, `content.n >= -1.5 and vars.s != "x"`, `true == vars.b`,
		`3 < content.n`, `-2 <= vars.n`, `msg.sender == "a"`, `$env.msg.sender == "a"`, `content.n < 1 ? msg : 2`,
		`len(content.s) > 0`, `content.n + 1`, `-content.n`)
	var blocks fastBlock
	for _, src := range srcs {
		t.Run(src, func(t *testing.T) {
			tree, err := parser.Parse(src)
			if err != nil {
				return
			}
			e := &policy.Expr{Src: src}
			want, wantErr := compile(e, &tree.Node, new(Expression), nil)
			got, err := compile(e, &tree.Node, new(Expression), &blocks)
			assert.Equal(t, wantErr, err)
			if wantErr != nil {
				return
			}
			assert.Equal(t, want.fast, got.fast)
			assert.Equal(t, want.field, got.field)
			assert.Equal(t, want.oneField, got.oneField)
			var v msgReader
			ast.Walk(&tree.Node, &v)
			assert.Equal(t, v.reads, got.readsMsg)
		})
	}
}

// policyExprs returns the source of every expression of the shipped and
// test policies that load.
func policyExprs(t *testing.T) []string {
	var srcs []string
	for _, pattern := range []string{"../policies/*", "../testdata/*/*", "../testdata/*/*/*", "../policy/testdata/*/*"} {
		files, err := filepath.Glob(pattern)
		require.NoError(t, err)
		for _, file := range files {
			if ext := filepath.Ext(file); ext != ".yaml" && ext != ".xml" {
				continue
			}
			src, err := os.ReadFile(file)
			require.NoError(t, err)
			p, _ := policy.Load(file, src)
			if p == nil {
				continue
			}
			add := func(e *policy.Expr) {
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

package decision_test

import (
	"testing"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/policy"
)

// BenchmarkBool measures guards and match rules as the engine runs them
// on every message: the native presence form, small comparisons, a
// concatenation and a loop.
func BenchmarkBool(b *testing.B) {
	items := make([]any, 100)
	for i := range items {
		items[i] = float64(i)
	}
	env := &decision.Env{
		Content: map[string]any{"result": true, "n": 1.0, "price": 3.0, "items": items},
		Vars:    map[string]any{"max": 5.0, "name": "bob"},
		Msg:     policy.Envelope{Sender: "alice"},
		Peer:    "bob",
	}
	for _, bb := range []struct{ name, src string }{
		{"presence", `"result" in content`},
		{"compare", `content.n > 0`},
		{"fields", `content.price <= vars.max && msg.sender != ""`},
		{"concat", `msg.sender + ":" + peer == "alice:bob"`},
		{"loop", `all(content.items, # >= 0)`},
	} {
		b.Run(bb.name, func(b *testing.B) {
			prog, err := decision.Compile(&policy.Expr{Src: bb.src})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				ok, err := prog.Bool(env)
				if err != nil || !ok {
					b.Fatal(ok, err)
				}
			}
		})
	}
}

// BenchmarkCompile measures compiling one guard, as engine.Check does for
// every expression of a policy.
// BenchmarkCompile compiles an expression policy.ExprTypeOf types, whose
// VM program waits for the first evaluation that needs it, and one it
// does not (a builtin), whose program Compile builds.
func BenchmarkCompile(b *testing.B) {
	for _, bm := range []struct{ name, src string }{
		{"typed", `content.price <= vars.max && msg.sender != ""`},
		{"builtin", `len(content.items) > 0 && msg.sender != ""`},
	} {
		b.Run(bm.name, func(b *testing.B) {
			e := &policy.Expr{Src: bm.src}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decision.Compile(e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

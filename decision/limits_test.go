package decision_test

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/expr-lang/expr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/policy"
)

// bigContent is what a hostile peer sends: a 1 MB string s, a short one t,
// lists of a thousand and of 300,000 numbers, a list of a thousand copies
// of s, and s again as a pattern.
func bigContent() map[string]any {
	s := strings.Repeat("x", 1_000_000)
	items := make([]any, 1000)
	copies := make([]any, 1000)
	for i := range items {
		items[i] = float64(i)
		copies[i] = s
	}
	many := make([]any, 300_000)
	for i := range many {
		many[i] = float64(i)
	}
	return map[string]any{"s": s, "t": "y", "items": items, "many": many, "copies": copies, "pattern": s}
}

// evalBounded evaluates prog against env in a goroutine and returns its
// error, how long it ran and how many bytes the process allocated
// meanwhile. It gives up after a few seconds (an unbounded evaluation runs
// for minutes), failing the test.
func evalBounded(t *testing.T, prog *decision.Expression, env *decision.Env) (error, time.Duration, uint64) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := prog.Eval(env)
		done <- err
	}()
	select {
	case err := <-done:
		elapsed := time.Since(start)
		runtime.ReadMemStats(&after)
		return err, elapsed, after.TotalAlloc - before.TotalAlloc
	case <-time.After(5 * time.Second):
		t.Fatalf("the evaluation was still running after 5s")
		return nil, 0, 0
	}
}

// TestEvalBoundsWhatAPeerCanMakeItBuild is the regression test for
// guards that built gigabytes of strings out of peer content, unchecked
// by the memory budget, and ran for a minute: each expression below must
// fail fast, at its own position, with a limit error, and allocate a few
// megabytes at most.
func TestEvalBoundsWhatAPeerCanMakeItBuild(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string // the error, after the position
	}{
		{name: "let-concatenation doubling the content",
			src:  `let a = content.s + content.s; let b = a + a; let c = b + b; let d = c + c; let e = d + d; let f = e + e; let g = f + f; let h = g + g; let i = h + h; len(i) > 0`,
			want: `p.yaml:12:28: expression %q: over the expression limits: a string of 2000000 bytes (at most 1048576)`},
		{name: "concatenation in a loop",
			src:  `len(map(content.items, content.s + "!")) > 0`,
			want: `p.yaml:12:43: expression %q: over the expression limits: more than 4194304 bytes built`},
		{name: "repeat",
			src:  `len(repeat(content.s, 1000)) > 0`,
			want: `p.yaml:12:14: expression %q: over the expression limits: a string of 1000000000 bytes (at most 1048576)`},
		{name: "join of copies",
			src:  `len(join(content.copies, ",")) > 0`,
			want: `p.yaml:12:14: expression %q: over the expression limits: a string of 1000000999 bytes (at most 1048576)`},
		{name: "upper in a loop",
			src:  `len(map(content.items, upper(content.s))) > 0`,
			want: `p.yaml:12:33: expression %q: over the expression limits: more than 4194304 bytes built`},
		{name: "replace",
			src:  `len(replace(content.s, "x", "xxxxxxxxxx")) > 0`,
			want: `p.yaml:12:14: expression %q: over the expression limits: a string of 10000000 bytes (at most 1048576)`},
		{name: "string of a list of copies",
			src:  `len(string(content.copies)) > 0`,
			want: `p.yaml:12:14: expression %q: over the expression limits: a string longer than 1048576 bytes`},
		{name: "toJSON of a list of copies",
			src:  `len(toJSON(content.copies)) > 0`,
			want: `p.yaml:12:14: expression %q: over the expression limits: a string longer than 1048576 bytes`},
		{name: "split into single characters",
			src:  `len(split(content.s, "")) > 0`,
			want: `p.yaml:12:14: expression %q: over the expression limits: more than 4194304 bytes built`},
		{name: "flatten of copies of a list",
			src:  `len(flatten(map(content.items, content.items))) > 0`,
			want: `p.yaml:12:14: expression %q: over the expression limits: more than 4194304 bytes built`},
		{name: "a range over the elements the VM may build",
			src:  `len(map(1..300000, #)) > 0`,
			want: `p.yaml:12:19: expression %q: over the expression limits: more than 262144 list, map and range elements built`},
		{name: "a loop over a long list with a large predicate",
			src:  `all(content.many, # >= 0 && # < 1e9 && # != 5 && # != 6 && # != 7)`,
			want: `p.yaml:12:10: expression %q: over the expression limits: more than 4194304 steps`},
		{name: "a pattern from the peer",
			src:  `content.s matches content.pattern`,
			want: `p.yaml:12:20: expression %q: over the expression limits: a pattern of 1000000 bytes (at most 4096)`},
	}
	env := &decision.Env{Content: bigContent()}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := evalOverLimit(t, tt.src, env)
			assert.Equal(t, strings.Replace(tt.want, "%q", policy.Quote(tt.src), 1), err.Error())
		})
	}
}

// evalOverLimit compiles src and evaluates it against env, which must
// take it over a limit: it returns the error, which must be an EvalError
// wrapping policy.ErrExprLimit, after checking that the evaluation stopped
// fast and allocated a few megabytes at most.
func evalOverLimit(t *testing.T, src string, env *decision.Env) error {
	t.Helper()
	prog, err := decision.Compile(at(src))
	require.NoError(t, err)
	err, elapsed, allocated := evalBounded(t, prog, env)
	require.Error(t, err)
	var ee *decision.EvalError
	assert.ErrorAs(t, err, &ee)
	assert.ErrorIs(t, err, policy.ErrExprLimit)
	assert.Less(t, elapsed, time.Second, "the evaluation must stop fast")
	assert.Less(t, allocated, uint64(32<<20), "the evaluation must allocate a few megabytes at most")
	return err
}

// TestEvalBoundsTime is the regression test for guards that looped for
// minutes over a peer's list: loops stop at the step limit or the time
// limit, whichever comes first, and a loop whose iterations are slow stops
// at the time limit.
func TestEvalBoundsTime(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string // a regular expression for the error
	}{
		{name: "nested loops",
			src:  `all(content.items, all(content.items, all(content.items, # >= 0)))`,
			want: `^p\.yaml:12:(29|48): expression .*: over the expression limits: (more than 4194304 steps|running longer than 100ms)$`},
		{name: "a loop with slow iterations",
			src:  `any(content.items, any(content.items[:50], content.s contains content.t))`,
			want: `^p\.yaml:12:(10|29): expression .*: over the expression limits: running longer than 100ms$`},
	}
	env := &decision.Env{Content: bigContent()}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Regexp(t, tt.want, evalOverLimit(t, tt.src, env).Error())
		})
	}
}

// TestBoundedAgreesWithExpr checks that bounding changes no result within
// the limits: every operation the bounding rewrites gives what expr alone
// gives, or fails where expr fails (with the same error when compiling).
func TestBoundedAgreesWithExpr(t *testing.T) {
	env := decision.Env{
		Content: map[string]any{
			"s": "a,b,c", "t": "b", "n": 2.0, "items": []any{3.0, 1.0, 2.0}, "words": []any{"x", "y", "x"},
			"nested": []any{[]any{1.0, []any{2.0}}, 3.0}, "pairs": []any{[]any{"k", 1.0}}, "m": map[string]any{"k": 1.0},
			"json": `{"a": [1, "two", null]}`, "b64": "aGk=", "pattern": "^a.*c$",
		},
		Vars:     map[string]any{"name": "bob"},
		Msg:      policy.Envelope{Sender: "alice", Receivers: []string{"bob", "carol"}, ReplyBy: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)},
		Choices:  []string{"agree", "refuse"},
		Peer:     "bob",
		Sessions: []map[string]any{{"peer": "bob", "content": map[string]any{"price": 3.0}}},
	}
	for _, src := range []string{
		`content.s + content.t`, `"<" + peer + ">"`, `"<" + peer + ">" + msg.sender + content.t`, `msg.sender + vars.name`, `content.n + 1`,
		`content.n + content.n`, `content.n + content.n + content.t`, `content.t + content.n + content.n`, `content.t + (content.t + content.t)`, `msg.reply_by + duration("1h")`,
		`content.s + content.n`, `repeat(content.t, 3)`, `repeat(content.t, content.n)`, `repeat(content.t, -1)`,
		`replace(content.s, ",", ";")`, `replace(content.s, ",", "", 1)`, `replace(content.s, "", "-")`,
		`join(content.words, "+")`, `join(content.words)`, `join(msg.receivers, ", ")`, `join(content.items)`,
		`upper(content.s)`, `lower("ÀB")`, `toBase64(content.s)`, `fromBase64(content.b64)`, `fromBase64("%")`,
		`string(content.m)`, `string(content.items)`, `string(msg)`, `string(nil)`, `toJSON(content.nested)`, `toJSON(sessions)`, `fromJSON(content.json)`, `fromJSON("[")`,
		`split(content.s, ",")`, `split(content.s, ",", 2)`, `split(content.s, "")`, `splitAfter(content.s, ",")`, `splitAfter(content.s, ",", content.n)`,
		`keys(content.m)`, `values(content.m)`, `toPairs(content.m)`, `fromPairs(content.pairs)`, `uniq(content.words)`,
		`concat(content.items, content.words)`, `flatten(content.nested)`, `flatten(content.m)`,
		`min(content.items)`, `max(content.nested, 0)`, `mean(content.items)`, `median(content.items)`, `min()`,
		`content.s matches content.pattern`, `content.s matches "["`, `content.s matches content.nope`, `content.s matches content.n`,
		`msg.reply_by.Format("2006-01-02")`, `msg.reply_by.Year()`,
		`all(content.items, # > 0)`, `any(content.words, # == content.t)`, `none(content.items, # > content.n)`, `one(content.words, # == "y")`,
		`map(content.items, # * 2)`, `filter(content.words, # != "x")`, `map(filter(content.items, # > 1), # + 1)`, `len(filter(content.items, # > 1))`,
		`find(content.items, # < 3)`, `findIndex(content.words, # == "y")`, `findLast(content.items, # > 0)`, `findLastIndex(content.items, # > 5)`,
		`count(content.items, # > 1)`, `count(content.items, # > 1) > 0`, `sum(content.items)`, `sum(content.items, # * 2)`,
		`groupBy(content.words, #)`, `sortBy(content.items, #, "desc")`, `reduce(content.items, #acc + #, 0)`, `reduce(content.words, #acc + #)`,
		`map(content.items, #index)`, `let w = map(content.words, upper(#)); join(w, "")`, `all(sessions, .content.price > 2)`,
		`content.items[1:] | map(# + 0.5) | sum()`, `all(content.items, any(content.words, # + "" == "y"))`, `map(nil, #)`,
	} {
		t.Run(src, func(t *testing.T) {
			plain, err := expr.Compile(src, expr.Env(decision.Env{}))
			bounded, berr := decision.Compile(&policy.Expr{Src: src})
			if err != nil {
				require.Error(t, berr)
				assert.Equal(t, err.Error(), errors.Unwrap(berr).Error())
				return
			}
			require.NoError(t, berr)
			want, wantErr := expr.Run(plain, &env)
			got, gotErr := bounded.Eval(&env)
			if wantErr != nil {
				require.Error(t, gotErr, "expr fails with %v", wantErr)
				assert.NotErrorIs(t, gotErr, policy.ErrExprLimit)
				return
			}
			require.NoError(t, gotErr)
			assert.Equal(t, want, got)
		})
	}
}

// FuzzEval compiles and evaluates arbitrary expressions against a small
// environment: neither may panic, and an evaluation must stop within the
// time limit's order (the limits hold whatever the expression).
func FuzzEval(f *testing.F) {
	for _, seed := range []string{
		`content.s + content.t`, `repeat(content.s, content.n)`, `replace(content.s, "", content.s)`,
		`join(map(1..1000, content.s))`, `string(content)`, `toJSON(content)`, `fromJSON(toJSON(content))`,
		`flatten(map(content.items, content.nested))`, `median(map(1..1000, content.items))`,
		`all(content.items, any(content.words, # + "" == "y"))`, `content.s matches content.t`,
		`reduce(1..1000, #acc + content.s, "")`, `msg.reply_by.Format(content.s)`, `split(content.s, "")`,
	} {
		f.Add(seed)
	}
	env := decision.Env{
		Content: map[string]any{
			"s": "a,b,c", "t": "b", "n": 3.0, "items": []any{3.0, 1.0, 2.0}, "words": []any{"x", "y"},
			"nested": []any{[]any{1.0, []any{2.0}}, 3.0}, "m": map[string]any{"k": 1.0},
		},
		Msg: policy.Envelope{Sender: "alice", ReplyBy: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)},
	}
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 4096 {
			return // the loaders refuse longer expressions
		}
		prog, err := decision.Compile(&policy.Expr{Src: src})
		if err != nil {
			return
		}
		start := time.Now()
		_, _ = prog.Eval(&env)
		if elapsed := time.Since(start); elapsed > 2*time.Second {
			t.Fatalf("%q ran for %v", src, elapsed)
		}
	})
}

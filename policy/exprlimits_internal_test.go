package policy

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/expr-lang/expr/ast"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSizerBoundsWhatItMeasures checks the sizer's bound against what fmt
// (for string) and encoding/json (for toJSON) really produce.
func TestSizerBoundsWhatItMeasures(t *testing.T) {
	when := time.Date(2030, 1, 2, 3, 4, 5, 6, time.FixedZone("Somewhere/Far_Away", 3600))
	env := Envelope{Performative: "inform", Sender: "alice", Receivers: []string{"bob"}, ReplyBy: when}
	tests := []struct {
		name  string
		value any
	}{
		{"nil", nil},
		{"a string", "plain"},
		{"a string JSON escapes", "<a href=\"x\">&\n\t\x01</a>"},
		{"a string with line separators and invalid UTF-8", "é\u2028\u2029\xff\xfe"},
		{"numbers", []any{1, -1.2345678901234567e-308, math.MaxFloat64, 1e21, true, false}},
		{"nested lists and maps", []any{map[string]any{"a": []any{1.0, "two", nil, map[string]any{}}, "<k>": []any{}}, []any{[]any{[]any{}}}}},
		{"a time and a duration", []any{when, 90 * time.Minute}},
		{"an envelope", env},
		{"a pointer to an envelope", &env},
		{"lists of strings and of maps", []any{[]string{"a", "b"}, []map[string]any{{"peer": "bob"}}}},
		{"bytes", []byte("hello, world")},
		{"a map with int keys", map[int]string{1: "one", 22: "twenty-two"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, asJSON := range []bool{false, true} {
				z := sizer{left: math.MaxInt / 2, json: asJSON}
				require.True(t, z.value(tt.value, 0))
				bound := math.MaxInt/2 - z.left
				out := fmt.Sprintf("%v", tt.value)
				if asJSON {
					b, err := json.MarshalIndent(tt.value, "", "  ")
					if err != nil {
						continue // toJSON fails on it anyway
					}
					out = string(b)
				}
				assert.GreaterOrEqual(t, bound, len(out), "json %v: %s", asJSON, out)
			}
		})
	}
}

// TestSizerStops checks that the sizer gives up as soon as its bound
// passes the limit, even on a list holding the same large string a
// thousand times.
func TestSizerStops(t *testing.T) {
	big := strings.Repeat("x", 1000)
	copies := make([]any, 1000)
	for i := range copies {
		copies[i] = big
	}
	for _, asJSON := range []bool{false, true} {
		z := sizer{left: 2500, json: asJSON}
		assert.False(t, z.value(copies, 0))
		assert.Greater(t, z.left, -2000, "it stopped at the third copy")
	}
}

func TestMeter(t *testing.T) {
	t.Run("steps", func(t *testing.T) {
		var m ExprMeter
		require.NoError(t, m.work(MaxExprSteps))
		assert.ErrorIs(t, m.work(1), ErrExprLimit)
	})
	t.Run("time", func(t *testing.T) {
		var m ExprMeter
		require.NoError(t, m.clock(), "the first check starts the clock")
		require.NoError(t, m.clock())
		m.start = time.Now().Add(-2 * ExprTimeLimit)
		assert.EqualError(t, m.clock(), "over the expression limits: running longer than 100ms")
	})
	t.Run("bytes", func(t *testing.T) {
		var m ExprMeter
		require.NoError(t, m.str(MaxExprString))
		assert.EqualError(t, m.str(MaxExprString+1), "over the expression limits: a string of 1048577 bytes (at most 1048576)")
		require.NoError(t, m.take(ExprMemoryBudget-MaxExprString))
		assert.EqualError(t, m.take(1), "over the expression limits: more than 4194304 bytes built")
	})
	t.Run("counts", func(t *testing.T) {
		assert.Equal(t, 6, leaves([]any{[]any{1.0, []any{2.0, "x"}}, 3, []int{4, 5}}, 100))
		assert.Equal(t, 4, occurrences("a,b,,c", ","))
		assert.Equal(t, 4, occurrences("héé", ""))
		assert.Equal(t, len("a-b-c"), joinedSize([]any{"a", "b", "c"}, "-"))
		assert.Equal(t, math.MaxInt, mulSat(math.MaxInt/2, 3))
	})
}

// TestLoopsTickOnlyWhenSlow checks which loops tick the clock at each
// iteration: those whose predicate may take longer than its steps account
// for, and no others.
func TestLoopsTickOnlyWhenSlow(t *testing.T) {
	env := map[string]any{EnvContent: map[string]any{}, EnvMsg: Envelope{}}
	tests := []struct {
		src   string
		ticks int
	}{
		{`all(content.items, # > 0)`, 0},
		{`all(content.items, len(#) > 0 && #.done ?? false)`, 0},
		{`all(content.items, upper(#) == "A" && # + "x" != "y")`, 0},
		{`all(content.items, any(#, # > 0))`, 0},
		{`all(content.items, #.a == #.b)`, 1},
		{`all(content.items, 5 in #)`, 1},
		{`all(content.items, # contains "x")`, 1},
		{`all(content.items, split(#, ",") != nil)`, 1},
		{`all(content.items, msg.reply_by.Year() > 0)`, 1},
		{`all(content.items, any(#, #.a < #.b))`, 2},
		{`content.a == content.b`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			prog, _, err := compileExpr(tt.src, env, nil)
			require.NoError(t, err)
			var ticks tickCounter
			root := prog.Node()
			ast.Walk(&root, &ticks)
			assert.Equal(t, tt.ticks, int(ticks))
		})
	}
}

type tickCounter int

func (c *tickCounter) Visit(node *ast.Node) {
	if call, ok := (*node).(*ast.CallNode); ok {
		if id, ok := call.Callee.(*ast.IdentifierNode); ok && id.Value == fnTick {
			*c++
		}
	}
}

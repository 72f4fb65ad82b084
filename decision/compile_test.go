package decision_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/policy"
)

// TestCompileFromManyGoroutines compiles guards from many goroutines at
// once, as managers registering policies do: compiles share pooled
// configurations, one compile at a time each, and every program is the
// one compiled alone (run it under -race).
func TestCompileFromManyGoroutines(t *testing.T) {
	env := &decision.Env{Content: map[string]any{"n": 2.0, "name": "bob"}, Vars: map[string]any{"max": 5.0}}
	tests := []struct {
		src  string
		want bool
	}{
		{`content.n > 1`, true},
		{`content.n > vars.max`, false},
		{`content.name == "bob" && "n" in content`, true},
		{`len(content.name) == 4`, false},
		{`all([1, 2], # < vars.max)`, true},
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				for _, tt := range tests {
					prog, err := decision.Compile(&policy.Expr{Src: tt.src})
					if !assert.NoError(t, err, tt.src) {
						return
					}
					got, err := prog.Bool(env)
					assert.NoError(t, err, tt.src)
					assert.Equal(t, tt.want, got, tt.src)
				}
			}
		})
	}
	wg.Wait()
	_, err := decision.Compile(&policy.Expr{Src: `content.n >`})
	require.Error(t, err, "a syntax error after many compiles is still one")
}

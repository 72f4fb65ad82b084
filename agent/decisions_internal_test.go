package agent

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/decision"
)

// TestEachDecisionGetsAContextOfItsOwn: a worker hands out decision
// contexts from slabs, and reuses jobs; over more decisions than a slab
// holds, of every size of room for choices, no two decisions share a
// context or a copy of their choices, and a context ended stays ended
// while later decisions get theirs.
func TestEachDecisionGetsAContextOfItsOwn(t *testing.T) {
	tests := []struct {
		name    string
		choices []string
	}{
		{"no choice", nil},
		{"two choices", []string{"a", "b"}},
		{"six choices", []string{"a", "b", "c", "d", "e", "f"}},
		{"seven choices", []string{"a", "b", "c", "d", "e", "f", "g"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &worker{}
			c := &conversation{id: "c"}
			ctxs := map[*decisionCtx]bool{}
			var choices []*string
			for i := range 3*ctxSlab + 1 {
				req := &decision.Request{Point: "p", Choices: tt.choices}
				j := newDecisionJob(w, c, uint64(i), req, time.Time{})
				require.False(t, ctxs[j.ctx], "decision %d's context is another's", i)
				ctxs[j.ctx] = true
				assert.Nil(t, j.ctx.Err(), "decision %d's context is under way", i)
				if len(j.req.Choices) > 0 {
					for _, p := range choices {
						require.NotSame(t, p, &j.req.Choices[0], "decision %d's choices are another's", i)
					}
					choices = append(choices, &j.req.Choices[0])
				}
				j.ctx.cancel(context.Canceled)
				w.releaseJob(j)
			}
			for ctx := range ctxs {
				assert.ErrorIs(t, ctx.Err(), context.Canceled)
			}
		})
	}
}

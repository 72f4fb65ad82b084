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

// TestADecisionContextEndsOnceWithItsFirstError: a decision's context is
// live until it is ended; it ends with the first error it is ended with
// (a second end changes nothing), and its Done channel, asked for before
// or after the end, is closed by then.
func TestADecisionContextEndsOnceWithItsFirstError(t *testing.T) {
	tests := []struct {
		name      string
		ends      []error
		doneFirst bool
		want      error
	}{
		{"cancelled", []error{context.Canceled}, false, context.Canceled},
		{"timed out", []error{context.DeadlineExceeded}, false, context.DeadlineExceeded},
		{"timed out, then cancelled", []error{context.DeadlineExceeded, context.Canceled}, true, context.DeadlineExceeded},
		{"cancelled, then timed out", []error{context.Canceled, context.DeadlineExceeded}, true, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &decisionCtx{deadline: time.Unix(1, 0)}
			var done <-chan struct{}
			if tt.doneFirst {
				done = c.Done()
			}
			require.NoError(t, c.Err(), "live until ended")
			for _, err := range tt.ends {
				c.cancel(err)
			}
			if !tt.doneFirst {
				done = c.Done()
			}
			select {
			case <-done:
			default:
				t.Fatal("Done is not closed once the context ended")
			}
			assert.Equal(t, tt.want, c.Err())
			deadline, ok := c.Deadline()
			assert.True(t, ok)
			assert.Equal(t, time.Unix(1, 0), deadline)
		})
	}
}

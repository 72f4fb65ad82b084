package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/decision"
)

// TestEachDecisionGetsAContextOfItsOwn: a worker cuts decision
// contexts and copies of choices from blocks, and reuses jobs; over more
// decisions than a block holds, of every length of choices, no two
// decisions share a context or a string of their copies, a copy cut from
// a block has no room to grow into another's, and a context ended stays ended while
// later decisions get theirs.
func TestEachDecisionGetsAContextOfItsOwn(t *testing.T) {
	tests := []struct {
		name string
		n    int
	}{
		{"no choice", 0},
		{"one choice", 1},
		{"six choices", 6},
		{"as many as are cut from a block", maxCutChoices},
		{"more", maxCutChoices + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &worker{}
			c := &conversation{id: "c"}
			choices := make([]string, tt.n)
			for k := range choices {
				choices[k] = fmt.Sprint("choice ", k)
			}
			ctxs := map[*decisionCtx]bool{}
			var copies [][]string
			for i := range 3*max(ctxBlock, choiceBlock/max(tt.n, 1)) + 1 {
				req := &decision.Request{Point: "p", Choices: choices}
				j := newDecisionJob(w, c, uint64(i), req, time.Time{})
				require.False(t, ctxs[j.ctx], "decision %d's context is another's", i)
				ctxs[j.ctx] = true
				assert.Nil(t, j.ctx.Err(), "decision %d's context is under way", i)
				require.Equal(t, choices, j.req.Choices)
				if tt.n <= maxCutChoices { // a longer copy has an array of its own
					assert.Equal(t, len(j.req.Choices), cap(j.req.Choices), "decision %d's copy has no room to grow into another's", i)
				}
				for k := range j.req.Choices {
					j.req.Choices[k] = fmt.Sprint(i, "/", k) // decision logic may change its copy
				}
				copies = append(copies, j.req.Choices)
				j.ctx.cancel(false)
				w.releaseJob(j)
			}
			for i, cp := range copies {
				for k, choice := range cp {
					require.Equal(t, fmt.Sprint(i, "/", k), choice, "decision %d's copy is another's", i)
				}
			}
			for k, choice := range choices {
				assert.Equal(t, fmt.Sprint("choice ", k), choice, "the request's choices are not the copies'")
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
			c := &decisionCtx{deadline: time.Unix(1, 0).UnixNano()}
			var done <-chan struct{}
			if tt.doneFirst {
				done = c.Done()
			}
			require.NoError(t, c.Err(), "live until ended")
			for _, err := range tt.ends {
				c.cancel(errors.Is(err, context.DeadlineExceeded))
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

// TestADecisionContextsDoneRacingItsEndIsClosed: goroutines asking for
// the Done channel while the context is ended (by decision logic
// returning and by the worker at once) all get one that is closed by
// then, and all of them the same one, whichever comes first.
func TestADecisionContextsDoneRacingItsEndIsClosed(t *testing.T) {
	tests := []struct {
		name   string
		askers int
	}{
		{"one asks", 1},
		{"eight ask", 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 200 {
				c := &decisionCtx{}
				var wg sync.WaitGroup
				got := make([]<-chan struct{}, tt.askers)
				for i := range got {
					wg.Go(func() { got[i] = c.Done() })
				}
				wg.Go(func() { c.cancel(false) })
				wg.Go(func() { c.cancel(true) })
				wg.Wait()
				for i, done := range got {
					select {
					case <-done:
					default:
						t.Fatalf("asker %d's Done is not closed once the context ended", i)
					}
					assert.Equal(t, got[0], done, "asker %d's Done", i)
				}
				assert.Equal(t, got[0], c.Done(), "asked again")
				assert.Error(t, c.Err())
			}
		})
	}
}

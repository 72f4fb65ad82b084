package agent

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/decision"
)

// funcTask runs f, then closes done.
type funcTask struct {
	f    func()
	done chan struct{}
}

func (t *funcTask) run() {
	if t.f != nil {
		t.f()
	}
	close(t.done)
}

func newFuncTask(f func()) *funcTask { return &funcTask{f: f, done: make(chan struct{})} }

// ran waits a while for t to have run.
func ran(t *funcTask) bool {
	select {
	case <-t.done:
		return true
	case <-time.After(10 * time.Second):
		return false
	}
}

// TestAPooledDecisionNeverWaitsForABlockedOne: whichever goroutine of the
// pool a task goes to (free between two tasks, idle, or new), a task
// blocked in decision logic holds up no other, however the tasks come.
func TestAPooledDecisionNeverWaitsForABlockedOne(t *testing.T) {
	tests := []struct {
		name string
		// blocks says whether task i blocks until the end of the test.
		blocks func(i int) bool
		// burst submits every task before looking at any; otherwise each
		// is submitted once the one before ran (or blocked), as a worker
		// asks for the next decision once the last is answered.
		burst bool
	}{
		{"every other blocks, one after the other", func(i int) bool { return i%2 == 1 }, false},
		{"every third blocks, one after the other", func(i int) bool { return i%3 == 0 }, false},
		{"none blocks, one after the other", func(int) bool { return false }, false},
		{"every other blocks, in a burst", func(i int) bool { return i%2 == 1 }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const n = 200
			p := newPool(nil)
			release := make(chan struct{})
			defer p.close()
			defer close(release)
			tasks := make([]*funcTask, n)
			for i := range tasks {
				var f func()
				if tt.blocks(i) {
					f = func() { <-release }
				}
				tasks[i] = newFuncTask(f)
				if !tt.burst {
					p.runAll([]task{tasks[i]})
					if !tt.blocks(i) {
						require.True(t, ran(tasks[i]), "task %d waited", i)
					}
				}
			}
			if !tt.burst {
				return
			}
			for _, ft := range tasks {
				p.runAll([]task{ft})
			}
			for i, task := range tasks {
				if !tt.blocks(i) {
					require.True(t, ran(task), "task %d waited", i)
				}
			}
		})
	}
}

// TestATaskOfABatchDoesNotWaitForABlockedOne: the tasks of one batch
// run on one goroutine, one after the other; a task behind one blocked
// in decision logic gets a goroutine of its own within two stall checks,
// wherever in the batch the blocked ones are, and every batch's
// goroutines are done with it once its tasks have run.
func TestATaskOfABatchDoesNotWaitForABlockedOne(t *testing.T) {
	tests := []struct {
		name    string
		n       int
		blocked []int // the tasks that block until the end of the test
	}{
		{"none blocks", 5, nil},
		{"the first blocks", 5, []int{0}},
		{"the one in the middle blocks", 5, []int{2}},
		{"the last blocks", 5, []int{4}},
		{"all but the last block", 5, []int{0, 1, 2, 3}},
		{"a single blocked task", 1, []int{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var done atomic.Int64
			done.Store(int64(tt.n))
			p := newPool(&done)
			release := make(chan struct{})
			defer p.close()
			tasks := make([]*funcTask, tt.n)
			ts := make([]task, tt.n)
			for i := range tasks {
				var f func()
				if slices.Contains(tt.blocked, i) {
					f = func() { <-release }
				}
				tasks[i] = newFuncTask(f)
				ts[i] = tasks[i]
			}
			p.runAll(ts)
			for i, task := range tasks {
				if !slices.Contains(tt.blocked, i) {
					require.True(t, ran(task), "task %d waited", i)
				}
			}
			close(release)
			for _, task := range tasks {
				require.True(t, ran(task))
			}
			require.Eventually(t, func() bool {
				p.mu.Lock()
				defer p.mu.Unlock()
				return len(p.active) == 0 && len(p.spare) == 1
			}, 10*time.Second, time.Millisecond, "the batch is done with and kept for reuse")
			assert.Zero(t, done.Load(), "every task run is counted down")
		})
	}
}

// TestAPoolRunsTasksAfterClose: a decision handed to the pool of a
// manager closing still runs, on a goroutine of its own, and the idle
// goroutines stop.
func TestAPoolRunsTasksAfterClose(t *testing.T) {
	p := newPool(nil)
	first := newFuncTask(nil)
	p.runAll([]task{first})
	require.True(t, ran(first))
	require.Eventually(t, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.idle) == 1
	}, 10*time.Second, time.Millisecond, "the goroutine waits for work")
	p.close()
	var wg sync.WaitGroup
	for range 3 {
		ft := newFuncTask(nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.runAll([]task{ft})
			assert.True(t, ran(ft))
		}()
	}
	wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	assert.Empty(t, p.idle, "no goroutine waits for work once closed")
}

// TestADecisionJobCopiesEveryChoice: however many choices a request
// offers (none, or up to nine, cut from the worker's block of strings),
// the job's copy holds them all and shares no array with the request.
func TestADecisionJobCopiesEveryChoice(t *testing.T) {
	all := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}
	tests := []struct {
		name string
		n    int
	}{
		{"none", 0},
		{"one", 1},
		{"two", 2},
		{"three", 3},
		{"six", 6},
		{"seven", 7},
		{"nine", 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &decision.Request{Point: "p", Choices: slices.Clone(all[:tt.n]), Vars: map[string]any{"x": 1}}
			j := newDecisionJob(&worker{}, &conversation{id: "c"}, 7, req, time.Time{})
			assert.Equal(t, req.Choices, j.req.Choices)
			if tt.n > 0 {
				j.req.Choices[0] = "changed"
				assert.Equal(t, "a", req.Choices[0], "the request's choices are not the job's")
			}
			j.req.Vars["x"] = 2
			assert.Equal(t, 1, req.Vars["x"], "nor its vars")
		})
	}
}

package agent

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/parleyhq/parley/decision"
)

// decisionJob is one decision that decision logic takes off the worker,
// with everything it needs in one allocation: its own copy of the
// request, its context, and the result it brings back to the worker
// (an inDecided input points to it). Its timeout is a timer of the
// worker's (timeout), so that a decision costs no clock timer of its
// own.
type decisionJob struct {
	w      *worker
	conv   string
	ticket uint64
	bound  decision.Decider
	req    decision.Request
	// choices holds the copy of the request's choices when they fit (a
	// FIPA Request participant's first point offers six; more go to the
	// heap); seven keep the job within a 480-byte size class.
	choices [7]string
	ctx     decisionCtx
	timeout *timer
	// point is the request's, which decision logic may change in its
	// copy; answer and err are what decision logic returned, abort that
	// it panicked.
	point  string
	answer decision.Answer
	err    error
	abort  bool
}

// newDecisionJob copies req for decision logic: vars, choices and
// sessions are copied, so that decision logic may keep or change them;
// content is shared, and read-only.
func newDecisionJob(w *worker, c *conversation, ticket uint64, req *decision.Request, bound decision.Decider, deadline time.Time) *decisionJob {
	j := &decisionJob{w: w, conv: c.id, ticket: ticket, bound: bound, req: *req}
	j.ctx.deadline = deadline
	j.req.Vars = maps.Clone(req.Vars)
	j.req.Choices = append(j.choices[:0:len(j.choices)], req.Choices...)
	if req.Sessions != nil {
		j.req.Sessions = make([]decision.Session, len(req.Sessions))
		for i, s := range req.Sessions {
			s.Vars = maps.Clone(s.Vars)
			s.Choices = append([]string(nil), s.Choices...)
			j.req.Sessions[i] = s
		}
	}
	j.point = req.Point
	return j
}

// run runs decision logic on a goroutine of the pool and hands the
// result to the worker.
func (j *decisionJob) run() {
	m := j.w.m
	defer m.inflight.Add(-1)
	j.answer, j.err, j.abort = m.runDecision(&j.ctx, j.conv, j.ticket, &j.req, j.bound)
	j.ctx.cancel(context.Canceled)
	_ = j.w.push(input{kind: inDecided, conv: j.conv, ticket: j.ticket, job: j}, false) // fails only once closed
}

// decisionCtx is the context decision logic gets. It ends when the
// decision times out (context.DeadlineExceeded), when the answer no
// longer matters or decision logic returns (context.Canceled); it needs
// no timer or goroutine of its own, and makes its Done channel only when
// asked for it.
type decisionCtx struct {
	deadline time.Time
	mu       sync.Mutex
	done     chan struct{}
	err      error
}

var _ context.Context = (*decisionCtx)(nil)

// closedChan is the Done channel of a context that ended before anyone
// asked for it.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

func (c *decisionCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *decisionCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		if c.err != nil {
			return closedChan
		}
		c.done = make(chan struct{})
	}
	return c.done
}

func (c *decisionCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *decisionCtx) Value(any) any { return nil }

// cancel ends the context with err, once.
func (c *decisionCtx) cancel(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err = err
	if c.done != nil {
		close(c.done)
	}
}

// startDecision runs decision logic for the decision ticket of c off the
// worker, bounded by Limits.DecisionTimeout.
func (w *worker) startDecision(c *conversation, ticket uint64, req *decision.Request, bound decision.Decider, now time.Time) {
	m := w.m
	deadline := now.Add(m.o.limits.DecisionTimeout)
	j := newDecisionJob(w, c, ticket, req, bound, deadline)
	j.timeout = w.timers.schedule(c, j, deadline, now)
	if c.decisions == nil {
		c.decisions = c.decisionBuf[:0]
	}
	c.decisions = append(c.decisions, j)
	m.inflight.Add(1)
	m.deciders.run(j)
}

// stopDecision stops the timeout of a decision that was answered or no
// longer matters, and ends its context.
func (w *worker) stopDecision(c *conversation, ticket uint64) {
	for i, j := range c.decisions {
		if j.ticket == ticket {
			w.dropDecision(c, i, context.Canceled)
			return
		}
	}
}

// dropDecision removes decision i of c, ending its context with err.
func (w *worker) dropDecision(c *conversation, i int, err error) {
	j := c.decisions[i]
	if j.timeout != nil {
		w.timers.release(j.timeout)
		j.timeout = nil
	}
	j.ctx.cancel(err)
	c.decisions = slices.Delete(c.decisions, i, i+1) // clears the freed slot
}

// stopDecisions drops every decision of c.
func (w *worker) stopDecisions(c *conversation) {
	for len(c.decisions) > 0 {
		w.dropDecision(c, len(c.decisions)-1, context.Canceled)
	}
	c.decisions = nil
}

// decisionTimedOut aborts a conversation whose decision is still awaited
// when its time is up; j's timer has fired.
func (w *worker) decisionTimedOut(c *conversation, j *decisionJob, now time.Time) {
	j.timeout = nil
	for i, x := range c.decisions {
		if x == j {
			w.dropDecision(c, i, context.DeadlineExceeded)
			break
		}
	}
	if c.h.Awaits(j.ticket) {
		w.abort(c, fmt.Sprintf("decision logic did not answer within %s", w.m.o.limits.DecisionTimeout), now)
	}
}

package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parleyhq/parley/decision"
)

// decisionJob is one decision that decision logic takes off the worker:
// its own copy of the request, its context, and the result it brings
// back to the worker (an inDecided input points to it). Its timeout is a
// timer of the worker's (timeout), so that a decision costs no clock
// timer of its own. The worker reuses a job once it is done with it (see
// releaseJob); what decision logic may keep past its call, the context
// and the request's vars, choices and sessions, is allocated afresh for
// every decision.
type decisionJob struct {
	w      *worker
	conv   string
	ticket uint64
	req    decision.Request
	ctx    *decisionCtx
	// held says the job is among its conversation's decisions.
	held bool
	// abort says decision logic panicked; answer and err are what it
	// returned.
	abort   bool
	timeout *timer
	answer  decision.Answer
	err     error
}

// A decision's context is allocated with room for the copy of its
// request's choices when they fit: most points offer one to three (two
// keep it within an 80-byte size class), a FIPA Request participant's
// first offers six.
type (
	ctxFew struct {
		ctx     decisionCtx
		choices [2]string
	}
	ctxMany struct {
		ctx     decisionCtx
		choices [6]string
	}
)

// ctxSlab is how many decision contexts of a size a worker allocates at
// once: one allocation stands for 32 decisions. Each decision gets a
// context of its own, never reused, as decision logic may keep it; a
// context kept past its decision keeps the memory of its slab (2.5 KB,
// or 4.5 KB for six choices) until it is dropped.
const ctxSlab = 32

// maxFreeJobs bounds the decision jobs a worker keeps for reuse.
const maxFreeJobs = 64

// newDecisionJob copies req for decision logic: vars, choices and
// sessions are copied, so that decision logic may keep or change them;
// content is shared, and read-only. The job is one w released, if any
// (releaseJob cleared it), and its context a fresh one from w's slabs.
func newDecisionJob(w *worker, c *conversation, ticket uint64, req *decision.Request, deadline time.Time) *decisionJob {
	var j *decisionJob
	if n := len(w.freeJobs); n > 0 {
		j = w.freeJobs[n-1]
		w.freeJobs[n-1] = nil
		w.freeJobs = w.freeJobs[:n-1]
	} else {
		j = new(decisionJob)
	}
	var room []string
	switch n := len(req.Choices); {
	case n <= len(ctxFew{}.choices):
		x := nextInSlab(&w.fewCtxs)
		j.ctx, room = &x.ctx, x.choices[:0:len(x.choices)]
	case n <= len(ctxMany{}.choices):
		x := nextInSlab(&w.manyCtxs)
		j.ctx, room = &x.ctx, x.choices[:0:len(x.choices)]
	default:
		j.ctx = new(decisionCtx)
	}
	j.w, j.conv, j.ticket, j.req = w, c.id, ticket, *req
	j.ctx.deadline = deadline
	j.req.Vars = maps.Clone(req.Vars)
	j.req.Choices = append(room, req.Choices...)
	if req.Sessions != nil {
		j.req.Sessions = make([]decision.Session, len(req.Sessions))
		for i, s := range req.Sessions {
			s.Vars = maps.Clone(s.Vars)
			s.Choices = append([]string(nil), s.Choices...)
			j.req.Sessions[i] = s
		}
	}
	return j
}

// nextInSlab returns the next unused element of *slab, which starts a
// new slab of ctxSlab elements when it is full. An element is handed out
// once.
func nextInSlab[T any](slab *[]T) *T {
	s := *slab
	if len(s) == cap(s) {
		s = make([]T, 0, ctxSlab)
	}
	s = s[:len(s)+1]
	*slab = s
	return &s[len(s)-1]
}

// releaseJob keeps j for the next decision once its result came back
// (decision logic returned, and its goroutine no longer touches it),
// unless its conversation still holds it or its timeout is armed.
func (w *worker) releaseJob(j *decisionJob) {
	if j.held || j.timeout != nil || len(w.freeJobs) >= maxFreeJobs {
		return
	}
	*j = decisionJob{}
	w.freeJobs = append(w.freeJobs, j)
}

// run runs decision logic on a goroutine of the pool and hands the
// result to the worker. The policy's decide expressions are looked up
// here, by the policy the request names before decision logic sees it.
func (j *decisionJob) run() {
	m := j.w.m
	defer m.inflight.Add(-1)
	bound := m.reg.Load().bound[j.req.Policy]
	j.answer, j.err, j.abort = m.runDecision(j.ctx, j.conv, j.ticket, &j.req, bound)
	j.ctx.cancel(context.Canceled)
	_ = j.w.push(input{kind: inDecided, conv: j.conv, ticket: j.ticket, job: j}, false) // fails only once closed
}

// decisionCtx is the context decision logic gets. It ends when the
// decision times out (context.DeadlineExceeded), when the answer no
// longer matters or decision logic returns (context.Canceled); it needs
// no timer or goroutine of its own, and makes its Done channel only when
// asked for it. state says whether and how it ended: ctxLive, or the
// error it ended with (ctxCanceled, ctxTimedOut); it is set under mu,
// once, and read without it.
type decisionCtx struct {
	deadline time.Time
	mu       sync.Mutex
	state    atomic.Uint32
	done     chan struct{}
}

// The states of a decisionCtx.
const (
	ctxLive = iota
	ctxCanceled
	ctxTimedOut
)

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
		if c.state.Load() != ctxLive {
			return closedChan
		}
		c.done = make(chan struct{})
	}
	return c.done
}

func (c *decisionCtx) Err() error {
	switch c.state.Load() {
	case ctxCanceled:
		return context.Canceled
	case ctxTimedOut:
		return context.DeadlineExceeded
	}
	return nil
}

func (c *decisionCtx) Value(any) any { return nil }

// cancel ends the context, once: with context.DeadlineExceeded when err
// is that, else with context.Canceled. Ending an ended context takes no
// lock (a decision's context is ended once decision logic returns, and
// again when the worker drops the decision).
func (c *decisionCtx) cancel(err error) {
	if c.state.Load() != ctxLive {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state.Load() != ctxLive {
		return
	}
	state := uint32(ctxCanceled)
	if errors.Is(err, context.DeadlineExceeded) {
		state = ctxTimedOut
	}
	c.state.Store(state)
	if c.done != nil {
		close(c.done)
	}
}

// startDecision runs decision logic for the decision ticket of c off the
// worker, bounded by Limits.DecisionTimeout.
func (w *worker) startDecision(c *conversation, ticket uint64, req *decision.Request, now time.Time) {
	m := w.m
	deadline := now.Add(m.o.limits.DecisionTimeout)
	j := newDecisionJob(w, c, ticket, req, deadline)
	j.timeout = w.timers.schedule(c, j, deadline, now)
	if c.decisions == nil {
		c.decisions = c.decisionBuf[:0]
	}
	c.decisions = append(c.decisions, j)
	j.held = true
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
	j.held = false
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

package agent

import (
	"context"
	"fmt"
	"maps"
	"slices"
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
	// bound is the policy's decide expressions, for decision logic to
	// fall back on (see boundOf).
	bound decision.Decider
	// held says the job is among the decisions of c, its conversation,
	// which lives while it holds the job.
	held bool
	c    *conversation
	// abort says decision logic panicked; answer and err are what it
	// returned.
	abort   bool
	timeout *timer
	answer  decision.Answer
	err     error
}

// A worker cuts the contexts of its decisions, and their copies of the
// choices, from blocks it allocates ctxBlock contexts (1.5 KB) or
// choiceBlock strings (4 KB) at a time: one allocation stands for many
// decisions. Each decision gets a context and a copy of its own, never
// reused, as decision logic may keep them; one kept past its decision
// keeps the memory of its block until it is dropped. A copy of choices
// has no room to grow in place (an append by decision logic moves it),
// and one of more than maxCutChoices gets an array of its own.
const (
	ctxBlock      = 64
	choiceBlock   = 256
	maxCutChoices = 16
)

// maxFreeJobs bounds the decision jobs a worker keeps for reuse.
const maxFreeJobs = 64

// newDecisionJob copies req for decision logic: vars, choices and
// sessions are copied, so that decision logic may keep or change them;
// content is shared, and read-only. The job is one w released, if any
// (releaseJob cleared it), and its context a fresh one from w's slabs.
func newDecisionJob(w *worker, c *conversation, ticket uint64, req *decision.Request, deadline time.Time) *decisionJob {
	j := reuse(&w.freeJobs)
	j.ctx = nextInSlab(&w.ctxs)
	j.w, j.c, j.conv, j.ticket, j.req = w, c, c.id, ticket, *req
	j.ctx.deadline = deadline.UnixNano()
	j.req.Vars = maps.Clone(req.Vars)
	j.req.Choices = w.copyChoices(req.Choices)
	if req.Sessions != nil {
		j.req.Sessions = make([]decision.Session, len(req.Sessions))
		for i, s := range req.Sessions {
			s.Vars = maps.Clone(s.Vars)
			s.Choices = w.copyChoices(s.Choices)
			j.req.Sessions[i] = s
		}
	}
	return j
}

// nextInSlab returns the next unused element of *slab, which starts a
// new block of ctxBlock elements when it is full. An element is handed
// out once.
func nextInSlab[T any](slab *[]T) *T {
	s := *slab
	if len(s) == cap(s) {
		s = make([]T, 0, ctxBlock)
	}
	s = s[:len(s)+1]
	*slab = s
	return &s[len(s)-1]
}

// copyChoices returns a copy of choices for decision logic, cut from w's
// block of strings when it has at most maxCutChoices (see ctxBlock).
func (w *worker) copyChoices(choices []string) []string {
	n := len(choices)
	switch {
	case n == 0:
		return choices[:0:0] // nil for nil
	case n > maxCutChoices:
		return slices.Clone(choices)
	case cap(w.choices)-len(w.choices) < n:
		w.choices = make([]string, 0, choiceBlock)
	}
	start := len(w.choices)
	w.choices = w.choices[:start+n]
	cp := w.choices[start : start+n : start+n]
	for i, s := range choices { // a few strings: no call, as append's copy makes
		cp[i] = s
	}
	return cp
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
// result to the worker. The policy's decide expressions were looked up
// on the worker, by the policy the request names before decision logic
// sees it.
func (j *decisionJob) run() {
	m := j.w.m
	j.answer, j.err, j.abort = m.runDecision(j.ctx, j.conv, j.ticket, &j.req, j.bound)
	j.ctx.cancel(false)
	_ = j.w.push(input{kind: inDecided, conv: j.conv, ticket: j.ticket, job: j}, false) // fails only once closed
}

// boundCache is the decide expressions a worker looked up last: those
// of policy in reg.
type boundCache struct {
	reg    *registry
	policy string
	d      decision.Decider
}

// boundOf returns the decide expressions of policy in the registry
// published now: those it found last when neither changed, as a
// registry never changes once published.
func (w *worker) boundOf(policy string) decision.Decider {
	b := &w.bound
	if reg := w.m.reg.Load(); b.reg != reg || b.policy != policy {
		b.reg, b.policy, b.d = reg, policy, reg.bound[policy]
	}
	return b.d
}

// decidedConv returns the conversation an inDecided for j is for, or
// nil: the one holding j, without a lookup; the one under j's id if none
// holds it (it may have dropped j, or be gone).
func (w *worker) decidedConv(j *decisionJob) *conversation {
	if j.held {
		return j.c
	}
	return w.convs[j.conv]
}

// decisionCtx is the context decision logic gets. It ends when the
// decision times out (context.DeadlineExceeded), when the answer no
// longer matters or decision logic returns (context.Canceled); it needs
// no timer or goroutine of its own, and makes its Done channel only when
// asked for it. state says whether and how it ended: ctxLive, or the
// error it ended with (ctxCanceled, ctxTimedOut); it is set once. done
// is its Done channel once asked for, or closedChan when it ended first
// (see Done). deadline is its deadline in nanoseconds since 1970 (UTC), so
// that a context takes 24 bytes, with no pointer but done's.
type decisionCtx struct {
	deadline int64
	state    atomic.Uint32
	done     atomic.Pointer[chan struct{}]
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

func (c *decisionCtx) Deadline() (time.Time, bool) { return time.Unix(0, c.deadline), true }

// Done returns the context's Done channel, the same at every call,
// making it the first time unless the context ended first. The channel
// is set once: by Done, which cancel then closes, or by cancel, which
// sets closedChan, the one a Done racing it gets then.
func (c *decisionCtx) Done() <-chan struct{} {
	for {
		if p := c.done.Load(); p != nil {
			return *p
		}
		ch := make(chan struct{})
		if c.done.CompareAndSwap(nil, &ch) {
			return ch
		}
	}
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

// cancel ends the context, once: with context.DeadlineExceeded when it
// timed out, else with context.Canceled. Ending an ended context changes
// nothing (a decision's context is ended once decision logic returns,
// and again when the worker drops the decision).
func (c *decisionCtx) cancel(timedOut bool) {
	if c.state.Load() != ctxLive {
		return
	}
	state := uint32(ctxCanceled)
	if timedOut {
		state = ctxTimedOut
	}
	if !c.state.CompareAndSwap(ctxLive, state) {
		return
	}
	if !c.done.CompareAndSwap(nil, &closedChan) {
		close(*c.done.Load()) // Done's, set once
	}
}

// startDecision runs decision logic for the decision ticket of c off the
// worker, bounded by Limits.DecisionTimeout.
func (w *worker) startDecision(c *conversation, ticket uint64, req *decision.Request, now time.Time) {
	m := w.m
	deadline := now.Add(m.o.limits.DecisionTimeout)
	j := newDecisionJob(w, c, ticket, req, deadline)
	j.bound = w.boundOf(req.Policy)
	j.timeout = w.timers.schedule(c, j, deadline, m.o.limits.DecisionTimeout, now)
	if c.decisions == nil {
		c.decisions = c.decisionBuf[:0]
	}
	c.decisions = append(c.decisions, j)
	j.held = true
	if w.asked = append(w.asked, j); len(w.asked) >= maxAskedAtOnce {
		w.ask()
	}
}

// maxAskedAtOnce is the most decisions a worker holds before it hands
// them to the pool: it hands them over at the end of each batch of
// inputs (see run), or this many at a time.
const maxAskedAtOnce = 16

// ask hands the decisions the worker asked for since it last did to the
// pool, in the order they were asked for.
func (w *worker) ask() {
	if len(w.asked) == 0 {
		return
	}
	w.m.inflight.v.Add(int64(len(w.asked)))
	w.m.deciders.runAll(w.asked)
	clear(w.asked)
	w.asked = w.asked[:0]
}

// stopDecision stops the timeout of a decision that was answered or no
// longer matters, and ends its context.
func (w *worker) stopDecision(c *conversation, ticket uint64) {
	for i, j := range c.decisions {
		if j.ticket == ticket {
			w.dropDecision(c, i, false)
			return
		}
	}
}

// dropDecision removes decision i of c, ending its context, as timed
// out or not.
func (w *worker) dropDecision(c *conversation, i int, timedOut bool) {
	j := c.decisions[i]
	if j.timeout != nil {
		w.timers.release(j.timeout)
		j.timeout = nil
	}
	j.ctx.cancel(timedOut)
	j.held = false
	c.decisions = slices.Delete(c.decisions, i, i+1) // clears the freed slot
}

// stopDecisions drops every decision of c.
func (w *worker) stopDecisions(c *conversation) {
	for len(c.decisions) > 0 {
		w.dropDecision(c, len(c.decisions)-1, false)
	}
	c.decisions = nil
}

// decisionTimedOut aborts a conversation whose decision is still awaited
// when its time is up; j's timer has fired.
func (w *worker) decisionTimedOut(c *conversation, j *decisionJob, now time.Time) {
	j.timeout = nil
	for i, x := range c.decisions {
		if x == j {
			w.dropDecision(c, i, true)
			break
		}
	}
	if c.h.Awaits(j.ticket) {
		w.abort(c, fmt.Sprintf("decision logic did not answer within %s", w.m.o.limits.DecisionTimeout), now)
	}
}

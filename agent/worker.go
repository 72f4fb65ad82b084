package agent

import (
	"hash/maphash"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/forms"
)

type inputKind uint8

const (
	inMessage inputKind = iota + 1
	inTick
	inAnswer
	inDecided
	inSendFailed
	inStart
	inWait
	inStatus
	inFlush
	inSweep
	inAck
	inRetry
	inResume
	inCommitted
	inStop
)

// input is one item of a worker's queue. It is kept small: the rare
// kinds carry their data behind extra.
type input struct {
	kind   inputKind
	conv   string
	msg    *forms.Message
	ticket uint64
	extra  *inputExtra
	// job is the decision whose result an inDecided brings back.
	job *decisionJob
}

type inputExtra struct {
	answer decision.Answer
	// err is the failure of a send (inSendFailed).
	err    error
	start  *startReq
	wait   chan waitResult
	status chan statusResult
	flush  chan struct{}
	// ack acknowledges a delivered message; from names the receiver of an
	// acknowledgement (inAck).
	ack    func()
	from   string
	resume *resumeReq
}

type startReq struct {
	prog  *engine.Program
	peers map[string][]string
	data  map[string]any
	// fresh says the id was made by newID for this Start.
	fresh bool
	done  chan error
}

type waitResult struct {
	outcome string
	err     error
}

type statusResult struct {
	status Status
	err    error
}

// worker owns a set of conversations and processes their inputs one at a
// time. Only its goroutine touches convs, so conversations need no locks.
type worker struct {
	m  *Manager
	mu sync.Mutex
	// queue holds the inputs not yet processed; limited counts those
	// subject to Limits.MaxQueue (messages and starts). parked says the
	// worker's goroutine waits for wake, which the next push signals
	// (once): a push to a worker at work signals nothing.
	queue, spare []input
	limited      atomic.Int64
	busy         bool
	parked       bool
	stopped      bool
	wake         chan struct{}
	exited       chan struct{}

	// convs holds the worker's conversations by id, live ones and those
	// ended and kept whole; tombs the tombstones of the others, by
	// tombKey (see tomb), and collided those whose key another id's
	// tombstone holds (nil until one does: tombs tells keys apart by 38
	// of their bits, under a random seed, so that a put finds its key
	// taken once in 2^38 / n, for n tombstones held). oldest to
	// newest, linked by next, are every ended conversation within its
	// retention, in the order they ended.
	convs          map[string]*conversation
	tombs          tombTable
	collided       map[string]*tombstone
	seed           maphash.Seed
	oldest, newest *tombstone
	// slab is the slab tombstones are cut from, of which slabUsed are
	// (see tombSlab).
	slab     *tombSlab
	slabUsed int
	// slabs are the slabs that tombstones not yet swept were cut from,
	// and the current one, by number (tombSlab.num); freeSlabs the
	// numbers of those gone, for the next.
	slabs     []*tombSlab
	freeSlabs []uint32
	// progs are the programs of the tombstones, by their number (see
	// progNumber), and progNumbers their numbers; epoch is the time the
	// tombstones' end times are kept from (see sinceEpoch).
	progs       []*engine.Program
	progNumbers map[*engine.Program]uint32
	lastProg    uint32
	epoch       time.Time
	// wholes holds the conversations ended and kept whole, in the place
	// their tombstones name (tombstone.whole), and freeWholes the places
	// free.
	wholes     []*conversation
	freeWholes []uint32
	// retired holds the conversations the current input replaced by
	// tombstones, and freeConvs those ready for reuse.
	retired   []*conversation
	freeConvs []*conversation
	processed atomic.Uint64
	queues    []*engine.Queue
	timers    timers
	out       *outbox
	d         *durable // nil without a store
	// Reused for the inputs of handlers, which do not keep them, when
	// there is no observer (which may).
	answerEv engine.DecisionEvent
	msgEv    engine.MessageEvent
	// wall reads the wall clock when the manager's clock is RealClock;
	// nil with any other.
	wall *wallClock
	// peerOpt is the WithPeers option start made last (see withPeers).
	peerOpt peerOpt
	// freeJobs holds decision jobs for reuse, at most maxFreeJobs; ctxs
	// and choices the blocks decision contexts and copies of choices are
	// cut from (see ctxBlock).
	freeJobs []*decisionJob
	// asked holds the decisions asked for and not yet handed to the pool
	// (see ask).
	asked   []task
	ctxs    []decisionCtx
	choices []string
	bound   boundCache
}

func newWorker(m *Manager) *worker {
	w := &worker{m: m, wake: make(chan struct{}, 1), exited: make(chan struct{}), convs: map[string]*conversation{}, seed: maphash.MakeSeed()}
	w.timers.w = w
	w.epoch = m.o.clock.Now()
	if _, ok := m.o.clock.(realClock); ok {
		w.wall = &wallClock{}
	}
	w.out = newOutbox(w)
	if m.o.store != nil {
		w.d = newDurable()
	}
	return w
}

// push queues in. Limited inputs are refused with ErrBusy when the queue
// is full; every input is refused with ErrClosed once the worker stopped.
func (w *worker) push(in input, limited bool) error {
	w.mu.Lock()
	switch {
	case w.stopped:
		w.mu.Unlock()
		return ErrClosed
	case limited && w.limited.Load() >= int64(w.m.o.limits.MaxQueue):
		w.mu.Unlock()
		return ErrBusy
	}
	if limited {
		w.limited.Add(1) // under w.mu: pushes check and count one at a time
	}
	w.queue = append(w.queue, in)
	w.unpark()
	return nil
}

// stop queues the worker's stop; inputs behind it are refused.
func (w *worker) stop() {
	w.mu.Lock()
	w.queue = append(w.queue, input{kind: inStop})
	w.unpark()
}

// unpark wakes the worker's goroutine if it waits, and unlocks w.mu,
// which the caller holds.
func (w *worker) unpark() {
	signal := w.parked
	w.parked = false
	w.mu.Unlock()
	if signal {
		w.wake <- struct{}{} // room for it: one signal for each wait
	}
}

func (w *worker) idle() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.queue) == 0 && !w.busy
}

// run processes the queue, a batch at a time. Finding it empty, the
// worker first lets the other goroutines run once (a decision, a peer's
// worker or a caller often has its next input ready), and waits for
// wake only if the queue is still empty then.
func (w *worker) run() {
	defer w.m.wg.Done()
	defer close(w.exited)
	yielded := false
	w.mu.Lock()
	for {
		batch := w.queue
		if len(batch) == 0 {
			// The queue stays, to be filled again: a batch taken only
			// to find it empty would be dropped.
			w.busy = false
			if yielded {
				w.parked = true
			}
			w.mu.Unlock()
			if yielded {
				<-w.wake
			} else {
				runtime.Gosched()
			}
			yielded = !yielded
			w.mu.Lock()
			continue
		}
		yielded = false
		w.queue, w.spare = w.spare[:0], nil
		w.busy = true
		w.mu.Unlock()
		for i := range batch {
			in := &batch[i]
			if in.kind == inStop {
				w.ask()
				w.flush()
				w.drain()
				w.halt(batch[i+1:])
				return
			}
			if in.kind == inMessage || in.kind == inStart {
				w.limited.Add(-1)
			}
			w.handle(in)
			if len(w.retired) > 0 {
				w.recycle()
			}
			if in.kind != inCommitted { // the committer's, not the manager's, input
				w.processed.Store(w.processed.Load() + 1) // the worker alone writes it
			}
			batch[i] = input{}
		}
		w.ask()
		w.flush()
		w.mu.Lock()
		if w.spare == nil {
			w.spare = batch[:0]
		}
	}
}

// halt stops the worker: it refuses what is still queued (rest, and
// anything pushed since), answers every waiter with ErrClosed, stops the
// alarm and lets the sender finish what is already on its way out.
func (w *worker) halt(rest []input) {
	w.mu.Lock()
	w.stopped = true
	rest = append(rest, w.queue...)
	w.queue = nil
	w.mu.Unlock()
	for i := range rest {
		reject(&rest[i], ErrClosed)
	}
	w.timers.stop()
	if w.d != nil && w.d.retry != nil {
		w.d.retry.Stop()
	}
	for _, c := range w.convs {
		for _, ch := range c.waiters {
			ch <- waitResult{err: ErrClosed}
		}
		c.waiters = nil
		for _, j := range c.decisions {
			j.ctx.cancel(false)
		}
	}
	w.out.close()
}

// reject answers an input's caller, if it waits, with err.
func reject(in *input, err error) {
	if in.extra == nil {
		return
	}
	switch x := in.extra; {
	case x.start != nil:
		x.start.done <- err
	case x.wait != nil:
		x.wait <- waitResult{err: err}
	case x.status != nil:
		x.status <- statusResult{err: err}
	case x.flush != nil:
		x.flush <- struct{}{}
	}
}

// now reads the manager's clock: through the worker's wallClock on the
// wall clock.
func (w *worker) now() time.Time {
	if w.wall != nil {
		return w.wall.now()
	}
	return w.m.o.clock.Now()
}

// getQueue returns an empty queue for one step of a handler: no other
// step uses it until the step gives it back (putQueue), so that its
// events stay valid while dispatch carries them out, nested steps
// included.
func (w *worker) getQueue() *engine.Queue {
	if n := len(w.queues); n > 0 {
		q := w.queues[n-1]
		w.queues = w.queues[:n-1]
		q.Reset()
		return q
	}
	return &engine.Queue{}
}

func (w *worker) putQueue(q *engine.Queue) { w.queues = append(w.queues, q) }

func (w *worker) handle(in *input) {
	now := w.now()
	if in.kind != inTick {
		w.timers.due(now)
	}
	switch in.kind {
	case inFlush:
		if w.d != nil {
			w.d.flushes = append(w.d.flushes, in.extra.flush) // answered once committed
		} else {
			in.extra.flush <- struct{}{}
		}
	case inCommitted:
		w.released()
	case inSweep:
		w.sweep(now)
	case inStart:
		err := w.start(in.conv, in.extra.start, now)
		if w.d != nil && err == nil {
			w.d.starts = append(w.d.starts, in.extra.start.done) // answered once committed
		} else {
			in.extra.start.done <- err
		}
	case inWait:
		w.wait(in)
	case inStatus:
		w.status(in)
	case inTick:
		w.timers.fire(in.ticket, now)
	case inAnswer:
		if c := w.convs[in.conv]; c != nil {
			w.answer(c, in.ticket, in.extra.answer, now)
		} else if t := w.tomb(in.conv); t != nil {
			w.lateAnswer(t, in.ticket, now, in)
		}
	case inDecided:
		if c := w.decidedConv(in.job); c != nil {
			w.decided(c, in.ticket, in.job, now)
		}
		w.releaseJob(in.job)
	case inSendFailed:
		if c := w.convs[in.conv]; c != nil && !w.kept(in.msg) {
			w.abort(c, "send failed: "+in.extra.err.Error(), now)
		}
	case inMessage:
		var ack func()
		if in.extra != nil {
			ack = in.extra.ack
		}
		w.message(in.msg, ack, now)
	case inAck:
		w.acked(in.msg, in.extra.from)
	case inRetry:
		w.retry(now)
	case inResume:
		w.resume(in.extra.resume, now)
	}
}

func (w *worker) wait(in *input) {
	c := w.convs[in.conv]
	if c == nil {
		if t := w.tomb(in.conv); t != nil {
			in.extra.wait <- t.result()
		} else {
			in.extra.wait <- waitResult{err: noConversation(in.conv)}
		}
		return
	}
	switch {
	case c.h.Done():
		in.extra.wait <- c.result()
	default:
		if c.waiters == nil {
			c.waiters = c.waiterBuf[:0]
		}
		c.waiters = append(c.waiters, in.extra.wait)
	}
}

func (w *worker) status(in *input) {
	c := w.convs[in.conv]
	if c == nil {
		if t := w.tomb(in.conv); t != nil {
			in.extra.status <- statusResult{status: w.tombStatus(t)}
			return
		}
		in.extra.status <- statusResult{err: noConversation(in.conv)}
		return
	}
	prog := c.h.Program()
	st := Status{Conversation: c.id, Policy: prog.Policy().Name, Role: prog.Role(), Done: c.h.Done(), Outcome: c.outcome, States: map[string]string{}}
	if peers := c.h.Sessions(); peers != nil {
		for _, p := range peers {
			st.States[p] = c.h.State(p)
		}
	} else {
		st.States[""] = c.h.State("")
	}
	in.extra.status <- statusResult{status: st}
}

package agent

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// maxIdleDeciders bounds the goroutines a pool keeps waiting for
// decisions.
const maxIdleDeciders = 64

// stallCheck is how often a pool looks for a batch whose tasks wait
// behind decision logic that has not returned (see pool).
const stallCheck = time.Millisecond

// task is what a pool runs: a decision (*decisionJob).
type task interface{ run() }

// pool runs decision logic off the workers on goroutines that outlive a
// decision: a decision does not pay for a new goroutine and the growth
// of its stack. A worker hands it the decisions of one batch of its
// inputs at once (runAll), so that a batch costs one hand-off however
// many decisions it holds. The batch goes to a goroutine that is between
// two batches (free, see loop), or else to one waiting for work (idle),
// or else to a new one; that goroutine takes its tasks one at a time.
// A task of a batch waits behind decision logic still running for at
// most two stallChecks: every stallCheck, a batch of which no goroutine
// took a task since the last look, while some are left, gets one more
// goroutine, which takes the next. At most maxIdleDeciders wait for
// work, and they stop when the manager closes.
type pool struct {
	// done, when set, counts down the tasks run: a goroutine takes the
	// tasks it ran from it once it is done with their batch.
	done *atomic.Int64
	mu   sync.Mutex
	// queue holds the batches handed to the free goroutines, at most one
	// for each: a goroutine leaving the free state takes one if there is
	// one.
	queue []*batch
	free  int
	// idle holds the wake channel of each goroutine waiting for work.
	idle []chan *batch
	// active holds the batches of more than one task that a goroutine
	// still works on, for the stall check; spare the batches done with,
	// for reuse.
	active []*batch
	spare  []*batch
	// alarm is the stall check's timer, armed while active has a batch.
	alarm  *time.Timer
	armed  bool
	closed bool
}

// batch is the tasks of one runAll. Goroutines take them one at a time
// through next, the number taken so far.
type batch struct {
	tasks []task
	next  atomic.Int64
	// Guarded by the pool's mu: runners counts the goroutines handed the
	// batch and not yet done with it; seen is next at the stall check's
	// last look; active says the batch is in the pool's active.
	runners int
	seen    int64
	active  bool
}

// maxSpareBatches bounds the batches a pool keeps for reuse.
const maxSpareBatches = 64

// newPool returns a pool that counts the tasks it ran down from done
// (nil for none).
func newPool(done *atomic.Int64) *pool { return &pool{done: done} }

// runAll runs ts, in order, on a pooled goroutine, or a new one (see
// pool). It keeps no reference to ts.
func (p *pool) runAll(ts []task) {
	if len(ts) == 0 {
		return
	}
	p.mu.Lock()
	b := reuse(&p.spare)
	b.tasks = append(b.tasks, ts...)
	b.runners, b.seen = 1, -1
	if len(ts) > 1 {
		b.active = true
		p.active = append(p.active, b)
		p.arm()
	}
	if p.free > len(p.queue) {
		p.queue = append(p.queue, b)
		p.mu.Unlock()
		return
	}
	if n := len(p.idle); n > 0 {
		wake := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		wake <- b
		return
	}
	p.mu.Unlock()
	go p.loop(b)
}

// arm sets the stall check going, unless it is; p.mu is held.
func (p *pool) arm() {
	if p.armed {
		return
	}
	p.armed = true
	if p.alarm == nil {
		p.alarm = time.AfterFunc(stallCheck, p.check)
		return
	}
	p.alarm.Reset(stallCheck)
}

// check gives one more goroutine to every batch of which a task was
// taken, but none since the last check, while some are left: the
// goroutines it has are all in decision logic. It checks again after
// stallCheck while a batch is active.
func (p *pool) check() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed = false
	if len(p.active) == 0 {
		return
	}
	for _, b := range p.active {
		n := b.next.Load()
		if n > 0 && n < int64(len(b.tasks)) && n == b.seen {
			b.runners++
			go p.loop(b)
		}
		b.seen = n
	}
	p.arm()
}

// reuse returns the last of *free, taken off it, or a new T when *free
// is empty.
func reuse[T any](free *[]*T) *T {
	s := *free
	n := len(s)
	if n == 0 {
		return new(T)
	}
	x := s[n-1]
	s[n-1] = nil
	*free = s[:n-1]
	return x
}

// take returns the oldest batch queued, or nil; p.mu is held.
func (p *pool) take() *batch {
	if len(p.queue) == 0 {
		return nil
	}
	b := p.queue[0]
	n := copy(p.queue, p.queue[1:])
	p.queue[n] = nil
	p.queue = p.queue[:n]
	return b
}

// drain runs the tasks of b that no other goroutine took, one at a time,
// then counts them down from p.done.
func (p *pool) drain(b *batch) {
	ran := int64(0)
	for {
		i := b.next.Add(1) - 1
		if i >= int64(len(b.tasks)) {
			break
		}
		b.tasks[i].run()
		ran++
	}
	if p.done != nil && ran > 0 {
		p.done.Add(-ran)
	}
}

// leave says the calling goroutine is done with b, every task of which
// is taken; the last to leave keeps b for reuse. p.mu is held.
func (p *pool) leave(b *batch) {
	if b.runners--; b.runners > 0 {
		return
	}
	if b.active {
		for i, a := range p.active {
			if a == b {
				last := len(p.active) - 1
				p.active[i], p.active[last] = p.active[last], nil
				p.active = p.active[:last]
				break
			}
		}
		b.active = false
	}
	clear(b.tasks)
	b.tasks = b.tasks[:0]
	b.next.Store(0)
	if len(p.spare) < maxSpareBatches {
		p.spare = append(p.spare, b)
	}
}

// loop runs b, then the batches that come. Between two batches it is
// free for a moment: it lets the other goroutines run once (the worker
// its tasks answered, which often asks for the next decisions at once)
// and takes a batch handed to it meanwhile, before it waits for work as
// an idle goroutine; so that a batch costs no wake-up of a sleeping
// goroutine while decisions keep coming.
func (p *pool) loop(b *batch) {
	var wake chan *batch
	for {
		p.drain(b)
		p.mu.Lock()
		p.leave(b)
		if b = p.take(); b != nil {
			p.mu.Unlock()
			continue
		}
		p.free++
		p.mu.Unlock()
		runtime.Gosched()
		p.mu.Lock()
		p.free--
		if b = p.take(); b != nil {
			p.mu.Unlock()
			continue
		}
		if p.closed || len(p.idle) >= maxIdleDeciders {
			p.mu.Unlock()
			return
		}
		if wake == nil {
			wake = make(chan *batch, 1)
		}
		p.idle = append(p.idle, wake)
		p.mu.Unlock()
		if b = <-wake; b == nil { // closed
			return
		}
	}
}

// close stops the idle goroutines; those running finish their batch,
// and a batch run after close gets a goroutine of its own.
func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, wake := range idle {
		wake <- nil
	}
}

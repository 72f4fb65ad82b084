package agent

import (
	"runtime"
	"sync"
)

// maxIdleDeciders bounds the goroutines a pool keeps waiting for
// decisions.
const maxIdleDeciders = 64

// task is what a pool runs: a decision (*decisionJob).
type task interface{ run() }

// pool runs decision logic off the workers on goroutines that outlive a
// decision: a decision does not pay for a new goroutine and the growth
// of its stack. A task never waits behind decision logic still running:
// it goes to a goroutine that is between two tasks (free, see loop), or
// else to one waiting for work (idle), or else to a new one. At most
// maxIdleDeciders wait for work, and they stop when the manager closes.
type pool struct {
	mu sync.Mutex
	// queue holds the tasks handed to the free goroutines, at most one
	// for each: a goroutine leaving the free state takes one if there is
	// one.
	queue []task
	free  int
	// idle holds the wake channel of each goroutine waiting for work.
	idle   []chan task
	closed bool
}

func newPool() *pool { return &pool{} }

// run runs t on a pooled goroutine, or a new one.
func (p *pool) run(t task) {
	p.mu.Lock()
	if p.free > len(p.queue) {
		p.queue = append(p.queue, t)
		p.mu.Unlock()
		return
	}
	if n := len(p.idle); n > 0 {
		wake := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		wake <- t
		return
	}
	p.mu.Unlock()
	go p.loop(t)
}

// take returns the oldest task queued, or nil; p.mu is held.
func (p *pool) take() task {
	if len(p.queue) == 0 {
		return nil
	}
	t := p.queue[0]
	n := copy(p.queue, p.queue[1:])
	p.queue[n] = nil
	p.queue = p.queue[:n]
	return t
}

// loop runs t, then the tasks that come. Between two tasks it is free
// for a moment: it lets the other goroutines run once (the worker its
// task answered, which often asks for the next decision at once) and
// takes a task handed to it meanwhile, before it waits for work as an
// idle goroutine; so that a decision costs no wake-up of a sleeping
// goroutine while decisions keep coming.
func (p *pool) loop(t task) {
	var wake chan task
	for {
		t.run()
		p.mu.Lock()
		if t = p.take(); t != nil {
			p.mu.Unlock()
			continue
		}
		p.free++
		p.mu.Unlock()
		runtime.Gosched()
		p.mu.Lock()
		p.free--
		if t = p.take(); t != nil {
			p.mu.Unlock()
			continue
		}
		if p.closed || len(p.idle) >= maxIdleDeciders {
			p.mu.Unlock()
			return
		}
		if wake == nil {
			wake = make(chan task, 1)
		}
		p.idle = append(p.idle, wake)
		p.mu.Unlock()
		if t = <-wake; t == nil { // closed
			return
		}
	}
}

// close stops the idle goroutines; those running finish their task, and
// a task run after close gets a goroutine of its own.
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

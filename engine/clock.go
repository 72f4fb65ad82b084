package engine

import (
	"container/heap"
	"sync"
	"time"
)

// Clock is the manager's source of time: handlers never read the clock,
// the manager stamps every event it feeds them and turns their timer
// events into Clock timers. RealClock is the wall clock; FakeClock makes
// every timer test deterministic and instant.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed.
	AfterFunc(d time.Duration, f func()) ClockTimer
}

// ClockTimer is a timer started by Clock.AfterFunc.
type ClockTimer interface {
	// Stop prevents the timer from firing; it reports whether it did.
	Stop() bool
}

// RealClock returns the wall clock.
func RealClock() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) ClockTimer { return time.AfterFunc(d, f) }

// FakeClock is a Clock that moves only when told to. Timers fire, in
// deadline order, inside Advance and Set, on the calling goroutine. It is
// safe for concurrent use.
type FakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers fakeTimers
	seq    uint64
}

// NewFakeClock returns a FakeClock reading start.
func NewFakeClock(start time.Time) *FakeClock { return &FakeClock{now: start} }

// Now returns the clock's time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f to run when the clock has advanced by d.
func (c *FakeClock) AfterFunc(d time.Duration, f func()) ClockTimer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &fakeTimer{clock: c, at: c.now.Add(d), f: f, seq: c.seq, index: -1}
	heap.Push(&c.timers, t)
	return t
}

// Advance moves the clock forward by d, firing every timer that falls due.
func (c *FakeClock) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }

// Set moves the clock to t (never backwards), firing every timer due at or
// before t in deadline order; each runs with the clock at its deadline.
func (c *FakeClock) Set(t time.Time) {
	for {
		c.mu.Lock()
		if len(c.timers) == 0 || c.timers[0].at.After(t) {
			if t.After(c.now) {
				c.now = t
			}
			c.mu.Unlock()
			return
		}
		next := heap.Pop(&c.timers).(*fakeTimer)
		if next.at.After(c.now) {
			c.now = next.at
		}
		c.mu.Unlock()
		next.f()
	}
}

// Pending returns the number of timers not yet fired or stopped.
func (c *FakeClock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// NextDeadline returns when the next timer fires, and false if none is
// pending.
func (c *FakeClock) NextDeadline() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.timers) == 0 {
		return time.Time{}, false
	}
	return c.timers[0].at, true
}

type fakeTimer struct {
	clock *FakeClock
	at    time.Time
	f     func()
	seq   uint64
	index int
}

func (t *fakeTimer) Stop() bool {
	c := t.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.index < 0 {
		return false
	}
	heap.Remove(&c.timers, t.index)
	return true
}

type fakeTimers []*fakeTimer

func (h fakeTimers) Len() int { return len(h) }
func (h fakeTimers) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h fakeTimers) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *fakeTimers) Push(x any) {
	t := x.(*fakeTimer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *fakeTimers) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.index = -1
	return t
}

package agent

import (
	"sync"
	"time"

	"github.com/parleyhq/parley/internal/timerheap"
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

// alarmClock is a Clock that can also call f at an absolute time. A
// worker uses it when its clock has it (FakeClock does), so that an alarm
// lands at its deadline even when the clock moves between reading the
// time and setting the alarm.
type alarmClock interface {
	AtFunc(t time.Time, f func()) ClockTimer
}

// ClockTimer is a timer started by Clock.AfterFunc.
type ClockTimer interface {
	// Stop prevents the timer from firing; it reports whether it did.
	Stop() bool
}

// RealClock returns the wall clock. A worker of a manager on it stamps
// each input it processes with a reading of the monotonic clock, added to
// its last reading of the wall clock (time.Now), which it reads again at
// least every 100 ms: one clock reading an input rather than two, the
// same time to within the wall clock's slew over 100 ms (at most 50 µs
// under NTP), and a step of the wall clock shows within 100 ms.
func RealClock() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// wallRefresh is how long a wallClock moves its last reading of the wall
// clock on by the monotonic clock before it reads the wall clock again.
const wallRefresh = 100 * time.Millisecond

// wallClock reads the wall clock for one goroutine (a worker's) at the
// cost of a reading of the monotonic clock, where time.Now reads both:
// it adds the monotonic time passed since its last time.Now to that, for
// wallRefresh (see RealClock). Its times carry their monotonic reading,
// as time.Now's do.
type wallClock struct{ base time.Time }

func (c *wallClock) now() time.Time {
	// time.Since reads only the monotonic clock for a time that has a
	// monotonic reading; the zero base has none, and is older than
	// wallRefresh.
	if d := time.Since(c.base); d >= 0 && d < wallRefresh {
		return c.base.Add(d)
	}
	c.base = time.Now()
	return c.base
}

func (realClock) AfterFunc(d time.Duration, f func()) ClockTimer { return time.AfterFunc(d, f) }

// FakeClock is a Clock that moves only when told to. Timers fire, in
// deadline order (timers due at the same time in the order they were
// set), inside Advance and Set, on the calling goroutine. It is safe for
// concurrent use.
type FakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers timerheap.Heap[func()]
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
	return &fakeTimer{clock: c, h: c.timers.Push(c.now.Add(d), f)}
}

// AtFunc schedules f to run when the clock reaches t.
func (c *FakeClock) AtFunc(t time.Time, f func()) ClockTimer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return &fakeTimer{clock: c, h: c.timers.Push(t, f)}
}

// Advance moves the clock forward by d, firing every timer that falls due.
func (c *FakeClock) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }

// Set moves the clock to t (never backwards), firing every timer due at or
// before t in deadline order; each runs with the clock at its deadline.
func (c *FakeClock) Set(t time.Time) {
	for {
		c.mu.Lock()
		at, _, ok := c.timers.Peek()
		if !ok || at.After(t) {
			if t.After(c.now) {
				c.now = t
			}
			c.mu.Unlock()
			return
		}
		at, f, _ := c.timers.Pop()
		if at.After(c.now) {
			c.now = at
		}
		c.mu.Unlock()
		f()
	}
}

// Pending returns the number of timers not yet fired or stopped.
func (c *FakeClock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.timers.Len()
}

// NextDeadline returns when the next timer fires, and false if none is
// pending.
func (c *FakeClock) NextDeadline() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, _, ok := c.timers.Peek()
	return at, ok
}

type fakeTimer struct {
	clock *FakeClock
	h     timerheap.Handle
}

func (t *fakeTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	return t.clock.timers.Remove(t.h)
}

package agent

import (
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/internal/timerheap"
)

// timers holds the armed timers of all of a worker's conversations; one
// clock timer (the alarm) is set for the earliest. Most timers are armed
// for one of a few spans past the moment they are armed (every
// decision's timeout is Limits.DecisionTimeout, a policy's timer its
// duration), so their deadlines come in order: those go to the lane of
// their span, a list in deadline order where arming is an append and
// cancelling an unlink. A timer whose span has no lane, or whose
// deadline is earlier than its lane's last (a clock that moved back, a
// deadline restored from a store), goes to the heap. Timers fire in the
// order of their deadlines, and of their arming for equal deadlines,
// across the lanes and the heap.
type timers struct {
	w     *worker
	heap  timerheap.Heap[*timer]
	lanes [timerLanes]lane
	// seq counts the timers armed, in the order they were armed.
	seq      uint64
	alarm    ClockTimer
	alarmAt  time.Time
	alarmGen uint64
	// ring is the alarm on the wall clock, reused; ringGen is the
	// generation it was last set for.
	ring    *time.Timer
	ringGen atomic.Uint64
	free    []*timer
	// low is no later than the deadline of any timer armed, when lowSet
	// (see due): arming moves it earlier, and due and fire set it to the
	// first timer's.
	low    time.Time
	lowSet bool
}

// timerLanes is how many spans have a lane at once; an empty lane is
// taken by the next span that has none.
const timerLanes = 4

// lane holds, from first to last, timers armed span before their
// deadlines, in deadline order.
type lane struct {
	span        time.Duration
	first, last *timer
}

// timer is an armed timer of a conversation: one of its policy's
// (ev), or the timeout of a decision (job). at is its deadline, and sec,
// nsec and seq its place in the firing order. In a lane (ln) it is
// linked to its neighbours; in the heap h holds its place.
type timer struct {
	conv       *conversation
	ev         engine.TimerEvent
	job        *decisionJob
	at         time.Time
	sec        int64
	nsec       int32
	seq        uint64
	ln         *lane
	prev, next *timer
	h          timerheap.Handle
}

// before reports whether t fires before u: it is due earlier (on the
// wall clock, as the heap orders), or at the same time and was armed
// first.
func (t *timer) before(u *timer) bool {
	if t.sec != u.sec {
		return t.sec < u.sec
	}
	if t.nsec != u.nsec {
		return t.nsec < u.nsec
	}
	return t.seq < u.seq
}

// apply carries out a handler's TimerEvent.
func (ts *timers) apply(c *conversation, e *engine.TimerEvent, now time.Time) {
	switch e.Op {
	case engine.TimerSet:
		t := ts.newTimer()
		t.conv, t.ev = c, *e
		if c.timers == nil {
			c.timers = c.timerBuf[:0]
		}
		c.timers = append(c.timers, t)
		ts.arm(t, e.Deadline, now)
	case engine.TimerCancel:
		for i, t := range c.timers {
			if t.ev.Name == e.Name && t.ev.Commitment == e.Commitment && t.ev.Session == e.Session && t.ev.Epoch == e.Epoch {
				ts.unschedule(c, i)
				return
			}
		}
	}
}

// schedule arms the timeout of decision j of c, at deadline, span after
// now.
func (ts *timers) schedule(c *conversation, j *decisionJob, deadline time.Time, span time.Duration, now time.Time) *timer {
	t := ts.newTimer()
	t.conv, t.job = c, j
	ts.armSpan(t, deadline, span, now)
	return t
}

// arm puts t, due at, in the lane of its span or else in the heap, and
// sets the alarm for it if it is now the earliest.
func (ts *timers) arm(t *timer, at, now time.Time) { ts.armSpan(t, at, at.Sub(now), now) }

// armSpan is arm for a t due at, span after now.
func (ts *timers) armSpan(t *timer, at time.Time, span time.Duration, now time.Time) {
	ts.seq++
	t.at, t.sec, t.nsec, t.seq = at, at.Unix(), int32(at.Nanosecond()), ts.seq
	if l := ts.lane(span, t); l != nil {
		t.ln, t.prev = l, l.last
		if l.last != nil {
			l.last.next = t
		} else {
			l.first = t
		}
		l.last = t
	} else {
		t.h = ts.heap.Push(at, t)
	}
	if !ts.lowSet || at.Before(ts.low) {
		ts.low, ts.lowSet = at, true
	}
	// A timer put after others in its lane is not the first: only one
	// that starts a lane, or went to the heap, may need the alarm set.
	if (t.ln == nil || t.prev == nil) && ts.first() == t {
		ts.rearm(now)
	}
}

// lane returns the lane t, armed span before its deadline, goes to the
// end of: the lane of span, or an empty one, which becomes span's. It
// returns nil when no lane is free, or t would come before the last
// timer of span's lane.
func (ts *timers) lane(span time.Duration, t *timer) *lane {
	var empty *lane
	for i := range ts.lanes {
		l := &ts.lanes[i]
		switch {
		case l.first != nil && l.span == span:
			if t.before(l.last) {
				return nil
			}
			return l
		case l.first == nil && empty == nil:
			empty = l
		}
	}
	if empty != nil {
		empty.span = span
	}
	return empty
}

// first returns the timer that fires first, or nil when none is armed.
func (ts *timers) first() *timer {
	_, t, _ := ts.heap.Peek()
	for i := range ts.lanes {
		if f := ts.lanes[i].first; f != nil && (t == nil || f.before(t)) {
			t = f
		}
	}
	return t
}

// release takes t off its lane or the heap and keeps it for reuse: a
// policy timer (unschedule also drops it from its conversation) or a
// decision's timeout.
func (ts *timers) release(t *timer) {
	if l := t.ln; l != nil {
		if t.prev != nil {
			t.prev.next = t.next
		} else {
			l.first = t.next
		}
		if t.next != nil {
			t.next.prev = t.prev
		} else {
			l.last = t.prev
		}
	} else {
		ts.heap.Remove(t.h)
	}
	// What reuse does not set again, and what t refers to: the rest is
	// set again when it is armed (see newTimer).
	t.conv, t.job, t.ln, t.prev, t.next = nil, nil, nil, nil, nil
	t.ev.Name, t.ev.Commitment, t.ev.Session = "", "", ""
	ts.free = append(ts.free, t)
}

// clear removes every timer of c.
func (ts *timers) clear(c *conversation) {
	for len(c.timers) > 0 {
		ts.unschedule(c, len(c.timers)-1)
	}
}

// unschedule removes timer i of c. The alarm stays: when it goes off early
// it finds nothing due and is set again.
func (ts *timers) unschedule(c *conversation, i int) {
	t := c.timers[i]
	c.timers[i] = c.timers[len(c.timers)-1]
	c.timers[len(c.timers)-1] = nil
	c.timers = c.timers[:len(c.timers)-1]
	ts.release(t)
}

// newTimer returns a timer, reusing one unscheduled before: one of
// conv and ev, or conv and job, is set by the caller, and at, sec, nsec,
// seq and ln with prev or h by arm.
func (ts *timers) newTimer() *timer {
	if n := len(ts.free); n > 0 {
		t := ts.free[n-1]
		ts.free = ts.free[:n-1]
		return t
	}
	return &timer{}
}

// rearm sets the alarm for the earliest timer, unless it is already set
// for then.
func (ts *timers) rearm(now time.Time) {
	t := ts.first()
	if t == nil || ts.alarm != nil && ts.alarmAt.Equal(t.at) {
		return
	}
	at := t.at
	if ts.alarm != nil {
		ts.alarm.Stop()
	}
	w := ts.w
	ts.alarmAt = at
	ts.alarmGen++
	gen := ts.alarmGen
	if !at.After(now) {
		// Already due (a timer restored past its deadline): fire it
		// without waiting for the clock to move.
		ts.alarm = nil
		_ = w.push(input{kind: inTick, ticket: gen}, false) // fails only once closed
		return
	}
	if _, ok := w.m.o.clock.(realClock); ok {
		// The wall clock's alarm is one time.Timer, set again each time:
		// it rings with the generation it was last set for.
		ts.ringGen.Store(gen)
		if ts.ring == nil {
			ts.ring = time.AfterFunc(time.Until(at), func() {
				_ = w.push(input{kind: inTick, ticket: ts.ringGen.Load()}, false) // fails only once closed
			})
		} else {
			ts.ring.Reset(time.Until(at))
		}
		ts.alarm = ts.ring
		return
	}
	tick := func() {
		_ = w.push(input{kind: inTick, ticket: gen}, false) // fails only once closed
	}
	if ac, ok := w.m.o.clock.(alarmClock); ok {
		ts.alarm = ac.AtFunc(at, tick)
		return
	}
	ts.alarm = w.m.o.clock.AfterFunc(at.Sub(w.m.o.clock.Now()), tick)
}

// maxFiringsAtOnce is how many timers of one conversation may fire at one
// moment before the conversation is aborted as looping.
const maxFiringsAtOnce = 1000

// fire processes every timer due by now, in deadline order, each at its
// deadline, then sets the alarm for the next. gen identifies the alarm
// that went off: if it is the current one, it is spent.
func (ts *timers) fire(gen uint64, now time.Time) {
	w := ts.w
	if gen == ts.alarmGen {
		ts.alarm = nil
	}
	var fired map[*conversation]int
	for {
		t := ts.first()
		if t == nil || t.at.After(now) {
			break
		}
		if j := t.job; j != nil {
			c := t.conv
			ts.release(t) // t is reused from here on
			w.decisionTimedOut(c, j, now)
			continue
		}
		c, ev := t.conv, t.ev
		for i, ct := range c.timers {
			if ct == t {
				ts.unschedule(c, i) // t is reused from here on
				break
			}
		}
		ev.At = ev.Deadline
		if fired == nil {
			fired = map[*conversation]int{}
		}
		if fired[c]++; fired[c] > maxFiringsAtOnce {
			// A timeout leads back to a state whose timer is already due
			// (a deadline in the past): without time passing it would
			// fire for ever.
			w.abort(c, fmt.Sprintf("its timers fired %d times without time passing: a timeout leads back to a timer already due", maxFiringsAtOnce), now)
			continue
		}
		if j, ok := w.m.o.journal.(TimerJournal); ok {
			if err := j.WriteTimer(ev.At, w.m.self, c.id, ev.Name); err != nil {
				w.log(c, slog.LevelError, "journal write failed", "error", err)
			}
		}
		c.whole = true // the handler tells a late answer to this wait (see tombstone)
		w.process(c, &ev, now)
	}
	ts.setLow()
	ts.rearm(now)
}

// setLow sets low to the first timer's deadline.
func (ts *timers) setLow() {
	if t := ts.first(); t != nil {
		ts.low, ts.lowSet = t.at, true
	} else {
		ts.low, ts.lowSet = time.Time{}, false
	}
}

// due fires the timers already due by now, before another input is
// processed at now: a timer that fell due comes first, as it would
// have if its alarm had already gone off. It looks for the first timer
// only once now reaches low: none is due before.
func (ts *timers) due(now time.Time) {
	if !ts.lowSet || ts.low.After(now) {
		return
	}
	if t := ts.first(); t != nil && !t.at.After(now) {
		ts.fire(0, now)
		return
	}
	ts.setLow()
}

func (ts *timers) stop() {
	if ts.alarm != nil {
		ts.alarm.Stop()
	}
}

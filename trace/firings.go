package trace

import "time"

// RecentFirings is how many of the timers that fired last a timer line is
// matched against: a line for an older one is a CodeTimerNotFired
// finding. It bounds what Check keeps of the timers that fired, in a
// trace without timer lines too.
const RecentFirings = 1 << 16

// firing is a timer that fired: whose, in which conversation, and when.
type firing struct {
	agent, conv, timer string
	sec                int64
	nsec               int
}

func firingOf(agent, conv, timer string, at time.Time) firing {
	return firing{agent: agent, conv: conv, timer: timer, sec: at.Unix(), nsec: at.Nanosecond()}
}

// firings remembers the last size timers that fired, and which of them no
// timer line has answered yet.
type firings struct {
	size int
	ring []firing // firing number n at n % size
	next uint64   // the number of the next firing
	// open lists the numbers of the firings of each timer that no line
	// has answered and that are still in the ring, oldest first.
	open map[firing][]uint64
}

func newFirings(size int) *firings {
	return &firings{size: size, open: map[firing][]uint64{}}
}

// add notes a timer that fired, forgetting the oldest one when the ring
// is full.
func (f *firings) add(k firing) {
	if len(f.ring) < f.size {
		f.ring = append(f.ring, k)
	} else {
		i := f.next % uint64(f.size)
		if old := f.ring[i]; len(f.open[old]) > 0 && f.open[old][0] == f.next-uint64(f.size) {
			f.pop(old)
		}
		f.ring[i] = k
	}
	f.open[k] = append(f.open[k], f.next)
	f.next++
}

// answer reports whether a firing of k is open, and answers the oldest.
func (f *firings) answer(k firing) bool {
	if len(f.open[k]) == 0 {
		return false
	}
	f.pop(k)
	return true
}

// pop drops the oldest open firing of k.
func (f *firings) pop(k firing) {
	if s := f.open[k]; len(s) > 1 {
		f.open[k] = s[1:]
	} else {
		delete(f.open, k)
	}
}

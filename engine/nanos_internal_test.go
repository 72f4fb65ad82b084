package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestNanos checks nanos against its definition: t.UnixNano() for the
// times an int64 of nanoseconds holds with room to spare (the years 1678
// to 2261, with a monotonic reading or not, in any location), 0 for the
// zero time and for times beyond.
func TestNanos(t *testing.T) {
	const limit = 9_200_000_000
	loc := time.FixedZone("east", 5*3600+30*60)
	tests := []struct {
		name string
		t    time.Time
		zero bool
	}{
		{"the zero time", time.Time{}, true},
		{"the epoch", time.Unix(0, 0), false},
		{"just before the epoch", time.Unix(-1, 999_999_999), false},
		{"now, with a monotonic reading", time.Now(), false},
		{"now, without", time.Now().Round(0), false},
		{"in another location", time.Date(2026, 1, 1, 12, 0, 0, 123, loc), false},
		{"the last second within", time.Unix(limit, 999_999_999), false},
		{"the first second within", time.Unix(-limit, 0), false},
		{"the first second beyond", time.Unix(limit+1, 0), true},
		{"the last second before", time.Unix(-limit-1, 999_999_999), true},
		{"the year 1", time.Date(1, 1, 1, 0, 0, 1, 0, time.UTC), true},
		{"the year 9999", time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.t.UnixNano()
			if tt.zero {
				want = 0
			}
			assert.Equal(t, want, nanos(tt.t))
		})
	}
}

// lateBy tests the message's time against the deadlines of the state
// by nanos, and whether the time is zero only when nanos is 0: a message
// at the zero time is never late, one at the epoch (whose nanos is 0
// too) is late for a deadline before it, and a role a timer exempts is
// never late for it.
func TestLateByTheDeadlinesOfTheState(t *testing.T) {
	pr := &Program{
		states: []stateProg{{arms: []int{0}}, {}},
		timers: []timerProg{{name: "reply", src: -1, exempt: 1 << 1}},
	}
	h := &Handler{prog: pr}
	deadline := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	before := time.Unix(-1, 0).UnixNano()
	tests := []struct {
		name     string
		state    int32
		deadline int64
		at       time.Time
		role     int
		want     int64
	}{
		{name: "no state", state: -1, deadline: deadline.UnixNano(), at: deadline, want: 0},
		{name: "a state without timers", state: 1, at: deadline, want: 0},
		{name: "no deadline armed", at: deadline, want: 0},
		{name: "before the deadline", deadline: deadline.UnixNano(), at: deadline.Add(-1), want: 0},
		{name: "at the deadline", deadline: deadline.UnixNano(), at: deadline, want: deadline.UnixNano()},
		{name: "after it, in another location", deadline: deadline.UnixNano(), at: deadline.Add(time.Hour).In(time.FixedZone("X", 3600)), want: deadline.UnixNano()},
		{name: "the zero time", deadline: before, at: time.Time{}, want: 0},
		{name: "the epoch, after a deadline before it", deadline: before, at: time.Unix(0, 0), want: before},
		{name: "the epoch, before the deadline", deadline: deadline.UnixNano(), at: time.Unix(0, 0), want: 0},
		{name: "a role the timer exempts", deadline: deadline.UnixNano(), at: deadline, role: 1, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &session{state: tt.state, words: inPlace{dl: [1]int64{tt.deadline}}}
			assert.Equal(t, tt.want, h.lateBy(s, &tt.at, tt.role))
		})
	}
}

package trace

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestFiringsWindow checks that a timer line is matched against the last
// timers that fired only, and that answering one firing forgets that one
// and no other.
func TestFiringsWindow(t *testing.T) {
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	k := func(timer string) firing { return firingOf("alice", "c1", timer, at) }
	tests := []struct {
		name  string
		fired []string
		// answers are the timers answered in turn, and want whether each
		// was open.
		answers []string
		want    []bool
	}{
		{name: "one firing answers one line", fired: []string{"a"}, answers: []string{"a", "a"}, want: []bool{true, false}},
		{name: "each firing answers a line", fired: []string{"a", "b", "a"}, answers: []string{"a", "a", "b", "a"}, want: []bool{true, true, true, false}},
		{name: "the oldest leaves the window", fired: []string{"a", "b", "c", "d"}, answers: []string{"a", "b", "c", "d"}, want: []bool{false, true, true, true}},
		{name: "of two, the oldest leaves the window", fired: []string{"a", "a", "b", "c"}, answers: []string{"a", "a"}, want: []bool{true, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFirings(3)
			for _, name := range tt.fired {
				f.add(k(name))
			}
			var got []bool
			for _, name := range tt.answers {
				got = append(got, f.answer(k(name)))
			}
			assert.Equal(t, tt.want, got)
		})
	}
	t.Run("a firing answered before it leaves the window takes no other with it", func(t *testing.T) {
		f := newFirings(3)
		f.add(k("x"))
		assert.True(t, f.answer(k("x")))
		f.add(k("x"))
		f.add(k("y"))
		f.add(k("z")) // the first x, answered, leaves the window
		assert.True(t, f.answer(k("x")), "the second x is still open")
		assert.Len(t, f.ring, 3)
	})
	t.Run("times are told apart to the nanosecond, whatever their zone", func(t *testing.T) {
		f := newFirings(3)
		f.add(firingOf("alice", "c1", "reply", at))
		assert.False(t, f.answer(firingOf("alice", "c1", "reply", at.Add(time.Nanosecond))))
		assert.True(t, f.answer(firingOf("alice", "c1", "reply", at.In(time.FixedZone("CET", 3600)))))
	})
}

package agent

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestAWorkersWallClockReadsTheWallClock: a worker's wallClock gives the
// wall clock's time, with its monotonic reading, whether it reads the
// wall clock (at first, and once its last reading is wallRefresh old) or
// moves its last reading on by the monotonic clock.
func TestAWorkersWallClockReadsTheWallClock(t *testing.T) {
	tests := []struct {
		name string
		base func() time.Time
		// again says the clock reads the wall clock again.
		again bool
	}{
		{"at first", func() time.Time { return time.Time{} }, true},
		{"within the refresh", time.Now, false},
		{"once its reading is wallRefresh old", func() time.Time { return time.Now().Add(-wallRefresh) }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := tt.base()
			c := &wallClock{base: base}
			before := time.Now()
			got := c.now()
			after := time.Now()
			assert.False(t, got.Before(before), "%v is before %v", got, before)
			assert.False(t, got.After(after), "%v is after %v", got, after)
			assert.NotEqual(t, got, got.Round(0), "the time has a monotonic reading")
			// The wall times, without the monotonic readings.
			assert.WithinDuration(t, before.Round(0), got.Round(0), after.Sub(before)+time.Millisecond)
			if tt.again {
				assert.Equal(t, got, c.base, "the wall clock is read again")
			} else {
				assert.Equal(t, base, c.base, "the last reading stays")
			}
		})
	}
}

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

package engine

import (
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// setTime writes a time.Time through timeWords, which must therefore be
// its layout: the same fields, of the same kinds, at the same offsets.
func TestTimeWordsIsTheLayoutOfTime(t *testing.T) {
	tt, tw := reflect.TypeFor[time.Time](), reflect.TypeFor[timeWords]()
	require.Equal(t, tw.Size(), tt.Size())
	require.Equal(t, tw.NumField(), tt.NumField())
	for k := range tw.NumField() {
		want, got := tw.Field(k), tt.Field(k)
		assert.Equal(t, want.Name, got.Name)
		assert.Equal(t, want.Offset, got.Offset, want.Name)
		assert.Equal(t, want.Type.Kind(), got.Type.Kind(), want.Name)
		assert.Equal(t, want.Type.Size(), got.Type.Size(), want.Name)
	}
	assert.Equal(t, tw.Field(2).Type, tt.Field(2).Type, "loc")
}

func TestSetTimeWritesTheTime(t *testing.T) {
	zone := time.FixedZone("X", 3600)
	base := time.Date(2026, 1, 1, 0, 0, 0, 5, time.UTC)
	tests := []struct {
		name     string
		old, new time.Time
	}{
		{name: "zero over a time", old: base, new: time.Time{}},
		{name: "a time over zero", old: time.Time{}, new: base},
		{name: "another clock, the same location", old: base, new: base.Add(time.Second)},
		{name: "another location", old: base, new: base.In(zone)},
		{name: "the local clock, with its monotonic reading", old: base, new: time.Now()},
		{name: "the same time", old: base, new: base},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := tt.old
			setTime(&dst, tt.new)
			assert.True(t, dst == tt.new, "got %v, want %v", dst, tt.new)
			assert.Equal(t, tt.new.Location(), dst.Location())
		})
	}
}

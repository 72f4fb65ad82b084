package agent

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAddAppliedKeepsSortedAndLeavesStoredSlices(t *testing.T) {
	tests := []struct {
		name string
		add  []string
		want []string
	}{
		{name: "none", add: nil, want: nil},
		{name: "in order", add: []string{"a", "b", "c"}, want: []string{"a", "b", "c"}},
		{name: "reversed", add: []string{"c", "b", "a"}, want: []string{"a", "b", "c"}},
		{name: "repeated", add: []string{"b", "a", "b", "a"}, want: []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &conversation{}
			var stored [][]string
			var copies [][]string
			for _, id := range tt.add {
				c.addApplied(id)
				assert.True(t, c.isApplied(id), id)
				stored = append(stored, c.applied)
				copies = append(copies, append([]string(nil), c.applied...))
			}
			assert.Equal(t, tt.want, c.applied)
			assert.False(t, c.isApplied("z"))
			for i := range stored {
				assert.Equal(t, copies[i], stored[i], "a slice handed to a store changed after %d adds", i+1)
			}
		})
	}
}

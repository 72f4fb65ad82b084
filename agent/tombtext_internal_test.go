package agent

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestATombstonesStringsStayAsKept: a tombstone keeps its strings in its
// slab's text, which grows, and moves, as later tombstones of the slab
// keep theirs. Over more tombstones than a slab holds, with strings long
// enough to move the text, each tombstone gives back the strings it
// kept, and a string it gave back before the text moved is unchanged.
func TestATombstonesStringsStayAsKept(t *testing.T) {
	tests := []struct {
		name string
		long int // the length of a tombstone's longest string
	}{
		{"short strings", 8},
		{"strings that outgrow the room a slab starts with", minTombText / 4},
		{"empty strings", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &worker{}
			type kept struct {
				t                 *tombstone
				id, reason, state string
				given             string // t's id as it gave it back at once
			}
			var all []kept
			for i := range 2*tombsPerSlab + 1 {
				k := kept{
					t:      w.newTombstone(),
					id:     strings.Repeat(fmt.Sprint(i%10), tt.long),
					reason: strings.Repeat("r", tt.long/2),
				}
				if tt.long > 0 {
					k.state = fmt.Sprint("state ", i)
				}
				k.t.id, k.t.abortReason, k.t.state = k.t.keep(k.id), k.t.keep(k.reason), k.t.keep(k.state)
				k.given = k.t.str(k.t.id)
				all = append(all, k)
			}
			require.NotSame(t, all[0].t.slab(), all[len(all)-1].t.slab(), "the tombstones take more than a slab")
			for i, k := range all {
				assert.Equal(t, k.id, k.t.str(k.t.id), "tombstone %d's id", i)
				assert.Equal(t, k.reason, k.t.str(k.t.abortReason), "tombstone %d's abort reason", i)
				assert.Equal(t, k.state, k.t.str(k.t.state), "tombstone %d's state", i)
				assert.Equal(t, k.id, k.given, "tombstone %d's id as given back before the text moved", i)
			}
		})
	}
}

package agent

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestATombTableFindsWhatItHoldsAfterAnyDrops: whatever the keys (spread
// over the parts, all in one part and on one home slot, or on the last
// slots of a part, so that probes wrap), a tombTable finds the tombstone
// of every key it holds, and none for a key dropped or never put, while
// keys are put, and dropped in any order, across its growth.
func TestATombTableFindsWhatItHoldsAfterAnyDrops(t *testing.T) {
	tests := []struct {
		name string
		key  func(r *rand.Rand, i int) uint64
	}{
		{"random keys", func(r *rand.Rand, _ int) uint64 { return r.Uint64() | 1 }},
		{"one part, one home", func(_ *rand.Rand, i int) uint64 { return uint64(i+1) << 40 }},
		{"one part, the last homes", func(r *rand.Rand, i int) uint64 { return uint64(i+1)<<40 | 0xff }},
		{"few homes of one part", func(r *rand.Rand, i int) uint64 { return uint64(i+1)<<40 | uint64(r.IntN(4)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			var tab tombTable
			held := map[uint64]*tombstone{}
			check := func(when string) {
				for k, x := range held {
					require.Same(t, x, tab.get(k), "%s: key %#x", when, k)
				}
				n := 0
				for i := range tab.parts {
					n += tab.parts[i].n
				}
				require.Equal(t, len(held), n, "%s: the count", when)
			}
			var order []uint64
			for i := range 3000 {
				k := tt.key(r, i)
				x := &tombstone{}
				place := tab.put(k)
				require.Nil(t, *place, "key %#x is new", k)
				*place = x
				held[k] = x
				order = append(order, k)
				if i%7 == 3 { // drop one already held, at random
					j := r.IntN(len(order))
					d := order[j]
					order[j] = order[len(order)-1]
					order = order[:len(order)-1]
					assert.False(t, tab.drop(d, &tombstone{}), "key %#x holds another tombstone", d)
					require.True(t, tab.drop(d, held[d]), "key %#x", d)
					delete(held, d)
					assert.Nil(t, tab.get(d), "key %#x is dropped", d)
					assert.False(t, tab.drop(d, nil), "key %#x is dropped already", d)
				}
			}
			check("after the puts")
			assert.Nil(t, tab.get(1<<63|1<<20|7), "a key never put")
			r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			for i, k := range order {
				require.True(t, tab.drop(k, held[k]), "key %#x", k)
				delete(held, k)
				if i%500 == 0 {
					check("while dropping")
				}
			}
			check("after the drops")
		})
	}
}

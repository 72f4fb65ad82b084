package agent

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"testing"
	"time"

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
		{"one part, one home", func(_ *rand.Rand, i int) uint64 { return uint64(i+1) << 16 }},
		{"one part, the last homes", func(r *rand.Rand, i int) uint64 { return uint64(i+1)<<16 | 0xff }},
		{"few homes of one part", func(r *rand.Rand, i int) uint64 { return uint64(i+1)<<16 | uint64(r.IntN(4)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			var tab tombTable
			held := map[uint64]tombRef{}
			check := func(when string) {
				for k, x := range held {
					require.Equal(t, x, tab.get(k), "%s: key %#x", when, k)
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
				x := tombRef(i + 1)
				place := tab.put(k)
				require.Zero(t, *place, "key %#x is new", k)
				*place = x
				held[k] = x
				order = append(order, k)
				if i%7 == 3 { // drop one already held, at random
					j := r.IntN(len(order))
					d := order[j]
					order[j] = order[len(order)-1]
					order = order[:len(order)-1]
					assert.False(t, tab.drop(d, held[d]+1<<20), "key %#x holds another tombstone", d)
					require.True(t, tab.drop(d, held[d]), "key %#x", d)
					delete(held, d)
					assert.Zero(t, tab.get(d), "key %#x is dropped", d)
					assert.False(t, tab.drop(d, 1), "key %#x is dropped already", d)
				}
			}
			check("after the puts")
			assert.Zero(t, tab.get(1<<63|1<<20|7), "a key never put")
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

// TestKeysAlikeInTheirPartAndLowBitsShareAPlace: a slot holds a key's
// low 32 bits, and its part the top 6: keys alike in both are one key to
// the table, whose tombstone the worker tells apart by its id (see
// TestATombstoneWhoseKeyIsTakenIsStillFound); keys apart in either are
// not.
func TestKeysAlikeInTheirPartAndLowBitsShareAPlace(t *testing.T) {
	const k = 3<<58 | 7<<40 | 5
	tests := []struct {
		name  string
		other uint64
		same  bool
	}{
		{"apart only in the middle bits", k ^ 1<<40, true},
		{"apart in the low bits", k ^ 1<<3, false},
		{"apart in the part", k ^ 1<<60, false},
		{"a low half of 0", 3<<58 | 7<<40 | 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tab tombTable
			*tab.put(k) = 9
			assert.Equal(t, tt.same, tab.get(tt.other) == 9)
			assert.Equal(t, tt.same, *tab.put(tt.other) == 9)
		})
	}
	t.Run("a low half of 0 is one of 1", func(t *testing.T) {
		var tab tombTable
		*tab.put(1<<40 | 1) = 9
		assert.Equal(t, tombRef(9), tab.get(1<<40), "0 is held as 1")
	})
}

// TestSweptSlabsGiveTheirNumbersBack: tombs holds a tombstone's place by
// its slab's number; a slab whose tombstones are all swept gives its
// number back for a later slab, and every tombstone not swept is still
// found by its id (none swept is), however the sweeps fall across slabs.
func TestSweptSlabsGiveTheirNumbersBack(t *testing.T) {
	tests := []struct {
		name  string
		batch int // tombstones made between two sweeps
		keep  int // tombstones within their retention at each sweep
	}{
		{"sweeps within a slab", 10, 5},
		{"sweeps of whole slabs", tombsPerSlab, tombsPerSlab / 2},
		{"sweeps of several slabs", 3 * tombsPerSlab, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &worker{m: &Manager{o: options{retention: time.Minute}}, seed: maphash.MakeSeed(), epoch: time.Unix(0, 0)}
			var all []string // ids, in the order they ended
			swept := 0       // all[:swept] are swept
			at := time.Duration(0)
			for round := range 20 {
				for i := range tt.batch {
					id := fmt.Sprintf("c%d-%d", round, i)
					tb := w.newTombstone()
					tb.id, tb.ended = tb.keep(id), at
					w.putTomb(tb)
					w.retain(tb)
					all = append(all, id)
					at += time.Millisecond
				}
				// Sweep all but the last keep.
				if cut := len(all) - tt.keep; cut > swept {
					last := w.tomb(all[cut-1])
					require.NotNil(t, last)
					w.sweep(w.epoch.Add(last.ended + time.Minute))
					swept = cut
				}
				for i, id := range all {
					if i < swept {
						require.Nil(t, w.tomb(id), "round %d: %s is swept", round, id)
					} else {
						require.NotNil(t, w.tomb(id), "round %d: %s is kept", round, id)
					}
				}
				live := 0
				for _, sl := range w.slabs {
					if sl != nil {
						live++
					}
				}
				require.Equal(t, len(w.slabs), live+len(w.freeSlabs), "round %d: every number is a slab's or free", round)
				assert.LessOrEqual(t, live, (tt.keep+tt.batch)/tombsPerSlab+2, "round %d: the slabs swept are gone", round)
			}
		})
	}
}

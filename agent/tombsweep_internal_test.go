package agent

import (
	"fmt"
	"hash/maphash"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pointerFree reports whether a value of t holds no pointer for the
// collector to follow, and names the first field that does.
func pointerFree(t reflect.Type) (bool, string) {
	switch t.Kind() {
	case reflect.Struct:
		for i := range t.NumField() {
			if ok, at := pointerFree(t.Field(i).Type); !ok {
				return false, t.Field(i).Name + "." + at
			}
		}
		return true, ""
	case reflect.Array:
		return pointerFree(t.Elem())
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return true, ""
	}
	return false, t.String()
}

// TestATombstoneHoldsNoPointer: the slabs hold every ended conversation
// of the retention; their tombstones hold no pointer, so that the
// collector, marking a slab, follows only its contents and text.
func TestATombstoneHoldsNoPointer(t *testing.T) {
	ok, at := pointerFree(reflect.TypeFor[tombstone]())
	assert.True(t, ok, "tombstone.%s is a pointer", at)
	var sl tombSlab
	for i := range sl.tombs {
		assert.Same(t, &sl, sl.tombs[i].slabAt(i), "tombstone %d finds its slab", i)
	}
}

// slabAt is slab for a tombstone not yet cut: it sets its place first.
func (t *tombstone) slabAt(i int) *tombSlab {
	t.idx = uint8(i)
	return t.slab()
}

// TestTombstonesAreSweptInTheOrderTheirConversationsEnded: tombstones
// linked across slabs, some of conversations kept whole and some put
// out of end order (restored ones ended before those kept already), are
// swept in the order their conversations ended, each with its content
// and its whole conversation, and the places of whole conversations
// swept are taken again.
func TestTombstonesAreSweptInTheOrderTheirConversationsEnded(t *testing.T) {
	tests := []struct {
		name string
		// ended gives the end, in ms, of the i-th tombstone retained.
		ended func(i int) int
		whole func(i int) bool
	}{
		{"in order", func(i int) int { return i }, func(i int) bool { return i%3 == 0 }},
		{"each before the last", func(i int) int { return 10000 - i }, func(i int) bool { return i%2 == 0 }},
		{"between the others", func(i int) int { return (i * 37) % 1000 }, func(i int) bool { return i%5 != 0 }},
		{"all whole", func(i int) int { return i / 3 }, func(int) bool { return true }},
	}
	const n = 3*tombsPerSlab + 7
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &worker{m: &Manager{o: options{retention: time.Minute}}, convs: map[string]*conversation{}, seed: maphash.MakeSeed(), epoch: time.Unix(0, 0)}
			type kept struct {
				id    string
				ended time.Duration
				c     *conversation
			}
			var all []kept
			for round := range 2 { // the second round takes the places the first gave back
				all = all[:0]
				for i := range n {
					k := kept{id: fmt.Sprintf("c%d-%d", round, i), ended: time.Duration(tt.ended(i)) * time.Millisecond}
					tb := w.newTombstone()
					tb.ended = k.ended
					if tt.whole(i) {
						k.c = &conversation{id: k.id}
						w.convs[k.id] = k.c
						w.keepWhole(tb, k.c)
					} else {
						tb.id = tb.keep(k.id)
						tb.slab().contents[tb.idx] = map[string]any{"id": k.id}
						w.putTomb(tb)
					}
					w.m.total.v.Add(1)
					w.retain(tb)
					all = append(all, k)
				}
				// Sweep one conversation at a time, in end order (the
				// first retained of those that ended together first).
				order := make([]kept, len(all))
				copy(order, all)
				for i := 1; i < len(order); i++ { // a stable insertion sort
					for j := i; j > 0 && order[j].ended < order[j-1].ended; j-- {
						order[j], order[j-1] = order[j-1], order[j]
					}
				}
				for i, k := range order {
					if i > 0 && order[i-1].ended == k.ended {
						continue // swept with the one before
					}
					w.sweep(w.epoch.Add(k.ended + time.Minute))
					for _, o := range order[i:] {
						if o.ended == k.ended {
							assertSwept(t, w, o.id, o.c)
						}
					}
					if i+1 < len(order) && order[i+1].ended != k.ended {
						next := order[i+1]
						if next.c != nil {
							assert.Same(t, next.c, w.convs[next.id], "%s is not swept yet", next.id)
						} else if tb := w.tomb(next.id); assert.NotNil(t, tb, "%s is not swept yet", next.id) {
							assert.Equal(t, next.id, tb.lastContent()["id"], "%s keeps its content", next.id)
						}
					}
				}
				assert.Nil(t, w.oldest, "round %d: every tombstone is swept", round)
				assert.Zero(t, w.m.total.v.Load(), "round %d", round)
				assert.Len(t, w.freeWholes, len(w.wholes), "round %d: every place of a whole conversation is free", round)
				for _, c := range w.wholes {
					assert.Nil(t, c, "round %d: a swept whole conversation is not held", round)
				}
			}
		})
	}
}

func assertSwept(t *testing.T, w *worker, id string, c *conversation) {
	t.Helper()
	if c != nil {
		require.Nil(t, w.convs[id], "%s is swept", id)
		return
	}
	require.Nil(t, w.tomb(id), "%s is swept", id)
}

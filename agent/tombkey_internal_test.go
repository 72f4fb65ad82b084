package agent

import (
	"hash/maphash"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestATombstoneWhoseKeyIsTakenIsStillFound: tombstones are held by a
// 64-bit hash of their id. When that key holds another id's tombstone
// already (here a's, put under b's key as if their hashes collided), b's
// tombstone is kept beside it, each id finds its own, and forgetting b's
// leaves a's.
func TestATombstoneWhoseKeyIsTakenIsStillFound(t *testing.T) {
	tests := []struct {
		name string
		ids  []string // ids whose tombstones are put, after a's
	}{
		{"a fresh key", []string{"c"}},
		{"a taken key", []string{"b"}},
		{"a taken key and a fresh one", []string{"b", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &worker{seed: maphash.MakeSeed()}
			tombOf := func(id string) *tombstone {
				t := w.newTombstone()
				t.id = t.keep(id)
				return t
			}
			a := tombOf("a")
			*w.tombs.put(w.tombKey("b")) = a.ref()
			put := map[string]*tombstone{}
			for _, id := range tt.ids {
				put[id] = tombOf(id)
				w.putTomb(put[id])
			}
			assert.Same(t, a, w.tombAt(w.tombs.get(w.tombKey("b"))), "a's tombstone keeps its key")
			for id, x := range put {
				assert.Same(t, x, w.tomb(id), "%s finds its own tombstone", id)
			}
			assert.Nil(t, w.tomb("d"), "an id without a tombstone finds none")
			for id, x := range put {
				w.dropTomb(x)
				assert.Nil(t, w.tomb(id), "%s's tombstone is forgotten", id)
			}
			assert.Same(t, a, w.tombAt(w.tombs.get(w.tombKey("b"))), "a's tombstone is not forgotten with the others")
		})
	}
}

// TestATombstoneBeyondWhatATombRefNamesIsStillFound: a tombstone of a
// slab numbered beyond what a tombRef can name is held by its id in
// collided, found, and forgotten, beside one tombs holds.
func TestATombstoneBeyondWhatATombRefNamesIsStillFound(t *testing.T) {
	w := &worker{seed: maphash.MakeSeed()}
	near := w.newTombstone()
	near.id = near.keep("near")
	w.putTomb(near)
	w.slab = nil // the next tombstone starts a slab, numbered beyond
	far := w.newTombstone()
	far.slab().num = maxRefSlabs
	far.id = far.keep("far")
	w.putTomb(far)
	assert.Same(t, far, w.collided["far"], "held by its id")
	assert.Same(t, far, w.tomb("far"))
	assert.Same(t, near, w.tomb("near"))
	w.dropTomb(far)
	assert.Nil(t, w.tomb("far"), "forgotten")
	assert.Same(t, near, w.tomb("near"), "the other is not forgotten with it")
}

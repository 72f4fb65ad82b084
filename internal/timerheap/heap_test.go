package timerheap

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

// drain pops every item, rendering each as "value@second".
func drain(h *Heap[string]) []string {
	var out []string
	for {
		when, v, ok := h.Pop()
		if !ok {
			return out
		}
		out = append(out, v+"@"+strconv.Itoa(int(when.Sub(t0)/time.Second)))
	}
}

func TestHeap(t *testing.T) {
	type push struct {
		v   string
		sec int
	}
	tests := []struct {
		name   string
		pushes []push
		remove []string // values whose handles to remove, in order
		want   []string
	}{
		{name: "empty"},
		{name: "deadline order", pushes: []push{{"c", 3}, {"a", 1}, {"b", 2}}, want: []string{"a@1", "b@2", "c@3"}},
		{name: "equal deadlines in push order", pushes: []push{{"x", 5}, {"y", 5}, {"z", 5}, {"w", 4}}, want: []string{"w@4", "x@5", "y@5", "z@5"}},
		{name: "remove the earliest", pushes: []push{{"a", 1}, {"b", 2}, {"c", 3}}, remove: []string{"a"}, want: []string{"b@2", "c@3"}},
		{name: "remove the latest", pushes: []push{{"a", 1}, {"b", 2}, {"c", 3}}, remove: []string{"c"}, want: []string{"a@1", "b@2"}},
		{name: "remove from the middle", pushes: []push{{"a", 1}, {"b", 2}, {"c", 3}, {"d", 4}, {"e", 5}, {"f", 6}}, remove: []string{"b", "e"},
			want: []string{"a@1", "c@3", "d@4", "f@6"}},
		{name: "remove everything", pushes: []push{{"a", 1}, {"b", 2}}, remove: []string{"b", "a"}},
		{name: "remove one of equal deadlines", pushes: []push{{"x", 5}, {"y", 5}, {"z", 5}}, remove: []string{"y"}, want: []string{"x@5", "z@5"}},
		{name: "deadlines before the start", pushes: []push{{"late", 10}, {"past", -10}}, want: []string{"past@-10", "late@10"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h Heap[string]
			handles := map[string]Handle{}
			for _, p := range tc.pushes {
				handles[p.v] = h.Push(at(p.sec), p.v)
			}
			require.Equal(t, len(tc.pushes), h.Len())
			for _, v := range tc.remove {
				assert.True(t, h.Remove(handles[v]), "first remove of %s", v)
				assert.False(t, h.Remove(handles[v]), "second remove of %s", v)
			}
			assert.Equal(t, len(tc.pushes)-len(tc.remove), h.Len())
			if len(tc.want) > 0 {
				when, v, ok := h.Peek()
				require.True(t, ok)
				assert.Equal(t, tc.want[0], v+"@"+strconv.Itoa(int(when.Sub(t0)/time.Second)), "peek")
			}
			assert.Equal(t, tc.want, drain(&h))
			for v, x := range handles {
				assert.False(t, h.Remove(x), "remove of %s after it left", v)
			}
		})
	}
}

func TestHeapEmpty(t *testing.T) {
	var h Heap[int]
	_, _, ok := h.Peek()
	assert.False(t, ok, "peek")
	_, _, ok = h.Pop()
	assert.False(t, ok, "pop")
	assert.False(t, h.Remove(Handle{}), "the zero handle")
	assert.False(t, h.Remove(Handle{slot: 7, seq: 3}), "a handle of another heap")
}

// A handle whose item has left must not remove the item that reuses its
// storage.
func TestHeapStaleHandleSparesSlotReuse(t *testing.T) {
	var h Heap[string]
	old := h.Push(at(1), "old")
	_, _, ok := h.Pop()
	require.True(t, ok)
	h.Push(at(2), "new") // takes the slot "old" had
	assert.False(t, h.Remove(old))
	assert.Equal(t, []string{"new@2"}, drain(&h))
}

// Deadlines are instants: the same instant in another zone, or with a
// monotonic reading, ties with it and keeps push order; Pop returns the
// deadline as pushed.
func TestHeapComparesInstants(t *testing.T) {
	tokyo := time.FixedZone("JST", 9*3600)
	now := time.Now() // with a monotonic reading
	var h Heap[string]
	h.Push(at(2).In(tokyo), "tokyo")
	h.Push(at(2), "utc")
	h.Push(at(1).In(tokyo), "earlier")
	when, v, _ := h.Pop()
	assert.Equal(t, "earlier", v)
	assert.Equal(t, tokyo, when.Location())
	assert.Equal(t, []string{"tokyo@2", "utc@2"}, drain(&h))
	h.Push(now, "now")
	h.Push(now.Round(0), "now-wall")
	_, first, _ := h.Pop()
	_, second, _ := h.Pop()
	assert.Equal(t, []string{"now", "now-wall"}, []string{first, second})
}

// A popped value is no longer referenced by the heap.
func TestHeapDropsValues(t *testing.T) {
	var h Heap[*int]
	v := new(int)
	x := h.Push(at(1), v)
	h.Push(at(2), new(int))
	require.True(t, h.Remove(x))
	for i := range h.slots {
		assert.NotSame(t, v, h.slots[i].v, "slot %d", i)
	}
}

// TestHeapMatchesSortedReference runs random pushes, pops and removes
// (of live and dead handles) against a sorted slice.
func TestHeapMatchesSortedReference(t *testing.T) {
	type ref struct {
		at  time.Time
		seq int
		x   Handle
	}
	for seed := range uint64(20) {
		t.Run("seed="+strconv.FormatUint(seed, 10), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 1))
			var h Heap[int]
			var live []ref // sorted by (at, seq)
			var dead []Handle
			for step := range 2000 {
				switch op := rng.IntN(10); {
				case op < 5:
					when := at(rng.IntN(50)) // few distinct deadlines: many ties
					x := h.Push(when, step)
					r := ref{at: when, seq: step, x: x}
					i, _ := slices.BinarySearchFunc(live, r, func(a, b ref) int {
						return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.seq, b.seq))
					})
					live = slices.Insert(live, i, r)
				case op < 7:
					when, v, ok := h.Pop()
					require.Equal(t, len(live) > 0, ok, "step %d: pop", step)
					if ok {
						require.Equal(t, live[0].seq, v, "step %d: pop", step)
						require.True(t, live[0].at.Equal(when), "step %d: pop's deadline", step)
						dead = append(dead, live[0].x)
						live = live[1:]
					}
				case op < 9 && len(live) > 0:
					i := rng.IntN(len(live))
					require.True(t, h.Remove(live[i].x), "step %d: remove live", step)
					dead = append(dead, live[i].x)
					live = slices.Delete(live, i, i+1)
				case len(dead) > 0:
					require.False(t, h.Remove(dead[rng.IntN(len(dead))]), "step %d: remove dead", step)
				}
				require.Equal(t, len(live), h.Len(), "step %d", step)
				when, v, ok := h.Peek()
				require.Equal(t, len(live) > 0, ok, "step %d: peek", step)
				if ok {
					require.Equal(t, live[0].seq, v, "step %d: peek", step)
					require.True(t, live[0].at.Equal(when), "step %d: peek's deadline", step)
				}
			}
		})
	}
}

// In steady state, push, pop and remove allocate nothing.
func TestHeapSteadyStateAllocatesNothing(t *testing.T) {
	var h Heap[int]
	for i := range 64 {
		h.Push(at(i), i)
	}
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		x := h.Push(at(i%97), i)
		h.Push(at(i%89), i)
		h.Remove(x)
		h.Pop()
		i++
	})
	assert.Zero(t, allocs)
}

func BenchmarkPushPop(b *testing.B) {
	for _, n := range []int{16, 1024, 65536} {
		b.Run("live="+strconv.Itoa(n), func(b *testing.B) {
			var h Heap[int]
			rng := rand.New(rand.NewPCG(1, 2))
			for i := range n {
				h.Push(at(rng.IntN(n)), i)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				h.Push(at(rng.IntN(n)), i)
				h.Pop()
				i++
			}
		})
	}
}

func BenchmarkPushRemove(b *testing.B) {
	var h Heap[int]
	for i := range 1024 {
		h.Push(at(i), i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		h.Remove(h.Push(at(i%1024), i))
		i++
	}
}

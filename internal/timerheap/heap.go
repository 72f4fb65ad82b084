// Package timerheap is an indexed min-heap of deadlines: the one timer
// queue behind the engine's driver, trace checking, the runtime's workers
// and its fake clock.
//
// Items come out earliest deadline first; items with equal deadlines come
// out in the order they were pushed, so that whoever fires them does so
// deterministically. Push returns a Handle that removes the item later
// (a cancelled timer). Push, Pop and Remove take O(log n) time, Peek and
// Len O(1); in steady state (as many items pushed as popped or removed)
// nothing allocates: the heap reuses its storage.
package timerheap

import "time"

// Heap is a min-heap of values of type T keyed by deadline. The zero Heap
// is empty and ready to use. A Heap is not safe for concurrent use.
type Heap[T any] struct {
	// order is the heap proper: small keys, earliest first.
	order []entry
	// slots hold the values, which do not move while the heap reorders;
	// a Handle names a slot.
	slots []slot[T]
	free  []uint32
	seq   uint64
}

// entry is a key in the heap: the deadline as an instant (Unix seconds
// and nanoseconds), then push order. It holds no pointer, so the heap
// reorders it cheaply.
type entry struct {
	sec  int64
	seq  uint64
	nsec int32
	slot uint32
}

func (a *entry) before(b *entry) bool {
	if a.sec != b.sec {
		return a.sec < b.sec
	}
	if a.nsec != b.nsec {
		return a.nsec < b.nsec
	}
	return a.seq < b.seq
}

// slot holds an item's deadline as pushed, its value and where its key
// is in order. seq is the item's push number, 0 while the slot is free.
type slot[T any] struct {
	at    time.Time
	v     T
	seq   uint64
	index int
}

// Handle names an item pushed on a Heap. It stays valid for the Heap's
// life: once its item has been popped or removed, Remove with it does
// nothing and reports false, even after the heap reuses the item's
// storage. The zero Handle names no item.
type Handle struct {
	slot uint32
	seq  uint64
}

// Len returns the number of items.
func (h *Heap[T]) Len() int { return len(h.order) }

// Push adds v with deadline at and returns its handle. Deadlines are
// compared as instants, by their wall-clock reading (a monotonic reading
// is ignored; time zones do not matter).
func (h *Heap[T]) Push(at time.Time, v T) Handle {
	h.seq++
	var s uint32
	if n := len(h.free); n > 0 {
		s = h.free[n-1]
		h.free = h.free[:n-1]
	} else {
		s = uint32(len(h.slots))
		h.slots = append(h.slots, slot[T]{})
	}
	i := len(h.order)
	h.slots[s] = slot[T]{at: at, v: v, seq: h.seq, index: i}
	e := entry{sec: at.Unix(), nsec: int32(at.Nanosecond()), seq: h.seq, slot: s}
	h.order = append(h.order, e)
	h.up(i, e)
	return Handle{slot: s, seq: h.seq}
}

// Peek returns the earliest item without removing it; ok is false when
// the heap is empty.
func (h *Heap[T]) Peek() (at time.Time, v T, ok bool) {
	if len(h.order) == 0 {
		return at, v, false
	}
	sl := &h.slots[h.order[0].slot]
	return sl.at, sl.v, true
}

// Pop removes and returns the earliest item; ok is false when the heap is
// empty.
func (h *Heap[T]) Pop() (at time.Time, v T, ok bool) {
	if len(h.order) == 0 {
		return at, v, false
	}
	sl := &h.slots[h.order[0].slot]
	at, v = sl.at, sl.v
	h.removeAt(0)
	return at, v, true
}

// Remove removes the item x names and reports whether it was still in
// the heap.
func (h *Heap[T]) Remove(x Handle) bool {
	if x.seq == 0 || int(x.slot) >= len(h.slots) || h.slots[x.slot].seq != x.seq {
		return false
	}
	h.removeAt(h.slots[x.slot].index)
	return true
}

// removeAt removes the key at index i of order and frees its slot.
func (h *Heap[T]) removeAt(i int) {
	last := len(h.order) - 1
	s := h.order[i].slot
	moved := h.order[last]
	h.order = h.order[:last]
	h.slots[s] = slot[T]{} // drop the value: the heap keeps nothing it no longer holds
	h.free = append(h.free, s)
	if i == last {
		return
	}
	// The last key fills the hole at i, then moves to where it belongs.
	if !h.down(i, moved) {
		h.up(i, moved)
	}
}

// up places key e, whose place is the hole at i, on the path towards the
// root.
func (h *Heap[T]) up(i int, e entry) {
	for i > 0 {
		parent := (i - 1) / 2
		if !e.before(&h.order[parent]) {
			break
		}
		h.place(i, h.order[parent])
		i = parent
	}
	h.place(i, e)
}

// down places key e, whose place is the hole at i, on the path towards
// the leaves, and reports whether it went below i.
func (h *Heap[T]) down(i int, e entry) bool {
	start, n := i, len(h.order)
	for {
		child := 2*i + 1
		if child >= n {
			break
		}
		if r := child + 1; r < n && h.order[r].before(&h.order[child]) {
			child = r
		}
		if !h.order[child].before(&e) {
			break
		}
		h.place(i, h.order[child])
		i = child
	}
	if i == start {
		return false
	}
	h.place(i, e)
	return true
}

// place puts key e at index i of order.
func (h *Heap[T]) place(i int, e entry) {
	h.order[i] = e
	h.slots[e.slot].index = i
}

package policy

// slab hands out pointers to zero values of T from blocks it allocates
// as they fill, so that the many small values a loader makes (a
// policy's transitions, CP-XML's elements) cost an allocation per block
// rather than one each. A block is freed once nothing points into it.
// Blocks grow from minSlab to maxSlab values, so that a small policy
// does not pay for a large block.
type slab[T any] struct {
	block []T
	size  int
}

const (
	minSlab = 8
	maxSlab = 256
)

// new returns a pointer to a zero T.
func (s *slab[T]) new() *T {
	if len(s.block) == 0 {
		s.size = min(max(2*s.size, minSlab), maxSlab)
		s.block = make([]T, s.size)
	}
	p := &s.block[0]
	s.block = s.block[1:]
	return p
}

// sliceSlab hands out empty slices of E, each with the room asked for,
// from blocks as slab does: a state's transitions, or the timer a state
// arms, cost no allocation of their own. Appending past the room
// reallocates, so a slice never writes into another's.
type sliceSlab[E any] struct {
	block []E
	size  int
}

// make returns an empty slice with room for n values.
func (s *sliceSlab[E]) make(n int) []E {
	if n > maxSlab {
		return make([]E, 0, n)
	}
	if len(s.block) < n {
		s.size = min(max(2*s.size, minSlab, n), maxSlab)
		s.block = make([]E, s.size)
	}
	out := s.block[:0:n]
	s.block = s.block[n:]
	return out
}

// ptrSlab is a sliceSlab of pointers to T.
type ptrSlab[T any] struct {
	sliceSlab[*T]
}

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

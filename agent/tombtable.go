package agent

// tombTable holds a worker's tombstones by their key (tombKey): a hash
// table of open addressing in tombParts parts, chosen by the key's top
// bits, each probed linearly from the slot of the key's low bits. A
// lookup or an insertion reads the slots of one probe, most often one
// cache line, where a map read a group's control word and then its slot;
// a part grows on its own, so that growing moves at most a part's
// tombstones at once. A slot holds the key's low 32 bits (slotKey) and
// its tombstone's place (tombRef), not a pointer: 8 bytes, with nothing
// for the collector to follow. Two keys alike in their part and low bits
// are one key to the table; the worker tells their ids apart (see tomb).
type tombTable struct {
	parts [tombParts]tombPart
}

// tombParts is the number of parts of a tombTable (a power of two), and
// tombPartShift the shift that takes a key's top bits to its part.
const (
	tombParts     = 64
	tombPartShift = 58
)

// tombPart is one part of a tombTable: n of its slots hold a tombstone,
// at most 3/4 of them (see grow); a part holding none has no slots.
type tombPart struct {
	slots []tombSlot
	n     int
}

type tombSlot struct {
	key uint32 // slotKey's, 0 for an empty slot
	ref tombRef
}

// slotKey returns what a slot holds of k: its low 32 bits, 1 for 0.
func slotKey(k uint64) uint32 {
	if x := uint32(k); x != 0 {
		return x
	}
	return 1
}

// tombRef is where a tombstone is: 1 more than its slab's number (see
// worker.slabs) times tombsPerSlab plus its place in the slab; 0 for
// none.
type tombRef uint32

func (tt *tombTable) part(k uint64) *tombPart { return &tt.parts[k>>tombPartShift] }

// get returns the tombstone held under k, or 0.
func (tt *tombTable) get(k uint64) tombRef {
	p := tt.part(k)
	if p.n == 0 {
		return 0
	}
	sk, mask := slotKey(k), uint32(len(p.slots)-1)
	for i := sk & mask; ; i = (i + 1) & mask {
		switch s := &p.slots[i]; s.key {
		case sk:
			return s.ref
		case 0:
			return 0
		}
	}
}

// put returns the place of k's tombstone, taking an empty slot for k,
// whose tombstone is 0, when k holds none. The place is valid until the
// next put.
func (tt *tombTable) put(k uint64) *tombRef {
	p := tt.part(k)
	if 4*(p.n+1) > 3*len(p.slots) {
		p.grow()
	}
	sk, mask := slotKey(k), uint32(len(p.slots)-1)
	for i := sk & mask; ; i = (i + 1) & mask {
		switch s := &p.slots[i]; s.key {
		case sk:
			return &s.ref
		case 0:
			s.key = sk
			p.n++
			return &s.ref
		}
	}
}

// grow doubles p's slots (to 8 for the first), moving what it holds.
func (p *tombPart) grow() {
	old := p.slots
	p.slots = make([]tombSlot, max(8, 2*len(old)))
	mask := uint32(len(p.slots) - 1)
	for _, s := range old {
		if s.key == 0 {
			continue
		}
		i := s.key & mask
		for p.slots[i].key != 0 {
			i = (i + 1) & mask
		}
		p.slots[i] = s
	}
}

// drop forgets k's tombstone if it is t, and reports whether it was. The
// slots after k's in its probe that may take its place move back, so
// that no probe meets a hole before the slot of its key.
func (tt *tombTable) drop(k uint64, t tombRef) bool {
	p := tt.part(k)
	if p.n == 0 {
		return false
	}
	sk, mask := slotKey(k), uint32(len(p.slots)-1)
	i := sk & mask
	for p.slots[i].key != sk {
		if p.slots[i].key == 0 {
			return false
		}
		i = (i + 1) & mask
	}
	if p.slots[i].ref != t {
		return false
	}
	for j := (i + 1) & mask; p.slots[j].key != 0; j = (j + 1) & mask {
		// The key at j moves to the hole at i when i is on its probe,
		// from its own slot home up to j.
		if home := p.slots[j].key & mask; (j-home)&mask >= (j-i)&mask {
			p.slots[i] = p.slots[j]
			i = j
		}
	}
	p.slots[i] = tombSlot{}
	p.n--
	return true
}

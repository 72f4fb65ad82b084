package engine

import "hash/maphash"

// MaxSessions is the most sessions a handler keeps for the peers of a
// many role: tickets hold a session's index in 24 bits. WithPeers refuses
// more agents, and a message the handler's own agent sends to more new
// peers reports the extra ones as unknown agents.
const MaxSessions = 1<<ticketSessionBits - 1

// peerIndex finds the session of a many role's peer: an open-addressing
// table (linear probing, at most half full) of 32-bit slots, each the
// session's index plus one in the low 24 bits (0 for an empty slot) and
// 8 bits of the peer's hash above them. A lookup reads one slot, rarely
// two, in a table of 8 to 16 bytes per session without pointers, and
// then the session's peer, which the step that follows reads anyway: a
// map keyed by peer would spend, with thousands of peers, cache misses
// on its own groups and keys, and its keys would be pointers for the
// collector to mark.
type peerIndex struct {
	slots []uint32
	n     int // sessions indexed
}

// peerSeed seeds the hash of peer names. It is random, so that no peer
// can choose names that collide.
var peerSeed = maphash.MakeSeed()

const (
	slotIndexMask = 1<<ticketSessionBits - 1
	slotTagShift  = ticketSessionBits
)

// find returns the index of the session with peer, given the sessions
// the index was built from.
func (x *peerIndex) find(sessions []session, peer string) (int, bool) {
	if x.n == 0 {
		return 0, false
	}
	h := maphash.String(peerSeed, peer)
	tag := uint32(h >> 56)
	mask := uint64(len(x.slots) - 1)
	for p := h & mask; ; p = (p + 1) & mask {
		s := x.slots[p]
		if s == 0 {
			return 0, false
		}
		if s>>slotTagShift == tag {
			if i := int(s&slotIndexMask) - 1; sessions[i].peer == peer {
				return i, true
			}
		}
	}
}

// add indexes session i, whose peer no indexed session has; the caller
// keeps the sessions at most MaxSessions.
func (x *peerIndex) add(sessions []session, i int) {
	if 2*(x.n+1) > len(x.slots) {
		x.grow(sessions, x.n+1)
	}
	x.put(sessions[i].peer, i)
	x.n++
}

// reserve makes room for n sessions in all, so that adding them does not
// grow the table again.
func (x *peerIndex) reserve(sessions []session, n int) {
	if 2*n > len(x.slots) {
		x.grow(sessions, n)
	}
}

// grow rebuilds the table with room for n sessions, indexing again the
// x.n sessions indexed so far (the first x.n of sessions).
func (x *peerIndex) grow(sessions []session, n int) {
	size := 8
	for size < 2*n {
		size *= 2
	}
	x.slots = make([]uint32, size)
	for i := range x.n {
		x.put(sessions[i].peer, i)
	}
}

// put writes session i's slot into the first free place of its probe
// sequence.
func (x *peerIndex) put(peer string, i int) {
	h := maphash.String(peerSeed, peer)
	mask := uint64(len(x.slots) - 1)
	p := h & mask
	for x.slots[p] != 0 {
		p = (p + 1) & mask
	}
	x.slots[p] = uint32(h>>56)<<slotTagShift | uint32(i+1)
}

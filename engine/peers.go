package engine

import (
	"hash/maphash"
	"slices"
)

// MaxSessions is the most sessions a handler keeps for the peers of a
// many role: tickets hold a session's index in 24 bits. WithPeers refuses
// more agents, and a message the handler's own agent sends to more new
// peers reports the extra ones as unknown agents.
const MaxSessions = 1<<ticketSessionBits - 1

// peerIndex finds the session of a many role's peer. It keeps the peers
// in session order (names, which messages to one peer or to all of them
// share as their receivers, read-only) and an open-addressing table
// (linear probing, at most three quarters full) of 32-bit slots, each the
// session's index plus one in the low 24 bits (0 for an empty slot) and 8
// bits of the peer's hash above them, 5 to 11 bytes a session. A lookup
// reads a slot or a few neighbours, in one cache line or two, and then
// the peer's name: a map keyed by peer would spend, with thousands of
// peers, cache and TLB misses on its groups and its keys. The names are
// the sessions' peers: a session keeps none of its own.
type peerIndex struct {
	names []string
	slots []uint32
}

// peerSeed seeds the hash of peer names. It is random, so that no peer
// can choose names that collide.
var peerSeed = maphash.MakeSeed()

const (
	slotIndexMask = 1<<ticketSessionBits - 1
	slotTagShift  = ticketSessionBits
)

// find returns the index of the session with peer.
func (x *peerIndex) find(peer string) (int, bool) {
	if len(x.names) == 0 {
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
			if i := int(s&slotIndexMask) - 1; x.names[i] == peer {
				return i, true
			}
		}
	}
}

// add indexes peer, which no session has yet, as the next session's; the
// caller keeps the sessions at most MaxSessions.
func (x *peerIndex) add(peer string) {
	if n := len(x.names) + 1; 4*n > 3*len(x.slots) {
		x.grow(n)
	}
	x.names = append(x.names, peer)
	x.put(peer, len(x.names)-1)
}

// reserve makes room for n peers in all, so that adding them does not
// grow the index again.
func (x *peerIndex) reserve(n int) {
	if 4*n > 3*len(x.slots) {
		x.grow(n)
	}
	if n > len(x.names) {
		x.names = slices.Grow(x.names, n-len(x.names))
	}
}

// grow rebuilds the table with room for n peers.
func (x *peerIndex) grow(n int) {
	size := 8
	for 3*size < 4*n {
		size *= 2
	}
	x.slots = make([]uint32, size)
	for i, peer := range x.names {
		x.put(peer, i)
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

// receivers returns the receivers of a message to the peer of session i
// alone, or (i < 0) to every peer: shared, read-only.
func (x *peerIndex) receivers(i int) []string {
	if i < 0 {
		return x.names[:len(x.names):len(x.names)]
	}
	return x.names[i : i+1 : i+1]
}

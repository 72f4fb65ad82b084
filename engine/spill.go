package engine

import "unsafe"

// A session keeps the deadlines of its state's timers, the latest value
// of each deadline source and the state of each commitment in its words.
// When the program has at most one of each, they are in fixed places
// there (inPlace's dl, src and cm) and the program lays out none.
// Otherwise it lays them out in a block of spillWords words: the
// deadlines from spillDL (as many words as the state with the most
// timers arms), the sources from spillSrc and the commitments from
// spillCm (commitWords each). The block is the session's words when it
// fits in them, as it does for every shipped policy but
// contract-net-negotiation, and one allocated with the session (its
// sessionMore's spill) otherwise.

// commitWords is the size of a commitInst in words.
const commitWords = int(unsafe.Sizeof(commitInst{}) / unsafe.Sizeof(int64(0)))

// sessionWords is the size of a session's words: room for the layout of
// the FIPA Contract Net (a deadline, three sources and a commitment), so
// that its sessions, thousands in an initiator, allocate no block each.
const sessionWords = 7

// inPlace is a session's words: the fixed places of a program that lays
// out nothing (dl, src and cm), or the block of one whose layout fits.
type inPlace struct {
	dl   [1]int64
	src  [1]int64
	cm   [1]commitInst
	rest [sessionWords - 2 - commitWords]int64
}

// inPlace is sessionWords words, with no padding.
var _ [unsafe.Sizeof(inPlace{}) - 8*sessionWords]struct{}
var _ [8*sessionWords - unsafe.Sizeof(inPlace{})]struct{}

// layOutSpill sets the program's spill layout: none when every session's
// deadlines, sources and commitments fit in their fixed places.
func (pr *Program) layOutSpill() {
	arms := 0
	for k := range pr.states {
		arms = max(arms, len(pr.states[k].arms))
	}
	if arms <= 1 && len(pr.deadlineSrc) <= 1 && len(pr.commits) <= 1 {
		return
	}
	pr.spillDL = 0
	pr.spillSrc = arms
	pr.spillCm = pr.spillSrc + len(pr.deadlineSrc)
	pr.spillWords = pr.spillCm + commitWords*len(pr.commits)
}

// spillAt returns the n words of session s's block from word off,
// within the block (the program's layout): the session's words when the
// block fits in them, else its own (see ownSpill).
func (pr *Program) spillAt(s *session, off, n int) unsafe.Pointer {
	// off, a sum of lengths, and n, a length, are not negative.
	if uint(off+n) > uint(pr.spillWords) {
		panic("engine: outside a session's spill") // a bug in the layout, not in any input
	}
	if pr.spillWords <= sessionWords {
		return unsafe.Add(unsafe.Pointer(&s.words), off*8)
	}
	return unsafe.Add(unsafe.Pointer(s.more.spill), off*8)
}

// ownSpill gives new session s the block of words of its own that the
// program's layout needs when it does not fit in the session's words:
// allocated with the session rather than when first needed, so that
// spillAt, which every deadline, source and commitment access inlines,
// has no allocation to make.
func (pr *Program) ownSpill(s *session) {
	if pr.spillWords > sessionWords {
		s.moreOf().spill = &make([]int64, pr.spillWords)[0]
	}
}

// deadlineSlots returns the room for the deadlines of n timers in
// session s.
func (pr *Program) deadlineSlots(s *session, n int) []int64 {
	switch {
	case n == 0:
		return nil
	case pr.spillWords == 0:
		return s.words.dl[:n]
	}
	return unsafe.Slice((*int64)(pr.spillAt(s, pr.spillDL, n)), n)
}

// srcSlots returns the room for session s's deadline sources.
func (pr *Program) srcSlots(s *session) []int64 {
	n := len(pr.deadlineSrc)
	if pr.spillWords == 0 {
		return s.words.src[:n]
	}
	return unsafe.Slice((*int64)(pr.spillAt(s, pr.spillSrc, n)), n)
}

// commitSlots returns the room for session s's commitments.
func (pr *Program) commitSlots(s *session) []commitInst {
	n := len(pr.commits)
	if pr.spillWords == 0 || n == 0 {
		return s.words.cm[:n]
	}
	return unsafe.Slice((*commitInst)(pr.spillAt(s, pr.spillCm, commitWords*n)), n)
}

// deadlines returns, for each timer session s's state armed, when it
// fires (Unix nanoseconds; 0 for none); none outside a state.
func (h *Handler) deadlines(s *session) []int64 {
	if s.state < 0 {
		return nil
	}
	return h.prog.deadlineSlots(s, len(h.prog.states[s.state].arms))
}

// srcTimes returns the latest value of each deadline source of session
// s (Unix nanoseconds; 0 for none), or nil before the first message that
// sets one.
func (h *Handler) srcTimes(s *session) []int64 {
	if !s.srcSet {
		return nil
	}
	return h.prog.srcSlots(s)
}

// commits returns the state of each commitment of session s, or nil
// before its first commitment operation.
func (h *Handler) commits(s *session) []commitInst {
	if !s.cmSet {
		return nil
	}
	return h.prog.commitSlots(s)
}

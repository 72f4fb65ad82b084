package engine

import "unsafe"

// A session keeps the deadlines of its state's timers, the latest value
// of each deadline source and the state of each commitment in place when
// the program has at most one of each, and in a block of words (spill)
// otherwise, which the program lays out: the deadlines from spillDL (as
// many words as the state with the most timers arms), the sources from
// spillSrc and the commitments from spillCm (commitWords each).

// commitWords is the size of a commitInst in words.
const commitWords = int(unsafe.Sizeof(commitInst{}) / unsafe.Sizeof(int64(0)))

// layOutSpill sets the program's spill layout: none when every session's
// deadlines, sources and commitments fit in place.
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
// within the block (the program's layout), allocating the block the
// first time.
func (pr *Program) spillAt(s *session, off, n int) unsafe.Pointer {
	if s.spill == nil {
		s.spill = &make([]int64, pr.spillWords)[0]
	}
	if off < 0 || n < 0 || off+n > pr.spillWords {
		panic("engine: outside a session's spill") // a bug in the layout, not in any input
	}
	return unsafe.Add(unsafe.Pointer(s.spill), off*8)
}

// deadlineSlots returns the room for the deadlines of n timers in
// session s.
func (pr *Program) deadlineSlots(s *session, n int) []int64 {
	switch {
	case n == 0:
		return nil
	case pr.spillWords == 0:
		return s.dl[:n]
	}
	return unsafe.Slice((*int64)(pr.spillAt(s, pr.spillDL, n)), n)
}

// srcSlots returns the room for session s's deadline sources.
func (pr *Program) srcSlots(s *session) []int64 {
	n := len(pr.deadlineSrc)
	if pr.spillWords == 0 {
		return s.src[:n]
	}
	return unsafe.Slice((*int64)(pr.spillAt(s, pr.spillSrc, n)), n)
}

// commitSlots returns the room for session s's commitments.
func (pr *Program) commitSlots(s *session) []commitInst {
	n := len(pr.commits)
	if pr.spillWords == 0 || n == 0 {
		return s.cm[:n]
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

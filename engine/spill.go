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

// spillOf returns session s's block, allocating it the first time.
func (pr *Program) spillOf(s *session) []int64 {
	if s.spill == nil {
		b := make([]int64, pr.spillWords)
		s.spill = &b[0]
	}
	return unsafe.Slice(s.spill, pr.spillWords)
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
	return pr.spillOf(s)[pr.spillDL : pr.spillDL+n]
}

// srcSlots returns the room for session s's deadline sources.
func (pr *Program) srcSlots(s *session) []int64 {
	n := len(pr.deadlineSrc)
	if pr.spillWords == 0 {
		return s.src[:n]
	}
	return pr.spillOf(s)[pr.spillSrc : pr.spillSrc+n]
}

// commitSlots returns the room for session s's commitments.
func (pr *Program) commitSlots(s *session) []commitInst {
	n := len(pr.commits)
	if pr.spillWords == 0 || n == 0 {
		return s.cm[:n]
	}
	b := pr.spillOf(s)[pr.spillCm:]
	return unsafe.Slice((*commitInst)(unsafe.Pointer(&b[0])), n)
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

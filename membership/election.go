package membership

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"sync"
)

// Strategy picks a leader among candidates, given in the order they
// joined. It returns the leader's name, or false to elect nobody (no
// candidates, or a strategy that never elects). A Strategy used by
// several goroutines must be safe for concurrent use; the built-in ones
// are.
type Strategy interface {
	Elect(candidates []Member) (leader string, ok bool)
}

// Elect picks a leader with s among the healthy members the filters keep.
// A WithHealth filter replaces the default of healthy members only.
func (g *Group) Elect(s Strategy, filters ...Filter) (string, bool) {
	return s.Elect(g.Members(append([]Filter{WithHealth(Healthy)}, filters...)...))
}

// StrategyFunc adapts a function to Strategy.
type StrategyFunc func(candidates []Member) (string, bool)

// Elect calls f.
func (f StrategyFunc) Elect(candidates []Member) (string, bool) { return f(candidates) }

// None never elects a leader: for groups that run leaderless.
func None() Strategy {
	return StrategyFunc(func([]Member) (string, bool) { return "", false })
}

// FirstJoined elects the candidate that joined first.
func FirstJoined() Strategy {
	return StrategyFunc(func(c []Member) (string, bool) {
		if len(c) == 0 {
			return "", false
		}
		return slices.MinFunc(c, bySeq).Name, true
	})
}

// LastJoined elects the candidate that joined last.
func LastJoined() Strategy {
	return StrategyFunc(func(c []Member) (string, bool) {
		if len(c) == 0 {
			return "", false
		}
		return slices.MaxFunc(c, bySeq).Name, true
	})
}

func bySeq(a, b Member) int { return cmp.Compare(a.Seq, b.Seq) }

// HighestPriority elects the candidate of highest priority, the first
// to join among equals: the leader the bully algorithm elects.
func HighestPriority() Strategy {
	return StrategyFunc(func(c []Member) (string, bool) {
		return best(c, func(a, b Member) int { return cmp.Compare(a.Priority, b.Priority) })
	})
}

// MostCapable elects the candidate with the most capabilities; among
// equals the one of highest priority, then the one with the most room
// for tasks (no capacity limit counts as the most), then the first to
// join.
func MostCapable() Strategy {
	return StrategyFunc(func(c []Member) (string, bool) {
		return best(c, func(a, b Member) int {
			if d := cmp.Compare(len(a.Capabilities), len(b.Capabilities)); d != 0 {
				return d
			}
			if d := cmp.Compare(a.Priority, b.Priority); d != 0 {
				return d
			}
			return cmp.Compare(room(a), room(b))
		})
	})
}

// room returns how many more tasks m can take, the most int can say for
// no limit.
func room(m Member) int {
	if m.Capacity == 0 {
		return int(^uint(0) >> 1)
	}
	return m.Capacity - m.Active
}

// best returns the candidate better returns the most for, the first to
// join among equals.
func best(c []Member, better func(a, b Member) int) (string, bool) {
	if len(c) == 0 {
		return "", false
	}
	win := c[0]
	for _, m := range c[1:] {
		if d := better(m, win); d > 0 || d == 0 && m.Seq < win.Seq {
			win = m
		}
	}
	return win.Name, true
}

// Random elects a candidate uniformly at random, drawing from src (a
// seeded source makes the draws repeatable).
func Random(src rand.Source) Strategy {
	return &randomStrategy{r: rand.New(src)}
}

type randomStrategy struct {
	mu sync.Mutex
	r  *rand.Rand
}

func (s *randomStrategy) Elect(c []Member) (string, bool) {
	if len(c) == 0 {
		return "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return c[s.r.IntN(len(c))].Name, true
}

// RoundRobin elects each candidate in turn, in the order they joined: the
// one that joined next after the last leader, wrapping around to the
// first. It keeps whose turn it was, so a member that left, or that is not
// a candidate this time, is simply skipped.
type RoundRobin struct {
	mu   sync.Mutex
	last uint64 // the Seq of the last leader; 0 before the first election
	name string
}

// NewRoundRobin returns a round robin that has elected no one yet.
func NewRoundRobin() *RoundRobin { return &RoundRobin{} }

// Elect elects the candidate whose turn it is.
func (r *RoundRobin) Elect(c []Member) (string, bool) {
	if len(c) == 0 {
		return "", false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	first := slices.MinFunc(c, bySeq)
	var next *Member
	for i := range c {
		if c[i].Seq > r.last && (next == nil || c[i].Seq < next.Seq) {
			next = &c[i]
		}
	}
	if next == nil {
		next = &first
	}
	r.last, r.name = next.Seq, next.Name
	return next.Name, true
}

// Last returns the leader the round robin elected last, and false before
// its first election.
func (r *RoundRobin) Last() (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.name, r.last != 0
}

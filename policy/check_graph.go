package policy

import (
	"fmt"
	"slices"
)

// checkInitial reports a missing, undeclared or terminal initial state.
func checkInitial(c *checker) {
	p := c.p
	switch {
	case len(p.States) == 0:
		pos := p.Initial.Pos
		if !pos.IsValid() {
			pos = p.Pos
		}
		c.d.errorf(CodeInitialState, pos, "the policy declares no states, so it has no initial state")
	case p.Initial.Name == "":
		c.d.errorf(CodeInitialState, p.Pos, "the policy has no initial state")
	case c.initial < 0:
		c.d.errorf(CodeInitialState, p.Initial.Pos, "initial state %s is not declared%s", Quote(p.Initial.Name), didYouMean(p.Initial.Name, c.stateNames()))
	case p.States[c.initial].Kind == KindTerminal:
		c.d.errorf(CodeInitialState, p.Initial.Pos, "initial state %s is terminal, so no message can ever be exchanged", Quote(p.Initial.Name))
	}
}

// checkHasTerminal reports a policy with no terminal state.
func checkHasTerminal(c *checker) {
	if len(c.p.States) == 0 {
		return
	}
	for _, s := range c.p.States {
		if s.Kind == KindTerminal {
			return
		}
	}
	c.d.errorf(CodeNoTerminal, c.p.Pos, "policy %s has no terminal state, so no conversation can end; add one such as done: {terminal: done}", Quote(c.p.Name))
}

// checkReachable warns about states no path from the initial state reaches.
func checkReachable(c *checker) {
	if c.initial < 0 || c.p.States[c.initial].Kind == KindTerminal {
		return // reported by checkInitial; every other state would follow
	}
	reach := c.reachThroughMisspellings()
	if reach == nil {
		return // a transition leads to a state that is not declared and resembles none: any state may be the one meant
	}
	for i, s := range c.p.States {
		if !reach[i] {
			c.d.warnf(CodeUnreachable, s.Pos, "state %s is unreachable from the initial state %s", Quote(s.Name), Quote(c.p.Initial.Name))
		}
	}
}

// reachThroughMisspellings marks the states reachable from the initial
// state when each transition to an undeclared state (reported by the
// references check) leads to the declared state its name most resembles:
// a misspelt state name is one error, not that error and a warning for
// every state behind the one meant. It returns nil when such a name
// resembles no declared state.
func (c *checker) reachThroughMisspellings() []bool {
	var names []string // the states', once a name needs them
	reach := make([]bool, len(c.p.States))
	reach[c.initial] = true
	// Each state is queued at most once.
	queue := make([]int, 1, len(c.p.States))
	queue[0] = c.initial
	for head := 0; head < len(queue); head++ {
		i := queue[head]
		for k, j := range c.next[i] {
			if j < 0 {
				name := c.p.States[i].Transitions[k].Next.Name
				if name == "" {
					continue
				}
				if names == nil {
					names = c.stateNames()
				}
				s := Suggest(name, names)
				if s == "" {
					return nil
				}
				j = c.stateIndex(s)
			}
			if j >= 0 && !reach[j] {
				reach[j] = true
				queue = append(queue, j)
			}
		}
	}
	return reach
}

// checkDeadEnds reports non-terminal states with no transition.
func checkDeadEnds(c *checker) {
	for _, s := range c.p.States {
		if s.Kind != KindTerminal && len(s.Transitions) == 0 {
			c.d.errorf(CodeDeadEnd, s.Pos, "%s state %s has no transitions, so a conversation that enters it never ends; add transitions or make it terminal", s.Kind, Quote(s.Name))
		}
	}
}

// checkTermination reports each region of reachable states from which no
// terminal state can be reached (a loop with no exit), once per region, at
// the first of its states a search from the initial state meets.
func checkTermination(c *checker) {
	if c.initial < 0 || !slices.ContainsFunc(c.p.States, func(s *State) bool { return s.Kind == KindTerminal }) {
		return // no terminal state at all: reported once by checkHasTerminal
	}
	n := len(c.p.States)
	covered := make([]bool, n)
	trapped := func(i int) bool {
		return c.reach[i] && !c.toEnd[i] && len(c.p.States[i].Transitions) > 0
	}
	seen := make([]bool, n)
	// Each state is queued at most once.
	queue := make([]int, 1, n)
	queue[0] = c.initial
	seen[c.initial] = true
	for head := 0; head < len(queue); head++ {
		i := queue[head]
		if trapped(i) && !covered[i] {
			var region []string
			stack := []int{i}
			covered[i] = true
			for len(stack) > 0 {
				k := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				region = append(region, c.p.States[k].Name)
				for _, j := range c.next[k] {
					if j >= 0 && !covered[j] && trapped(j) {
						covered[j] = true
						stack = append(stack, j)
					}
				}
			}
			s := c.p.States[i]
			msg := fmt.Sprintf("no terminal state can be reached from state %s", Quote(s.Name))
			if len(region) > 1 {
				msg += fmt.Sprintf(" (nor from %s it leads to)", QuoteList(region[1:], 5))
			}
			c.d.errorf(CodeNoPathToEnd, s.Pos, "%s: a conversation that enters it never ends; add a transition to a terminal state", msg)
		}
		for _, j := range c.next[i] {
			if j >= 0 && !seen[j] {
				seen[j] = true
				queue = append(queue, j)
			}
		}
	}
}

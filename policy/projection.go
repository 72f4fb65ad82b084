package policy

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
)

// Action is what the projected role does on a local transition.
type Action int

// Actions. A role sends the messages it is the sender of and receives those
// it is the receiver of; it sees the timers it runs fire (Policy.TimerRoles)
// and every child return.
const (
	ActionSend Action = iota + 1
	ActionReceive
	ActionTimeout
	ActionChildReturn
)

// String returns "send", "receive", "timeout" or "child-return".
func (a Action) String() string {
	switch a {
	case ActionSend:
		return "send"
	case ActionReceive:
		return "receive"
	case ActionTimeout:
		return "timeout"
	case ActionChildReturn:
		return "child-return"
	}
	return fmt.Sprintf("action(%d)", int(a))
}

// Projection is a policy as one role sees it: the messages it neither sends
// nor receives are invisible, so each local state stands for the set of
// global states the role cannot tell apart (for a two-party policy, always
// exactly one). The role orders only its own sends and receives: a step it
// may take once others have exchanged messages it takes no part in is one
// it may take before them too, and branches where it behaves the same are
// merged. States[0] is the initial state.
//
// A Projection is immutable once built and safe to share.
type Projection struct {
	Policy *Policy
	Role   string
	States []*LocalState
}

// LocalState is a state of a projection.
type LocalState struct {
	// Name is the global state's name, or the names of the global states it
	// stands for joined by "|".
	Name   string
	Global []*State
	Kind   StateKind
	// Outcome is set for a terminal local state. When the role's part ends
	// before a choice it does not see, it is every outcome the conversation
	// may still end with, sorted and joined by "|" ("bought|quit").
	Outcome     string
	Join        bool
	Transitions []*LocalTransition
}

// LocalTransition is a transition of a projection.
type LocalTransition struct {
	Action Action
	// Peer is the role at the other end of a send or receive.
	Peer string
	// Global holds the policy's transitions this one stands for: one, unless
	// the role cannot tell apart states that offer the same step.
	Global []*Transition
	Next   int
}

// Transition returns the first global transition.
func (t *LocalTransition) Transition() *Transition { return t.Global[0] }

// Project projects p onto role. It reports, as CP029 diagnostics, every
// place where the role cannot tell which branch the conversation took and
// so cannot know what it may do. p should have passed the other checks.
func Project(p *Policy, role string) (*Projection, Diagnostics) {
	c := newChecker(p, checkOptions{})
	proj := c.project(role)
	c.d.list.Sort()
	return proj, c.d.list
}

// checkProjection projects the policy onto each role.
func checkProjection(c *checker) {
	if c.initial < 0 || c.d.list.HasErrors() {
		return // knowledge of choice is meaningless on a broken graph
	}
	talks := map[string]bool{}
	if c.resolved {
		// Every send names two declared roles.
		for _, e := range c.edges {
			if e.kind == edgeSend {
				talks[c.roles.names[e.from]], talks[c.roles.names[e.to]] = true, true
				if len(talks) == len(c.roles.names) {
					break
				}
			}
		}
	} else {
		for _, s := range c.p.States {
			for _, t := range s.Transitions {
				if t.Kind != SendMessage {
					continue
				}
				if t.From.Name == "" || t.To.Name == "" {
					// The loader reported the missing role; these checks do
					// not see its diagnostics, and a send with no sender or
					// receiver would look invisible to every role.
					return
				}
				talks[t.From.Name], talks[t.To.Name] = true, true
			}
		}
	}
	for _, r := range c.p.Roles {
		// A role that sends and receives nothing is reported unused;
		// projected, it would only see timers fire. A role that sees every
		// step cannot confuse two states: each of its local states is one
		// global state, and its projection the policy's graph, which
		// Project makes when a compiler needs it.
		if talks[r.Name] && !c.seesAll(r.Name) {
			if c.projections == nil {
				c.projections = map[string]*Projection{}
			}
			c.projections[r.Name] = c.project(r.Name)
		}
	}
}

// seesAll reports whether role sees every step of the policy that leads
// somewhere, and no terminal state has a step: then projecting onto it
// reports nothing (no local state stands for two global states, so there
// is nothing it cannot tell apart, and it has at most as many local
// states as the policy has states, within the limit).
func (c *checker) seesAll(role string) bool {
	if c.resolved {
		return c.edgesSeenAll(int32(c.roles.index(role)))
	}
	for i, s := range c.p.States {
		if s.Kind == KindTerminal && len(s.Transitions) > 0 {
			return false
		}
		for j, t := range s.Transitions {
			if _, _, ok := c.visible(s, t, role); !ok && c.next[i][j] >= 0 {
				return false
			}
		}
	}
	return true
}

// edgesSeenAll is seesAll from the edges, for the role of index role,
// when every name is resolved: a send is visible to its two roles, a
// timeout to the roles that run the timers (see RunsTimers), a child's
// return to every role.
func (c *checker) edgesSeenAll(role int32) bool {
	k := 0
	for i, s := range c.p.States {
		edges := c.edges[k : k+len(c.next[i])]
		k += len(edges)
		if s.Kind == KindTerminal && len(edges) > 0 {
			return false
		}
		for j, e := range edges {
			seen := true
			switch e.kind {
			case edgeSend:
				seen = e.from == role || e.to == role
			case edgeTimeout:
				seen = runsTimers(edges, role)
			}
			if !seen && c.next[i][j] >= 0 {
				return false
			}
		}
	}
	return true
}

// runsTimers is State.RunsTimers from a state's edges.
func runsTimers(edges []edge, role int32) bool {
	messages := false
	for _, e := range edges {
		if e.kind != edgeSend {
			continue
		}
		messages = true
		if e.from == role || e.to == role {
			return true
		}
	}
	return !messages
}

type projector struct {
	c     *checker
	role  string
	proj  *Projection
	index map[string]int // local state by its global states, for two or more
	// single[s] is one more than the local state standing for global
	// state s alone, or 0.
	single []int
	// members[k] lists the global states of local state k, sorted;
	// steps[k][i] records how the closure reached members[k][i].
	members [][]int
	steps   [][]step
	reached map[int]step // the closure being computed, reused
	stack   []int        // the closure's states to visit, reused
	queue   []int
	limit   int
}

// step is how a closure reached a global state: by transition j of state
// from (from < 0 for a seed).
type step struct{ from, j int }

// visible says what transition t of state s is to role: a send, a
// receive, a timeout of a timer the role runs, a child's return, or
// nothing it sees.
func (c *checker) visible(s *State, t *Transition, role string) (Action, string, bool) {
	switch t.Kind {
	case SendMessage:
		switch role {
		case t.From.Name:
			return ActionSend, t.To.Name, true
		case t.To.Name:
			return ActionReceive, t.From.Name, true
		}
		return 0, "", false
	case OnTimeout:
		return ActionTimeout, "", s.RunsTimers(role)
	}
	return ActionChildReturn, "", true
}

// TimerRoles returns the roles whose clocks run the timers state s arms, in
// the order the policy declares them: the roles that send or receive a
// message in s (the one waiting there, and the ones it waits for); when s
// has no message transition (a pause, a child policy's run), every role.
// Only those roles arm the timers and see them fire; to every other role
// a timeout in s is a step between others, like a message it takes no
// part in. In a two-party policy both parties run every timer.
func (p *Policy) TimerRoles(s *State) []string {
	var out []string
	for _, r := range p.Roles {
		if s.RunsTimers(r.Name) {
			out = append(out, r.Name)
		}
	}
	return out
}

// RunsTimers reports whether role runs the timers s arms (see TimerRoles).
func (s *State) RunsTimers(role string) bool {
	messages := false
	for _, t := range s.Transitions {
		if t.Kind != SendMessage {
			continue
		}
		messages = true
		if t.From.Name == role || t.To.Name == role {
			return true
		}
	}
	return !messages
}

func (c *checker) project(role string) *Projection {
	pr := &projector{
		c: c, role: role,
		proj:    &Projection{Policy: c.p, Role: role},
		index:   map[string]int{},
		single:  make([]int, len(c.p.States)),
		reached: map[int]step{},
		limit:   4*len(c.p.States) + 1024,
	}
	if c.initial < 0 {
		return pr.proj
	}
	pr.state([]int{c.initial}, nil)
	for len(pr.queue) > 0 {
		k := pr.queue[0]
		pr.queue = pr.queue[1:]
		pr.expand(k)
		if len(pr.proj.States) > pr.limit {
			c.d.errorf(CodeLimit, c.p.Pos, "projecting onto role %s needs more than %d local states; the role is blind to too much of the policy", Quote(role), pr.limit)
			break
		}
	}
	return pr.proj
}

// state returns the local state for the closure of seeds, creating it (and
// queueing it for expansion) when new.
func (pr *projector) state(seeds []int, via []step) int {
	c := pr.c
	if len(seeds) == 1 && pr.single[seeds[0]] > 0 && pr.closed(seeds[0]) {
		return pr.single[seeds[0]] - 1
	}
	members, steps := pr.closure(seeds, via)
	var key string
	if len(members) == 1 {
		if k := pr.single[members[0]]; k > 0 {
			return k - 1
		}
	} else {
		key = setKey(members)
		if k, ok := pr.index[key]; ok {
			return k
		}
	}
	k := len(pr.proj.States)
	ls := &LocalState{}
	if len(members) == 1 {
		m := members[0]
		pr.single[m] = k + 1
		ls.Global = c.p.States[m : m+1 : m+1] // the policy's own slice, as for a transition
		ls.Name, ls.Join = c.p.States[m].Name, c.p.States[m].Join
	} else {
		pr.index[key] = k
		ls.Global = make([]*State, len(members))
		nameParts := make([]string, len(members))
		for i, m := range members {
			ls.Global[i] = c.p.States[m]
			nameParts[i] = c.p.States[m].Name
			ls.Join = ls.Join || c.p.States[m].Join
		}
		ls.Name = strings.Join(nameParts, "|")
	}
	pr.proj.States = append(pr.proj.States, ls)
	pr.members = append(pr.members, members)
	pr.steps = append(pr.steps, steps)
	pr.queue = append(pr.queue, k)
	return k
}

// closure returns the global states the role may be in once it has
// reached seeds (by via, nil for the initial state), sorted, and how
// each was reached.
func (pr *projector) closure(seeds []int, via []step) ([]int, []step) {
	c := pr.c
	if len(seeds) == 1 && pr.closed(seeds[0]) {
		// A state the role sees every step out of is its own closure, as
		// in most policies.
		st := step{from: -1}
		if via != nil {
			st = via[0]
		}
		return []int{seeds[0]}, []step{st}
	}
	reached := pr.reached
	clear(reached)
	var members []int
	stack := append(pr.stack[:0], seeds...)
	defer func() { pr.stack = stack[:0] }()
	for i, s := range seeds {
		if _, ok := reached[s]; !ok {
			st := step{from: -1}
			if via != nil {
				st = via[i]
			}
			reached[s] = st
			members = append(members, s)
		}
	}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for j, t := range c.p.States[s].Transitions {
			if _, _, ok := c.visible(c.p.States[s], t, pr.role); ok {
				continue
			}
			if k := c.next[s][j]; k >= 0 {
				if _, seen := reached[k]; !seen {
					reached[k] = step{from: s, j: j}
					members = append(members, k)
					stack = append(stack, k)
				}
			}
		}
	}
	slices.Sort(members)
	steps := make([]step, len(members))
	for i, m := range members {
		steps[i] = reached[m]
	}
	return members, steps
}

// closed reports whether the role sees every step out of global state s
// that leads somewhere.
func (pr *projector) closed(s int) bool {
	st := pr.c.p.States[s]
	for j, t := range st.Transitions {
		if _, _, ok := pr.c.visible(st, t, pr.role); !ok && pr.c.next[s][j] >= 0 {
			return false
		}
	}
	return true
}

func setKey(members []int) string {
	buf := make([]byte, 0, 4*len(members))
	for _, m := range members {
		buf = binary.AppendUvarint(buf, uint64(m))
	}
	return string(buf)
}

type trigger struct {
	action                 Action
	peer, name, guard, key string
}

// expand computes the transitions of local state k and checks that the
// role knows what it may do there.
func (pr *projector) expand(k int) {
	c := pr.c
	ls := pr.proj.States[k]
	members := pr.members[k]
	type group struct {
		lt    *LocalTransition
		seeds []int
		via   []step
	}
	var groups []*group
	var byTrigger map[trigger]*group
	if len(members) > 1 {
		byTrigger = map[trigger]*group{}
	}
	var terminals, active []int
	for _, s := range members {
		st := c.p.States[s]
		if st.Kind == KindTerminal {
			terminals = append(terminals, s)
		}
		hasVisible := false
		for j, t := range st.Transitions {
			action, peer, ok := c.visible(st, t, pr.role)
			if !ok {
				continue
			}
			hasVisible = true
			tr := trigger{action: action, peer: peer}
			switch t.Kind {
			case SendMessage:
				tr.name, tr.key = t.Message.Name, t.MessageKey()
			case OnTimeout:
				tr.name = t.Timer.Name
			case ChildReturn:
				tr.name = t.Outcome
			}
			if t.Guard != nil {
				tr.guard = t.Guard.Src
			}
			g := byTrigger[tr]
			if g == nil || len(members) == 1 {
				g = &group{lt: &LocalTransition{Action: action, Peer: peer}}
				groups = append(groups, g)
				if len(members) > 1 {
					byTrigger[tr] = g
				}
			}
			if g.lt.Global == nil {
				// The policy's own slice: a group of one transition, as
				// most are, needs no slice of its own (and one of more
				// copies it on the append below).
				g.lt.Global = st.Transitions[j : j+1 : j+1]
			} else {
				g.lt.Global = append(g.lt.Global, t)
			}
			if n := c.next[s][j]; n >= 0 {
				g.seeds = append(g.seeds, n)
				g.via = append(g.via, step{from: s, j: j})
			}
		}
		if hasVisible {
			active = append(active, s)
		}
	}
	switch {
	case len(active) == 0 && len(terminals) > 0:
		// The role's part is over in every branch: its behaviour is the
		// same in all of them, so they merge, and its outcome is each
		// outcome the conversation may still end with.
		ls.Kind = KindTerminal
		var outcomes []string
		for _, s := range terminals {
			if o := c.p.States[s].Outcome; !slices.Contains(outcomes, o) {
				outcomes = append(outcomes, o)
			}
		}
		slices.Sort(outcomes)
		ls.Outcome = strings.Join(outcomes, "|")
	case len(terminals) > 0:
		// A role whose every wait here is bounded by a timer of its own
		// learns the end from its clock.
		if i := slices.IndexFunc(active, func(s int) bool { return !pr.timed(s) }); i >= 0 {
			pr.blind(k, terminals[0], active[i], "whether the conversation has ended")
		}
		ls.Kind = KindNormal
	default:
		ls.Kind = KindNormal
		for _, s := range members {
			if c.p.States[s].Kind == KindInChild {
				ls.Kind = KindInChild
			}
		}
	}
	if len(members) > 1 {
		pr.checkSends(k)
	}
	ls.Transitions = make([]*LocalTransition, 0, len(groups))
	for _, g := range groups {
		if len(g.seeds) == 0 {
			continue // unresolved target, reported elsewhere
		}
		g.lt.Next = pr.state(g.seeds, g.via)
		ls.Transitions = append(ls.Transitions, g.lt)
	}
}

// checkSends reports a send the role may make in some but not all of the
// states it cannot tell apart. Only the states where the role acts count:
// a state whose every step is between other roles only passes the
// conversation on, and the role's own actions are not ordered after those
// steps (its messages travel on their own channels), so a send offered
// only after such steps is offered in the state before them too.
func (pr *projector) checkSends(k int) {
	c := pr.c
	var members []int
	for _, s := range pr.members[k] {
		if pr.acts(s) {
			members = append(members, s)
		}
	}
	sendable := map[string]map[int]bool{} // message key → states offering it
	var order []string
	for _, s := range members {
		for _, t := range c.p.States[s].Transitions {
			if t.Kind == SendMessage && t.From.Name == pr.role {
				key := t.MessageKey()
				if sendable[key] == nil {
					sendable[key] = map[int]bool{}
					order = append(order, key)
				}
				sendable[key][s] = true
			}
		}
	}
	for _, key := range order {
		with := sendable[key]
		if len(with) == len(members) {
			continue
		}
		var yes, no = -1, -1
		for _, s := range members {
			if with[s] && yes < 0 {
				yes = s
			}
			if !with[s] && no < 0 && c.p.States[s].Kind != KindTerminal {
				no = s
			}
		}
		if no < 0 {
			continue // only terminal states lack it: reported as "has ended"
		}
		pr.blind(k, yes, no, fmt.Sprintf("whether it may send %s: it may in state %s but not in state %s", Quote(key), Quote(c.p.States[yes].Name), Quote(c.p.States[no].Name)))
		return
	}
}

// timed reports whether global state s has a timeout the role runs.
func (pr *projector) timed(s int) bool {
	st := pr.c.p.States[s]
	return st.RunsTimers(pr.role) && slices.ContainsFunc(st.Transitions, func(t *Transition) bool { return t.Kind == OnTimeout })
}

// acts reports whether the role has a step of its own in global state s.
func (pr *projector) acts(s int) bool {
	for _, t := range pr.c.p.States[s].Transitions {
		if _, _, ok := pr.c.visible(pr.c.p.States[s], t, pr.role); ok {
			return true
		}
	}
	return false
}

// blind reports that the role cannot tell global states a and b of local
// state k apart, explaining how the conversation reached each.
func (pr *projector) blind(k, a, b int, what string) {
	c := pr.c
	pathA, pathB := pr.path(k, a), pr.path(k, b)
	// The branch point is the last state both paths pass through.
	common := 0
	for common < len(pathA) && common < len(pathB) && pathA[common] == pathB[common] {
		common++
	}
	var branchA, branchB *Transition
	if common < len(pathA) {
		branchA = c.p.States[pathA[common].from].Transitions[pathA[common].j]
	}
	if common < len(pathB) {
		branchB = c.p.States[pathB[common].from].Transitions[pathB[common].j]
	}
	pos := c.p.States[a].Pos
	var why, fix string
	switch {
	case branchA != nil && branchB != nil:
		chooser := c.p.States[pathA[common].from].Name
		pos = branchA.Pos
		why = fmt.Sprintf("in state %s the conversation continues either with %s or with %s, and %s sees neither", Quote(chooser), describe(branchA), describe(branchB), Quote(pr.role))
		fix = fmt.Sprintf("have %s tell %s which branch was taken (a message to %s in each branch)", senderOf(branchA), Quote(pr.role), Quote(pr.role))
	case branchA != nil || branchB != nil:
		br := branchA
		if br == nil {
			br = branchB
		}
		pos = br.Pos
		why = fmt.Sprintf("%s may or may not have happened, and %s does not see it", describe(br), Quote(pr.role))
		fix = fmt.Sprintf("have %s send %s a message after it, or let %s act only once it has heard of it", senderOf(br), Quote(pr.role), Quote(pr.role))
	default:
		why = fmt.Sprintf("it reaches both states %s and %s by the same messages", Quote(c.p.States[a].Name), Quote(c.p.States[b].Name))
		fix = "make the messages that lead to them distinct"
	}
	d := c.d.errorf(CodeKnowledgeOfChoice, pos, "role %s cannot tell %s: %s; to fix, %s", Quote(pr.role), what, why, fix)
	if branchA != nil && branchB != nil {
		d.related(branchB.Pos, "the other branch")
	}
	d.related(c.p.States[a].Pos, "state %s", Quote(c.p.States[a].Name)).related(c.p.States[b].Pos, "state %s", Quote(c.p.States[b].Name))
	for _, st := range pathA {
		if st.from >= 0 {
			d.Trace = append(d.Trace, describe(c.p.States[st.from].Transitions[st.j]))
		}
	}
}

// path returns the steps by which the closure of local state k reached
// global state s, from a seed.
func (pr *projector) path(k, s int) []step {
	members, steps := pr.members[k], pr.steps[k]
	var out []step
	for guard := 0; guard <= len(members); guard++ {
		i, ok := slices.BinarySearch(members, s)
		if !ok || steps[i].from < 0 {
			break
		}
		st := steps[i]
		out = append(out, st)
		if _, ok := slices.BinarySearch(members, st.from); !ok {
			break // the seed's incoming transition
		}
		s = st.from
	}
	slices.Reverse(out)
	return out
}

func describe(t *Transition) string {
	switch t.Kind {
	case SendMessage:
		return fmt.Sprintf("%s from %s to %s", Quote(t.Message.Name), Quote(t.From.Name), Quote(t.To.Name))
	case OnTimeout:
		return fmt.Sprintf("timeout %s", Quote(t.Timer.Name))
	}
	return fmt.Sprintf("child outcome %s", Quote(t.Outcome))
}

func senderOf(t *Transition) string {
	if t.Kind == SendMessage {
		return fmt.Sprintf("%s (or %s)", Quote(t.From.Name), Quote(t.To.Name))
	}
	return "a role that sees it"
}

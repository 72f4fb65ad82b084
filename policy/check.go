package policy

import (
	"slices"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/conf"
)

// Check is one named static check. Checks run in the order of the Checks
// list; each reports the codes it lists.
type Check struct {
	Name  string
	Codes []Code
	Doc   string
	run   func(*checker)
}

// Checks is the ordered list of static checks CheckPolicy runs. The order
// matters only for readability of the output: every check runs, whatever
// the others found.
var Checks = []Check{
	{"declarations", []Code{CodeInvalidValue, CodeDuplicate}, "names are well formed and declared once; performatives are FIPA's or declared extensions", checkDeclarations},
	{"references", []Code{CodeUnresolved, CodeUndeclaredRole}, "every state, message type, timer, variable, role and child policy named is declared", checkReferences},
	{"state-shapes", []Code{CodeInvalidValue, CodeMissingField}, "transitions fit the kind of their state", checkStateShapes},
	{"initial-state", []Code{CodeInitialState}, "the initial state exists and is not terminal", checkInitial},
	{"terminal-states", []Code{CodeNoTerminal}, "the policy has a terminal state", checkHasTerminal},
	{"reachability", []Code{CodeUnreachable}, "every state is reachable from the initial state", checkReachable},
	{"dead-ends", []Code{CodeDeadEnd}, "every non-terminal state has a way out", checkDeadEnds},
	{"termination", []Code{CodeNoPathToEnd}, "from every reachable state some terminal state is reachable", checkTermination},
	{"determinism", []Code{CodeNondeterministic, CodeShadowed}, "the transitions of a state can be told apart, and none is shadowed", checkDeterminism},
	{"reflexive-messages", []Code{CodeReflexive}, "no role sends a message to itself", checkReflexive},
	{"timers", []Code{CodeTimerNotHandled, CodeTimerNotArmed, CodeTimerDeadline}, "armed timers are handled, handled timers are armed, deadlines read time fields", checkTimers},
	{"expressions", []Code{CodeExprSyntax, CodeExprType, CodeLimit}, "embedded expressions parse, type-check against the message schemas and are within the expression limits", checkExpressions},
	{"unused", []Code{CodeUnused}, "every declaration is used", checkUnused},
	{"joins", []Code{CodeJoinWithoutMany}, "join states involve a many role", checkJoins},
	{"commitments", []Code{CodeCommitmentParties, CodeCommitmentAuth, CodeNoDischarge}, "commitments have distinct parties, the right authors and a reachable discharge", checkCommitments},
	{"child-policies", []Code{CodeChildBinding, CodeUnresolved, CodeDeadEnd}, "every role of a child policy is bound once to a role of this policy, and every outcome of the child is handled", checkChildBindings},
	{"projection", []Code{CodeKnowledgeOfChoice, CodeLimit}, "every role can tell which branch the conversation took (knowledge of choice)", checkProjection},
}

// CheckOption configures CheckPolicy.
type CheckOption func(*checkOptions)

type checkOptions struct {
	resolve Resolver
	parsed  func(*Expr, ast.Node)
}

// Resolver finds a policy by name: the child policies a policy runs.
// It returns nil for a name it does not know. policies.Resolve is the
// resolver of the shipped policies.
type Resolver func(name string) *Policy

// WithPolicies resolves the names of child policies. Without it, child
// policy references are not checked.
func WithPolicies(resolve Resolver) CheckOption {
	return func(o *checkOptions) { o.resolve = resolve }
}

// WithExprTrees makes the expressions check call parsed with each
// expression it parses without error and its syntax tree, as expr's
// parser.Parse gives it for the expression's source, so that a compiler
// can work from the tree rather than parse the source again. The tree is
// lent for the call: the check goes on to type it, which may change it,
// so parsed must neither change nor keep it. An expression of the simple
// shapes the checks type themselves (see ExprTypeOf) is parsed, and
// lent, each time it appears; any other whose source and environment
// repeat another's is parsed once, for the first.
func WithExprTrees(parsed func(e *Expr, tree ast.Node)) CheckOption {
	return func(o *checkOptions) { o.parsed = parsed }
}

// CheckPolicy runs every static check on p and returns what they found,
// sorted. It never modifies p.
func CheckPolicy(p *Policy, opts ...CheckOption) Diagnostics {
	if p == nil {
		return nil
	}
	return runChecks(p, opts).d.list
}

// runChecks runs every check on p and sorts what they found.
func runChecks(p *Policy, opts []CheckOption) *checker {
	var o checkOptions
	for _, opt := range opts {
		opt(&o)
	}
	c := newChecker(p, o)
	for _, chk := range Checks {
		chk.run(c)
	}
	c.d.list.Sort()
	return c
}

// checker holds a policy's lookup tables, built once so every check is
// linear in the size of the policy.
type checker struct {
	p      *Policy
	opts   checkOptions
	d      diags
	roles  decls[*Role]
	msgs   decls[*MessageType]
	timers decls[*Timer]
	vars   decls[*Field]
	states map[string]int
	// recent holds the last names stateIndex looked up in states.
	recent [4]recentState
	// dupStates lists the states whose name an earlier state has, each
	// with the index of the first, in order.
	dupStates [][2]int
	// next[i][j] is the index of the target of transition j of state i, or
	// -1 when it does not resolve.
	next    [][]int
	initial int // -1 when unresolved
	// edges holds what the checks read of each transition, in the order
	// of the states and of their transitions (see edgeOf); resolved says
	// whether every transition's names are declared, and each
	// transition only the names of its kind, so that checks can work
	// from the edges alone.
	edges    []edge
	resolved bool
	// joins says whether some state is a join.
	joins bool
	reach []bool
	toEnd []bool
	// predStart and predList hold each state's predecessors (see preds).
	predStart, predList []int
	// varsRead records the declared variables expressions read, by
	// their index in vars (set by the expressions check, used by the
	// unused check).
	varsRead  []bool
	exprCache map[exprKey]*exprResult
	// exprConfigs holds the compile configuration of each environment
	// map the expressions check made (by its identity): making one is
	// most of compiling a short expression, and the checks compile one
	// expression at a time.
	exprConfigs map[uintptr]*conf.Config
	// reads is compileExpr's scratch space for the variables an
	// expression reads; oneRead shares the list of each variable that
	// an expression alone reads.
	reads   varReads
	oneRead map[string][]string
	// results holds what compileExpr found of each expression it
	// remembers, scratch what it found of the last it did not.
	results slab[exprResult]
	scratch exprResult
	// parser reads the expressions of the simple shapes; tree holds the
	// tree it read while compileExpr lends and walks it (by a pointer,
	// which ast.Walk takes, so that it does not move to the heap).
	parser exprParser
	tree   ast.Node
	// projections keeps the projection onto each role that talks, made
	// by the projection check.
	projections map[string]*Projection
}

func newChecker(p *Policy, o checkOptions) *checker {
	c := &checker{
		p: p, opts: o,
		states:  make(map[string]int, len(p.States)),
		initial: -1,
	}
	for _, r := range p.Roles {
		c.roles.put(r.Name, r)
	}
	for _, m := range p.Messages {
		c.msgs.put(m.Name, m)
	}
	for _, t := range p.Timers {
		c.timers.put(t.Name, t)
	}
	for _, v := range p.Vars {
		c.vars.put(v.Name, v)
	}
	edges := 0
	for _, s := range p.States {
		edges += len(s.Transitions)
		c.joins = c.joins || s.Join
	}
	c.indexStates()
	c.next = make([][]int, len(p.States))
	// One array holds every state's successors.
	flat := make([]int, edges)
	c.edges = make([]edge, 0, edges)
	c.resolved = true
	for i, s := range p.States {
		n := len(s.Transitions)
		c.next[i], flat = flat[:n:n], flat[n:]
		for j, t := range s.Transitions {
			c.next[i][j] = c.stateAfter(i, t.Next.Name)
			c.edges = append(c.edges, c.edgeOf(t))
		}
	}
	c.initial = c.stateIndex(p.Initial.Name)
	c.reach = c.forward()
	c.predecessors()
	c.toEnd = c.backward()
	return c
}

// indexStates fills c.states and c.dupStates. States are most often
// named once each, so each is entered without looking it up first; at
// the first name entered twice, the states are indexed again, looking
// each up.
func (c *checker) indexStates() {
	for i, s := range c.p.States {
		if s.Name == "" {
			continue
		}
		n := len(c.states)
		if c.states[s.Name] = i; len(c.states) > n {
			continue
		}
		clear(c.states)
		for i, s := range c.p.States {
			if s.Name == "" {
				continue
			}
			if j, ok := c.states[s.Name]; ok {
				c.dupStates = append(c.dupStates, [2]int{i, j})
				continue
			}
			c.states[s.Name] = i
		}
		return
	}
}

// edge is what most checks read of a transition: a pass over the edges
// of a large policy reads a few megabytes, rather than every transition.
type edge struct {
	// msg, from and to are the indices of a send's message type and
	// roles among the checker's declarations (-1 for none).
	msg, from, to int32
	kind          edgeKind
	// set says whether the transition assigns variables, exprs whether
	// it has a guard or an assignment.
	set, exprs bool
}

// edgeKind is a transition's kind, as a number.
type edgeKind uint8

const (
	edgeOther edgeKind = iota
	edgeSend
	edgeTimeout
	edgeReturn
)

// edgeOf resolves t's names, clearing c.resolved when one is not
// declared, or t names what its kind does not have.
func (c *checker) edgeOf(t *Transition) edge {
	e := edge{msg: -1, from: -1, to: -1, set: len(t.Set) > 0, exprs: t.Guard != nil || len(t.Set) > 0}
	switch t.Kind {
	case SendMessage:
		e.kind = edgeSend
		e.msg, e.from, e.to = int32(c.msgs.index(t.Message.Name)), int32(c.roles.index(t.From.Name)), int32(c.roles.index(t.To.Name))
		if e.msg < 0 || e.from < 0 || e.to < 0 || t.Timer.Name != "" {
			c.resolved = false
		}
		return e
	case OnTimeout:
		e.kind = edgeTimeout
		if c.timers.index(t.Timer.Name) < 0 {
			c.resolved = false
		}
	case ChildReturn:
		e.kind = edgeReturn
	default:
		c.resolved = false
	}
	if t.Message.Name != "" || t.From.Name != "" || t.To.Name != "" {
		c.resolved = false
	}
	return e
}

// predecessors indexes the transitions between declared states by the
// state they enter, for preds.
func (c *checker) predecessors() {
	n := len(c.p.States)
	start := make([]int, n+1)
	for i := range c.next {
		for _, j := range c.next[i] {
			if j >= 0 {
				start[j+1]++
			}
		}
	}
	for j := range n {
		start[j+1] += start[j]
	}
	list := make([]int, start[n])
	fill := slices.Clone(start[:n])
	for i := range c.next {
		for _, j := range c.next[i] {
			if j >= 0 {
				list[fill[j]] = i
				fill[j]++
			}
		}
	}
	c.predStart, c.predList = start, list
}

// preds returns the states with a transition into state j, in the order
// of the transitions (a state once for each).
func (c *checker) preds(j int) []int { return c.predList[c.predStart[j]:c.predStart[j+1]] }

// decls indexes one kind of declaration by name, the first of each
// name. A policy declares a handful of roles, message types, timers and
// variables, found by comparing names (faster than hashing them); a
// longer list is indexed by a map.
type decls[V any] struct {
	names []string
	vals  []V
	m     map[string]int
}

// maxScannedDecls is the most declarations decls finds by comparing
// names rather than through a map.
const maxScannedDecls = 8

// put adds v under name unless name is empty or taken.
func (d *decls[V]) put(name string, v V) {
	if name == "" || d.index(name) >= 0 {
		return
	}
	d.names = append(d.names, name)
	d.vals = append(d.vals, v)
	switch {
	case d.m != nil:
		d.m[name] = len(d.names) - 1
	case len(d.names) > maxScannedDecls:
		d.m = make(map[string]int, 2*len(d.names))
		for i, n := range d.names {
			d.m[n] = i
		}
	}
}

// index returns the index of name among the names put, or -1.
func (d *decls[V]) index(name string) int {
	if d.m != nil {
		if i, ok := d.m[name]; ok {
			return i
		}
		return -1
	}
	for i, n := range d.names {
		if n == name {
			return i
		}
	}
	return -1
}

// get returns the declaration named name, or the zero V.
func (d *decls[V]) get(name string) V {
	if i := d.index(name); i >= 0 {
		return d.vals[i]
	}
	var zero V
	return zero
}

// stateAfter is stateIndex for a transition of state i, trying first
// the state after i, where a transition of a protocol written in order
// most often leads, before the index of every state.
func (c *checker) stateAfter(i int, name string) int {
	if i+1 < len(c.p.States) && len(c.dupStates) == 0 && name != "" && c.p.States[i+1].Name == name {
		return i + 1
	}
	return c.stateIndex(name)
}

func (c *checker) stateIndex(name string) int {
	// The states most transitions lead to out of order (a policy's
	// terminal states) are remembered, by the last few names looked up.
	for k := range c.recent {
		if r := &c.recent[k]; r.name == name && r.set {
			return r.index
		}
	}
	i, ok := c.states[name]
	if !ok {
		i = -1
	}
	copy(c.recent[1:], c.recent[:len(c.recent)-1])
	c.recent[0] = recentState{name: name, index: i, set: true}
	return i
}

// recentState is a name stateIndex looked up, and the state's index.
type recentState struct {
	name  string
	index int
	set   bool
}

// forward marks the states reachable from the initial state.
func (c *checker) forward() []bool {
	seen := make([]bool, len(c.p.States))
	if c.initial < 0 {
		return seen
	}
	stack := []int{c.initial}
	seen[c.initial] = true
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, j := range c.next[i] {
			if j >= 0 && !seen[j] {
				seen[j] = true
				stack = append(stack, j)
			}
		}
	}
	return seen
}

// backward marks the states from which a terminal state is reachable.
func (c *checker) backward() []bool {
	n := len(c.p.States)
	ok := make([]bool, n)
	var stack []int
	for i, s := range c.p.States {
		// A transition to an undeclared state is reported as such; where it
		// leads is unknown, so it is not also reported as a trap.
		unresolved := false
		for j, t := range s.Transitions {
			if t.Next.Name != "" && c.next[i][j] < 0 {
				unresolved = true
				break
			}
		}
		if s.Kind == KindTerminal || unresolved {
			ok[i] = true
			stack = append(stack, i)
		}
	}
	for len(stack) > 0 {
		j := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, i := range c.preds(j) {
			if !ok[i] {
				ok[i] = true
				stack = append(stack, i)
			}
		}
	}
	return ok
}

// eachEdge calls fn with each transition's state index, its index in
// the state, and its edge, in order.
func (c *checker) eachEdge(fn func(i, j int, e *edge)) {
	k := 0
	for i, next := range c.next {
		for j := range next {
			fn(i, j, &c.edges[k])
			k++
		}
	}
}

// sendersOf returns, for each message type, the roles that send it in
// some transition (deduplicated, in order of first appearance).
func (c *checker) sendersOf() map[string][]string {
	out := map[string][]string{}
	if c.resolved {
		byMsg := make([][]string, len(c.msgs.names))
		for _, e := range c.edges {
			if e.kind != edgeSend {
				continue
			}
			if from := c.roles.names[e.from]; !slices.Contains(byMsg[e.msg], from) {
				byMsg[e.msg] = append(byMsg[e.msg], from)
			}
		}
		for i, senders := range byMsg {
			if senders != nil {
				out[c.msgs.names[i]] = senders
			}
		}
		return out
	}
	for _, s := range c.p.States {
		for _, t := range s.Transitions {
			if t.Kind == SendMessage && !slices.Contains(out[t.Message.Name], t.From.Name) {
				out[t.Message.Name] = append(out[t.Message.Name], t.From.Name)
			}
		}
	}
	return out
}

func names[T any](list []T, key func(T) string) []string {
	out := make([]string, len(list))
	for i, x := range list {
		out[i] = key(x)
	}
	return out
}

func (c *checker) stateNames() []string {
	return names(c.p.States, func(s *State) string { return s.Name })
}

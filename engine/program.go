package engine

import (
	"fmt"
	"reflect"
	"slices"
	"time"
	"unsafe"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policy"
)

// Program is a policy compiled for one role: the projection onto that role
// with states, transitions, message forms and expressions resolved to
// indexes. It is immutable and safe to share between goroutines and
// handlers; compile once, run many conversations.
type Program struct {
	policy      *policy.Policy
	role        string
	roleIdx     int
	fingerprint string
	roles       []string // role names, by index
	manyRole    int      // index of the many role the local role talks to, or -1
	states      []stateProg
	initial     int
	msgs        []msgProg
	timers      []timerProg
	commits     []commitProg
	// deadlineSrc lists the (message, field) pairs deadline timers read;
	// sessions remember the latest value of each.
	deadlineSrc []fieldSrc
	vars        []string
	stateIndex  map[string]int
	// maxWait bounds the deadlines read from messages (0: DefaultMaxWait).
	maxWait time.Duration
	// multiPeer says that the role has one session and two or more peers:
	// its handlers hold early messages (see MaxHeld) and tell apart the
	// replies of each peer.
	multiPeer bool
	// budgetMessages and budgetVisits are the policy's run budget
	// (policy.Budget), copied here for the step that checks them; 0 for
	// none.
	budgetMessages, budgetVisits int
	// budgeted says that either is not 0 (see planSteps).
	budgeted bool
	// litVars holds the transitions' litVars, by mapID: the variables
	// sessions share (see sharesVars).
	litVars map[unsafe.Pointer]bool
	// spillDL, spillSrc and spillCm lay out a session's spill, of
	// spillWords words; 0 when it needs none (see layOutSpill).
	spillDL, spillSrc, spillCm, spillWords int
}

// sharesVars says whether vars is a transition's litVars, which sessions
// share and an assignment must not write.
func (pr *Program) sharesVars(vars map[string]any) bool {
	return vars != nil && pr.litVars[mapID(vars)]
}

// mapID identifies map m: two maps have the same ID only if they are the
// same map.
func mapID(m map[string]any) unsafe.Pointer {
	return reflect.ValueOf(m).UnsafePointer()
}

type fieldSrc struct {
	msg   int
	field string
}

type stateProg struct {
	name     string
	kind     policy.StateKind
	terminal bool
	// recvMatch and sendMatch say whether a form of recvs or sends has a
	// match rule (else classifying needs one pass).
	recvMatch, sendMatch bool
	outcome              string
	join                 bool
	arms                 []int
	sends                []transProg
	recvs                []transProg
	timeout              []transProg
	returns              []transProg
	// choices are the keys of sends, precomputed for states whose sends
	// have no guards.
	choices   []string
	guarded   bool
	child     *policy.ChildRef
	allowText string // what the state accepts, for error messages
	// leaving says that leaving the state does more than change the
	// session's state: it cancels the timers the state armed, or leaves
	// a join. entering says the same of entering it: it arms timers,
	// ends the session, loads a child, reaches a join or raises a
	// decision (see Handler.enter).
	leaving, entering bool
	// entry is what entering the state does besides arming its timers,
	// by the first of its properties that calls for it (see entryOf).
	entry entryKind
	// recvFields and sendFields are the fields the message types of recvs
	// and sends declare: content is checked against the limits by looking
	// them up (see forms.Fields).
	recvFields, sendFields forms.Fields
	// recvOrder holds, unless byPerf, the indices of recvs in the order
	// classifying considers them: those whose forms have a match rule
	// first, then the others, each in recvs' order.
	recvOrder []int32
	// byPerf says that no receive's form has a match rule and none has a
	// guard, so that a message's performative alone says which receive
	// takes it (see planSteps).
	byPerf bool
	// perfRecvs holds the performatives of recvs, each with its
	// receives in the order classifying considers them.
	perfRecvs []perfRecv
	// guardField is the guardAt of the first receive that has one, or
	// -1: step has the limit check return the value of that field.
	guardField int
	// plain says that the state is byPerf, not terminal and arms no
	// timers, in a program without a run budget: step decides a message
	// without content there itself (see planSteps).
	plain bool
}

type transProg struct {
	key string
	// keyKey is shortKey(key), for take to compare a decision's choice
	// with the keys of sends as step compares performatives.
	keyKey [2]uint32
	msg    int // message type, for sends and receives
	// The message type's form, performative and whether it has a match
	// rule, copied here so classifying touches one struct.
	form     *forms.Form
	perf     string
	hasMatch bool
	peer     int // the other role, for sends and receives
	timer    int
	outcome  string
	next     int
	guard    *decision.Expression
	sets     []setProg
	// setsReadMsg says whether an expression of sets may read the
	// message's envelope, which is then built to evaluate them.
	setsReadMsg bool
	// litVars, when every assignment of sets is a literal, holds the
	// variables after them in a session that had none set: every such
	// session shares it until it writes a variable again (read-only).
	litVars map[string]any
	// msgWork says that taking the transition sets deadline sources or
	// performs commitment operations: the message type's srcs or ops.
	msgWork bool
	// quiet says that taking the transition, a receive, is a change of
	// state and no more: it has no assignments and no msgWork,
	// the state it leaves is not leaving (so arms no timers, and a
	// session there holds no deadlines) and its next state is not
	// entering (see step).
	quiet bool
	// litOK says that every assignment of sets is a literal within the
	// limits (setProg.litOK): evaluating them cannot fail, and gives
	// litVars' values.
	litOK bool
	// fieldsAt holds the position of each field of form among its
	// state's recvFields or sendFields (for forms.Form.ValidateKinds).
	fieldsAt []int
	// guardAt is, for a receive whose guard reads one field of content
	// alone (decision.Expression.ContentField), the position of that
	// field among its state's recvFields when the limit check's kinds
	// hold it; -1 otherwise.
	guardAt int
	// presenceAt is, for a receive whose form's match rule is decided by
	// whether content holds one field (decision.Expression.Presence),
	// the position of that field among its state's recvFields when the
	// limit check's kinds hold it; -1 otherwise. ifPresent and ifAbsent
	// are what the rule gives with the field and without it.
	presenceAt          int
	ifPresent, ifAbsent bool
	// plain says that the transition, a receive, is quiet and its form
	// declares no fields (see planSteps).
	plain bool
}

type setProg struct {
	name string
	prog *decision.Expression
	// lit is the value of a literal expression (isLit): Eval's, without
	// the VM.
	lit   any
	isLit bool
	// litOK says that lit is within forms.DefaultLimits, which
	// forms.CheckValue told once, at compile time: a literal's answer is
	// the same at every evaluation.
	litOK bool
}

type msgProg struct {
	name string
	form *forms.Form
	// match is the type's match rule, nil for none.
	match *decision.Expression
	// commitment operations this message performs: commitment index and
	// what the operation does to it (moves).
	ops []commitOp
	// deadline sources this message sets.
	srcs []int
}

type timerProg struct {
	name     string
	after    time.Duration
	src      int // index into deadlineSrc, or -1
	fallback time.Duration
	// exempt has a bit for each role whose messages the deadline does not
	// bound: a deadline read from a message (request.reply_by) bounds the
	// replies to it, not what its own sender sends next (a cancel).
	exempt uint64
}

type commitProg struct {
	name             string
	debtor, creditor int
	detachable       bool
	expires          int // timer index or -1
	deadline         int // timer index or -1
}

type opKind uint8

const (
	opCreate opKind = iota + 1
	opDetach
	opDischarge
	opCancel
	opRelease
)

type commitOp struct {
	commit int
	// moves is what the operation does to the commitment in each phase
	// (see movesOf).
	moves [phaseCount]phaseMove
}

// entryKind is what entering a state does besides arming its timers
// (Handler.enter), which compile decides once for each state.
type entryKind uint8

const (
	entryNone  entryKind = iota
	entryEnd             // a terminal state: it ends the session
	entryChild           // it loads a child policy
	entryJoin            // a join of the many role: the session waits there
	entryRaise           // the role may send: a decision is raised
)

// entryOf returns the entry of state sp, in a program with a many role
// or not: the first of being terminal, loading a child, being a join of
// a many role and having sends.
func entryOf(sp *stateProg, many bool) entryKind {
	switch {
	case sp.terminal:
		return entryEnd
	case sp.child != nil:
		return entryChild
	case sp.join && many:
		return entryJoin
	case len(sp.sends) > 0:
		return entryRaise
	}
	return entryNone
}

// CompileOption configures Compile.
type CompileOption func(*compileOptions)

type compileOptions struct {
	resolve policy.Resolver
	timers  map[string]time.Duration
	maxWait time.Duration
}

// WithPolicies resolves child policies for the compile-time checks.
func WithPolicies(resolve policy.Resolver) CompileOption {
	return func(o *compileOptions) { o.resolve = resolve }
}

// WithTimer overrides the duration of a timer (its after, or the default
// of a deadline timer), for agents that need other bounds than the policy
// file's.
func WithTimer(name string, d time.Duration) CompileOption {
	return func(o *compileOptions) {
		if o.timers == nil {
			o.timers = map[string]time.Duration{}
		}
		o.timers[name] = d
	}
}

// DefaultMaxWait is the longest a deadline read from a message may wait
// unless WithMaxWait says otherwise.
const DefaultMaxWait = 24 * time.Hour

// WithMaxWait bounds the deadlines read from messages (a timer with
// deadline: request.reply_by, and the commitment deadlines that use it):
// a deadline later than d after the message's At is taken as At+d, so a
// peer cannot keep a conversation waiting for centuries with a far
// reply_by. The message itself is not changed, and a message with a zero
// At is not bounded. A d of zero or less keeps DefaultMaxWait (24 hours).
// Timers with a fixed duration in the policy, and the defaults of
// deadline timers, are the policy's and not bounded.
func WithMaxWait(d time.Duration) CompileOption {
	return func(o *compileOptions) { o.maxWait = d }
}

func build(p *policy.Policy, role string, proj *policy.Projection, o *compileOptions, exprs map[*policy.Expr]*decision.Expression) (*Program, error) {
	pr := &Program{policy: p, role: role, fingerprint: p.Fingerprint(), manyRole: -1, stateIndex: map[string]int{}, maxWait: o.maxWait}
	if b := p.Budget; b != nil {
		pr.budgetMessages, pr.budgetVisits = b.Messages, b.Visits
	}
	roleIdx := map[string]int{}
	for i, r := range p.Roles {
		roleIdx[r.Name] = i
		pr.roles = append(pr.roles, r.Name)
	}
	pr.roleIdx = roleIdx[role]
	msgIdx := map[string]int{}
	for i, m := range p.Messages {
		msgIdx[m.Name] = i
		var match forms.Predicate
		if m.Match != nil {
			match = matchPredicate{exprs[m.Match]}
		}
		form, err := forms.New(m, match)
		if err != nil {
			return nil, err
		}
		pr.msgs = append(pr.msgs, msgProg{name: m.Name, form: form, match: exprs[m.Match]})
	}
	timerIdx := map[string]int{}
	for i, t := range p.Timers {
		timerIdx[t.Name] = i
		tp := timerProg{name: t.Name, after: t.After, src: -1, fallback: t.Default}
		if d, ok := o.timers[t.Name]; ok {
			if t.Deadline != nil {
				tp.fallback = d
			} else {
				tp.after = d
			}
		}
		if t.Deadline != nil {
			for _, st := range p.States {
				for _, tr := range st.Transitions {
					if tr.Kind == policy.SendMessage && tr.Message.Name == t.Deadline.Message {
						if r, ok := roleIdx[tr.From.Name]; ok && r < 64 {
							tp.exempt |= 1 << r
						}
					}
				}
			}
			src := fieldSrc{msg: msgIdx[t.Deadline.Message], field: t.Deadline.Field}
			k := slices.Index(pr.deadlineSrc, src)
			if k < 0 {
				k = len(pr.deadlineSrc)
				pr.deadlineSrc = append(pr.deadlineSrc, src)
				pr.msgs[src.msg].srcs = append(pr.msgs[src.msg].srcs, k)
			}
			tp.src = k
		}
		pr.timers = append(pr.timers, tp)
	}
	timerOf := func(r policy.Ref) int {
		if i, ok := timerIdx[r.Name]; ok {
			return i
		}
		return -1
	}
	for ci, c := range p.Commitments {
		pr.commits = append(pr.commits, commitProg{
			name: c.Name, debtor: roleIdx[c.Debtor.Name], creditor: roleIdx[c.Creditor.Name],
			detachable: len(c.Detach) > 0, expires: timerOf(c.Expires), deadline: timerOf(c.Deadline),
		})
		for _, op := range []struct {
			refs []policy.Ref
			kind opKind
		}{{c.Create, opCreate}, {c.Detach, opDetach}, {c.Discharge, opDischarge}, {c.Cancel, opCancel}, {c.Release, opRelease}} {
			for _, r := range op.refs {
				m := &pr.msgs[msgIdx[r.Name]]
				m.ops = append(m.ops, commitOp{commit: ci, moves: movesOf(op.kind, len(c.Detach) > 0)})
			}
		}
	}
	for _, v := range p.Vars {
		pr.vars = append(pr.vars, v.Name)
	}
	// The local role talks to a many role: keep one session per peer.
	if r := p.Role(role); !r.Many {
		for _, s := range p.States {
			for _, t := range s.Transitions {
				if t.Kind != policy.SendMessage {
					continue
				}
				var other string
				switch role {
				case t.From.Name:
					other = t.To.Name
				case t.To.Name:
					other = t.From.Name
				default:
					continue
				}
				if p.Role(other).Many {
					pr.manyRole = roleIdx[other]
				}
			}
		}
	}
	for i, ls := range proj.States {
		pr.stateIndex[ls.Name] = i
		sp := stateProg{name: ls.Name, kind: ls.Kind, outcome: ls.Outcome, join: ls.Join}
		for _, g := range ls.Global {
			if !g.RunsTimers(role) {
				continue // another role's clock runs them
			}
			for _, a := range g.Arm {
				if k := timerOf(a); k >= 0 && !slices.Contains(sp.arms, k) {
					sp.arms = append(sp.arms, k)
				}
			}
			if g.Child != nil && sp.child == nil {
				sp.child = g.Child
			}
		}
		for _, lt := range ls.Transitions {
			t := lt.Transition()
			tp := transProg{next: lt.Next, timer: -1, msg: -1, peer: -1, outcome: t.Outcome, guardAt: -1, presenceAt: -1}
			if t.Guard != nil {
				tp.guard = exprs[t.Guard]
			}
			for _, a := range t.Set {
				set := setProg{name: a.Var.Name, prog: exprs[a.Expr]}
				set.lit, set.isLit = decision.Literal(a.Expr)
				set.litOK = set.isLit && forms.CheckValue(set.lit, forms.DefaultLimits) == nil
				tp.sets = append(tp.sets, set)
				tp.setsReadMsg = tp.setsReadMsg || exprs[a.Expr].ReadsMsg()
			}
			if tp.litVars = literalVars(tp.sets); tp.litVars != nil {
				tp.litOK = !slices.ContainsFunc(tp.sets, func(set setProg) bool { return !set.litOK })
				if pr.litVars == nil {
					pr.litVars = map[unsafe.Pointer]bool{}
				}
				pr.litVars[mapID(tp.litVars)] = true
			}
			switch lt.Action {
			case policy.ActionSend, policy.ActionReceive:
				tp.key = t.MessageKey()
				tp.keyKey = shortKey(tp.key)
				tp.msg = msgIdx[t.Message.Name]
				tp.form = pr.msgs[tp.msg].form
				tp.perf, tp.hasMatch = tp.form.Type.Performative, tp.form.HasMatch()
				tp.msgWork = len(pr.msgs[tp.msg].srcs) > 0 || len(pr.msgs[tp.msg].ops) > 0
				tp.peer = roleIdx[lt.Peer]
				if lt.Action == policy.ActionSend {
					sp.sends = append(sp.sends, tp)
					sp.guarded = sp.guarded || tp.guard != nil
				} else {
					sp.recvs = append(sp.recvs, tp)
				}
			case policy.ActionTimeout:
				tp.timer = timerOf(t.Timer)
				sp.timeout = append(sp.timeout, tp)
			case policy.ActionChildReturn:
				sp.returns = append(sp.returns, tp)
			}
		}
		for _, t := range sp.sends {
			if !slices.Contains(sp.choices, t.key) {
				sp.choices = append(sp.choices, t.key)
			}
		}
		sp.allowText = allowText(pr, &sp)
		sp.terminal = sp.kind == policy.KindTerminal
		sp.leaving = len(sp.arms) > 0 || sp.join
		sp.entering = sp.leaving || sp.terminal || sp.child != nil || len(sp.sends) > 0
		sp.entry = entryOf(&sp, pr.manyRole >= 0)
		sp.recvMatch, sp.sendMatch = hasMatchRule(pr, sp.recvs), hasMatchRule(pr, sp.sends)
		if sp.recvMatch {
			sp.recvOrder = matchFirst(sp.recvs)
		}
		sp.recvFields, sp.sendFields = fieldsOf(sp.recvs), fieldsOf(sp.sends)
		placeFields(sp.recvs, &sp.recvFields)
		placeFields(sp.sends, &sp.sendFields)
		sp.guardField = placeGuards(sp.recvs, &sp.recvFields)
		placePresences(pr, sp.recvs, &sp.recvFields)
		pr.states = append(pr.states, sp)
	}
	pr.initial = 0
	pr.multiPeer = holdsEarly(pr)
	pr.layOutSpill()
	for k := range pr.states {
		sp := &pr.states[k]
		for j := range sp.recvs {
			t := &sp.recvs[j]
			t.quiet = len(t.sets) == 0 && !t.msgWork && !sp.leaving && !pr.states[t.next].entering
		}
	}
	pr.planSteps()
	return pr, nil
}

// matchFirst returns the indices of list, those whose forms have a
// match rule first, then the others, each in list's order.
func matchFirst(list []transProg) []int32 {
	order := make([]int32, 0, len(list))
	for _, match := range []bool{true, false} {
		for k := range list {
			if list[k].hasMatch == match {
				order = append(order, int32(k))
			}
		}
	}
	return order
}

// fieldsOf returns the fields the message types of list declare.
func fieldsOf(list []transProg) forms.Fields {
	fs := make([]*forms.Form, len(list))
	for k := range list {
		fs[k] = list[k].form
	}
	return forms.FieldsOf(fs...)
}

// inOrder holds 0, 1, 2, ...: the fieldsAt of a form whose fields are
// the first of its state's, in order (one alone, or the first), shared.
var inOrder = func() []int {
	at := make([]int, forms.MaxKinds)
	for k := range at {
		at[k] = k
	}
	return at
}()

// placeFields sets the fieldsAt of each transition of list: the position
// of each field of its form among fs (see forms.Form.ValidateKinds).
func placeFields(list []transProg, fs *forms.Fields) {
	for k := range list {
		t := &list[k]
		fields := t.form.Type.Fields
		at := make([]int, len(fields))
		for i, fd := range fields {
			at[i] = fs.Position(fd.Name)
		}
		if len(at) <= len(inOrder) && slices.Equal(at, inOrder[:len(at)]) {
			at = inOrder[:len(at):len(at)]
		}
		t.fieldsAt = at
	}
}

// placeGuards sets the guardAt of each transition of list, whose forms'
// fields are fs, and returns the first that is not -1, or -1.
func placeGuards(list []transProg, fs *forms.Fields) int {
	first := -1
	for k := range list {
		t := &list[k]
		if t.guard == nil {
			continue
		}
		if name, ok := t.guard.ContentField(); ok {
			if at := fs.Position(name); at >= 0 && at < forms.MaxKinds {
				t.guardAt = at
			}
		}
		if first < 0 {
			first = t.guardAt
		}
	}
	return first
}

// placePresences sets the presenceAt, ifPresent and ifAbsent of each
// transition of list, whose forms' fields are fs.
func placePresences(pr *Program, list []transProg, fs *forms.Fields) {
	for k := range list {
		t := &list[k]
		match := pr.msgs[t.msg].match
		if match == nil {
			continue
		}
		if name, present, absent, ok := match.Presence(); ok {
			if at := fs.Position(name); at >= 0 && at < forms.MaxKinds {
				t.presenceAt, t.ifPresent, t.ifAbsent = at, present, absent
			}
		}
	}
}

// allowText describes what a state accepts from peers, for the reason of
// an unexpected-message error.
func allowText(pr *Program, sp *stateProg) string {
	if len(sp.recvs) == 0 {
		if len(sp.sends) > 0 {
			return fmt.Sprintf("state %q expects no message: %s sends next", sp.name, pr.role)
		}
		return fmt.Sprintf("state %q expects no message", sp.name)
	}
	var parts []string
	for _, t := range sp.recvs {
		s := fmt.Sprintf("%s from %s", pr.msgs[t.msg].name, pr.roles[t.peer])
		if !slices.Contains(parts, s) {
			parts = append(parts, s)
		}
	}
	return fmt.Sprintf("state %q allows %s", sp.name, joinList(parts))
}

func joinList(parts []string) string {
	switch len(parts) {
	case 0:
		return "nothing"
	case 1:
		return parts[0]
	}
	out := ""
	for i, s := range parts {
		switch {
		case i == 0:
		case i == len(parts)-1:
			out += " or "
		default:
			out += ", "
		}
		out += s
	}
	return out
}

type matchPredicate struct{ prog *decision.Expression }

func (m matchPredicate) Match(msg *forms.Message) (bool, error) {
	env := decision.Env{Content: msg.Content}
	if m.prog.ReadsMsg() {
		env.Msg = msg.Envelope()
	}
	return m.prog.Bool(&env)
}

// Policy returns the policy the program was compiled from.
func (pr *Program) Policy() *policy.Policy { return pr.policy }

// Role returns the role the program plays.
func (pr *Program) Role() string { return pr.role }

// Fingerprint returns the policy's fingerprint.
func (pr *Program) Fingerprint() string { return pr.fingerprint }

// States returns the names of the program's (local) states; the first is
// the initial state.
func (pr *Program) States() []string {
	out := make([]string, len(pr.states))
	for i, s := range pr.states {
		out[i] = s.name
	}
	return out
}

// HasState reports whether the program has a local state called name.
func (pr *Program) HasState(name string) bool {
	_, ok := pr.stateIndex[name]
	return ok
}

// ManyRole returns the many role this program keeps one session per peer
// of, or "".
func (pr *Program) ManyRole() string {
	if pr.manyRole < 0 {
		return ""
	}
	return pr.roles[pr.manyRole]
}

// Peers returns the roles this program's role exchanges messages with.
func (pr *Program) Peers() []string {
	var out []string
	for _, s := range pr.states {
		for _, list := range [][]transProg{s.sends, s.recvs} {
			for _, t := range list {
				if r := pr.roles[t.peer]; !slices.Contains(out, r) {
					out = append(out, r)
				}
			}
		}
	}
	return out
}

// Opens reports whether m starts a conversation of this program: a
// message the program's initial state accepts from a peer, or, for a role
// with two or more peers, one its handler would hold there for a later
// state (see MaxHeld).
func (pr *Program) Opens(m *forms.Message) bool {
	for _, t := range pr.states[pr.initial].recvs {
		if pr.msgs[t.msg].form.Matches(m) {
			return true
		}
	}
	return pr.opensLater(m)
}

// RespondsFirst reports whether the program's role receives, rather than
// sends, the policy's first message: a host accepts new conversations
// with such a program.
func (pr *Program) RespondsFirst() bool {
	st := &pr.states[pr.initial]
	return len(st.recvs) > 0 && len(st.sends) == 0
}

// Receives reports whether the local role may receive a message in state:
// a decision point that also waits for a peer may be left undecided.
func (pr *Program) Receives(state string) bool {
	st, ok := pr.stateIndex[state]
	return ok && len(pr.states[st].recvs) > 0
}

// literalVars returns the variables sets leaves in a session that had
// none set, when every one of sets is a literal; nil otherwise.
func literalVars(sets []setProg) map[string]any {
	if len(sets) == 0 {
		return nil
	}
	m := make(map[string]any, len(sets))
	for _, set := range sets {
		if !set.isLit {
			return nil
		}
		m[set.name] = set.lit
	}
	return m
}

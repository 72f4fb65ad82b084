package explore

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/policy"
)

// StepKind says what a witness step is.
type StepKind string

// Step kinds.
const (
	StepSend    StepKind = "send"    // an agent sends a message
	StepReceive StepKind = "receive" // an agent receives (or rejects) one
	StepTimer   StepKind = "timer"   // a timer fires
	StepChild   StepKind = "child"   // a child policy ends
)

// Offset is a time since the start of an exploration's conversation. It
// encodes as a Go duration ("30s").
type Offset time.Duration

// String renders the offset as a Go duration.
func (o Offset) String() string { return time.Duration(o).String() }

// MarshalText renders the offset as String does.
func (o Offset) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// UnmarshalText reads a Go duration.
func (o *Offset) UnmarshalText(text []byte) error {
	d, err := time.ParseDuration(string(text))
	if err != nil {
		return err
	}
	*o = Offset(d)
	return nil
}

// Step is one step of a witness. Agent takes it, playing Role; Serial
// numbers the messages of the witness, so that a receive names its send.
type Step struct {
	Kind    StepKind `json:"kind"`
	Agent   string   `json:"agent"`
	Role    string   `json:"role"`
	Peer    string   `json:"peer,omitempty"`
	Message string   `json:"message,omitempty"`
	Serial  int      `json:"n,omitempty"`
	Timer   string   `json:"timer,omitempty"`
	// Commitment names the commitment whose deadline Timer is.
	Commitment string `json:"commitment,omitempty"`
	Child      string `json:"child,omitempty"`
	Outcome    string `json:"outcome,omitempty"`
	// From is the agent's state before the step, State after it.
	From  string `json:"from,omitempty"`
	State string `json:"state,omitempty"`
	// Rejected is the protocol error code the receiver rejected the
	// message with.
	Rejected string     `json:"rejected,omitempty"`
	At       Offset     `json:"at"`
	Pos      policy.Pos `json:"-"`
}

// String renders the step for a witness line.
func (s Step) String() string {
	q := policy.Quote
	switch s.Kind {
	case StepSend:
		return fmt.Sprintf("%s sends %s #%d to %s", q(s.Agent), q(s.Message), s.Serial, q(s.Peer))
	case StepReceive:
		if s.Rejected != "" {
			return fmt.Sprintf("%s rejects %s #%d from %s in state %s (%s)", q(s.Agent), q(s.Message), s.Serial, q(s.Peer), q(s.State), s.Rejected)
		}
		return fmt.Sprintf("%s receives %s #%d from %s, now in %s", q(s.Agent), q(s.Message), s.Serial, q(s.Peer), q(s.State))
	case StepTimer:
		what := "timer " + q(s.Timer)
		if s.Commitment != "" {
			what += " of commitment " + q(s.Commitment)
		}
		return fmt.Sprintf("at %s %s fires at %s in %s, now in %s", s.At, what, q(s.Agent), q(s.From), q(s.State))
	case StepChild:
		return fmt.Sprintf("child policy %s of %s ends with %s, now in %s", q(s.Child), q(s.Agent), q(s.Outcome), q(s.State))
	}
	return string(s.Kind)
}

// Finding is a problem the exploration found: a diagnostic (whose Trace
// is the witness as text) and the witness's steps.
type Finding struct {
	Diagnostic policy.Diagnostic
	Witness    []Step
}

// Mermaid renders the witness as a Mermaid sequence diagram: a message
// as an arrow when it is sent and a note when it is received (so that
// messages that cross show as such), timers and child policies as
// notes.
func (f *Finding) Mermaid() string {
	var b strings.Builder
	b.WriteString("sequenceDiagram\n")
	ids := map[string]string{}
	id := func(agent string) string {
		if v, ok := ids[agent]; ok {
			return v
		}
		v := fmt.Sprintf("a%d", len(ids)+1)
		ids[agent] = v
		fmt.Fprintf(&b, "  participant %s as %s\n", v, mermaidText(agent))
		return v
	}
	for _, s := range f.Witness {
		id(s.Agent)
		if s.Peer != "" {
			id(s.Peer)
		}
	}
	for _, s := range f.Witness {
		a := ids[s.Agent]
		switch s.Kind {
		case StepSend:
			fmt.Fprintf(&b, "  %s-)%s: #%d %s\n", a, ids[s.Peer], s.Serial, mermaidText(s.Message))
		case StepReceive:
			if s.Rejected != "" {
				fmt.Fprintf(&b, "  Note over %s: rejects #%d %s (%s)\n", a, s.Serial, mermaidText(s.Message), s.Rejected)
			} else {
				fmt.Fprintf(&b, "  Note over %s: receives #%d %s\n", a, s.Serial, mermaidText(s.Message))
			}
		case StepTimer:
			fmt.Fprintf(&b, "  Note over %s: %s timer %s fires\n", a, s.At, mermaidText(s.Timer))
		case StepChild:
			fmt.Fprintf(&b, "  Note over %s: child %s ends %s\n", a, mermaidText(s.Child), mermaidText(s.Outcome))
		}
	}
	return b.String()
}

// mermaidText keeps s to one line Mermaid reads as text, and bounded.
func mermaidText(s string) string {
	s = policy.Quote(s)
	s = strings.Trim(s, `"`)
	return strings.NewReplacer(";", ",", "#", "no.", ":", " ", "\\", "/", "\"", "'").Replace(s)
}

// record keeps a finding unless one with the same key was found first
// (breadth first, so with a witness as short or shorter).
func (x *explorer) record(key string, d policy.Diagnostic, w []Step) {
	if _, ok := x.found[key]; ok {
		return
	}
	if len(x.rep.Findings) >= maxFindings {
		x.rep.Omitted++
		x.found[key] = -1
		return
	}
	d.Severity = severity(d.Code)
	if !d.Pos.IsValid() {
		d.Pos = x.p.Pos
	}
	for _, s := range w {
		d.Trace = append(d.Trace, s.String())
	}
	x.found[key] = len(x.rep.Findings)
	x.rep.Findings = append(x.rep.Findings, Finding{Diagnostic: d, Witness: w})
}

// firstName returns the first global state a local state name stands
// for ("a|b" stands for a and b).
func firstName(local string) string {
	name, _, _ := strings.Cut(local, "|")
	return name
}

// statePos returns the position of the global state a local state name
// stands for first, or the zero position.
func (x *explorer) statePos(local string) policy.Pos {
	if st := x.p.State(firstName(local)); st != nil {
		return st.Pos
	}
	return policy.Pos{}
}

// stateOf names the state of h: its one session's, or each session's
// as peer=state.
func (x *explorer) stateOf(h *engine.Handler) string {
	peers := h.Sessions()
	if peers == nil {
		return h.State("")
	}
	parts := make([]string, len(peers))
	for k, p := range peers {
		parts[k] = p + "=" + h.State(p)
	}
	return strings.Join(parts, ",")
}

// sessionState returns the state of the session with peer out of a
// state as stateOf names it.
func sessionState(state, peer string) string {
	if !strings.Contains(state, "=") {
		return state
	}
	for _, part := range strings.Split(state, ",") {
		if p, st, ok := strings.Cut(part, "="); ok && p == peer {
			return st
		}
	}
	return state
}

// choiceFor returns the choice ans made for the message to receiver.
func choiceFor(ans *decision.Answer, receiver string) string {
	if ans == nil {
		return ""
	}
	if ans.Choice != "" {
		return ans.Choice
	}
	return ans.Sessions[receiver].Choice
}

// sentBy returns the message type and the transition position of a
// message instance i's role sent with choice (or, without one, with
// performative perf) in the state called point.
func (x *explorer) sentBy(i int, point, choice, perf string) (string, policy.Pos) {
	role := x.insts[i].role
	for _, name := range strings.Split(point, "|") {
		st := x.p.State(name)
		if st == nil {
			continue
		}
		for _, t := range st.Transitions {
			if t.Kind != policy.SendMessage || t.From.Name != role {
				continue
			}
			mt := x.p.Message(t.Message.Name)
			if choice != "" && t.MessageKey() == choice || choice == "" && mt != nil && mt.Performative == perf {
				return t.Message.Name, t.Pos
			}
		}
	}
	return perf, policy.Pos{}
}

// childKey names a run of a child policy: the policy and the agents it
// binds, the same for every parent of the run.
func childKey(e *engine.LoadCPEvent) string {
	pairs := make([]string, 0, len(e.Roles))
	for r, a := range e.Roles {
		pairs = append(pairs, r+"="+a)
	}
	slices.Sort(pairs)
	return e.Policy + "(" + strings.Join(pairs, ",") + ")"
}

// errorName returns the name of a protocol error code.
func errorName(code engine.ErrorCode) string {
	for _, ci := range engine.ErrorCodes {
		if ci.Code == code {
			return string(code) + " " + ci.Name
		}
	}
	return string(code)
}

// orphan reports a message the receiver rejected: late (CP104) after its
// timer fired, else orphaned (CP102).
func (x *explorer) orphan(nd *node, steps []Step, f flight, to int, before string, pe engine.ProtocolErrorEvent) {
	q := policy.Quote
	w := witness(nd, steps)
	recv, sender := x.insts[to], x.insts[f.from]
	local := sessionState(before, sender.agent)
	if pe.Code == engine.CodeBudget {
		x.overBudget(nd, steps, to, pe)
		return
	}
	if pe.Code == engine.CodeLate {
		timer, from := "", ""
		for k := len(w) - 1; k >= 0; k-- {
			if s := w[k]; s.Kind == StepTimer && s.Agent == recv.agent {
				timer, from = s.Timer, sessionState(s.From, sender.agent)
				break
			}
		}
		when := fmt.Sprintf("after its timer %s fired in state %s", q(timer), q(from))
		if timer == "" {
			// Another timer due at the same time fired first: the message
			// arrives at the deadline, before the receiver's own timer.
			from = sessionState(pe.State, sender.agent)
			when = fmt.Sprintf("in state %s at its deadline", q(from))
		}
		d := policy.Diagnostic{Code: CodeTimeoutRace, Pos: f.pos,
			Message: fmt.Sprintf("%s sent by %s can reach %s %s: sent in time, it is rejected as late (%s) and the two roles go on as if it had not been sent; if it matters, have the timeout lead to a state that still accepts it",
				q(f.name), q(sender.role), q(recv.role), when, errorName(pe.Code))}
		d.Related = x.timeoutRelated(from, timer)
		x.record(fmt.Sprintf("%s|%s|%s", CodeTimeoutRace, recv.role, f.name), d, w)
		return
	}
	d := policy.Diagnostic{Code: CodeOrphanMessage, Pos: f.pos,
		Message: fmt.Sprintf("%s sent by %s can reach %s in state %s, where nothing accepts it: it is rejected (%s) and never taken; accept it there, or make sure it cannot be sent then",
			q(f.name), q(sender.role), q(recv.role), q(local), errorName(pe.Code))}
	if pos := x.statePos(local); pos.IsValid() {
		d.Related = []policy.Related{{Pos: pos, Message: fmt.Sprintf("state %s of %s", q(local), q(recv.role))}}
	}
	x.record(fmt.Sprintf("%s|%s|%s", CodeOrphanMessage, recv.role, f.name), d, w)
}

// timeoutRelated points at the on-timeout transition of timer in the
// state called local, or at the state.
func (x *explorer) timeoutRelated(local, timer string) []policy.Related {
	for _, name := range strings.Split(local, "|") {
		st := x.p.State(name)
		if st == nil {
			continue
		}
		for _, t := range st.Transitions {
			if t.Kind == policy.OnTimeout && t.Timer.Name == timer {
				return []policy.Related{{Pos: t.Pos, Message: "the timeout"}}
			}
		}
		return []policy.Related{{Pos: st.Pos, Message: "state " + policy.Quote(name)}}
	}
	return nil
}

// openCommitment reports a commitment instance i's handler closed, still
// detached, when it reached a terminal state.
func (x *explorer) openCommitment(nd *node, steps []Step, i int, e engine.CommitmentEvent) {
	q := policy.Quote
	state := sessionState(nd.w.states[i], e.Session)
	for _, s := range steps {
		if s.Agent == x.insts[i].agent && s.State != "" {
			state = sessionState(s.State, e.Session)
		}
	}
	d := policy.Diagnostic{Code: CodeOpenCommitment,
		Message: fmt.Sprintf("commitment %s can still be detached when %s reaches terminal state %s, before any deadline of it: it ends violated by the end of the conversation, not by its debtor; discharge, cancel or release it on the way there",
			q(e.Name), q(x.insts[i].role), q(state))}
	if c := x.p.Commitment(e.Name); c != nil {
		d.Pos = c.Pos
	}
	if pos := x.statePos(state); pos.IsValid() {
		d.Related = []policy.Related{{Pos: pos, Message: "state " + q(state)}}
	}
	x.record(fmt.Sprintf("%s|%s|%s", CodeOpenCommitment, e.Name, x.insts[i].role), d, witness(nd, steps))
}

// stuck reports a world where nothing can happen while some handler has
// not ended: a deadlock, or a role left unfinished.
func (x *explorer) stuck(nd *node) {
	q := policy.Quote
	w := nd.w
	var waiting, ended []int
	for i := range x.insts {
		if w.done[i] {
			ended = append(ended, i)
		} else {
			waiting = append(waiting, i)
		}
	}
	if len(waiting) == 0 {
		return
	}
	var parts, keys []string
	for _, i := range waiting {
		parts = append(parts, fmt.Sprintf("%s in state %s", q(x.insts[i].role), q(w.states[i])))
		keys = append(keys, x.insts[i].role+"="+w.states[i])
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	d := policy.Diagnostic{Pos: x.statePos(w.states[waiting[0]])}
	for _, i := range waiting[1:] {
		if pos := x.statePos(w.states[i]); pos.IsValid() {
			d.Related = append(d.Related, policy.Related{Pos: pos, Message: fmt.Sprintf("state %s of %s", q(w.states[i]), q(x.insts[i].role))})
		}
	}
	if len(ended) == 0 {
		d.Code = CodeDeadlock
		d.Message = fmt.Sprintf("deadlock: %s wait, and nothing they wait for can come (no message in flight, no decision open, no timer armed); have one of them send, or arm a timer", strings.Join(parts, " and "))
	} else {
		var names []string
		for _, i := range ended {
			if r := q(x.insts[i].role); !slices.Contains(names, r) {
				names = append(names, r)
			}
		}
		d.Code = CodeUnfinishedRole
		d.Message = fmt.Sprintf("%s still waits after %s ended, and nothing it waits for can come; tell it the conversation is over, or arm a timer", strings.Join(parts, " and "), strings.Join(names, " and "))
	}
	x.record(string(d.Code)+"|"+strings.Join(keys, ","), d, witness(nd, nil))
}

// waits reports each role of world nd that waits for a message with no
// timer of its state armed, no decision open and no child running: if
// the message never comes, it waits forever. A role waiting in its
// initial state (for the message that opens the conversation) and
// sessions at a join (which wait for each other) are left out.
func (x *explorer) waits(nd *node) {
	w := nd.w
	for i, in := range x.insts {
		if w.done[i] || slices.ContainsFunc(w.asks, func(a ask) bool { return a.inst == i }) || slices.ContainsFunc(w.loads, func(l load) bool { return l.inst == i }) {
			continue
		}
		for _, part := range sessionsOf(w.states[i]) {
			st := x.p.State(firstName(part.state))
			if part.state == "" || part.state == in.prog.States()[0] || !in.prog.Receives(part.state) || st != nil && st.Join {
				continue
			}
			bounded := slices.ContainsFunc(w.timers, func(t armed) bool {
				return t.inst == i && t.ev.Commitment == "" && t.ev.Session == part.peer
			})
			if bounded {
				continue
			}
			q := policy.Quote
			d := policy.Diagnostic{Code: CodeUnboundedWait, Pos: x.statePos(part.state),
				Message: fmt.Sprintf("%s only waits for a message in state %s, with no timer armed: if the message never comes, it waits forever; arm a timer there with an on-timeout transition", q(in.role), q(part.state))}
			x.record(fmt.Sprintf("%s|%s|%s", CodeUnboundedWait, in.role, part.state), d, witness(nd, nil))
		}
	}
}

// session is one session's state out of a state as stateOf names it.
type session struct {
	peer, state string
}

// sessionsOf splits a state as stateOf names it into its sessions.
func sessionsOf(state string) []session {
	if !strings.Contains(state, "=") {
		return []session{{state: state}}
	}
	var out []session
	for _, part := range strings.Split(state, ",") {
		if p, st, ok := strings.Cut(part, "="); ok {
			out = append(out, session{peer: p, state: st})
		}
	}
	return out
}

// overBudget reports a run that reaches the policy's run budget: instance
// i's handler refused a message (received, or its decision's) with PE017.
func (x *explorer) overBudget(nd *node, steps []Step, i int, pe engine.ProtocolErrorEvent) {
	q := policy.Quote
	d := policy.Diagnostic{Code: CodeBudget,
		Message: fmt.Sprintf("a run reaches the run budget: %s, in state %s, refuses a message (PE017: %s); end the conversation before the budget is spent, or raise it",
			q(x.insts[i].role), q(pe.State), pe.Reason)}
	if b := x.p.Budget; b != nil {
		d.Pos = b.Pos
	}
	if pos := x.statePos(pe.State); pos.IsValid() {
		d.Related = []policy.Related{{Pos: pos, Message: "state " + q(pe.State)}}
	}
	x.record(fmt.Sprintf("%s|%s|%s", CodeBudget, x.insts[i].role, pe.State), d, witness(nd, steps))
}

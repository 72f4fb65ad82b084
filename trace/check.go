package trace

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policy"
)

// Finding is one thing Check found, at a line of the trace. Agent is the
// agent whose handler (or binding) found it and Role the role it plays;
// both are empty for a format problem, and Role for an agent that plays
// no role. Its JSON form always has all six keys, "line", "severity"
// ("error", "warning" or "info"), "code", "message", "agent" and "role",
// so that a consumer never has to tell a missing key from an empty one.
type Finding struct {
	Line     int             `json:"line"`
	Severity policy.Severity `json:"severity"`
	Code     string          `json:"code"`
	Message  string          `json:"message"`
	Agent    string          `json:"agent"`
	Role     string          `json:"role"`
}

// CodeCommitment is the code of a finding that a commitment was violated
// (a warning: the protocol allowed it, but an obligation went unmet).
const CodeCommitment = "TR005"

// CodeUnfinished is the code of the info finding that an agent's
// conversation had not ended when the trace did.
const CodeUnfinished = "TR006"

// CodeTimerNotFired is the code of the error finding that a timer line
// says a timer fired that the policy does not fire then: the agent has no
// timer of that name due at the line's time in that conversation, or
// plays no part in it.
const CodeTimerNotFired = "TR012"

// CodeOmitted is the code of the info finding that output leaves
// something out to stay bounded: Check's summary lists the outcomes of at
// most MaxOutcomes agents, and cpvalidate trace prints at most -max
// findings.
const CodeOmitted = "TR011"

// Bounds on the summary, so that it stays small however many agents and
// conversations a trace has.
const (
	// MaxOutcomes is the most agents Summary.Outcomes lists: the first
	// ones to take part. Check reports the others as one TR011 info
	// finding.
	MaxOutcomes = 100
	// MaxConversationOutcomes is the most "conversation=outcome" pairs
	// an agent's outcome lists; "… and N more" stands for the rest.
	MaxConversationOutcomes = 10
)

// Summary is the verdict on a trace.
type Summary struct {
	// Conforms is true when no finding is an error.
	Conforms bool `json:"conforms"`
	// Complete is true when every agent's handler reached a terminal state.
	Complete bool `json:"complete"`
	// Outcomes maps each agent to its conversation's outcome ("" when it
	// did not end); an agent in several conversations gets them as
	// "conversation=outcome" pairs joined by ",", at most
	// MaxConversationOutcomes of them and then "… and N more". It lists
	// at most MaxOutcomes agents.
	Outcomes map[string]string `json:"outcomes"`
}

// Result is what Check found.
type Result struct {
	Findings []Finding
	Summary  Summary
}

// BindingError says the trace's agents cannot be bound to roles without
// more -bind flags.
type BindingError struct{ Msg string }

func (e *BindingError) Error() string { return e.Msg }

// Options configure Check.
type Options struct {
	// Bind maps roles to the agents playing them. Agents left out are
	// bound by what the trace shows: without Bind, the first message
	// line's sender plays the policy's initiating role (when that line
	// opens a conversation); the others play the one role left, when
	// that is unambiguous (a role that is not many takes one agent).
	// Once every role is bound, agents left out play none: what they
	// send is an error finding. A role that is not many is played by one
	// of its agents in each conversation, the first to take part in it.
	// Timer lines bind no one.
	Bind map[string][]string
	// Resolve resolves child policies for compiling.
	Resolve policy.Resolver
	// MaxSteps bounds the inputs Check feeds the handlers: each line's
	// message to its sender's handler and to each receiver's, and each
	// timer that fires. Without a bound, a policy whose timers fire again
	// and again without time passing would keep Check busy for ever, and
	// one with short timers a trace whose times are years apart. At the
	// first line that finds the handlers past the bound, Check stops with
	// a TR007 error finding: that line and the ones after it are not
	// checked. 0 means DefaultMaxSteps.
	MaxSteps int
}

// DefaultMaxSteps is the most inputs Check feeds the handlers unless
// Options.MaxSteps says otherwise: a few seconds of work, and more than
// the largest trace Read accepts (DefaultLimits.MaxBytes) needs when its
// timers fire a few times per line.
const DefaultMaxSteps = 10_000_000

// Check checks a trace (read by Read) against p. problems are Read's
// format problems; they become findings. The error is for a policy that
// does not compile or agents that cannot be bound (a *BindingError).
//
// Check hosts one observe-mode handler per agent and conversation on an
// engine.Driver. Each message line is fed to its sender's handler as a
// message sent and to each receiver's as a message received; before it,
// the driver's clock moves to the line's time, firing the timers due by
// then. A timer line moves the clock in the same way, and is a
// CodeTimerNotFired finding unless the named agent's timer of that name
// fired in that conversation at exactly the time the line gives (each
// firing answers one timer line, among the last RecentFirings).
func Check(p *policy.Policy, entries []Entry, problems []Problem, opts Options) (*Result, error) {
	c := &checker{p: p, convs: map[string]*conversation{}, programs: map[string]*engine.Program{}, fired: newFirings(RecentFirings), maxSteps: opts.MaxSteps}
	if c.maxSteps <= 0 {
		c.maxSteps = DefaultMaxSteps
	}
	var copts []engine.CompileOption
	if opts.Resolve != nil {
		copts = append(copts, engine.WithPolicies(opts.Resolve))
	}
	for _, r := range p.Roles {
		prog, ds := engine.Compile(p, r.Name, copts...)
		if prog == nil {
			return nil, fmt.Errorf("policy %s does not compile for role %s:\n%v", policy.Quote(p.Name), policy.Quote(r.Name), ds)
		}
		c.programs[r.Name] = prog
	}
	roles, err := bindRoles(p, entries, opts.Bind)
	if err != nil {
		return nil, err
	}
	c.roles = roles
	for _, pr := range problems {
		// Most are errors; a time going back is a warning, since a journal
		// written by several goroutines at once can interleave lines
		// slightly out of time order.
		c.add(Finding{Line: pr.Line, Severity: severityOf(pr.Code), Code: pr.Code, Message: pr.Message})
	}
	start := Origin
	if len(entries) > 0 {
		start = entries[0].At
	}
	c.d = engine.NewDriver(start, engine.WithObserver(c.observe))
	for i := range entries {
		if !c.entry(&entries[i]) {
			break
		}
	}
	return c.result(), nil
}

type checker struct {
	p        *policy.Policy
	programs map[string]*engine.Program
	roles    map[string]string // agent → role
	convs    map[string]*conversation
	order    []string // conversation ids in the order they opened
	d        *engine.Driver
	findings []Finding
	line     int
	// steps counts the inputs fed to the handlers, up to maxSteps.
	steps    int
	maxSteps int
	// fired holds the last timers that fired, for timer lines to answer.
	fired *firings
	msg   engine.MessageEvent // reused: handlers keep no input event
}

type conversation struct {
	id string
	// agents are those with a handler in it, in the order they joined.
	agents []string
	// players maps each role that is not many to the one agent playing
	// it in this conversation.
	players map[string]string
	// outsiders are the agents reported as playing no part in it.
	outsiders map[string]bool
}

func (c *checker) add(f Finding) { c.findings = append(c.findings, f) }

// initiators returns the roles that may send in the policy's initial state.
func initiators(p *policy.Policy) []string {
	var out []string
	if s := p.State(p.Initial.Name); s != nil {
		for _, t := range s.Transitions {
			if t.Kind == policy.SendMessage && !slices.Contains(out, t.From.Name) {
				out = append(out, t.From.Name)
			}
		}
	}
	return out
}

// bindRoles maps the agents of the trace to roles: the agents bind names
// keep their roles; without bind, the first line's sender plays the
// initiating role when that line opens a conversation; the agents left
// play the one role left, when that is unambiguous. Once every role is
// played, agents still left play none (Check reports what they send as
// findings). Anything else is a *BindingError that names the -bind
// needed.
func bindRoles(p *policy.Policy, entries []Entry, bind map[string][]string) (map[string]string, error) {
	roles := map[string]string{}
	var roleNames []string
	for _, r := range p.Roles {
		roleNames = append(roleNames, r.Name)
	}
	boundRoles := make([]string, 0, len(bind))
	for role := range bind {
		boundRoles = append(boundRoles, role)
	}
	slices.Sort(boundRoles) // report the same problem first every time
	for _, role := range boundRoles {
		if p.Role(role) == nil {
			hint := ""
			if near := policy.Suggest(role, roleNames); near != "" {
				hint = fmt.Sprintf("; did you mean %s?", policy.Quote(near))
			}
			return nil, &BindingError{fmt.Sprintf("-bind %s=...: policy %s has no role %s%s (roles: %s)", policy.Clip(role), policy.Quote(p.Name), policy.Quote(role), hint, clipList(roleNames, ", "))}
		}
		for _, a := range bind[role] {
			if r, ok := roles[a]; ok && r != role {
				return nil, &BindingError{fmt.Sprintf("-bind: agent %s is bound to both %s and %s", policy.Quote(a), policy.Clip(r), policy.Clip(role))}
			}
			roles[a] = role
		}
	}
	var agents []string
	seen := map[string]bool{}
	note := func(a string) {
		if !seen[a] {
			seen[a] = true
			agents = append(agents, a)
		}
	}
	var first *Entry // the first message line
	for i := range entries {
		m := entries[i].Message
		if m == nil {
			continue // a timer line binds no one
		}
		if first == nil {
			first = &entries[i]
		}
		note(m.Sender)
		for _, r := range m.Receivers {
			note(r)
		}
	}
	var unbound []string
	for _, a := range agents {
		if _, ok := roles[a]; !ok {
			unbound = append(unbound, a)
		}
	}
	if len(unbound) == 0 {
		return roles, nil
	}
	if len(bind) == 0 {
		init := initiators(p)
		if len(init) != 1 {
			return nil, &BindingError{fmt.Sprintf("cannot tell which agents play which role: policy %s has no single initiating role; add -bind ROLE=agent for %s", policy.Quote(p.Name), policy.QuoteList(unbound, maxListed))}
		}
		m := first.Message // an agent is unbound, so there is a message line
		if !opensAs(p, init[0], m.Performative) {
			return nil, &BindingError{fmt.Sprintf("cannot tell who plays %s: the trace's first line (line %d, %s from %s) is not a message %s opens %s with (%s); add -bind %s=AGENT",
				policy.Clip(init[0]), first.Line, policy.Clip(m.Performative), policy.Quote(m.Sender), policy.Clip(init[0]), policy.Quote(p.Name), clipList(openers(p, init[0]), " or "), policy.Clip(init[0]))}
		}
		roles[m.Sender] = init[0]
		unbound = slices.DeleteFunc(unbound, func(a string) bool { return a == m.Sender })
	}
	if len(unbound) == 0 {
		return roles, nil
	}
	var free []string
	used := map[string]bool{}
	for _, r := range roles {
		used[r] = true
	}
	for _, r := range p.Roles {
		if !used[r.Name] {
			free = append(free, r.Name)
		}
	}
	switch {
	case len(free) == 0:
		return roles, nil // every role is played: the rest are outsiders
	case len(free) > 1:
		return nil, &BindingError{fmt.Sprintf("cannot tell which role %s play%s (candidates: %s); add -bind ROLE=agent[,agent...]", policy.QuoteList(unbound, maxListed), plural(len(unbound)), clipList(free, ", "))}
	case len(unbound) > 1 && !p.Role(free[0]).Many:
		return nil, &BindingError{fmt.Sprintf("cannot tell who plays %s: %s play it, but it is not a many role; add -bind %s=AGENT[,AGENT...] naming the agents that play it (each in its own conversations)",
			policy.Clip(free[0]), wouldAll(unbound), policy.Clip(free[0]))}
	}
	for _, a := range unbound {
		roles[a] = free[0]
	}
	return roles, nil
}

// maxListed is the most names a message lists; it says how many more
// there are.
const maxListed = 10

// wouldAll renders agents as "a and b would both", "a, b and c would
// all", or, for more than maxListed, "a, b and 12 more would all".
func wouldAll(agents []string) string {
	if len(agents) > maxListed {
		return policy.QuoteList(agents, maxListed) + " would all"
	}
	q := make([]string, len(agents))
	for i, a := range agents {
		q[i] = policy.Quote(a)
	}
	last := len(q) - 1
	if last == 1 {
		return q[0] + " and " + q[1] + " would both"
	}
	return strings.Join(q[:last], ", ") + " and " + q[last] + " would all"
}

// clipList joins names from the policy (roles, performatives), shown
// bare, with sep: at most maxListed of them, each cut by policy.Clip, and
// then how many more there are.
func clipList(names []string, sep string) string {
	shown := make([]string, min(len(names), maxListed))
	for i := range shown {
		shown[i] = policy.Clip(names[i])
	}
	out := strings.Join(shown, sep)
	if more := len(names) - len(shown); more > 0 {
		out += fmt.Sprintf(" and %d more", more)
	}
	return out
}

// openers returns the performatives role may open a conversation of p
// with.
func openers(p *policy.Policy, role string) []string {
	var out []string
	if s := p.State(p.Initial.Name); s != nil {
		for _, t := range s.Transitions {
			if t.Kind != policy.SendMessage || t.From.Name != role {
				continue
			}
			if mt := p.Message(t.Message.Name); mt != nil && !slices.Contains(out, mt.Performative) {
				out = append(out, mt.Performative)
			}
		}
	}
	return out
}

// opensAs reports whether role may open a conversation of p with a
// message of performative perf.
func opensAs(p *policy.Policy, role, perf string) bool {
	return slices.Contains(openers(p, role), perf)
}

func plural(n int) string {
	if n == 1 {
		return "s"
	}
	return ""
}

// handler makes sure agent has a handler in conversation cv, adding and
// starting one at the driver's time when it has none, and reports
// whether it has. An agent that plays no part in cv has none: that is a
// finding, once per conversation.
func (c *checker) handler(cv *conversation, agent string) bool {
	if c.d.Handler(agent, cv.id) != nil {
		return true
	}
	role, ok := c.roles[agent]
	if !ok {
		if !cv.outsiders[agent] {
			cv.outsiders[agent] = true
			c.add(Finding{Line: c.line, Severity: policy.SeverityError, Code: string(engine.CodeUnknownAgent), Agent: agent,
				Message: fmt.Sprintf("agent %s plays no role of %s; bind it with -bind ROLE=%s", policy.Quote(agent), policy.Quote(c.p.Name), policy.Clip(agent))})
		}
		return false
	}
	// A role that is not many is played by one agent in each
	// conversation: the first one of its agents to take part.
	if r := c.p.Role(role); r != nil && !r.Many {
		if other, ok := cv.players[role]; ok && other != agent {
			if !cv.outsiders[agent] {
				cv.outsiders[agent] = true
				c.add(Finding{Line: c.line, Severity: policy.SeverityError, Code: string(engine.CodeUnknownAgent), Agent: agent, Role: role,
					Message: fmt.Sprintf("%s is not an agent of conversation %s: %s plays %s in it, and %s is played by one agent in each conversation", policy.Quote(agent), policy.Quote(cv.id), policy.Quote(other), policy.Clip(role), policy.Clip(role))})
			}
			return false
		}
		cv.players[role] = agent
	}
	h, err := c.programs[role].NewHandler(cv.id, agent, engine.WithMode(engine.Observe))
	if err == nil {
		err = c.d.Add(h)
	}
	if err == nil {
		cv.agents = append(cv.agents, agent)
		err = c.d.Start(agent, cv.id)
	}
	return c.done(agent, err)
}

// opens reports whether m can open a conversation: its sender's role may
// send it in the initial state.
func (c *checker) opens(m *forms.Message) bool {
	role, ok := c.roles[m.Sender]
	return ok && opensAs(c.p, role, m.Performative)
}

// openingText says how a conversation of the policy opens: "request from
// Initiator".
func (c *checker) openingText() string {
	var parts []string
	for _, r := range initiators(c.p) {
		parts = append(parts, clipList(openers(c.p, r), " or ")+" from "+policy.Clip(r))
	}
	return strings.Join(parts, ", or ")
}

// entry checks one line, and reports false when checking stops there.
func (c *checker) entry(e *Entry) bool {
	c.line = e.Line
	if !c.advance(e.At) {
		return false
	}
	switch {
	case e.Message != nil:
		c.message(e)
	case e.Timer != nil:
		c.timerLine(e)
	}
	return true
}

// advance moves the driver's clock to t (never back), firing the timers
// due by then. It calls the driver again while the driver stops at its
// step limit with work left, and reports false, with a TR007 finding,
// once the handlers have taken more than maxSteps inputs.
func (c *checker) advance(t time.Time) bool {
	if now := c.d.Now(); t.Before(now) {
		t = now
	}
	for {
		err := c.d.AdvanceTo(t)
		if c.steps > c.maxSteps {
			c.add(Finding{Line: c.line, Severity: severityOf(CodeLimit), Code: CodeLimit,
				Message: fmt.Sprintf("checking stops here: the handlers have taken more than the limit of %d inputs (messages, and timers that fired), as when timeouts lead from state to state without time passing; this line and the ones after it are not checked", c.maxSteps)})
			return false
		}
		if !errors.Is(err, engine.ErrStepLimit) {
			c.done("", err)
			return true
		}
	}
}

// done ends a call of the driver made for agent: it drops what the driver
// could not carry out (the handlers observe, so they send nothing, and
// child policies are not run), and turns an error into a finding. It
// reports whether there was none.
func (c *checker) done(agent string, err error) bool {
	c.d.TakeUnrouted()
	if err != nil {
		c.add(Finding{Line: c.line, Severity: policy.SeverityError, Code: string(engine.CodeUnexpected), Agent: agent, Role: c.roles[agent], Message: err.Error()})
	}
	return err == nil
}

// message checks a message line: a send by its sender and a receipt by
// each receiver.
func (c *checker) message(e *Entry) {
	m := e.Message
	cv := c.convs[m.ConversationID]
	if cv == nil {
		if !c.opens(m) {
			what := "conversation " + policy.Quote(m.ConversationID)
			if m.ConversationID == "" {
				what = "a conversation"
			}
			c.add(Finding{Line: e.Line, Severity: policy.SeverityError, Code: string(engine.CodeUnexpected), Agent: m.Sender, Role: c.roles[m.Sender],
				Message: fmt.Sprintf("%s from %s is in %s the trace never opened, and cannot open one (a conversation of %s opens with %s)", policy.Clip(m.Performative), policy.Quote(m.Sender), what, policy.Quote(c.p.Name), c.openingText())})
			return
		}
		cv = &conversation{id: m.ConversationID, players: map[string]string{}, outsiders: map[string]bool{}}
		c.convs[m.ConversationID] = cv
		c.order = append(c.order, m.ConversationID)
	}
	if c.handler(cv, m.Sender) {
		c.msg = engine.MessageEvent{At: e.At, Message: m, Sent: true}
		c.done(m.Sender, c.d.Process(m.Sender, cv.id, &c.msg))
	}
	for _, r := range m.Receivers {
		if c.handler(cv, r) {
			c.msg = engine.MessageEvent{At: e.At, Message: m}
			c.done(r, c.d.Process(r, cv.id, &c.msg))
		}
	}
}

// observe turns the driver's steps into findings, counts the inputs and
// notes the timers that fire.
func (c *checker) observe(s engine.Step) {
	switch s.Kind {
	case engine.StepInput:
		c.steps++
		if e, ok := s.Event.(*engine.TimerEvent); ok {
			c.fired.add(firingOf(s.Agent, s.Conversation, e.Name, e.At))
		}
	case engine.StepOutput:
		role := c.roles[s.Agent]
		switch e := s.Event.(type) {
		case *engine.ProtocolErrorEvent:
			c.add(Finding{Line: c.line, Severity: policy.SeverityError, Code: string(e.Code), Agent: s.Agent, Role: role, Message: e.Reason})
		case *engine.CommitmentEvent:
			if e.State == engine.CommitmentViolated {
				c.add(Finding{Line: c.line, Severity: policy.SeverityWarning, Code: CodeCommitment, Agent: s.Agent, Role: role,
					Message: fmt.Sprintf("commitment %s of %s to %s was violated (%s)", policy.Quote(e.Name), policy.Quote(e.Debtor), policy.Quote(e.Creditor), e.Cause)})
			}
		}
	}
}

// timerLine checks a timer line, the clock already moved to its time: a
// timer of that name of the agent's must have fired in that conversation
// at the time the line gives (before the time it is read at, when it
// went back), among the last RecentFirings timers that fired, and not
// answered another timer line.
func (c *checker) timerLine(e *Entry) {
	tl := e.Timer
	if c.fired.answer(firingOf(tl.Agent, tl.Conversation, tl.Name, tl.At)) {
		return
	}
	c.add(Finding{Line: e.Line, Severity: policy.SeverityError, Code: CodeTimerNotFired, Agent: tl.Agent, Role: c.roles[tl.Agent], Message: c.notFired(tl)})
}

// notFired says why timer line tl names no timer that fired.
func (c *checker) notFired(tl *Timer) string {
	said := fmt.Sprintf("the trace says timer %s of %s fired in conversation %s at %s", policy.Quote(tl.Name), policy.Quote(tl.Agent), policy.Quote(tl.Conversation), tl.At.UTC().Format(time.RFC3339Nano))
	var h *engine.Handler
	if c.convs[tl.Conversation] != nil {
		h = c.d.Handler(tl.Agent, tl.Conversation)
	}
	_, bound := c.roles[tl.Agent]
	switch {
	case !bound:
		return fmt.Sprintf("%s, but %s plays no role of %s", said, policy.Quote(tl.Agent), policy.Quote(c.p.Name))
	case c.p.Timer(tl.Name) == nil:
		return fmt.Sprintf("%s, but policy %s has no timer %s", said, policy.Quote(c.p.Name), policy.Quote(tl.Name))
	case c.convs[tl.Conversation] == nil:
		return said + ", but the trace never opened that conversation"
	case h == nil:
		return fmt.Sprintf("%s, but %s takes no part in it", said, policy.Quote(tl.Agent))
	case h.Done():
		return fmt.Sprintf("%s, but the policy fires no such timer then: the conversation had ended with outcome %s", said, outcomeText(h))
	}
	return fmt.Sprintf("%s, but the policy fires no such timer then (in state %s)", said, stateText(h))
}

// outcomeText renders the outcome of a handler that is done.
func outcomeText(h *engine.Handler) string {
	if peers := h.Sessions(); peers != nil {
		return outcomeSummary(h, peers)
	}
	return policy.Clip(h.Outcome(""))
}

// stateText renders the state of a handler that is not done.
func stateText(h *engine.Handler) string {
	if peers := h.Sessions(); peers != nil {
		return "sessions " + sessionStates(h, peers)
	}
	return policy.Clip(h.State(""))
}

func (c *checker) result() *Result {
	res := &Result{Summary: Summary{Complete: true, Outcomes: map[string]string{}}}
	// Each agent's first MaxConversationOutcomes "conversation=outcome"
	// pairs, and how many conversations it took part in.
	type outcomes struct {
		pairs []string
		n     int
	}
	perAgent := map[string]*outcomes{}
	var agents []string
	for _, id := range c.order {
		cv := c.convs[id]
		for _, a := range cv.agents {
			h := c.d.Handler(a, id)
			outcome := ""
			if h.Done() {
				outcome = outcomeText(h)
			} else {
				res.Summary.Complete = false
				c.add(Finding{Line: c.line, Severity: policy.SeverityInfo, Code: CodeUnfinished, Agent: a, Role: c.roles[a],
					Message: fmt.Sprintf("the trace ends before %s finishes conversation %s (in state %s)", policy.Quote(a), policy.Quote(id), stateText(h))})
			}
			o := perAgent[a]
			if o == nil {
				o = &outcomes{}
				perAgent[a] = o
				agents = append(agents, a)
			}
			o.n++
			if len(o.pairs) < MaxConversationOutcomes {
				o.pairs = append(o.pairs, id+"="+outcome)
			}
			if o.n == 1 && len(agents) <= MaxOutcomes {
				res.Summary.Outcomes[a] = outcome
			}
		}
	}
	for i, a := range agents {
		if i == MaxOutcomes {
			c.add(Finding{Line: c.line, Severity: policy.SeverityInfo, Code: CodeOmitted,
				Message: fmt.Sprintf("the summary lists the outcomes of the first %d agents; %d more agents are left out", MaxOutcomes, len(agents)-MaxOutcomes)})
			break
		}
		if o := perAgent[a]; o.n > 1 {
			list := strings.Join(o.pairs, ",")
			if more := o.n - len(o.pairs); more > 0 {
				list += fmt.Sprintf(",… and %d more", more)
			}
			res.Summary.Outcomes[a] = list
		}
	}
	sort.SliceStable(c.findings, func(i, j int) bool { return c.findings[i].Line < c.findings[j].Line })
	res.Findings = c.findings
	res.Summary.Conforms = !slices.ContainsFunc(c.findings, func(f Finding) bool { return f.Severity == policy.SeverityError })
	return res
}

// outcomeSummary renders the outcomes of a handler's sessions as
// "outcome=count" pairs, sorted.
func outcomeSummary(h *engine.Handler, peers []string) string {
	outs := map[string]int{}
	for _, p := range peers {
		outs[h.Outcome(p)]++
	}
	var parts []string
	for o, n := range outs {
		parts = append(parts, fmt.Sprintf("%s=%d", policy.Clip(o), n))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// sessionStates renders the states of a handler's sessions, at most
// maxListed of them, as peer:"state" pairs.
func sessionStates(h *engine.Handler, peers []string) string {
	var parts []string
	for i, p := range peers {
		if i == maxListed {
			parts = append(parts, fmt.Sprintf("and %d more", len(peers)-maxListed))
			break
		}
		parts = append(parts, fmt.Sprintf("%s:%s", policy.Clip(p), policy.Quote(h.State(p))))
	}
	return strings.Join(parts, " ")
}

package explore

import (
	"slices"
	"time"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/policy"
)

// successor is a world one step on, or why the step was not taken.
type successor struct {
	w     *world
	steps []Step
	// blocked: the step would overfill a channel. refused: the handler
	// refused the step (a choice whose guard the made-up content fails).
	blocked, refused bool
}

// successors returns every step the world nd holds allows, in a fixed
// order: deliveries by channel, decisions by handler and choice, timers
// due first, child outcomes.
func (x *explorer) successors(nd *node) ([]successor, error) {
	w := nd.w
	n := len(x.insts)
	var out []successor
	for c, ch := range w.chans {
		if len(ch) == 0 {
			continue
		}
		s, err := x.deliver(nd, c/n, c%n)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	for k := range w.asks {
		for _, a := range x.answers(w, &w.asks[k]) {
			s, err := x.decide(nd, k, a)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
	}
	if len(w.timers) > 0 {
		due := w.timers[0].ev.Deadline
		for _, t := range w.timers[1:] {
			if t.ev.Deadline.Before(due) {
				due = t.ev.Deadline
			}
		}
		for k, t := range w.timers {
			if t.ev.Deadline.Equal(due) {
				s, err := x.fire(nd, k)
				if err != nil {
					return nil, err
				}
				out = append(out, s)
			}
		}
	}
	keys := x.ready(w)
	if len(out) == 0 && len(keys) == 0 {
		// Nothing else can happen: a parent that has not started a child
		// run never will, so the child runs on its own (its own timers
		// end it) for each parent that has.
		for _, l := range w.loads {
			if !slices.Contains(keys, l.key) {
				keys = append(keys, l.key)
			}
		}
	}
	for _, key := range keys {
		l := &w.loads[slices.IndexFunc(w.loads, func(l load) bool { return l.key == key })]
		for _, o := range x.outcomes(l) {
			s, err := x.childEnds(nd, key, o)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
	}
	return out, nil
}

// restore returns a handler of instance i as world w holds it.
func (x *explorer) restore(w *world, i int) (*engine.Handler, error) {
	return x.insts[i].prog.Restore(w.snaps[i])
}

// deliver delivers the first message of channel from→to.
func (x *explorer) deliver(nd *node, from, to int) (successor, error) {
	w := nd.w.clone()
	n := len(x.insts)
	ch := w.chans[from*n+to]
	f := ch[0]
	w.chans[from*n+to] = ch[1:]
	h, err := x.restore(w, to)
	if err != nil {
		return successor{}, err
	}
	before := w.states[to]
	x.q.Reset()
	if err := h.Process(&engine.MessageEvent{At: x.start.Add(w.now), Message: f.msg}, &x.q); err != nil {
		return successor{}, err
	}
	steps := []Step{{Kind: StepReceive, Agent: x.insts[to].agent, Role: x.insts[to].role, Peer: x.insts[from].agent, Message: f.name, Serial: f.serial, At: Offset(w.now)}}
	res, err := x.absorb(w, to, h, "", nil, &steps)
	if err != nil {
		return successor{}, err
	}
	steps[0].State = w.states[to]
	for _, pe := range res.errs {
		if pe.Message != f.msg {
			continue
		}
		steps[0].Rejected = string(pe.Code)
		x.orphan(nd, steps, f, to, before, pe)
	}
	for _, oc := range res.open {
		x.openCommitment(nd, steps, to, oc)
	}
	return successor{w: w, steps: steps, blocked: res.blocked}, nil
}

// answers returns the answers a decider can give to a: each choice, and
// at a join every combination of the sessions' choices.
func (x *explorer) answers(w *world, a *ask) []decision.Answer {
	req := &a.ev.Request
	at := x.start.Add(w.now)
	if len(req.Sessions) == 0 {
		out := make([]decision.Answer, 0, len(req.Choices))
		for _, c := range req.Choices {
			out = append(out, decision.Answer{Choice: c, Content: x.content(req.Point, c, at)})
		}
		return out
	}
	out := []decision.Answer{{Sessions: map[string]decision.SessionAnswer{}}}
	for _, s := range req.Sessions {
		var next []decision.Answer
		for _, prev := range out {
			for _, c := range s.Choices {
				m := make(map[string]decision.SessionAnswer, len(prev.Sessions)+1)
				for k, v := range prev.Sessions {
					m[k] = v
				}
				m[s.Peer] = decision.SessionAnswer{Choice: c, Content: x.content(req.Point, c, at)}
				next = append(next, decision.Answer{Sessions: m})
			}
		}
		out = next
	}
	return out
}

// content makes up the content of choice's message at point: a value
// for each required field.
func (x *explorer) content(point, choice string, at time.Time) map[string]any {
	st := x.p.State(point)
	if st == nil {
		return nil
	}
	for _, t := range st.Transitions {
		if t.Kind != policy.SendMessage || t.MessageKey() != choice {
			continue
		}
		mt := x.p.Message(t.Message.Name)
		if mt == nil {
			return nil
		}
		var out map[string]any
		for _, f := range mt.Fields {
			if f.Optional {
				continue
			}
			if out == nil {
				out = map[string]any{}
			}
			out[f.Name] = sample(f.Type, at)
		}
		return out
	}
	return nil
}

// sample is the value made up for a required field of type t.
func sample(t policy.FieldType, at time.Time) any {
	switch t {
	case policy.TypeString, policy.TypeAny:
		return "x"
	case policy.TypeNumber, policy.TypeInt:
		return 1
	case policy.TypeBool:
		return true
	case policy.TypeTime:
		return at.Format("2006-01-02T15:04:05Z07:00")
	case policy.TypeDuration:
		return "1s"
	case policy.TypeList:
		return []any{}
	case policy.TypeMap:
		return map[string]any{}
	}
	return nil
}

// decide answers the k-th open decision with a.
func (x *explorer) decide(nd *node, k int, a decision.Answer) (successor, error) {
	w := nd.w.clone()
	as := w.asks[k]
	i := as.inst
	h, err := x.restore(w, i)
	if err != nil {
		return successor{}, err
	}
	x.q.Reset()
	ev := as.ev
	if err := h.Process(&engine.DecisionEvent{At: x.start.Add(w.now), Ticket: ev.Ticket, Answer: a}, &x.q); err != nil {
		return successor{}, err
	}
	var steps []Step
	res, err := x.absorb(w, i, h, ev.Request.Point, &a, &steps)
	if err != nil {
		return successor{}, err
	}
	for _, pe := range res.errs {
		if pe.Code == engine.CodeBudget {
			x.overBudget(nd, steps, i, pe)
		}
	}
	if !res.sent {
		return successor{refused: true}, nil
	}
	for _, oc := range res.open {
		x.openCommitment(nd, steps, i, oc)
	}
	return successor{w: w, steps: steps, blocked: res.blocked}, nil
}

// fire fires the k-th timer, moving time to its deadline.
func (x *explorer) fire(nd *node, k int) (successor, error) {
	w := nd.w.clone()
	t := w.timers[k]
	w.timers = slices.Delete(w.timers, k, k+1)
	w.now = t.ev.Deadline.Sub(x.start)
	h, err := x.restore(w, t.inst)
	if err != nil {
		return successor{}, err
	}
	before := w.states[t.inst]
	x.q.Reset()
	ev := engine.TimerEvent{At: t.ev.Deadline, Name: t.ev.Name, Commitment: t.ev.Commitment, Session: t.ev.Session, Deadline: t.ev.Deadline, Epoch: t.ev.Epoch}
	if err := h.Process(&ev, &x.q); err != nil {
		return successor{}, err
	}
	steps := []Step{{Kind: StepTimer, Agent: x.insts[t.inst].agent, Role: x.insts[t.inst].role, Timer: t.ev.Name, Commitment: t.ev.Commitment, From: before, At: Offset(w.now)}}
	res, err := x.absorb(w, t.inst, h, "", nil, &steps)
	if err != nil {
		return successor{}, err
	}
	steps[0].State = w.states[t.inst]
	for _, oc := range res.open {
		x.openCommitment(nd, steps, t.inst, oc)
	}
	return successor{w: w, steps: steps, blocked: res.blocked}, nil
}

// outcomes returns the outcomes a child run may end with: every outcome
// the state of its first parent returns on.
func (x *explorer) outcomes(l *load) []string {
	var out []string
	if st := x.p.State(firstName(l.state)); st != nil {
		for _, t := range st.Transitions {
			if t.Kind == policy.ChildReturn && !slices.Contains(out, t.Outcome) {
				out = append(out, t.Outcome)
			}
		}
	}
	return out
}

// ready returns the child runs every parent has loaded (every parent that
// has not ended), each by its key, in the order their first parent loaded
// them.
func (x *explorer) ready(w *world) []string {
	var keys []string
	for k := range w.loads {
		l := &w.loads[k]
		if slices.Contains(keys, l.key) {
			continue
		}
		n := 0
		for _, m := range w.loads {
			if m.key == l.key {
				n++
			}
		}
		if n >= x.parents(w, &l.ev) {
			keys = append(keys, l.key)
		}
	}
	return keys
}

// childEnds ends the child run key with outcome for every parent, one
// after the other in the order they loaded it: the run is over for all
// of them before anything else happens.
func (x *explorer) childEnds(nd *node, key, outcome string) (successor, error) {
	w := nd.w.clone()
	var runs []load
	w.loads = slices.DeleteFunc(w.loads, func(l load) bool {
		if l.key == key {
			runs = append(runs, l)
			return true
		}
		return false
	})
	var steps []Step
	blocked := false
	for _, l := range runs {
		h, err := x.restore(w, l.inst)
		if err != nil {
			return successor{}, err
		}
		x.q.Reset()
		if err := h.Process(&engine.CPDoneEvent{At: x.start.Add(w.now), Policy: l.ev.Policy, Outcome: outcome, Session: l.ev.Session, Epoch: l.ev.Epoch}, &x.q); err != nil {
			return successor{}, err
		}
		first := len(steps)
		steps = append(steps, Step{Kind: StepChild, Agent: x.insts[l.inst].agent, Role: x.insts[l.inst].role, Child: l.ev.Policy, Outcome: outcome, From: l.state, At: Offset(w.now)})
		res, err := x.absorb(w, l.inst, h, "", nil, &steps)
		if err != nil {
			return successor{}, err
		}
		steps[first].State = w.states[l.inst]
		blocked = blocked || res.blocked
	}
	return successor{w: w, steps: steps, blocked: blocked}, nil
}

// parents counts the handlers of this exploration that run the child
// policy ev asks for and have not ended: the distinct agents it binds.
func (x *explorer) parents(w *world, ev *engine.LoadCPEvent) int {
	var agents []string
	for _, a := range ev.Roles {
		if i := x.instanceOf(a); i >= 0 && !w.done[i] && !slices.Contains(agents, a) {
			agents = append(agents, a)
		}
	}
	return len(agents)
}

// absorbed is what absorb found in a handler's outputs.
type absorbed struct {
	errs    []engine.ProtocolErrorEvent
	open    []engine.CommitmentEvent
	sent    bool
	blocked bool
}

// absorb carries out the outputs instance i's handler h put in the queue
// into w, and stores h in w. point is the state the handler decided in,
// for the messages it sent.
func (x *explorer) absorb(w *world, i int, h *engine.Handler, point string, ans *decision.Answer, steps *[]Step) (absorbed, error) {
	var res absorbed
	n := len(x.insts)
	now := x.start.Add(w.now)
	before := slices.Clone(w.timers)
	for _, ev := range x.q.Events() {
		switch e := ev.(type) {
		case *engine.TimerEvent:
			w.timers = slices.DeleteFunc(w.timers, func(t armed) bool {
				return t.inst == i && t.ev.Name == e.Name && t.ev.Commitment == e.Commitment && t.ev.Session == e.Session && t.ev.Epoch == e.Epoch
			})
			if e.Op == engine.TimerSet {
				w.timers = append(w.timers, armed{inst: i, ev: *e})
			}
		case *engine.MessageEvent:
			res.sent = true
			m := *e.Message
			m.Receivers = slices.Clone(m.Receivers)
			for _, r := range m.Receivers {
				name, pos := x.sentBy(i, point, choiceFor(ans, r), m.Performative)
				j := x.instanceOf(r)
				if j < 0 {
					continue
				}
				w.serial++
				c := i*n + j
				w.chans[c] = append(slices.Clip(w.chans[c]), flight{msg: &m, name: name, serial: w.serial, from: i, pos: pos})
				if len(w.chans[c]) > x.o.buffer {
					res.blocked = true
				}
				*steps = append(*steps, Step{Kind: StepSend, Agent: x.insts[i].agent, Role: x.insts[i].role, Peer: r, Message: name, Serial: w.serial, At: Offset(w.now), Pos: pos})
			}
		case *engine.DecisionEvent:
			w.asks = append(w.asks, ask{inst: i, ev: *e})
		case *engine.LoadCPEvent:
			st := h.State(e.Session)
			w.loads = append(w.loads, load{inst: i, ev: *e, key: childKey(e), state: firstName(st)})
		case *engine.ProtocolErrorEvent:
			res.errs = append(res.errs, *e)
		case *engine.CommitmentEvent:
			if e.State == engine.CommitmentViolated && e.Cause == "conversation ended" && !deadlineDue(before, i, e, now) {
				res.open = append(res.open, *e)
			}
		}
	}
	snap, err := h.Snapshot()
	if err != nil {
		return res, err
	}
	w.snaps[i] = snap
	w.norm[i] = normalize(snap)
	w.states[i] = x.stateOf(h)
	w.done[i] = h.Done()
	w.asks = slices.DeleteFunc(w.asks, func(a ask) bool { return a.inst == i && !h.Awaits(a.ev.Ticket) })
	if h.Done() {
		w.timers = slices.DeleteFunc(w.timers, func(t armed) bool { return t.inst == i })
		w.loads = slices.DeleteFunc(w.loads, func(l load) bool { return l.inst == i })
	}
	for k := range *steps {
		if (*steps)[k].Kind == StepSend {
			(*steps)[k].State = w.states[i]
		}
	}
	return res, nil
}

// deadlineDue reports whether the commitment of e had its deadline timer
// due at now: it ends violated by its deadline, not left open.
func deadlineDue(timers []armed, i int, e *engine.CommitmentEvent, now time.Time) bool {
	for _, t := range timers {
		if t.inst == i && t.ev.Commitment == e.Name && t.ev.Session == e.Session && !t.ev.Deadline.After(now) {
			return true
		}
	}
	return false
}

package policy

import "slices"

// checkTimers reports timers a state arms but never handles (a warning:
// the timer does nothing), on-timeout transitions for timers their state
// does not arm (an error: they can never fire), and deadlines that do not
// read a time-valued message field.
func checkTimers(c *checker) {
	for _, t := range c.p.Timers {
		if t.Deadline != nil {
			checkDeadline(c, t)
		}
	}
	var armed, handled nameSet
	k := 0 // the index of the state's first edge
	for _, s := range c.p.States {
		edges := c.edges[k : k+len(s.Transitions)]
		k += len(edges)
		armed.reset()
		for _, r := range s.Arm {
			armed.add(r.Name)
		}
		handled.reset()
		for j, e := range edges {
			if e.kind != edgeTimeout {
				continue
			}
			t := s.Transitions[j]
			if t.Timer.Name == "" {
				continue
			}
			handled.add(t.Timer.Name)
			if !armed.has(t.Timer.Name) && c.timers.get(t.Timer.Name) != nil {
				c.d.errorf(CodeTimerNotArmed, t.Timer.Pos, "state %s handles timer %s but does not arm it, so this transition can never be taken; add arm: %s to the state", Quote(s.Name), Quote(t.Timer.Name), clip(t.Timer.Name))
			}
		}
		for _, r := range s.Arm {
			if r.Name != "" && !handled.has(r.Name) && c.timers.get(r.Name) != nil && !s.Join {
				c.d.warnf(CodeTimerNotHandled, r.Pos, "state %s arms timer %s but has no on-timeout transition for it, so its expiry does nothing", Quote(s.Name), Quote(r.Name))
			}
		}
	}
}

// nameSet is a set of the names of one state (the timers it arms or
// handles): a list searched by comparing names, and a map once it holds
// more than maxSearchedKeys.
type nameSet struct {
	list []string
	m    map[string]bool
}

// add adds name to the set.
func (n *nameSet) add(name string) {
	switch {
	case n.m != nil:
		n.m[name] = true
	case !slices.Contains(n.list, name):
		n.list = append(n.list, name)
		if len(n.list) > maxSearchedKeys {
			n.m = make(map[string]bool, 2*len(n.list))
			for _, s := range n.list {
				n.m[s] = true
			}
		}
	}
}

// has reports whether name is in the set.
func (n *nameSet) has(name string) bool {
	if n.m != nil {
		return n.m[name]
	}
	return slices.Contains(n.list, name)
}

// reset empties the set.
func (n *nameSet) reset() { n.list, n.m = n.list[:0], nil }

// checkUnused warns about declarations nothing refers to. It runs after
// the expression check, which records the variables expressions read.
func checkUnused(c *checker) {
	p := c.p
	usedRoles := newUsage(&c.roles)
	usedMsgs := newUsage(&c.msgs)
	usedTimers := newUsage(&c.timers)
	setVars := newUsage(&c.vars)
	for _, t := range p.Timers {
		if t.Deadline != nil {
			usedMsgs.mark(t.Deadline.Message)
		}
	}
	for _, cm := range p.Commitments {
		usedTimers.mark(cm.Expires.Name)
		usedTimers.mark(cm.Deadline.Name)
	}
	for _, s := range p.States {
		for _, r := range s.Arm {
			usedTimers.mark(r.Name)
		}
		if s.Child != nil {
			for _, b := range s.Child.Bindings {
				usedRoles.mark(b.Parent.Name)
			}
		}
		if c.resolved {
			continue // the transitions are read from their edges below
		}
		for _, t := range s.Transitions {
			usedRoles.mark(t.From.Name)
			usedRoles.mark(t.To.Name)
			usedMsgs.mark(t.Message.Name)
			for _, a := range t.Set {
				setVars.mark(a.Var.Name)
			}
		}
	}
	if c.resolved {
		// A send names declared roles and message type; any other
		// transition none.
		c.eachEdge(func(i, j int, e *edge) {
			if e.kind == edgeSend {
				usedRoles.used[e.from], usedRoles.used[e.to], usedMsgs.used[e.msg] = true, true, true
			} else {
				usedRoles.empty, usedMsgs.empty = true, true
			}
			if e.set {
				for _, a := range c.p.States[i].Transitions[j].Set {
					setVars.mark(a.Var.Name)
				}
			}
		})
	}
	for _, r := range p.Roles {
		if !usedRoles.has(r.Name) {
			c.d.warnf(CodeUnused, r.Pos, "role %s takes part in no transition", Quote(r.Name))
		}
	}
	for _, m := range p.Messages {
		if !usedMsgs.has(m.Name) {
			c.d.warnf(CodeUnused, m.Pos, "message type %s is never sent", Quote(m.Name))
		}
	}
	usedPerfs := make(map[string]bool, len(p.Performatives))
	for _, m := range p.Messages {
		usedPerfs[m.Performative] = true
	}
	for _, r := range p.Performatives {
		if !usedPerfs[r.Name] {
			c.d.warnf(CodeUnused, r.Pos, "performative %s is declared but no message type uses it", Quote(r.Name))
		}
	}
	for _, t := range p.Timers {
		if !usedTimers.has(t.Name) {
			c.d.warnf(CodeUnused, t.Pos, "timer %s is never armed", Quote(t.Name))
		}
	}
	varsRead := func(name string) bool {
		i := c.vars.index(name)
		return i >= 0 && c.varsRead[i]
	}
	for _, v := range p.Vars {
		switch {
		case !setVars.has(v.Name) && !varsRead(v.Name):
			c.d.warnf(CodeUnused, v.Pos, "variable %s is never set or read", Quote(v.Name))
		case !setVars.has(v.Name):
			c.d.warnf(CodeUnused, v.Pos, "variable %s is read but never set, so it is always empty", Quote(v.Name))
		case !varsRead(v.Name):
			c.d.warnf(CodeUnused, v.Pos, "variable %s is set but never read", Quote(v.Name))
		}
	}
}

// usage records which names of one kind of declaration are used, by
// their index among the declarations, and whether the empty name is
// (a declaration whose name is missing, and a reference left empty); a
// name nothing declares is never asked about, and is not kept.
type usage[V any] struct {
	d     *decls[V]
	used  []bool
	empty bool
}

func newUsage[V any](d *decls[V]) *usage[V] {
	return &usage[V]{d: d, used: make([]bool, len(d.names))}
}

// mark records name as used.
func (u *usage[V]) mark(name string) {
	if name == "" {
		u.empty = true
	} else if i := u.d.index(name); i >= 0 {
		u.used[i] = true
	}
}

// has reports whether name was marked.
func (u *usage[V]) has(name string) bool {
	if name == "" {
		return u.empty
	}
	i := u.d.index(name)
	return i >= 0 && u.used[i]
}

func checkDeadline(c *checker, t *Timer) {
	m := c.msgs.get(t.Deadline.Message)
	if m == nil {
		return // reported by references
	}
	optional := true // ACL parameters may always be absent
	if !slices.Contains(ACLTimeParams, t.Deadline.Field) {
		f := m.Field(t.Deadline.Field)
		switch {
		case f == nil:
			cands := append(slices.Clone(ACLTimeParams), names(m.Fields, func(f *Field) string { return f.Name })...)
			c.d.errorf(CodeTimerDeadline, t.Deadline.Pos, "timer %s reads %s, but message type %s has no field %s (a deadline reads reply_by or a time field)%s", Quote(t.Name), Quote(t.Deadline.String()), Quote(m.Name), Quote(t.Deadline.Field), didYouMean(t.Deadline.Field, cands))
			return
		case f.Type != TypeTime:
			c.d.errorf(CodeTimerDeadline, t.Deadline.Pos, "timer %s reads %s, which is a %s, not a time", Quote(t.Name), Quote(t.Deadline.String()), f.Type)
			return
		}
		optional = f.Optional
	}
	if optional && t.Default == 0 {
		c.d.errorf(CodeTimerDeadline, t.Pos, "timer %s needs a default duration for when %s is absent; every wait must be bounded", Quote(t.Name), Quote(t.Deadline.String()))
	}
}

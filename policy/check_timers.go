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
	for _, s := range c.p.States {
		armed := map[string]bool{}
		for _, r := range s.Arm {
			armed[r.Name] = true
		}
		handled := map[string]bool{}
		for _, t := range s.Transitions {
			if t.Kind != OnTimeout || t.Timer.Name == "" {
				continue
			}
			handled[t.Timer.Name] = true
			if !armed[t.Timer.Name] && c.timers[t.Timer.Name] != nil {
				c.d.errorf(CodeTimerNotArmed, t.Timer.Pos, "state %s handles timer %s but does not arm it, so this transition can never be taken; add arm: %s to the state", Quote(s.Name), Quote(t.Timer.Name), clip(t.Timer.Name))
			}
		}
		for _, r := range s.Arm {
			if r.Name != "" && !handled[r.Name] && c.timers[r.Name] != nil && !s.Join {
				c.d.warnf(CodeTimerNotHandled, r.Pos, "state %s arms timer %s but has no on-timeout transition for it, so its expiry does nothing", Quote(s.Name), Quote(r.Name))
			}
		}
	}
}

// checkUnused warns about declarations nothing refers to. It runs after
// the expression check, which records the variables expressions read.
func checkUnused(c *checker) {
	p := c.p
	usedRoles := map[string]bool{}
	usedMsgs := map[string]bool{}
	usedTimers := map[string]bool{}
	setVars := map[string]bool{}
	for _, t := range p.Timers {
		if t.Deadline != nil {
			usedMsgs[t.Deadline.Message] = true
		}
	}
	for _, cm := range p.Commitments {
		usedTimers[cm.Expires.Name] = true
		usedTimers[cm.Deadline.Name] = true
	}
	for _, s := range p.States {
		for _, r := range s.Arm {
			usedTimers[r.Name] = true
		}
		if s.Child != nil {
			for _, b := range s.Child.Bindings {
				usedRoles[b.Parent.Name] = true
			}
		}
		for _, t := range s.Transitions {
			usedRoles[t.From.Name] = true
			usedRoles[t.To.Name] = true
			usedMsgs[t.Message.Name] = true
			for _, a := range t.Set {
				setVars[a.Var.Name] = true
			}
		}
	}
	for _, r := range p.Roles {
		if !usedRoles[r.Name] {
			c.d.warnf(CodeUnused, r.Pos, "role %s takes part in no transition", Quote(r.Name))
		}
	}
	for _, m := range p.Messages {
		if !usedMsgs[m.Name] {
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
		if !usedTimers[t.Name] {
			c.d.warnf(CodeUnused, t.Pos, "timer %s is never armed", Quote(t.Name))
		}
	}
	for _, v := range p.Vars {
		switch {
		case !setVars[v.Name] && !c.varsRead[v.Name]:
			c.d.warnf(CodeUnused, v.Pos, "variable %s is never set or read", Quote(v.Name))
		case !setVars[v.Name]:
			c.d.warnf(CodeUnused, v.Pos, "variable %s is read but never set, so it is always empty", Quote(v.Name))
		case !c.varsRead[v.Name]:
			c.d.warnf(CodeUnused, v.Pos, "variable %s is set but never read", Quote(v.Name))
		}
	}
}

func checkDeadline(c *checker, t *Timer) {
	m := c.msgs[t.Deadline.Message]
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

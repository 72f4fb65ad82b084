package policy

// checkReferences reports names that refer to nothing declared, with the
// nearest declared name as a suggestion.
func checkReferences(c *checker) {
	p := c.p
	roleNames := names(p.Roles, func(r *Role) string { return r.Name })
	msgNames := names(p.Messages, func(m *MessageType) string { return m.Name })
	timerNames := names(p.Timers, func(t *Timer) string { return t.Name })
	varNames := names(p.Vars, func(f *Field) string { return f.Name })
	var stateNames []string // built on first need: policies can be large

	role := func(r Ref, what string) {
		if r.Name != "" && c.roles.get(r.Name) == nil {
			c.d.errorf(CodeUndeclaredRole, r.Pos, "%s %s is not a declared role%s", what, Quote(r.Name), didYouMean(r.Name, roleNames))
		}
	}
	msg := func(r Ref) {
		if r.Name != "" && c.msgs.get(r.Name) == nil {
			c.d.errorf(CodeUnresolved, r.Pos, "message type %s is not declared%s", Quote(r.Name), didYouMean(r.Name, msgNames))
		}
	}
	timer := func(r Ref) {
		if r.Name != "" && c.timers.get(r.Name) == nil {
			c.d.errorf(CodeUnresolved, r.Pos, "timer %s is not declared%s", Quote(r.Name), didYouMean(r.Name, timerNames))
		}
	}
	for _, t := range p.Timers {
		if t.Deadline != nil {
			msg(Ref{Name: t.Deadline.Message, Pos: t.Deadline.Pos})
		}
	}
	for _, cm := range p.Commitments {
		role(cm.Debtor, "debtor")
		role(cm.Creditor, "creditor")
		for _, list := range [][]Ref{cm.Create, cm.Detach, cm.Discharge, cm.Cancel, cm.Release} {
			for _, r := range list {
				msg(r)
			}
		}
		timer(cm.Expires)
		timer(cm.Deadline)
	}
	k := 0 // the index of the next transition's edge
	for i, s := range p.States {
		for _, r := range s.Arm {
			timer(r)
		}
		if s.Child != nil {
			if c.opts.resolve != nil && s.Child.Policy.Name != "" && c.opts.resolve(s.Child.Policy.Name) == nil {
				c.d.errorf(CodeUnresolved, s.Child.Policy.Pos, "child policy %s is not known: check it together with this one (name both files to cpvalidate), or give the checks a resolver that finds it (policy.WithPolicies, engine.WithPolicies)", Quote(s.Child.Policy.Name))
			}
			for _, b := range s.Child.Bindings {
				role(b.Parent, "the role bound to child role "+Quote(b.Child)+",")
			}
		}
		for j := range c.next[i] {
			e := &c.edges[k]
			k++
			if c.resolved && c.next[i][j] >= 0 {
				// Its message, roles or timer are declared.
				if e.set {
					c.checkSetVars(s.Transitions[j].Set, varNames)
				}
				continue
			}
			t := s.Transitions[j]
			if c.next[i][j] < 0 && t.Next.Name != "" {
				if stateNames == nil {
					stateNames = c.stateNames()
				}
				c.d.errorf(CodeUnresolved, t.Next.Pos, "state %s is not declared%s", Quote(t.Next.Name), didYouMean(t.Next.Name, stateNames))
			}
			switch t.Kind {
			case SendMessage:
				msg(t.Message)
				role(t.From, "sender")
				role(t.To, "receiver")
			case OnTimeout:
				timer(t.Timer)
			}
			c.checkSetVars(t.Set, varNames)
		}
	}
}

// checkSetVars reports the assignments of set to undeclared variables,
// with the nearest of varNames as a suggestion.
func (c *checker) checkSetVars(set []*Assign, varNames []string) {
	for _, a := range set {
		if a.Var.Name != "" && c.vars.get(a.Var.Name) == nil {
			c.d.errorf(CodeUnresolved, a.Var.Pos, "variable %s is not declared (declare it under vars)%s", Quote(a.Var.Name), didYouMean(a.Var.Name, varNames))
		}
	}
}

// checkStateShapes reports transitions that do not fit their state's kind;
// the YAML form cannot express most of these, the XML form can.
func checkStateShapes(c *checker) {
	k := 0 // the index of the state's first edge
	for _, s := range c.p.States {
		edges := c.edges[k : k+len(s.Transitions)]
		k += len(edges)
		switch s.Kind {
		case KindTerminal:
			if len(s.Transitions) > 0 {
				c.d.errorf(CodeInvalidValue, s.Transitions[0].Pos, "terminal state %s has transitions: a terminal state ends the conversation", Quote(s.Name))
			}
			if s.Outcome == "" {
				c.d.errorf(CodeMissingField, s.Pos, "terminal state %s has no outcome (such as done, refused or timeout)", Quote(s.Name))
			}
		case KindInChild:
			if s.Child == nil {
				c.d.errorf(CodeMissingField, s.Pos, "in-child state %s names no child policy", Quote(s.Name))
			}
			for j, e := range edges {
				if e.kind == edgeSend {
					t := s.Transitions[j]
					c.d.errorf(CodeInvalidValue, t.Pos, "in-child state %s cannot send %s: while the child policy runs, only child-return and on-timeout transitions apply", Quote(s.Name), Quote(t.Message.Name))
				}
			}
		case KindNormal:
			for j, e := range edges {
				if e.kind == edgeReturn {
					c.d.errorf(CodeInvalidValue, s.Transitions[j].Pos, "state %s runs no child policy, so it cannot have a child-return transition", Quote(s.Name))
				}
			}
		}
		if s.Kind != KindNormal && s.Decide != nil {
			c.d.errorf(CodeInvalidValue, s.Decide.Pos, "only a normal state can be a decision point with decide; %s is %s", Quote(s.Name), s.Kind)
		}
		if s.Kind != KindNormal && s.Join {
			c.d.errorf(CodeInvalidValue, s.Pos, "only a normal state can be a join; %s is %s", Quote(s.Name), s.Kind)
		}
	}
}

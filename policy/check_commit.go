package policy

import "slices"

// checkJoins reports join states where no many role takes part: a join
// gathers the sessions of a many role, so without one it joins nothing.
func checkJoins(c *checker) {
	if !c.joins {
		return
	}
	involves := make([]bool, len(c.p.States))
	many := func(t *Transition) bool {
		if t.Kind != SendMessage {
			return false
		}
		from, to := c.roles.get(t.From.Name), c.roles.get(t.To.Name)
		return (from != nil && from.Many) || (to != nil && to.Many)
	}
	for i, s := range c.p.States {
		for j, t := range s.Transitions {
			if many(t) {
				involves[i] = true
				if k := c.next[i][j]; k >= 0 {
					involves[k] = true
				}
			}
		}
	}
	for i, s := range c.p.States {
		if s.Join && !involves[i] {
			c.d.errorf(CodeJoinWithoutMany, s.Pos, "state %s is a join, but no role declared many sends or receives a message in or into it; a join gathers the sessions of a many role", Quote(s.Name))
		}
	}
}

// checkCommitments reports commitments whose debtor is their creditor,
// operations performed by messages the wrong party sends (create, cancel
// and discharge by the debtor; release by the creditor), and commitments
// that, once created, no path can discharge.
func checkCommitments(c *checker) {
	senders := c.sendersOf()
	for _, cm := range c.p.Commitments {
		if cm.Debtor.Name != "" && cm.Debtor.Name == cm.Creditor.Name {
			c.d.errorf(CodeCommitmentParties, cm.Creditor.Pos, "commitment %s has %s as both debtor and creditor; a commitment binds one role to another", Quote(cm.Name), Quote(cm.Debtor.Name))
		}
		author := func(refs []Ref, op string, role Ref, party string) {
			if c.roles.get(role.Name) == nil {
				return // no party, or an undeclared one: reported by references
			}
			for _, r := range refs {
				for _, s := range senders[r.Name] {
					if s != role.Name {
						c.d.errorf(CodeCommitmentAuth, r.Pos, "commitment %s is %s by %s, which %s sends; only the %s (%s) can %s it", Quote(cm.Name), op, Quote(r.Name), Quote(s), party, Quote(role.Name), verb(op))
					}
				}
			}
		}
		author(cm.Create, "created", cm.Debtor, "debtor")
		author(cm.Cancel, "cancelled", cm.Debtor, "debtor")
		author(cm.Discharge, "discharged", cm.Debtor, "debtor")
		author(cm.Release, "released", cm.Creditor, "creditor")
		checkDischarge(c, cm)
	}
}

func verb(op string) string {
	switch op {
	case "created":
		return "create"
	case "cancelled":
		return "cancel"
	case "discharged":
		return "discharge"
	}
	return "release"
}

// checkDischarge reports each transition creating cm from whose target no
// transition sending a discharge message can be reached.
func checkDischarge(c *checker, cm *Commitment) {
	if len(cm.Discharge) == 0 {
		return
	}
	isDischarge := func(t *Transition) bool {
		return t.Kind == SendMessage && slices.ContainsFunc(cm.Discharge, func(r Ref) bool { return r.Name == t.Message.Name })
	}
	isCreate := func(t *Transition) bool {
		return t.Kind == SendMessage && slices.ContainsFunc(cm.Create, func(r Ref) bool { return r.Name == t.Message.Name })
	}
	can := make([]bool, len(c.p.States))
	var stack []int
	seed := func(i int) {
		if !can[i] {
			can[i] = true
			stack = append(stack, i)
		}
	}
	// With every name resolved, a transition's message is its edge's.
	var discharges, creates []bool
	if c.resolved {
		discharges, creates = c.msgFlags(cm.Discharge), c.msgFlags(cm.Create)
		c.eachEdge(func(i, _ int, e *edge) {
			if e.kind == edgeSend && discharges[e.msg] {
				seed(i)
			}
		})
	} else {
		for i, s := range c.p.States {
			for _, t := range s.Transitions {
				if isDischarge(t) {
					seed(i)
				}
			}
		}
	}
	for len(stack) > 0 {
		k := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, i := range c.preds(k) {
			if !can[i] {
				can[i] = true
				stack = append(stack, i)
			}
		}
	}
	report := func(i, j int) {
		if k := c.next[i][j]; k >= 0 && !can[k] && c.reach[i] {
			t := c.p.States[i].Transitions[j]
			c.d.errorf(CodeNoDischarge, t.Pos, "commitment %s is created by %s here, but no path from state %s sends a discharge message (%s), so it can only end violated", Quote(cm.Name), Quote(t.Message.Name), Quote(t.Next.Name), refList(cm.Discharge)).related(cm.Pos, "commitment %s", Quote(cm.Name))
		}
	}
	if c.resolved {
		c.eachEdge(func(i, j int, e *edge) {
			if e.kind == edgeSend && creates[e.msg] {
				report(i, j)
			}
		})
		return
	}
	for i, s := range c.p.States {
		for j, t := range s.Transitions {
			if isCreate(t) {
				report(i, j)
			}
		}
	}
}

// msgFlags returns, by the index of each message type declared, whether
// refs names it.
func (c *checker) msgFlags(refs []Ref) []bool {
	flags := make([]bool, len(c.msgs.names))
	for _, r := range refs {
		if i := c.msgs.index(r.Name); i >= 0 {
			flags[i] = true
		}
	}
	return flags
}

func refList(refs []Ref) string {
	return QuoteList(names(refs, func(r Ref) string { return r.Name }), 5)
}

// checkChildBindings reports in-child states whose child policy's roles
// are not each bound exactly once, child-return transitions for outcomes
// the child never produces, and outcomes the state does not handle.
func checkChildBindings(c *checker) {
	if c.opts.resolve == nil {
		return
	}
	for _, s := range c.p.States {
		if s.Child == nil || s.Child.Policy.Name == "" {
			continue
		}
		child := c.opts.resolve(s.Child.Policy.Name)
		if child == nil {
			continue // reported by references
		}
		childRoles := names(child.Roles, func(r *Role) string { return r.Name })
		bound := map[string]bool{}
		for _, b := range s.Child.Bindings {
			bound[b.Child] = true
			if !slices.Contains(childRoles, b.Child) {
				c.d.errorf(CodeChildBinding, b.Pos, "child policy %s has no role %s%s", Quote(child.Name), Quote(b.Child), didYouMean(b.Child, childRoles))
			}
		}
		for _, r := range childRoles {
			if !bound[r] {
				c.d.errorf(CodeChildBinding, s.Child.Pos, "role %s of child policy %s is not bound to a role of %s; add it under roles", Quote(r), Quote(child.Name), Quote(c.p.Name))
			}
		}
		var outcomes []string
		for _, cs := range child.States {
			if cs.Kind == KindTerminal && !slices.Contains(outcomes, cs.Outcome) {
				outcomes = append(outcomes, cs.Outcome)
			}
		}
		handled := map[string]bool{}
		for _, t := range s.Transitions {
			if t.Kind != ChildReturn {
				continue
			}
			handled[t.Outcome] = true
			if !slices.Contains(outcomes, t.Outcome) {
				c.d.errorf(CodeUnresolved, t.Pos, "child policy %s never ends with outcome %s%s", Quote(child.Name), Quote(t.Outcome), didYouMean(t.Outcome, outcomes))
			}
		}
		var missing []string
		for _, o := range outcomes {
			if !handled[o] {
				missing = append(missing, o)
			}
		}
		if len(missing) > 0 {
			c.d.errorf(CodeDeadEnd, s.Pos, "in-child state %s has no child-return for %s of child policy %s: a child that ends so leaves the conversation stuck", Quote(s.Name), plural(len(missing), "outcome", "outcomes")+" "+QuoteList(missing, 5), Quote(child.Name))
		}
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

package policy

import "fmt"

// checkDeclarations reports malformed names, names declared twice within
// one kind of declaration, performatives that are neither FIPA's nor
// declared, and declared extension performatives that are FIPA's.
func checkDeclarations(c *checker) {
	p := c.p
	if p.Name != "" && !ValidName(p.Name) {
		c.d.errorf(CodeInvalidValue, p.Pos, "policy name %s is not a valid name (letters, digits, _ and -, starting with a letter)", Quote(p.Name))
	}
	// kind checks the names of one kind of declaration; of, when set,
	// says what they belong to (` of message type "request"`).
	kindOf := func(what, of string, list []declaration) {
		first := make(map[string]Pos, len(list))
		for _, d := range list {
			if d.name == "" {
				continue
			}
			if !ValidName(d.name) {
				c.d.errorf(CodeInvalidValue, d.pos, "%s name %s%s is not a valid name (letters, digits, _ and -, starting with a letter)", what, Quote(d.name), of)
			}
			if at, dup := first[d.name]; dup {
				c.d.errorf(CodeDuplicate, d.pos, "%s %s%s is declared twice", what, Quote(d.name), of).related(at, "first declared here")
				continue
			}
			first[d.name] = d.pos
		}
	}
	kind := func(what string, list []declaration) { kindOf(what, "", list) }
	kind("role", declsOf(p.Roles, func(r *Role) (string, Pos) { return r.Name, r.Pos }))
	kind("performative", declsOf(p.Performatives, func(r Ref) (string, Pos) { return r.Name, r.Pos }))
	declared := make(map[string]bool, len(p.Performatives))
	for _, r := range p.Performatives {
		declared[r.Name] = true
		if IsFIPA(r.Name) {
			c.d.errorf(CodeInvalidValue, r.Pos, "performative %s is one of FIPA's; declare only extension performatives under performatives", Quote(r.Name))
		}
	}
	kind("message type", declsOf(p.Messages, func(m *MessageType) (string, Pos) { return m.Name, m.Pos }))
	kind("timer", declsOf(p.Timers, func(t *Timer) (string, Pos) { return t.Name, t.Pos }))
	kind("variable", declsOf(p.Vars, func(f *Field) (string, Pos) { return f.Name, f.Pos }))
	kind("commitment", declsOf(p.Commitments, func(cm *Commitment) (string, Pos) { return cm.Name, cm.Pos }))
	// The checker has the states by name, the first of each, and the
	// later ones of a name: kindOf's checks without a map of their own.
	dups := c.dupStates
	for i, s := range p.States {
		if s.Name == "" {
			continue
		}
		if !ValidName(s.Name) {
			c.d.errorf(CodeInvalidValue, s.Pos, "state name %s is not a valid name (letters, digits, _ and -, starting with a letter)", Quote(s.Name))
		}
		if len(dups) > 0 && dups[0][0] == i {
			c.d.errorf(CodeDuplicate, s.Pos, "state %s is declared twice", Quote(s.Name)).related(p.States[dups[0][1]].Pos, "first declared here")
			dups = dups[1:]
		}
	}
	for _, m := range p.Messages {
		kindOf("field", fmt.Sprintf(" of message type %s", Quote(m.Name)), declsOf(m.Fields, func(f *Field) (string, Pos) { return f.Name, f.Pos }))
		if m.Performative != "" && !IsFIPA(m.Performative) && !declared[m.Performative] {
			nor, hint := "", didYouMean(m.Performative, p.performativeNames())
			if len(p.Performatives) > 0 {
				nor = " nor an extension the policy declares"
			}
			if hint == "" {
				hint = "; an extension performative must be declared under performatives"
			}
			c.d.errorf(CodeInvalidValue, m.Pos, "message type %s has performative %s, which is not a FIPA communicative act%s%s", Quote(m.Name), Quote(m.Performative), nor, hint)
		}
	}
	for _, s := range p.States {
		if s.Child != nil {
			seen := map[string]Pos{}
			for _, b := range s.Child.Bindings {
				if at, dup := seen[b.Child]; dup {
					c.d.errorf(CodeDuplicate, b.Pos, "child role %s is bound twice", Quote(b.Child)).related(at, "first bound here")
				}
				seen[b.Child] = b.Pos
			}
		}
		for _, t := range s.Transitions {
			if len(t.Set) > 1 {
				c.checkSetTwice(t.Set)
			}
		}
	}
}

// checkSetTwice reports each assignment of set to a variable an earlier
// one sets, related to the last of those. A transition sets a handful
// of variables, compared by name; more are indexed.
func (c *checker) checkSetTwice(set []*Assign) {
	report := func(a *Assign, at Pos) {
		c.d.errorf(CodeDuplicate, a.Var.Pos, "variable %s is set twice by one transition", Quote(a.Var.Name)).related(at, "first set here")
	}
	if len(set) <= maxScannedDecls {
		for k, a := range set {
			for j := k - 1; j >= 0; j-- {
				if set[j].Var.Name == a.Var.Name {
					report(a, set[j].Var.Pos)
					break
				}
			}
		}
		return
	}
	seen := make(map[string]Pos, len(set))
	for _, a := range set {
		if at, dup := seen[a.Var.Name]; dup {
			report(a, at)
		}
		seen[a.Var.Name] = a.Var.Pos
	}
}

type declaration struct {
	name string
	pos  Pos
}

func declsOf[T any](list []T, f func(T) (string, Pos)) []declaration {
	out := make([]declaration, len(list))
	for i, x := range list {
		out[i].name, out[i].pos = f(x)
	}
	return out
}

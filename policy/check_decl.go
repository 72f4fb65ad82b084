package policy

import "fmt"

// checkDeclarations reports malformed names, names declared twice within
// one kind of declaration, and performatives that are not FIPA's.
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
	kind("message type", declsOf(p.Messages, func(m *MessageType) (string, Pos) { return m.Name, m.Pos }))
	kind("timer", declsOf(p.Timers, func(t *Timer) (string, Pos) { return t.Name, t.Pos }))
	kind("variable", declsOf(p.Vars, func(f *Field) (string, Pos) { return f.Name, f.Pos }))
	kind("commitment", declsOf(p.Commitments, func(cm *Commitment) (string, Pos) { return cm.Name, cm.Pos }))
	kind("state", declsOf(p.States, func(s *State) (string, Pos) { return s.Name, s.Pos }))
	for _, m := range p.Messages {
		kindOf("field", fmt.Sprintf(" of message type %s", Quote(m.Name)), declsOf(m.Fields, func(f *Field) (string, Pos) { return f.Name, f.Pos }))
		if m.Performative != "" && !contains(Performatives, m.Performative) {
			c.d.errorf(CodeInvalidValue, m.Pos, "message type %s has performative %s, which is not a FIPA communicative act%s", Quote(m.Name), Quote(m.Performative), didYouMean(m.Performative, Performatives))
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
		seen := map[string]Pos{}
		for _, t := range s.Transitions {
			for _, a := range t.Set {
				if at, dup := seen[a.Var.Name]; dup {
					c.d.errorf(CodeDuplicate, a.Var.Pos, "variable %s is set twice by one transition", Quote(a.Var.Name)).related(at, "first set here")
				}
				seen[a.Var.Name] = a.Var.Pos
			}
			clear(seen)
		}
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

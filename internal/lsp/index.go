package lsp

import (
	"slices"

	"github.com/parleyhq/parley/policy"
)

// Kind is the kind of thing a name in a policy names.
type Kind int

// Kinds of names.
const (
	KindState Kind = iota + 1
	KindMessage
	KindTimer
	KindRole
	KindCommitment
	KindVar
)

// String returns "state", "message type", "timer", "role", "commitment"
// or "variable".
func (k Kind) String() string {
	switch k {
	case KindState:
		return "state"
	case KindMessage:
		return "message type"
	case KindTimer:
		return "timer"
	case KindRole:
		return "role"
	case KindCommitment:
		return "commitment"
	case KindVar:
		return "variable"
	}
	return "name"
}

// occurrence is one place a name appears in the file: its declaration
// or a reference to it, as a byte span.
type occurrence struct {
	kind       Kind
	name       string
	start, end int
	decl       bool
}

// index maps the names of a loaded policy to the spans where they occur.
// It is built from the model the loader returns, whose every declaration
// and reference carries the position of its name, so YAML and CP-XML are
// indexed alike.
type index struct {
	occs []occurrence // sorted by start
}

func buildIndex(p *policy.Policy, t *text) *index {
	x := &index{}
	if p == nil {
		return x
	}
	seen := map[int]bool{}
	add := func(kind Kind, name string, pos policy.Pos, decl bool) {
		start, ok := t.nameStart(pos, name)
		if !ok || seen[start] {
			// A name the file spells otherwise (an XML entity), or a
			// reference the loader defaulted to a declaration (the
			// initial state).
			return
		}
		seen[start] = true
		x.occs = append(x.occs, occurrence{kind: kind, name: name, start: start, end: start + len(name), decl: decl})
	}
	ref := func(kind Kind, r policy.Ref) { add(kind, r.Name, r.Pos, false) }
	refs := func(kind Kind, rs []policy.Ref) {
		for _, r := range rs {
			ref(kind, r)
		}
	}
	// Declarations first, so that a defaulted reference at the same
	// place is dropped rather than the declaration.
	for _, r := range p.Roles {
		add(KindRole, r.Name, r.Pos, true)
	}
	for _, m := range p.Messages {
		add(KindMessage, m.Name, m.Pos, true)
	}
	for _, tm := range p.Timers {
		add(KindTimer, tm.Name, tm.Pos, true)
	}
	for _, v := range p.Vars {
		add(KindVar, v.Name, v.Pos, true)
	}
	for _, c := range p.Commitments {
		add(KindCommitment, c.Name, c.Pos, true)
	}
	for _, s := range p.States {
		add(KindState, s.Name, s.Pos, true)
	}
	ref(KindState, p.Initial)
	for _, tm := range p.Timers {
		if tm.Deadline != nil {
			add(KindMessage, tm.Deadline.Message, tm.Deadline.Pos, false)
		}
	}
	for _, c := range p.Commitments {
		ref(KindRole, c.Debtor)
		ref(KindRole, c.Creditor)
		for _, ms := range [][]policy.Ref{c.Create, c.Detach, c.Discharge, c.Cancel, c.Release} {
			refs(KindMessage, ms)
		}
		ref(KindTimer, c.Expires)
		ref(KindTimer, c.Deadline)
	}
	for _, s := range p.States {
		refs(KindTimer, s.Arm)
		if s.Child != nil {
			for _, b := range s.Child.Bindings {
				ref(KindRole, b.Parent)
			}
		}
		for _, tr := range s.Transitions {
			ref(KindMessage, tr.Message)
			ref(KindRole, tr.From)
			ref(KindRole, tr.To)
			ref(KindTimer, tr.Timer)
			ref(KindState, tr.Next)
			for _, a := range tr.Set {
				ref(KindVar, a.Var)
			}
		}
	}
	slices.SortFunc(x.occs, func(a, b occurrence) int { return a.start - b.start })
	return x
}

// at returns the occurrence whose span holds off (or ends at it, so that
// a cursor just after a name finds it), or nil.
func (x *index) at(off int) *occurrence {
	i, _ := slices.BinarySearchFunc(x.occs, off, func(o occurrence, off int) int {
		switch {
		case o.end < off:
			return -1
		case o.start > off:
			return 1
		}
		return 0
	})
	if i < len(x.occs) && x.occs[i].start <= off && off <= x.occs[i].end {
		return &x.occs[i]
	}
	return nil
}

// all returns every occurrence of the name of kind, in file order.
func (x *index) all(kind Kind, name string) []occurrence {
	var out []occurrence
	for _, o := range x.occs {
		if o.kind == kind && o.name == name {
			out = append(out, o)
		}
	}
	return out
}

// decl returns the declaration of the name of kind, or nil.
func (x *index) decl(kind Kind, name string) *occurrence {
	for i, o := range x.occs {
		if o.decl && o.kind == kind && o.name == name {
			return &x.occs[i]
		}
	}
	return nil
}

// names lists the declared names of kind, in file order, each once.
func names(p *policy.Policy, kind Kind) []string {
	if p == nil {
		return nil
	}
	var out []string
	switch kind {
	case KindState:
		out = nameList(p.States, func(s *policy.State) string { return s.Name })
	case KindMessage:
		out = nameList(p.Messages, func(m *policy.MessageType) string { return m.Name })
	case KindTimer:
		out = nameList(p.Timers, func(t *policy.Timer) string { return t.Name })
	case KindRole:
		out = nameList(p.Roles, func(r *policy.Role) string { return r.Name })
	case KindCommitment:
		out = nameList(p.Commitments, func(c *policy.Commitment) string { return c.Name })
	case KindVar:
		out = nameList(p.Vars, func(f *policy.Field) string { return f.Name })
	}
	return out
}

// nameList returns the non-empty names of list, each once.
func nameList[T any](list []T, name func(T) string) []string {
	seen := map[string]bool{"": true}
	var out []string
	for _, x := range list {
		if n := name(x); !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

package lsp

import (
	"fmt"
	"strings"

	"github.com/parleyhq/parley/policy"
)

// symbolHover describes the thing an occurrence names, in Markdown: a
// message type's declaration, a state's kind and doc, a timer's duration
// or deadline, a role, a commitment's parts or a variable's type.
func symbolHover(p *policy.Policy, o *occurrence) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s** `%s`", o.kind, o.name)
	line := func(format string, args ...any) { fmt.Fprintf(&b, "\n\n"+format, args...) }
	doc := ""
	switch o.kind {
	case KindMessage:
		m := p.Message(o.name)
		if m == nil {
			return b.String() + "\n\nnot declared"
		}
		line("performative `%s`", m.Performative)
		if len(m.Fields) > 0 {
			fields := make([]string, len(m.Fields))
			for i, f := range m.Fields {
				fields[i] = fmt.Sprintf("`%s` %s", f.Name, f.TypeString())
			}
			line("content: %s", strings.Join(fields, ", "))
		}
		if m.Match != nil {
			line("match: `%s`", oneLine(m.Match.Src))
		}
		for _, c := range p.Commitments {
			if ops := commitmentOps(c, o.name); ops != "" {
				line("%s commitment `%s`", ops, c.Name)
			}
		}
		doc = m.Doc
	case KindState:
		s := p.State(o.name)
		if s == nil {
			return b.String() + "\n\nnot declared"
		}
		switch {
		case s.Kind == policy.KindTerminal:
			line("terminal, outcome `%s`", s.Outcome)
		case s.Child != nil:
			line("runs child policy `%s`", s.Child.Policy.Name)
		default:
			line("%s", plural(len(s.Transitions), "transition"))
		}
		if s.Join {
			line("join: waits for every session")
		}
		if len(s.Arm) > 0 {
			arms := make([]string, len(s.Arm))
			for i, a := range s.Arm {
				arms[i] = "`" + a.Name + "`"
			}
			line("arms %s", strings.Join(arms, ", "))
		}
		if s.Decide != nil {
			line("decide: `%s`", oneLine(s.Decide.Src))
		}
		if p.Initial.Name == s.Name {
			line("the initial state")
		}
		doc = s.Doc
	case KindTimer:
		t := p.Timer(o.name)
		if t == nil {
			return b.String() + "\n\nnot declared"
		}
		switch {
		case t.Deadline != nil && t.Default > 0:
			line("fires at the deadline `%s`, or after %s when the message carries none", t.Deadline, t.Default)
		case t.Deadline != nil:
			line("fires at the deadline `%s`", t.Deadline)
		default:
			line("fires after %s", t.After)
		}
		doc = t.Doc
	case KindRole:
		r := p.Role(o.name)
		if r == nil {
			return b.String() + "\n\nnot declared"
		}
		if r.Many {
			line("many: played by any number of peers at once")
		}
		doc = r.Doc
	case KindCommitment:
		c := p.Commitment(o.name)
		if c == nil {
			return b.String()
		}
		line("C(%s, %s): %s", c.Debtor.Name, c.Creditor.Name, commitmentParts(c))
		doc = c.Doc
	case KindVar:
		if v := p.Var(o.name); v != nil {
			line("type %s", v.TypeString())
		}
	}
	if doc != "" {
		line("%s", doc)
	}
	return b.String()
}

// commitmentOps says what sending message does to c: "creates",
// "discharges" and so on, joined; "" for nothing.
func commitmentOps(c *policy.Commitment, message string) string {
	var ops []string
	for _, op := range commitmentOpLists(c) {
		for _, r := range op.refs {
			if r.Name == message {
				ops = append(ops, op.verb)
				break
			}
		}
	}
	return strings.Join(ops, " and ")
}

type commitmentOp struct {
	verb, key string
	refs      []policy.Ref
}

func commitmentOpLists(c *policy.Commitment) []commitmentOp {
	return []commitmentOp{
		{"creates", "create", c.Create}, {"detaches", "detach", c.Detach}, {"discharges", "discharge", c.Discharge},
		{"cancels", "cancel", c.Cancel}, {"releases", "release", c.Release},
	}
}

// commitmentParts lists a commitment's messages and timers.
func commitmentParts(c *policy.Commitment) string {
	var parts []string
	for _, op := range commitmentOpLists(c) {
		if len(op.refs) == 0 {
			continue
		}
		names := make([]string, len(op.refs))
		for i, r := range op.refs {
			names[i] = "`" + r.Name + "`"
		}
		parts = append(parts, op.key+" "+strings.Join(names, ", "))
	}
	if !c.Expires.IsZero() {
		parts = append(parts, "expires `"+c.Expires.Name+"`")
	}
	if !c.Deadline.IsZero() {
		parts = append(parts, "deadline `"+c.Deadline.Name+"`")
	}
	return strings.Join(parts, "; ")
}

func oneLine(s string) string { return policy.Clip(strings.Join(strings.Fields(s), " ")) }

func plural(n int, one string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %ss", n, one)
}

// keyAt returns the key, element or attribute name the byte offset off
// is on, and what the schema says it means.
func (d *document) keyAt(off int) (keyDoc, int, int, bool) {
	t := d.text
	start, end := off, off
	for start > 0 && isIdentByte(t.src[start-1]) {
		start--
	}
	for end < len(t.src) && isIdentByte(t.src[end]) {
		end++
	}
	if start == end {
		return keyDoc{}, 0, 0, false
	}
	word := string(t.src[start:end])
	docs := docsOnce()
	// The place just after the word's first byte has the word's context.
	pl := d.place(start)
	if d.xml {
		switch {
		case pl.atElem:
			if doc, ok := docs.elems[word]; ok {
				return keyDoc{name: word, doc: doc}, start, end, true
			}
		case pl.atKey:
			if k, ok := docs.xmlAttr(pl.ctx, word); ok {
				return k, start, end, true
			}
		}
		return keyDoc{}, 0, 0, false
	}
	if !pl.atKey || end >= len(t.src) || t.src[end] != ':' {
		return keyDoc{}, 0, 0, false
	}
	k, ok := docs.yamlKey(pl.ctx, word)
	return k, start, end, ok
}

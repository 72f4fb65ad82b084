package policy

import (
	"strconv"
	"strings"

	"github.com/beevik/etree"
)

// WriteXML renders p as a CP-XML policy file. LoadXML reads it back to the
// same model (and the same fingerprint).
func WriteXML(p *Policy) []byte {
	doc := etree.NewDocument()
	doc.WriteSettings.CanonicalText = true
	doc.WriteSettings.CanonicalAttrVal = true
	doc.CreateProcInst("xml", `version="1.0" encoding="UTF-8"`)
	root := doc.CreateElement("policy")
	root.CreateAttr("name", p.Name)
	root.CreateAttr("version", p.Version)
	if p.Initial.Name != "" {
		root.CreateAttr("initial", p.Initial.Name)
	}
	xDoc(root, p.Doc, 1)
	for _, r := range p.Roles {
		e := root.CreateElement("role")
		e.CreateAttr("name", r.Name)
		if r.Many {
			e.CreateAttr("many", "true")
		}
		xDoc(e, r.Doc, 2)
	}
	for _, r := range p.Performatives {
		root.CreateElement("performative").CreateAttr("name", r.Name)
	}
	for _, m := range p.Messages {
		e := root.CreateElement("message")
		e.CreateAttr("name", m.Name)
		e.CreateAttr("performative", m.Performative)
		xDoc(e, m.Doc, 2)
		for _, f := range m.Fields {
			xField(e.CreateElement("field"), f)
		}
		if m.Match != nil {
			xExpr(e.CreateElement("match"), m.Match.Src)
		}
	}
	for _, t := range p.Timers {
		e := root.CreateElement("timer")
		e.CreateAttr("name", t.Name)
		if t.After > 0 {
			e.CreateAttr("after", FormatDuration(t.After))
		}
		if t.Deadline != nil {
			e.CreateAttr("deadline", t.Deadline.String())
		}
		if t.Default > 0 {
			e.CreateAttr("default", FormatDuration(t.Default))
		}
		xDoc(e, t.Doc, 2)
	}
	for _, f := range p.Vars {
		xField(root.CreateElement("var"), f)
	}
	for _, c := range p.Commitments {
		e := root.CreateElement("commitment")
		e.CreateAttr("name", c.Name)
		e.CreateAttr("debtor", c.Debtor.Name)
		e.CreateAttr("creditor", c.Creditor.Name)
		if c.Expires.Name != "" {
			e.CreateAttr("expires", c.Expires.Name)
		}
		if c.Deadline.Name != "" {
			e.CreateAttr("deadline", c.Deadline.Name)
		}
		xDoc(e, c.Doc, 2)
		for _, op := range []struct {
			tag  string
			refs []Ref
		}{{"create", c.Create}, {"detach", c.Detach}, {"discharge", c.Discharge}, {"cancel", c.Cancel}, {"release", c.Release}} {
			for _, r := range op.refs {
				e.CreateElement(op.tag).CreateAttr("message", r.Name)
			}
		}
	}
	if b := p.Budget; b != nil {
		e := root.CreateElement("budget")
		if b.Messages > 0 {
			e.CreateAttr("messages", strconv.Itoa(b.Messages))
		}
		if b.Visits > 0 {
			e.CreateAttr("visits", strconv.Itoa(b.Visits))
		}
	}
	for _, s := range p.States {
		xState(root.CreateElement("state"), s)
	}
	doc.Indent(2)
	out, _ := doc.WriteToBytes() // writing to memory cannot fail
	return out
}

func xField(e *etree.Element, f *Field) {
	e.CreateAttr("name", f.Name)
	e.CreateAttr("type", string(f.Type))
	if f.Optional {
		e.CreateAttr("optional", "true")
	}
}

func xState(e *etree.Element, s *State) {
	e.CreateAttr("name", s.Name)
	if s.Kind != KindNormal {
		e.CreateAttr("kind", string(s.Kind))
	}
	if s.Outcome != "" {
		e.CreateAttr("outcome", s.Outcome)
	}
	if s.Join {
		e.CreateAttr("join", "true")
	}
	xDoc(e, s.Doc, 2)
	for _, r := range s.Arm {
		e.CreateElement("arm").CreateAttr("timer", r.Name)
	}
	if s.Decide != nil {
		xExpr(e.CreateElement("decide"), s.Decide.Src)
	}
	if s.Child != nil {
		c := e.CreateElement("child")
		c.CreateAttr("policy", s.Child.Policy.Name)
		for _, b := range s.Child.Bindings {
			be := c.CreateElement("bind")
			be.CreateAttr("role", b.Child)
			be.CreateAttr("to", b.Parent.Name)
		}
	}
	for _, t := range s.Transitions {
		te := e.CreateElement(string(t.Kind))
		switch t.Kind {
		case SendMessage:
			te.CreateAttr("message", t.Message.Name)
			te.CreateAttr("from", t.From.Name)
			te.CreateAttr("to", t.To.Name)
			if t.Key != "" {
				te.CreateAttr("key", t.Key)
			}
		case OnTimeout:
			te.CreateAttr("timer", t.Timer.Name)
		case ChildReturn:
			te.CreateAttr("outcome", t.Outcome)
		}
		te.CreateAttr("next", t.Next.Name)
		xDoc(te, t.Doc, 3)
		if t.Guard != nil {
			xExpr(te.CreateElement("guard"), t.Guard.Src)
		}
		for _, a := range t.Set {
			se := te.CreateElement("set")
			se.CreateAttr("var", a.Var.Name)
			xExpr(se, a.Expr.Src)
		}
	}
}

// xDoc adds a <doc> child; a text of several lines goes on its own lines,
// indented one level deeper than the element at depth.
func xDoc(parent *etree.Element, text string, depth int) {
	if text == "" {
		return
	}
	e := parent.CreateElement("doc")
	if !strings.Contains(text, "\n") {
		e.SetText(text)
		return
	}
	inner := strings.Repeat("  ", depth+1)
	var b strings.Builder
	b.WriteByte('\n')
	for _, line := range strings.Split(text, "\n") {
		if line != "" {
			b.WriteString(inner)
			b.WriteString(line)
		}
		b.WriteByte('\n')
	}
	b.WriteString(strings.Repeat("  ", depth))
	e.SetText(b.String())
}

// xExpr sets an expression as e's text, in CDATA when it holds characters
// XML would escape, so it stays readable.
func xExpr(e *etree.Element, src string) {
	if strings.ContainsAny(src, "<&") && !strings.Contains(src, "]]>") {
		e.SetCData(src)
		return
	}
	e.SetText(src)
}

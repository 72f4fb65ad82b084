package policy

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/beevik/etree"
)

// LoadXML loads a policy from CP-XML. Like LoadYAML, it returns the policy
// it could build (nil only when the file is not well-formed XML) and every
// problem found, each at its position in filename.
//
// etree keeps no positions, so the loader first walks the file with
// encoding/xml, recording where each element (and so each attribute and
// text) starts, and pairs those with etree's elements in document order.
func LoadXML(filename string, src []byte, opts ...LoadOption) (*Policy, Diagnostics) {
	o := newLoadOptions(opts)
	l := &xmlLoader{file: filename, src: src, limits: o.limits, lines: lineStarts(src)}
	if len(src) > o.limits.MaxBytes {
		l.d.errorf(CodeLimit, Pos{File: filename, Line: 1, Col: 1}, "file is %d bytes, more than the limit of %d", len(src), o.limits.MaxBytes)
		return nil, l.d.list
	}
	if !l.scan() {
		return nil, l.d.list
	}
	doc := etree.NewDocument()
	doc.ReadSettings.PreserveDuplicateAttrs = true
	doc.ReadSettings.PreserveCData = true
	if err := doc.ReadFromBytes(src); err != nil {
		l.d.errorf(CodeSyntax, Pos{File: filename, Line: 1, Col: 1}, "%s", clipMessage(err.Error()))
		return nil, l.d.list
	}
	root := doc.Root()
	if root == nil {
		l.d.errorf(CodeSyntax, Pos{File: filename, Line: 1, Col: 1}, "no root element: a CP-XML file holds one <policy> element")
		return nil, l.d.list
	}
	l.index(root)
	if len(l.elems) != len(l.starts) {
		l.d.errorf(CodeSyntax, Pos{File: filename, Line: 1, Col: 1}, "internal: element positions do not line up (%d elements, %d start tags)", len(l.elems), len(l.starts))
		return nil, l.d.list
	}
	p := l.policy(root)
	l.d.list.Sort()
	if p != nil {
		p.loaded = l.d.list
	}
	return p, l.d.list
}

type xmlLoader struct {
	file   string
	src    []byte
	lines  []int
	limits Limits
	d      diags
	// starts[i] and ends[i] are the offsets of the i-th start tag (in
	// document order) and just past it.
	starts, ends []int
	elems        map[*etree.Element]int
}

// scan walks the file with encoding/xml to find element offsets and
// report syntax errors at their position.
func (l *xmlLoader) scan() bool {
	dec := xml.NewDecoder(bytes.NewReader(l.src))
	depth := 0
	for {
		off := int(dec.InputOffset())
		// Token, not RawToken: it checks that end tags match, so a mismatch
		// is reported where it is rather than by etree at 1:1.
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			if depth > 0 {
				l.d.errorf(CodeSyntax, l.posAt(len(l.src)), "unexpected end of file: %d element(s) not closed", depth)
				return false
			}
			if len(l.starts) == 0 {
				l.d.errorf(CodeSyntax, Pos{File: l.file, Line: 1, Col: 1}, "no root element: a CP-XML file holds one <policy> element")
				return false
			}
			return true
		}
		if err != nil {
			line, col := dec.InputPos()
			var se *xml.SyntaxError
			msg := err.Error()
			if errors.As(err, &se) {
				msg = se.Msg
				switch {
				case msg == "unexpected EOF" && depth > 0:
					msg = fmt.Sprintf("unexpected end of file: %d element(s) not closed", depth)
				case strings.HasPrefix(msg, "invalid character entity &"):
					msg += "; in an expression, write && as &amp;&amp; or put the expression in <![CDATA[ ... ]]>"
				case msg == "expected element name after <":
					msg += "; in an expression, write < as &lt; or put the expression in <![CDATA[ ... ]]>"
				}
			}
			l.d.errorf(CodeSyntax, Pos{File: l.file, Line: line, Col: col}, "%s", clipMessage(msg))
			return false
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if depth == 0 && len(l.starts) > 0 {
				l.d.errorf(CodeSyntax, l.posAt(off), "a second root element <%s>: a CP-XML file holds one <policy> element", clip(t.Name.Local))
				return false
			}
			depth++
			l.starts = append(l.starts, off)
			l.ends = append(l.ends, int(dec.InputOffset()))
			if depth > l.limits.MaxDepth {
				l.d.errorf(CodeLimit, l.posAt(off), "elements nested deeper than %d levels", l.limits.MaxDepth)
				return false
			}
			if len(l.starts) > l.limits.MaxNodes {
				l.d.errorf(CodeLimit, l.posAt(off), "more than %d elements", l.limits.MaxNodes)
				return false
			}
		case xml.EndElement:
			depth--
		case xml.Directive:
			if bytes.HasPrefix(bytes.TrimSpace(t), []byte("DOCTYPE")) {
				l.d.errorf(CodeSyntax, l.posAt(off), "DOCTYPE declarations are not allowed in CP-XML")
				return false
			}
		}
	}
}

func (l *xmlLoader) index(root *etree.Element) {
	l.elems = map[*etree.Element]int{}
	var walk func(e *etree.Element)
	walk = func(e *etree.Element) {
		l.elems[e] = len(l.elems)
		for _, c := range e.ChildElements() {
			walk(c)
		}
	}
	walk(root)
}

func (l *xmlLoader) posAt(off int) Pos {
	lo, hi := 0, len(l.lines)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if l.lines[mid] <= off {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return Pos{File: l.file, Line: lo + 1, Col: off - l.lines[lo] + 1}
}

func (l *xmlLoader) pos(e *etree.Element) Pos { return l.posAt(l.starts[l.elems[e]]) }

// attrPos returns the position of the value of attribute name of e, or
// of e when it cannot be found.
func (l *xmlLoader) attrPos(e *etree.Element, name string) Pos { return l.attrPosN(e, name, 0) }

// attrPosN returns the position of the value of the n-th (0-based)
// attribute called name on e, or of e when there is no such attribute.
func (l *xmlLoader) attrPosN(e *etree.Element, name string, n int) Pos {
	i := l.elems[e]
	tag := l.src[l.starts[i]:l.ends[i]]
	for off := 0; off < len(tag); {
		j := bytes.Index(tag[off:], []byte(name))
		if j < 0 {
			break
		}
		j += off
		k := j + len(name)
		if j > 0 && isXMLSpace(tag[j-1]) {
			for k < len(tag) && isXMLSpace(tag[k]) {
				k++
			}
			if k < len(tag) && tag[k] == '=' {
				k++
				for k < len(tag) && isXMLSpace(tag[k]) {
					k++
				}
				if k < len(tag) && (tag[k] == '"' || tag[k] == '\'') {
					if n == 0 {
						return l.posAt(l.starts[i] + k + 1)
					}
					n--
				}
			}
		}
		off = j + 1
	}
	return l.pos(e)
}

func isXMLSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

// textExpr reads e's text as an expression, positioned at its first
// non-blank character (inside CDATA if that is how it is written).
func (l *xmlLoader) textExpr(e *etree.Element, what string) *Expr {
	l.leaf(e)
	text := e.Text()
	src := strings.TrimSpace(text)
	if src == "" {
		l.d.errorf(CodeMissingField, l.pos(e), "<%s> is empty: it holds an expression", e.Tag)
		return nil
	}
	if len(src) > l.limits.MaxExprBytes {
		l.d.errorf(CodeLimit, l.pos(e), "%s is %d bytes, more than the limit of %d", what, len(src), l.limits.MaxExprBytes)
		return nil
	}
	off := l.ends[l.elems[e]]
	for off < len(l.src) && isXMLSpace(l.src[off]) {
		off++
	}
	if bytes.HasPrefix(l.src[off:], []byte("<![CDATA[")) {
		off += len("<![CDATA[")
		for off < len(l.src) && isXMLSpace(l.src[off]) {
			off++
		}
	}
	// The text's continuation lines keep their indentation in src, so
	// column c of one of them is column 1+c of its line in the file.
	return &Expr{Src: src, Pos: l.posAt(off), Indent: 1}
}

// attrs checks e's attributes against allowed and returns them by name;
// required ones that are absent are reported.
func (l *xmlLoader) attrs(e *etree.Element, allowed, required []string) map[string]string {
	out := map[string]string{}
	seen := map[string]int{} // repeats of each attribute so far
	for _, a := range e.Attr {
		name := a.Key
		if a.Space == "xmlns" || (a.Space == "" && a.Key == "xmlns") || a.Space == "xsi" {
			continue
		}
		if a.Space != "" {
			name = a.Space + ":" + a.Key
		}
		if !contains(allowed, name) {
			l.d.errorf(CodeUnknownField, l.attrPos(e, name), "unknown attribute %s on <%s>%s", Quote(name), e.Tag, didYouMean(name, allowed))
			continue
		}
		if a.Value == "" {
			l.d.errorf(CodeInvalidValue, l.attrPos(e, name), "attribute %s of <%s> is empty", Quote(name), e.Tag)
		}
		if _, dup := out[name]; dup {
			seen[name]++
			l.d.errorf(CodeDuplicate, l.attrPosN(e, name, seen[name]), "attribute %s is given twice on <%s>", Quote(name), e.Tag).related(l.attrPos(e, name), "first given here")
			continue
		}
		out[name] = a.Value
	}
	for _, r := range required {
		if _, ok := out[r]; !ok {
			l.d.errorf(CodeMissingField, l.pos(e), "<%s> has no %s attribute", e.Tag, Quote(r))
		}
	}
	return out
}

func (l *xmlLoader) ref(e *etree.Element, attrs map[string]string, name string) Ref {
	v, ok := attrs[name]
	if !ok {
		return Ref{}
	}
	return Ref{Name: v, Pos: l.attrPos(e, name)}
}

func (l *xmlLoader) boolAttr(e *etree.Element, attrs map[string]string, name string) bool {
	switch v, ok := attrs[name]; {
	case !ok || v == "false" || v == "0":
		return false
	case v == "true" || v == "1":
		return true
	default:
		l.d.errorf(CodeInvalidValue, l.attrPos(e, name), "%s must be true or false, not %s", name, Quote(v))
		return false
	}
}

func (l *xmlLoader) durationAttr(e *etree.Element, attrs map[string]string, name string) time.Duration {
	v, ok := attrs[name]
	if !ok {
		return 0
	}
	dur, err := ParseDuration(v)
	if err != nil {
		l.d.errorf(CodeInvalidValue, l.attrPos(e, name), "%s: %v", name, err)
	}
	return dur
}

// singleTags are the child elements that may appear at most once in
// their parent.
var singleTags = []string{"doc", "match", "decide", "child", "guard"}

// children dispatches e's child elements by tag, reporting unknown ones,
// repeated ones that may appear once, and stray text.
func (l *xmlLoader) children(e *etree.Element, allowed []string, fn func(c *etree.Element)) {
	for _, tok := range e.Child {
		if cd, ok := tok.(*etree.CharData); ok && !cd.IsWhitespace() {
			l.d.errorf(CodeInvalidValue, l.pos(e), "<%s> holds text %s outside any element", e.Tag, Quote(strings.TrimSpace(cd.Data)))
		}
	}
	var seen map[string]*etree.Element
	for _, c := range e.ChildElements() {
		if !contains(allowed, c.Tag) {
			l.d.errorf(CodeUnknownField, l.pos(c), "unknown element <%s> in <%s>%s", clip(c.Tag), e.Tag, didYouMean(c.Tag, allowed))
			continue
		}
		if contains(singleTags, c.Tag) {
			if first, dup := seen[c.Tag]; dup {
				l.d.errorf(CodeDuplicate, l.pos(c), "<%s> is given twice in <%s>", c.Tag, e.Tag).related(l.pos(first), "first given here")
				continue
			}
			if seen == nil {
				seen = map[string]*etree.Element{}
			}
			seen[c.Tag] = c
		}
		fn(c)
	}
}

// leaf reports child elements of an element that holds only text (or
// nothing): an expression, a doc, an attribute-only element.
func (l *xmlLoader) leaf(e *etree.Element) {
	for _, c := range e.ChildElements() {
		l.d.errorf(CodeUnknownField, l.pos(c), "<%s> cannot hold elements such as <%s>; write markup in expressions and docs as &lt; or in CDATA", e.Tag, clip(c.Tag))
	}
}

// docText reads a <doc> element, without the indentation a writer added.
func (l *xmlLoader) docText(e *etree.Element) string {
	l.leaf(e)
	return dedent(e.Text())
}

// dedent trims blank leading and trailing lines and the common leading
// indentation.
func dedent(s string) string {
	lines := strings.Split(s, "\n")
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	common := -1
	for _, ln := range lines {
		if strings.TrimSpace(ln) == "" {
			continue
		}
		n := len(ln) - len(strings.TrimLeft(ln, " \t"))
		if common < 0 || n < common {
			common = n
		}
	}
	for i, ln := range lines {
		if len(ln) >= common && common > 0 {
			lines[i] = ln[common:]
		} else {
			lines[i] = strings.TrimLeft(ln, " \t")
		}
		lines[i] = strings.TrimRight(lines[i], " \t")
	}
	return strings.Join(lines, "\n")
}

var policyChildren = []string{"doc", "role", "performative", "message", "timer", "var", "commitment", "state"}

func (l *xmlLoader) policy(root *etree.Element) *Policy {
	p := &Policy{Pos: l.pos(root)}
	if root.Tag != "policy" {
		l.d.errorf(CodeInvalidValue, l.pos(root), "the root element is <%s>; a CP-XML file holds one <policy> element", clip(root.Tag))
		return nil
	}
	a := l.attrs(root, []string{"name", "version", "initial"}, []string{"name", "version"})
	p.Name, p.Version = a["name"], a["version"]
	if _, ok := a["name"]; ok {
		p.Pos = l.attrPos(root, "name")
	}
	p.Initial = l.ref(root, a, "initial")
	tooMany := false
	l.children(root, policyChildren, func(c *etree.Element) {
		switch c.Tag {
		case "doc":
			p.Doc = l.docText(c)
		case "role":
			a := l.attrs(c, []string{"name", "many"}, []string{"name"})
			r := &Role{Name: a["name"], Pos: l.attrPos(c, "name"), Many: l.boolAttr(c, a, "many")}
			l.children(c, []string{"doc"}, func(d *etree.Element) { r.Doc = l.docText(d) })
			p.Roles = append(p.Roles, r)
		case "performative":
			l.children(c, nil, nil)
			if r := l.ref(c, l.attrs(c, []string{"name"}, []string{"name"}), "name"); !r.IsZero() {
				p.Performatives = append(p.Performatives, r)
			}
		case "message":
			p.Messages = append(p.Messages, l.message(c))
		case "timer":
			p.Timers = append(p.Timers, l.timer(c))
		case "var":
			p.Vars = append(p.Vars, l.field(c))
		case "commitment":
			p.Commitments = append(p.Commitments, l.commitment(c))
		case "state":
			switch {
			case len(p.States) < l.limits.MaxStates:
				p.States = append(p.States, l.state(c))
			case !tooMany:
				// Once: p.States stops growing, so every further state
				// would report it again.
				tooMany = true
				l.d.errorf(CodeLimit, l.pos(c), "more than %d states", l.limits.MaxStates)
			}
		}
	})
	if len(p.Roles) == 0 {
		l.d.errorf(CodeMissingField, p.Pos, "the policy declares no roles (add <role name=\"...\"/> elements)")
	}
	if len(p.States) == 0 {
		l.d.errorf(CodeMissingField, p.Pos, "the policy declares no states (add <state name=\"...\"> elements)")
	}
	if p.Initial.IsZero() && len(p.States) > 0 {
		p.Initial = Ref{Name: p.States[0].Name, Pos: p.States[0].Pos}
	}
	return p
}

func (l *xmlLoader) message(e *etree.Element) *MessageType {
	a := l.attrs(e, []string{"name", "performative"}, []string{"name", "performative"})
	m := &MessageType{Name: a["name"], Pos: l.attrPos(e, "name"), Performative: a["performative"]}
	l.children(e, []string{"doc", "field", "match"}, func(c *etree.Element) {
		switch c.Tag {
		case "doc":
			m.Doc = l.docText(c)
		case "field":
			m.Fields = append(m.Fields, l.field(c))
		case "match":
			m.Match = l.textExpr(c, "match")
		}
	})
	return m
}

func (l *xmlLoader) field(e *etree.Element) *Field {
	a := l.attrs(e, []string{"name", "type", "optional"}, []string{"name", "type"})
	f := &Field{Name: a["name"], Pos: l.attrPos(e, "name"), Optional: l.boolAttr(e, a, "optional")}
	if s, ok := a["type"]; ok {
		t, opt, valid := ParseFieldType(s)
		if !valid || opt {
			l.d.errorf(CodeInvalidValue, l.attrPos(e, "type"), "unknown type %s (types: %s; use optional=\"true\" for an optional value)%s", Quote(s), fieldTypeList(), didYouMean(strings.TrimSuffix(s, "?"), strings.Split(fieldTypeList(), ", ")))
		}
		f.Type = t
	}
	l.children(e, nil, func(*etree.Element) {})
	return f
}

func fieldTypeList() string {
	names := make([]string, len(FieldTypes))
	for i, ft := range FieldTypes {
		names[i] = string(ft)
	}
	return strings.Join(names, ", ")
}

func (l *xmlLoader) timer(e *etree.Element) *Timer {
	before := len(l.d.list)
	a := l.attrs(e, []string{"name", "after", "deadline", "default"}, []string{"name"})
	t := &Timer{Name: a["name"], Pos: l.attrPos(e, "name")}
	t.After = l.durationAttr(e, a, "after")
	t.Default = l.durationAttr(e, a, "default")
	if s, ok := a["deadline"]; ok {
		if r, err := ParseFieldRef(s); err != nil {
			l.d.errorf(CodeInvalidValue, l.attrPos(e, "deadline"), "deadline: %v", err)
		} else {
			r.Pos = l.attrPos(e, "deadline")
			t.Deadline = r
		}
	}
	l.children(e, []string{"doc"}, func(d *etree.Element) { t.Doc = l.docText(d) })
	if len(l.d.list) == before {
		// A bad after or deadline is reported already.
		l.d.checkTimerShape(t, fmt.Sprintf("timer %s", Quote(t.Name)))
	}
	return t
}

func (l *xmlLoader) commitment(e *etree.Element) *Commitment {
	a := l.attrs(e, []string{"name", "debtor", "creditor", "expires", "deadline"}, []string{"name"})
	c := &Commitment{Name: a["name"], Pos: l.attrPos(e, "name")}
	c.Debtor, c.Creditor = l.ref(e, a, "debtor"), l.ref(e, a, "creditor")
	c.Expires, c.Deadline = l.ref(e, a, "expires"), l.ref(e, a, "deadline")
	l.children(e, []string{"doc", "create", "detach", "discharge", "cancel", "release"}, func(op *etree.Element) {
		if op.Tag == "doc" {
			c.Doc = l.docText(op)
			return
		}
		l.children(op, nil, nil)
		oa := l.attrs(op, []string{"message"}, []string{"message"})
		r := l.ref(op, oa, "message")
		if r.IsZero() {
			return
		}
		switch op.Tag {
		case "create":
			c.Create = append(c.Create, r)
		case "detach":
			c.Detach = append(c.Detach, r)
		case "discharge":
			c.Discharge = append(c.Discharge, r)
		case "cancel":
			c.Cancel = append(c.Cancel, r)
		case "release":
			c.Release = append(c.Release, r)
		}
	})
	l.d.checkCommitmentShape(c, fmt.Sprintf("commitment %s", Quote(c.Name)))
	return c
}

var stateChildren = []string{"doc", "arm", "decide", "child", "send-message", "on-timeout", "child-return"}

func (l *xmlLoader) state(e *etree.Element) *State {
	a := l.attrs(e, []string{"name", "kind", "outcome", "join"}, []string{"name"})
	s := &State{Name: a["name"], Pos: l.attrPos(e, "name"), Outcome: a["outcome"], Join: l.boolAttr(e, a, "join")}
	l.children(e, stateChildren, func(c *etree.Element) {
		switch c.Tag {
		case "doc":
			s.Doc = l.docText(c)
		case "arm":
			l.children(c, nil, nil)
			ca := l.attrs(c, []string{"timer"}, []string{"timer"})
			if r := l.ref(c, ca, "timer"); !r.IsZero() {
				s.Arm = append(s.Arm, r)
			}
		case "decide":
			s.Decide = l.textExpr(c, "decide")
		case "child":
			s.Child = l.child(c)
		default:
			if t := l.transition(c); t != nil {
				s.Transitions = append(s.Transitions, t)
			}
		}
	})
	kind, hasKind := a["kind"]
	switch StateKind(kind) {
	case KindNormal, KindInChild, KindTerminal:
		s.Kind = StateKind(kind)
	default:
		if hasKind {
			l.d.errorf(CodeInvalidValue, l.attrPos(e, "kind"), "state kind %s is not one of normal, in-child, terminal%s", Quote(kind), didYouMean(kind, []string{"normal", "in-child", "terminal"}))
		}
		// Absent (or misspelt, reported above): infer the kind from the
		// state's content, so one typo is not reported three times.
		switch {
		case s.Outcome != "":
			s.Kind = KindTerminal
		case s.Child != nil:
			s.Kind = KindInChild
		default:
			s.Kind = KindNormal
		}
	}
	if s.Outcome != "" && s.Kind != KindTerminal {
		l.d.errorf(CodeInvalidValue, l.attrPos(e, "outcome"), "state %s has an outcome but is %s; only a terminal state has one", Quote(s.Name), s.Kind)
	}
	if s.Child != nil && s.Kind != KindInChild {
		l.d.errorf(CodeInvalidValue, l.pos(e), "state %s runs a child policy, so its kind is in-child, not %s", Quote(s.Name), s.Kind)
	}
	return s
}

func (l *xmlLoader) child(e *etree.Element) *ChildRef {
	a := l.attrs(e, []string{"policy"}, []string{"policy"})
	c := &ChildRef{Policy: l.ref(e, a, "policy"), Pos: l.pos(e)}
	l.children(e, []string{"bind"}, func(b *etree.Element) {
		l.children(b, nil, nil)
		ba := l.attrs(b, []string{"role", "to"}, []string{"role", "to"})
		c.Bindings = append(c.Bindings, &RoleBinding{Child: ba["role"], Parent: l.ref(b, ba, "to"), Pos: l.attrPos(b, "role")})
	})
	return c
}

var xmlTransitionAttrs = map[TransitionKind][]string{
	SendMessage: {"message", "from", "to", "next", "key"},
	OnTimeout:   {"timer", "next"},
	ChildReturn: {"outcome", "next"},
}

func (l *xmlLoader) transition(e *etree.Element) *Transition {
	t := &Transition{Kind: TransitionKind(e.Tag), Pos: l.pos(e)}
	var required []string
	switch t.Kind {
	case SendMessage:
		required = []string{"message", "from", "to", "next"}
	case OnTimeout:
		required = []string{"timer", "next"}
	case ChildReturn:
		required = []string{"outcome", "next"}
	}
	a := l.attrs(e, xmlTransitionAttrs[t.Kind], required)
	t.Message, t.From, t.To = l.ref(e, a, "message"), l.ref(e, a, "from"), l.ref(e, a, "to")
	t.Timer, t.Next = l.ref(e, a, "timer"), l.ref(e, a, "next")
	t.Outcome, t.Key = a["outcome"], a["key"]
	l.children(e, []string{"doc", "guard", "set"}, func(c *etree.Element) {
		switch c.Tag {
		case "doc":
			t.Doc = l.docText(c)
		case "guard":
			t.Guard = l.textExpr(c, "guard")
		case "set":
			ca := l.attrs(c, []string{"var"}, []string{"var"})
			t.Set = append(t.Set, &Assign{Var: l.ref(c, ca, "var"), Expr: l.textExpr(c, "an expression")})
		}
	})
	return t
}

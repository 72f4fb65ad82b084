package policy

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// LoadXML loads a policy from CP-XML. Like LoadYAML, it returns the policy
// it could build (nil only when the file is not well-formed XML) and every
// problem found, each at its position in filename.
//
// The loader reads the file once into a small element tree that keeps the
// offset of each start tag, so every element, attribute and text has its
// position without a second parse; the time and memory it takes grow
// linearly with the file, whatever its shape. A file of the constructs
// CP-XML is written with is read by the loader's own scanner;
// any other, and any file with a problem to report, is read with
// encoding/xml, which gives the diagnostics.
func LoadXML(filename string, src []byte, opts ...LoadOption) (*Policy, Diagnostics) {
	o := newLoadOptions(opts)
	l := &xmlLoader{file: filename, src: src, limits: o.limits, lines: lineStarts(src)}
	if len(src) > o.limits.MaxBytes {
		l.d.errorf(CodeLimit, Pos{File: filename, Line: 1, Col: 1}, "file is %d bytes, more than the limit of %d", len(src), o.limits.MaxBytes)
		return nil, l.d.list
	}
	root, ok := l.scan()
	if !ok {
		root = l.parse()
	}
	if root == nil {
		return nil, l.d.list
	}
	p := l.policy(root)
	l.d.list.Sort()
	if p != nil {
		p.loaded = l.d.list
	}
	return p, l.d.list
}

// xel is an element of a CP-XML file.
type xel struct {
	// tag is the element's local name; a namespace prefix is dropped.
	tag string
	// attr holds the attributes in file order, repeats included, with
	// the prefix of a prefixed name in Space.
	attr []xml.Attr
	// start and end are the offsets of the start tag and just past it.
	start, end int
	// text is the character data before the first child element,
	// processing instruction or directive (comments are skipped), as
	// etree's Element.Text reads it.
	text string
	// stray holds each piece of character data in the element that is
	// not blank (a CDATA section always counts), in file order.
	stray []string
	elems []*xel
}

type xmlLoader struct {
	file   string
	src    []byte
	lines  []int
	limits Limits
	d      diags
	// offs is scratch space for attribute value offsets.
	offs []int
	// line is the index in lines of the last position asked for.
	line int
	// attrBuf holds the xattrs attrs returns, each a slice of it, so
	// that an element's attributes cost no allocation of their own.
	attrBuf xattrs
	// blanks interns blank character data: indentation repeats.
	blanks map[string]string
	// drop is the element (the root) whose children children lets go of
	// as it reads them, so that the element tree and the model are not
	// both whole at once.
	drop *xel
	// The elements, states and transitions, from blocks.
	xels        slab[xel]
	states      slab[State]
	transitions slab[Transition]
	// transitionPtrs and assignPtrs hold the states' lists of
	// transitions and the transitions' lists of assignments.
	transitionPtrs ptrSlab[Transition]
	assignPtrs     ptrSlab[Assign]
	exprs          slab[Expr]
	assigns        slab[Assign]
	// strays is the block an element's first piece of stray text is
	// kept in (most elements that have one have one: an expression's).
	strays []string
	// For scan: the attributes of the start tag being read, the block
	// elements' attributes come from, the names read so far (see
	// intern), and the character data with its entities replaced.
	attrScratch []xml.Attr
	attrBlock   []xml.Attr
	names       map[string]string
	textBuf     []byte
}

// xmlFrame is an element being read, with the text before its first
// child: text is still open while leading is true.
type xmlFrame struct {
	e       *xel
	name    xml.Name
	leading bool
	pieces  int
	buf     []byte
}

// parse reads the file into a tree of xel, reporting syntax errors at
// their position, and returns the root element, or nil after an error.
func (l *xmlLoader) parse() *xel {
	dec := xml.NewDecoder(bytes.NewReader(l.src))
	var stack []xmlFrame
	var root *xel
	elements := 0
	syntax := func(pos Pos, msg string) *xel {
		l.d.errorf(CodeSyntax, pos, "%s", clipMessage(msg))
		return nil
	}
	for {
		off := int(dec.InputOffset())
		// RawToken keeps namespace prefixes as they are written (as etree
		// does); end tags are matched here, as Token would, so that a
		// mismatch is reported where it is.
		tok, err := dec.RawToken()
		if tok == nil && errors.Is(err, io.EOF) {
			if len(stack) > 0 {
				return syntax(l.posAt(len(l.src)), fmt.Sprintf("unexpected end of file: %d element(s) not closed", len(stack)))
			}
			if root == nil {
				return syntax(Pos{File: l.file, Line: 1, Col: 1}, "no root element: a CP-XML file holds one <policy> element")
			}
			return root
		}
		if tok == nil && err != nil {
			line, col := dec.InputPos()
			msg := err.Error()
			var se *xml.SyntaxError
			if errors.As(err, &se) {
				msg = se.Msg
				switch {
				case msg == "unexpected EOF" && len(stack) > 0:
					msg = fmt.Sprintf("unexpected end of file: %d element(s) not closed", len(stack))
				case strings.HasPrefix(msg, "invalid character entity &"):
					msg += "; in an expression, write && as &amp;&amp; or put the expression in <![CDATA[ ... ]]>"
				case msg == "expected element name after <":
					msg += "; in an expression, write < as &lt; or put the expression in <![CDATA[ ... ]]>"
				}
			}
			return syntax(Pos{File: l.file, Line: line, Col: col}, msg)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if len(stack) == 0 && root != nil {
				return syntax(l.posAt(off), fmt.Sprintf("a second root element <%s>: a CP-XML file holds one <policy> element", clip(t.Name.Local)))
			}
			elements++
			if len(stack)+1 > l.limits.MaxDepth {
				l.d.errorf(CodeLimit, l.posAt(off), "elements nested deeper than %d levels", l.limits.MaxDepth)
				return nil
			}
			if elements > l.limits.MaxNodes {
				l.d.errorf(CodeLimit, l.posAt(off), "more than %d elements", l.limits.MaxNodes)
				return nil
			}
			e := l.xels.new()
			*e = xel{tag: t.Name.Local, attr: t.Attr, start: off, end: int(dec.InputOffset())}
			if len(stack) == 0 {
				root = e
			} else {
				parent := &stack[len(stack)-1]
				l.endText(parent)
				parent.e.elems = append(parent.e.elems, e)
			}
			stack = append(stack, xmlFrame{e: e, name: t.Name, leading: true})
		case xml.EndElement:
			if len(stack) == 0 {
				line, col := dec.InputPos()
				return syntax(Pos{File: l.file, Line: line, Col: col}, "unexpected end element </"+t.Name.Local+">")
			}
			top := &stack[len(stack)-1]
			if msg := endTagMismatch(top.name, t.Name); msg != "" {
				line, col := dec.InputPos()
				return syntax(Pos{File: l.file, Line: line, Col: col}, msg)
			}
			l.endText(top)
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) == 0 {
				continue
			}
			l.charData(&stack[len(stack)-1], t, bytes.HasPrefix(l.src[off:], []byte("<![CDATA[")))
		case xml.ProcInst:
			if len(stack) > 0 {
				l.endText(&stack[len(stack)-1])
			}
		case xml.Directive:
			if bytes.HasPrefix(bytes.TrimSpace(t), []byte("DOCTYPE")) {
				return syntax(l.posAt(off), "DOCTYPE declarations are not allowed in CP-XML")
			}
			if len(stack) > 0 {
				l.endText(&stack[len(stack)-1])
			}
		}
	}
}

// endTagMismatch returns the error encoding/xml's Token reports when
// end tag name closes start tag open, or "" when it matches.
func endTagMismatch(open, end xml.Name) string {
	switch {
	case open.Local != end.Local:
		return "element <" + open.Local + "> closed by </" + end.Local + ">"
	case open.Space != end.Space:
		ns := end.Space
		if ns == "" {
			ns = `""`
		}
		return "element <" + open.Local + "> in space " + open.Space + " closed by </" + end.Local + "> in space " + ns
	}
	return ""
}

// charData adds a piece of character data to the element of f.
func (l *xmlLoader) charData(f *xmlFrame, data []byte, cdata bool) {
	blank := !cdata && isXMLBlank(data)
	var s string
	if blank {
		s = l.blank(data)
	} else {
		s = string(data)
		if f.e.stray == nil {
			if len(l.strays) == 0 {
				l.strays = make([]string, maxSlab)
			}
			l.strays[0] = s
			f.e.stray, l.strays = l.strays[:1:1], l.strays[1:]
		} else {
			f.e.stray = append(f.e.stray, s)
		}
	}
	if !f.leading {
		return
	}
	switch f.pieces {
	case 0:
		f.e.text = s
	case 1:
		f.buf = append(append(f.buf[:0], f.e.text...), s...)
	default:
		f.buf = append(f.buf, s...)
	}
	f.pieces++
}

// endText ends the text of f's element before its first child.
func (l *xmlLoader) endText(f *xmlFrame) {
	if f.leading && f.pieces > 1 {
		f.e.text = string(f.buf)
	}
	f.leading, f.buf = false, nil
}

// blank returns data, a run of blanks, as a string shared with every
// other run like it.
func (l *xmlLoader) blank(data []byte) string {
	if s, ok := l.blanks[string(data)]; ok {
		return s
	}
	if l.blanks == nil {
		l.blanks = map[string]string{}
	}
	s := string(data)
	if len(l.blanks) < maxBlanks {
		l.blanks[s] = s
	}
	return s
}

// maxBlanks bounds the distinct runs of blanks the loader keeps to share.
const maxBlanks = 256

func isXMLBlank(b []byte) bool {
	for _, c := range b {
		if !isXMLSpace(c) {
			return false
		}
	}
	return true
}

func (l *xmlLoader) posAt(off int) Pos {
	// The loader asks for positions mostly in file order: try the line
	// of the last one and the few after it before searching.
	for h := l.line; h < len(l.lines) && h < l.line+4 && l.lines[h] <= off; h++ {
		if h+1 == len(l.lines) || off < l.lines[h+1] {
			l.line = h
			return Pos{File: l.file, Line: h + 1, Col: off - l.lines[h] + 1}
		}
	}
	lo, hi := 0, len(l.lines)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if l.lines[mid] <= off {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	l.line = lo
	return Pos{File: l.file, Line: lo + 1, Col: off - l.lines[lo] + 1}
}

func (l *xmlLoader) pos(e *xel) Pos { return l.posAt(e.start) }

// attrOffsets returns the offset of each attribute value in e's start
// tag, in file order, which is the order of e.attr. The tag has been
// read by encoding/xml, so it is well-formed. The slice is reused by the
// next call.
func (l *xmlLoader) attrOffsets(e *xel) []int {
	tag := l.src[e.start:e.end]
	offs := l.offs[:0]
	i := 1
	for i < len(tag) && !isXMLSpace(tag[i]) && tag[i] != '/' && tag[i] != '>' {
		i++
	}
	for len(offs) < len(e.attr) {
		for i < len(tag) && tag[i] != '"' && tag[i] != '\'' {
			i++
		}
		if i >= len(tag) {
			break
		}
		q := tag[i]
		i++
		offs = append(offs, e.start+i)
		j := bytes.IndexByte(tag[i:], q)
		if j < 0 {
			break
		}
		i += j + 1
	}
	l.offs = offs
	return offs
}

func isXMLSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

// textExpr reads e's text as an expression, positioned at its first
// non-blank character (inside CDATA if that is how it is written).
func (l *xmlLoader) textExpr(e *xel, what string) *Expr {
	l.leaf(e)
	src := strings.TrimSpace(e.text)
	if src == "" {
		l.d.errorf(CodeMissingField, l.pos(e), "<%s> is empty: it holds an expression", e.tag)
		return nil
	}
	if len(src) > l.limits.MaxExprBytes {
		l.d.errorf(CodeLimit, l.pos(e), "%s is %d bytes, more than the limit of %d", what, len(src), l.limits.MaxExprBytes)
		return nil
	}
	off := e.end
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
	x := l.exprs.new()
	*x = Expr{Src: src, Pos: l.posAt(off), Indent: 1}
	return x
}

// xattr is the first occurrence of an allowed attribute: its value and
// the offset of the value.
type xattr struct {
	name, value string
	off         int
}

// xattrs are the allowed attributes of an element, as attrs returns them.
type xattrs []xattr

func (a xattrs) find(name string) *xattr {
	for i := range a {
		if a[i].name == name {
			return &a[i]
		}
	}
	return nil
}

// get returns the value of attribute name and whether it is given.
func (a xattrs) get(name string) (string, bool) {
	if x := a.find(name); x != nil {
		return x.value, true
	}
	return "", false
}

// val returns the value of attribute name, or "".
func (a xattrs) val(name string) string {
	v, _ := a.get(name)
	return v
}

// attrs checks e's attributes against allowed and returns them;
// required ones that are absent are reported. Each attribute's position
// comes from one pass over e's start tag.
func (l *xmlLoader) attrs(e *xel, allowed, required []string) xattrs {
	if cap(l.attrBuf)-len(l.attrBuf) < len(e.attr) {
		// A new block; the slices of earlier blocks keep theirs.
		l.attrBuf = make(xattrs, 0, max(min(2*cap(l.attrBuf), 4096), 64, len(e.attr)))
	}
	start := len(l.attrBuf)
	// Capped at e's attribute count, out never outgrows its room.
	out := l.attrBuf[start : start : start+len(e.attr)]
	var offs []int
	at := func(i int) Pos {
		if offs == nil {
			offs = l.attrOffsets(e)
		}
		if i < len(offs) {
			return l.posAt(offs[i])
		}
		return l.pos(e)
	}
	for i, a := range e.attr {
		name := a.Name.Local
		if a.Name.Space == "xmlns" || (a.Name.Space == "" && name == "xmlns") || a.Name.Space == "xsi" {
			continue
		}
		if a.Name.Space != "" {
			name = a.Name.Space + ":" + name
		}
		if !contains(allowed, name) {
			l.d.errorf(CodeUnknownField, at(i), "unknown attribute %s on <%s>%s", Quote(name), e.tag, didYouMean(name, allowed))
			continue
		}
		if a.Value == "" {
			l.d.errorf(CodeInvalidValue, at(i), "attribute %s of <%s> is empty", Quote(name), e.tag)
		}
		if first := out.find(name); first != nil {
			l.d.errorf(CodeDuplicate, at(i), "attribute %s is given twice on <%s>", Quote(name), e.tag).related(l.posAt(first.off), "first given here")
			continue
		}
		if offs == nil {
			offs = l.attrOffsets(e)
		}
		off := e.start
		if i < len(offs) {
			off = offs[i]
		}
		out = append(out, xattr{name: name, value: a.Value, off: off})
	}
	l.attrBuf = l.attrBuf[:start+len(out)]
	for _, r := range required {
		if out.find(r) == nil {
			l.d.errorf(CodeMissingField, l.pos(e), "<%s> has no %s attribute", e.tag, Quote(r))
		}
	}
	return out
}

// attrPos returns the position of the value of attribute name, or of e
// when a does not have it.
func (l *xmlLoader) attrPos(e *xel, a xattrs, name string) Pos {
	if x := a.find(name); x != nil {
		return l.posAt(x.off)
	}
	return l.pos(e)
}

func (l *xmlLoader) ref(a xattrs, name string) Ref {
	x := a.find(name)
	if x == nil {
		return Ref{}
	}
	return Ref{Name: x.value, Pos: l.posAt(x.off)}
}

func (l *xmlLoader) boolAttr(e *xel, a xattrs, name string) bool {
	switch v, ok := a.get(name); {
	case !ok || v == "false" || v == "0":
		return false
	case v == "true" || v == "1":
		return true
	default:
		l.d.errorf(CodeInvalidValue, l.attrPos(e, a, name), "%s must be true or false, not %s", name, Quote(v))
		return false
	}
}

func (l *xmlLoader) durationAttr(e *xel, a xattrs, name string) time.Duration {
	v, ok := a.get(name)
	if !ok {
		return 0
	}
	dur, err := ParseDuration(v)
	if err != nil {
		l.d.errorf(CodeInvalidValue, l.attrPos(e, a, name), "%s: %v", name, err)
	}
	return dur
}

// singleTags are the child elements that may appear at most once in
// their parent.
var singleTags = []string{"doc", "match", "decide", "child", "guard"}

// children dispatches e's child elements by tag, reporting unknown ones,
// repeated ones that may appear once, and stray text.
func (l *xmlLoader) children(e *xel, allowed []string, fn func(c *xel)) {
	for _, text := range e.stray {
		l.d.errorf(CodeInvalidValue, l.pos(e), "<%s> holds text %s outside any element", e.tag, Quote(strings.TrimSpace(text)))
	}
	var seen map[string]*xel
	for i, c := range e.elems {
		if e == l.drop {
			// Read once: let the collector free the child's elements
			// while later ones load.
			e.elems[i] = nil
		}
		if !contains(allowed, c.tag) {
			l.d.errorf(CodeUnknownField, l.pos(c), "unknown element <%s> in <%s>%s", clip(c.tag), e.tag, didYouMean(c.tag, allowed))
			continue
		}
		if contains(singleTags, c.tag) {
			if first, dup := seen[c.tag]; dup {
				l.d.errorf(CodeDuplicate, l.pos(c), "<%s> is given twice in <%s>", c.tag, e.tag).related(l.pos(first), "first given here")
				continue
			}
			if seen == nil {
				seen = map[string]*xel{}
			}
			seen[c.tag] = c
		}
		fn(c)
	}
}

// leaf reports child elements of an element that holds only text (or
// nothing): an expression, a doc, an attribute-only element.
func (l *xmlLoader) leaf(e *xel) {
	for _, c := range e.elems {
		l.d.errorf(CodeUnknownField, l.pos(c), "<%s> cannot hold elements such as <%s>; write markup in expressions and docs as &lt; or in CDATA", e.tag, clip(c.tag))
	}
}

// docText reads a <doc> element, without the indentation a writer added.
func (l *xmlLoader) docText(e *xel) string {
	l.leaf(e)
	return dedent(e.text)
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

var policyChildren = []string{"doc", "role", "performative", "message", "timer", "var", "commitment", "budget", "state"}

func (l *xmlLoader) policy(root *xel) *Policy {
	p := &Policy{Pos: l.pos(root)}
	if root.tag != "policy" {
		l.d.errorf(CodeInvalidValue, l.pos(root), "the root element is <%s>; a CP-XML file holds one <policy> element", clip(root.tag))
		return nil
	}
	a := l.attrs(root, []string{"name", "version", "initial"}, []string{"name", "version"})
	p.Name, p.Version = a.val("name"), a.val("version")
	if _, ok := a.get("name"); ok {
		p.Pos = l.attrPos(root, a, "name")
	}
	p.Initial = l.ref(a, "initial")
	tooMany := false
	l.drop = root
	l.children(root, policyChildren, func(c *xel) {
		switch c.tag {
		case "doc":
			p.Doc = l.docText(c)
		case "role":
			a := l.attrs(c, []string{"name", "many"}, []string{"name"})
			r := &Role{Name: a.val("name"), Pos: l.attrPos(c, a, "name"), Many: l.boolAttr(c, a, "many")}
			l.children(c, []string{"doc"}, func(d *xel) { r.Doc = l.docText(d) })
			p.Roles = append(p.Roles, r)
		case "performative":
			l.children(c, nil, nil)
			if r := l.ref(l.attrs(c, []string{"name"}, []string{"name"}), "name"); !r.IsZero() {
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
		case "budget":
			if p.Budget != nil {
				l.d.errorf(CodeDuplicate, l.pos(c), "the policy has a second <budget>; give one, with both counts").related(p.Budget.Pos, "the first")
			}
			p.Budget = l.budget(c)
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

func (l *xmlLoader) message(e *xel) *MessageType {
	a := l.attrs(e, []string{"name", "performative"}, []string{"name", "performative"})
	m := &MessageType{Name: a.val("name"), Pos: l.attrPos(e, a, "name"), Performative: a.val("performative")}
	l.children(e, []string{"doc", "field", "match"}, func(c *xel) {
		switch c.tag {
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

func (l *xmlLoader) field(e *xel) *Field {
	a := l.attrs(e, []string{"name", "type", "optional"}, []string{"name", "type"})
	f := &Field{Name: a.val("name"), Pos: l.attrPos(e, a, "name"), Optional: l.boolAttr(e, a, "optional")}
	if s, ok := a.get("type"); ok {
		t, opt, valid := ParseFieldType(s)
		if !valid || opt {
			l.d.errorf(CodeInvalidValue, l.attrPos(e, a, "type"), "unknown type %s (types: %s; use optional=\"true\" for an optional value)%s", Quote(s), fieldTypeList(), didYouMean(strings.TrimSuffix(s, "?"), strings.Split(fieldTypeList(), ", ")))
		}
		f.Type = t
	}
	l.children(e, nil, func(*xel) {})
	return f
}

func fieldTypeList() string {
	names := make([]string, len(FieldTypes))
	for i, ft := range FieldTypes {
		names[i] = string(ft)
	}
	return strings.Join(names, ", ")
}

func (l *xmlLoader) timer(e *xel) *Timer {
	before := len(l.d.list)
	a := l.attrs(e, []string{"name", "after", "deadline", "default"}, []string{"name"})
	t := &Timer{Name: a.val("name"), Pos: l.attrPos(e, a, "name")}
	t.After = l.durationAttr(e, a, "after")
	t.Default = l.durationAttr(e, a, "default")
	if s, ok := a.get("deadline"); ok {
		if r, err := ParseFieldRef(s); err != nil {
			l.d.errorf(CodeInvalidValue, l.attrPos(e, a, "deadline"), "deadline: %v", err)
		} else {
			r.Pos = l.attrPos(e, a, "deadline")
			t.Deadline = r
		}
	}
	l.children(e, []string{"doc"}, func(d *xel) { t.Doc = l.docText(d) })
	if len(l.d.list) == before {
		// A bad after or deadline is reported already.
		l.d.checkTimerShape(t, fmt.Sprintf("timer %s", Quote(t.Name)))
	}
	return t
}

func (l *xmlLoader) commitment(e *xel) *Commitment {
	a := l.attrs(e, []string{"name", "debtor", "creditor", "expires", "deadline"}, []string{"name"})
	c := &Commitment{Name: a.val("name"), Pos: l.attrPos(e, a, "name")}
	c.Debtor, c.Creditor = l.ref(a, "debtor"), l.ref(a, "creditor")
	c.Expires, c.Deadline = l.ref(a, "expires"), l.ref(a, "deadline")
	l.children(e, []string{"doc", "create", "detach", "discharge", "cancel", "release"}, func(op *xel) {
		if op.tag == "doc" {
			c.Doc = l.docText(op)
			return
		}
		l.children(op, nil, nil)
		oa := l.attrs(op, []string{"message"}, []string{"message"})
		r := l.ref(oa, "message")
		if r.IsZero() {
			return
		}
		switch op.tag {
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

func (l *xmlLoader) state(e *xel) *State {
	a := l.attrs(e, []string{"name", "kind", "outcome", "join"}, []string{"name"})
	s := l.states.new()
	*s = State{Name: a.val("name"), Pos: l.attrPos(e, a, "name"), Outcome: a.val("outcome"), Join: l.boolAttr(e, a, "join")}
	transitions := 0
	for _, c := range e.elems {
		switch TransitionKind(c.tag) {
		case SendMessage, OnTimeout, ChildReturn:
			transitions++
		}
	}
	if transitions > 0 {
		s.Transitions = l.transitionPtrs.make(transitions)
	}
	l.children(e, stateChildren, func(c *xel) {
		switch c.tag {
		case "doc":
			s.Doc = l.docText(c)
		case "arm":
			l.children(c, nil, nil)
			ca := l.attrs(c, []string{"timer"}, []string{"timer"})
			if r := l.ref(ca, "timer"); !r.IsZero() {
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
	kind, hasKind := a.get("kind")
	switch StateKind(kind) {
	case KindNormal, KindInChild, KindTerminal:
		s.Kind = StateKind(kind)
	default:
		if hasKind {
			l.d.errorf(CodeInvalidValue, l.attrPos(e, a, "kind"), "state kind %s is not one of normal, in-child, terminal%s", Quote(kind), didYouMean(kind, []string{"normal", "in-child", "terminal"}))
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
		l.d.errorf(CodeInvalidValue, l.attrPos(e, a, "outcome"), "state %s has an outcome but is %s; only a terminal state has one", Quote(s.Name), s.Kind)
	}
	if s.Child != nil && s.Kind != KindInChild {
		l.d.errorf(CodeInvalidValue, l.pos(e), "state %s runs a child policy, so its kind is in-child, not %s", Quote(s.Name), s.Kind)
	}
	return s
}

func (l *xmlLoader) child(e *xel) *ChildRef {
	a := l.attrs(e, []string{"policy"}, []string{"policy"})
	c := &ChildRef{Policy: l.ref(a, "policy"), Pos: l.pos(e)}
	l.children(e, []string{"bind"}, func(b *xel) {
		l.children(b, nil, nil)
		ba := l.attrs(b, []string{"role", "to"}, []string{"role", "to"})
		c.Bindings = append(c.Bindings, &RoleBinding{Child: ba.val("role"), Parent: l.ref(ba, "to"), Pos: l.attrPos(b, ba, "role")})
	})
	return c
}

var xmlTransitionAttrs = map[TransitionKind][]string{
	SendMessage: {"message", "from", "to", "next", "key"},
	OnTimeout:   {"timer", "next"},
	ChildReturn: {"outcome", "next"},
}

func (l *xmlLoader) transition(e *xel) *Transition {
	t := l.transitions.new()
	*t = Transition{Kind: TransitionKind(e.tag), Pos: l.pos(e)}
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
	t.Message, t.From, t.To = l.ref(a, "message"), l.ref(a, "from"), l.ref(a, "to")
	t.Timer, t.Next = l.ref(a, "timer"), l.ref(a, "next")
	t.Outcome, t.Key = a.val("outcome"), a.val("key")
	sets := 0
	for _, c := range e.elems {
		if c.tag == "set" {
			sets++
		}
	}
	if sets > 0 {
		t.Set = l.assignPtrs.make(sets)
	}
	l.children(e, []string{"doc", "guard", "set"}, func(c *xel) {
		switch c.tag {
		case "doc":
			t.Doc = l.docText(c)
		case "guard":
			t.Guard = l.textExpr(c, "guard")
		case "set":
			ca := l.attrs(c, []string{"var"}, []string{"var"})
			a := l.assigns.new()
			*a = Assign{Var: l.ref(ca, "var"), Expr: l.textExpr(c, "an expression")}
			t.Set = append(t.Set, a)
		}
	})
	return t
}

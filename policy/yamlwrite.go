package policy

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// WriteYAML renders p as a YAML policy file in the house style: short
// forms where they apply, one transition per line. LoadYAML reads it back
// to the same model (and the same fingerprint).
func WriteYAML(p *Policy) []byte {
	w := &yamlWriter{}
	w.line(0, "policy: "+yScalar(p.Name))
	w.line(0, "version: "+yScalar(p.Version))
	w.doc(0, "doc", p.Doc)
	if len(p.Roles) > 0 {
		w.blank()
		w.line(0, "roles:")
		for _, r := range p.Roles {
			var parts []string
			if r.Many {
				parts = append(parts, "many: true")
			}
			if r.Doc != "" && !strings.Contains(r.Doc, "\n") {
				parts = append(parts, "doc: "+yScalar(r.Doc))
			}
			if strings.Contains(r.Doc, "\n") {
				w.line(1, yKey(r.Name)+":")
				if r.Many {
					w.line(2, "many: true")
				}
				w.doc(2, "doc", r.Doc)
				continue
			}
			w.line(1, yKey(r.Name)+": {"+strings.Join(parts, ", ")+"}")
		}
	}
	if len(p.Performatives) > 0 {
		names := make([]string, len(p.Performatives))
		for i, r := range p.Performatives {
			names[i] = yScalar(r.Name)
		}
		w.blank()
		w.line(0, "performatives: ["+strings.Join(names, ", ")+"]")
	}
	if len(p.Messages) > 0 {
		w.blank()
		w.line(0, "messages:")
		for _, m := range p.Messages {
			w.message(m)
		}
	}
	if len(p.Timers) > 0 {
		w.blank()
		w.line(0, "timers:")
		for _, t := range p.Timers {
			w.timer(t)
		}
	}
	if len(p.Vars) > 0 {
		w.blank()
		w.line(0, "vars:")
		for _, f := range p.Vars {
			w.line(1, yKey(f.Name)+": "+f.TypeString())
		}
	}
	if len(p.Commitments) > 0 {
		w.blank()
		w.line(0, "commitments:")
		for _, c := range p.Commitments {
			w.commitment(c)
		}
	}
	if b := p.Budget; b != nil {
		var parts []string
		if b.Messages > 0 {
			parts = append(parts, "messages: "+strconv.Itoa(b.Messages))
		}
		if b.Visits > 0 {
			parts = append(parts, "visits: "+strconv.Itoa(b.Visits))
		}
		w.blank()
		w.line(0, "budget: {"+strings.Join(parts, ", ")+"}")
	}
	w.blank()
	if p.Initial.Name != "" {
		w.line(0, "initial: "+yScalar(p.Initial.Name))
	}
	w.line(0, "states:")
	for i, s := range p.States {
		if i > 0 && (len(s.Transitions) > 0 || len(p.States[i-1].Transitions) > 0) {
			w.blank()
		}
		w.state(s)
	}
	return w.buf.Bytes()
}

type yamlWriter struct {
	buf bytes.Buffer
}

func (w *yamlWriter) line(indent int, s string) {
	w.buf.WriteString(strings.Repeat("  ", indent))
	w.buf.WriteString(s)
	w.buf.WriteByte('\n')
}

func (w *yamlWriter) blank() { w.buf.WriteByte('\n') }

// doc writes key: text, as a literal block when the text has several lines.
func (w *yamlWriter) doc(indent int, key, text string) {
	if text == "" {
		return
	}
	w.block(indent, key, text, yBlockScalar)
}

// block writes key: value, as a literal block scalar when value spans
// lines, else with inline quoting by quote. A value a literal block
// cannot hold (a character that is not printable, other than a tab) is
// double-quoted, escapes and all.
func (w *yamlWriter) block(indent int, key, text string, quote func(string) string) {
	if !strings.Contains(text, "\n") {
		w.line(indent, key+": "+quote(text))
		return
	}
	for _, r := range text {
		if r != '\n' && r != '\t' && !unicode.IsPrint(r) {
			w.line(indent, key+": "+yDoubleQuote(text))
			return
		}
	}
	header := "|"
	if !strings.HasSuffix(text, "\n") {
		header = "|-"
	}
	if strings.HasPrefix(text, " ") {
		header = "|2" + header[1:]
	}
	w.line(indent, key+": "+header)
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if l == "" {
			w.buf.WriteByte('\n')
			continue
		}
		w.line(indent+1, l)
	}
}

func (w *yamlWriter) message(m *MessageType) {
	key := yKey(m.Name)
	if m.Match == nil && m.Doc == "" && len(m.Fields) == 0 {
		w.line(1, key+": "+yScalar(m.Performative))
		return
	}
	if m.Match == nil && !strings.Contains(m.Doc, "\n") {
		parts := []string{"performative: " + yScalar(m.Performative)}
		if len(m.Fields) > 0 {
			parts = append(parts, "fields: "+yFields(m.Fields))
		}
		if m.Doc != "" {
			parts = append(parts, "doc: "+yScalar(m.Doc))
		}
		w.line(1, key+": {"+strings.Join(parts, ", ")+"}")
		return
	}
	w.line(1, key+":")
	w.line(2, "performative: "+yScalar(m.Performative))
	if len(m.Fields) > 0 {
		w.line(2, "fields: "+yFields(m.Fields))
	}
	if m.Match != nil {
		w.block(2, "match", m.Match.Src, yExpr)
	}
	w.doc(2, "doc", m.Doc)
}

func yFields(fs []*Field) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = yKey(f.Name) + ": " + f.TypeString()
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func (w *yamlWriter) timer(t *Timer) {
	key := yKey(t.Name)
	var parts []string
	if t.After > 0 {
		if t.Doc == "" {
			w.line(1, key+": "+FormatDuration(t.After))
			return
		}
		parts = append(parts, "after: "+FormatDuration(t.After))
	}
	if t.Deadline != nil {
		parts = append(parts, "deadline: "+yScalar(t.Deadline.String()))
	}
	if t.Default > 0 {
		parts = append(parts, "default: "+FormatDuration(t.Default))
	}
	if strings.Contains(t.Doc, "\n") {
		w.line(1, key+":")
		for _, p := range parts {
			w.line(2, p)
		}
		w.doc(2, "doc", t.Doc)
		return
	}
	if t.Doc != "" {
		parts = append(parts, "doc: "+yScalar(t.Doc))
	}
	w.line(1, key+": {"+strings.Join(parts, ", ")+"}")
}

func (w *yamlWriter) commitment(c *Commitment) {
	w.line(1, yKey(c.Name)+":")
	w.doc(2, "doc", c.Doc)
	w.line(2, "debtor: "+yScalar(c.Debtor.Name))
	w.line(2, "creditor: "+yScalar(c.Creditor.Name))
	for _, op := range []struct {
		key  string
		refs []Ref
	}{{"create", c.Create}, {"detach", c.Detach}, {"discharge", c.Discharge}, {"cancel", c.Cancel}, {"release", c.Release}} {
		if len(op.refs) > 0 {
			w.line(2, op.key+": "+yRefs(op.refs))
		}
	}
	if c.Expires.Name != "" {
		w.line(2, "expires: "+yScalar(c.Expires.Name))
	}
	if c.Deadline.Name != "" {
		w.line(2, "deadline: "+yScalar(c.Deadline.Name))
	}
}

func yRefs(refs []Ref) string {
	if len(refs) == 1 {
		return yScalar(refs[0].Name)
	}
	parts := make([]string, len(refs))
	for i, r := range refs {
		parts[i] = yScalar(r.Name)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func (w *yamlWriter) state(s *State) {
	key := yKey(s.Name)
	if s.Kind == KindTerminal {
		if s.Doc == "" {
			w.line(1, key+": {terminal: "+yScalar(s.Outcome)+"}")
			return
		}
		w.line(1, key+":")
		w.line(2, "terminal: "+yScalar(s.Outcome))
		w.doc(2, "doc", s.Doc)
		return
	}
	if s.Kind == KindNormal && s.Doc == "" && len(s.Arm) == 0 && !s.Join && s.Decide == nil && len(s.Transitions) > 0 {
		w.line(1, key+":")
		for _, t := range s.Transitions {
			w.transition(2, t)
		}
		return
	}
	w.line(1, key+":")
	w.doc(2, "doc", s.Doc)
	if len(s.Arm) > 0 {
		w.line(2, "arm: "+yRefs(s.Arm))
	}
	if s.Join {
		w.line(2, "join: true")
	}
	if s.Decide != nil {
		w.block(2, "decide", s.Decide.Src, yExpr)
	}
	if s.Child != nil {
		parts := []string{"policy: " + yScalar(s.Child.Policy.Name)}
		if len(s.Child.Bindings) > 0 {
			bs := make([]string, len(s.Child.Bindings))
			for i, b := range s.Child.Bindings {
				bs[i] = yKey(b.Child) + ": " + yScalar(b.Parent.Name)
			}
			parts = append(parts, "roles: {"+strings.Join(bs, ", ")+"}")
		}
		w.line(2, "child: {"+strings.Join(parts, ", ")+"}")
	}
	w.line(2, "on:")
	for _, t := range s.Transitions {
		w.transition(3, t)
	}
}

func (w *yamlWriter) transition(indent int, t *Transition) {
	var parts []string
	switch t.Kind {
	case SendMessage:
		parts = append(parts, "send: "+yScalar(t.Message.Name), "from: "+yScalar(t.From.Name), "to: "+yScalar(t.To.Name))
		if t.Key != "" {
			parts = append(parts, "key: "+yScalar(t.Key))
		}
	case OnTimeout:
		parts = append(parts, "timeout: "+yScalar(t.Timer.Name))
	case ChildReturn:
		parts = append(parts, "return: "+yScalar(t.Outcome))
	}
	parts = append(parts, "next: "+yScalar(t.Next.Name))
	multiline := strings.Contains(t.Doc, "\n") || (t.Guard != nil && strings.Contains(t.Guard.Src, "\n"))
	for _, a := range t.Set {
		multiline = multiline || strings.Contains(a.Expr.Src, "\n")
	}
	if !multiline {
		if t.Guard != nil {
			parts = append(parts, "guard: "+yExpr(t.Guard.Src))
		}
		if len(t.Set) > 0 {
			sets := make([]string, len(t.Set))
			for i, a := range t.Set {
				sets[i] = yKey(a.Var.Name) + ": " + yExpr(a.Expr.Src)
			}
			parts = append(parts, "set: {"+strings.Join(sets, ", ")+"}")
		}
		if t.Doc != "" {
			parts = append(parts, "doc: "+yScalar(t.Doc))
		}
		w.line(indent, "- {"+strings.Join(parts, ", ")+"}")
		return
	}
	w.line(indent, "- "+parts[0])
	for _, p := range parts[1:] {
		w.line(indent+1, p)
	}
	if t.Guard != nil {
		w.block(indent+1, "guard", t.Guard.Src, yExpr)
	}
	if len(t.Set) > 0 {
		w.line(indent+1, "set:")
		for _, a := range t.Set {
			w.block(indent+2, yKey(a.Var.Name), a.Expr.Src, yExpr)
		}
	}
	w.doc(indent+1, "doc", t.Doc)
}

var plainSafe = regexp.MustCompile(`^[A-Za-z0-9_./][A-Za-z0-9_ ./+()-]*$`)

// yScalar quotes s for use anywhere a scalar may appear, including inside
// flow collections: plain when that reads back unchanged as a string,
// double-quoted otherwise.
func yScalar(s string) string {
	if plainSafe.MatchString(s) && !strings.HasSuffix(s, " ") && !yamlSpecial(s) {
		return s
	}
	return yDoubleQuote(s)
}

func yKey(s string) string { return yScalar(s) }

// yBlockScalar quotes s for a value on its own line (not inside {...} or
// [...]), where plain text may hold commas, brackets and apostrophes.
func yBlockScalar(s string) string {
	if s == "" || yamlSpecial(s) || strings.TrimSpace(s) != s || strings.Contains(s, ": ") || strings.Contains(s, " #") ||
		strings.HasSuffix(s, ":") || strings.ContainsAny(s[:1], "!&*{}[]|>'\"%@`#,?:-") {
		return yScalar(s)
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return yDoubleQuote(s)
		}
	}
	return s
}

// yExpr quotes an expression, preferring single quotes, which keep the
// double quotes expressions use for strings readable.
func yExpr(s string) string {
	if plainSafe.MatchString(s) && !strings.HasSuffix(s, " ") && !yamlSpecial(s) {
		return s
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return yDoubleQuote(s)
		}
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// yamlSpecial reports words YAML would read as something other than a
// string (booleans, null) or that could be mistaken for numbers.
func yamlSpecial(s string) bool {
	switch strings.ToLower(s) {
	case "true", "false", "null", "~", "yes", "no", "on", "off", "y", "n", ".inf", ".nan", "-.inf":
		return true
	}
	return false
}

func yDoubleQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f || !unicode.IsPrint(r) && r > 0x7f:
			if r <= 0xffff {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				fmt.Fprintf(&b, `\U%08x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

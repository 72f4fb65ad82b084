package policy

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/file"
)

// checkExpressions parses and type-checks every embedded expression
// against the variables its place provides (see EnvContent and the
// others), and records the conversation variables they read. Diagnostics
// point at the offending character in the policy file.
func checkExpressions(c *checker) {
	p := c.p
	c.varsRead = make([]bool, len(c.vars.names))
	varsType := fieldsStruct(p.Vars)
	// The environments by message type name (the first type of a name
	// stands for it) and whether vars are readable.
	type envKey struct {
		msg      string
		withVars bool
	}
	contentEnv := map[envKey]*exprEnv{}
	envFor := func(m *MessageType, withVars bool) *exprEnv {
		key := envKey{withVars: withVars}
		if m != nil {
			key.msg = m.Name
		}
		if env, ok := contentEnv[key]; ok {
			return env
		}
		env := map[string]any{}
		if m != nil {
			env[EnvMsg] = Envelope{}
			if len(m.Fields) > 0 {
				env[EnvContent] = zero(fieldsStruct(m.Fields))
			} else {
				env[EnvContent] = map[string]any{}
			}
		}
		if withVars {
			env[EnvVars] = zero(varsType)
		}
		prepared := newExprEnv(env)
		contentEnv[key] = prepared
		return prepared
	}
	decideEnv := newExprEnv(map[string]any{
		EnvContent:  map[string]any{},
		EnvMsg:      Envelope{},
		EnvVars:     zero(varsType),
		EnvChoices:  []string{},
		EnvPeer:     "",
		EnvSessions: []map[string]any{},
	})
	for _, m := range p.Messages {
		c.checkExpr(m.Match, exprPlace{what: "match rule"}, envFor(m, false), reflect.TypeFor[bool]())
	}
	// The environments of transitions, by the index of their message
	// type, and of those that send none.
	msgEnvs := make([]*exprEnv, len(c.msgs.names))
	var noMsgEnv *exprEnv
	k := 0 // the index of the next transition's edge
	for _, s := range p.States {
		c.checkExpr(s.Decide, exprPlace{what: "decide"}, decideEnv, nil)
		edges := c.edges[k : k+len(s.Transitions)]
		k += len(edges)
		for j, e := range edges {
			if !e.exprs {
				continue
			}
			t := s.Transitions[j]
			var env *exprEnv
			if t.Kind == SendMessage {
				i := c.msgs.index(t.Message.Name)
				if i < 0 {
					continue // unresolved; reported by references
				}
				if msgEnvs[i] == nil {
					msgEnvs[i] = envFor(c.msgs.vals[i], true)
				}
				env = msgEnvs[i]
			} else {
				if noMsgEnv == nil {
					noMsgEnv = envFor(nil, true)
				}
				env = noMsgEnv
			}
			c.checkExpr(t.Guard, exprPlace{what: "guard"}, env, reflect.TypeFor[bool]())
			for _, a := range t.Set {
				var want reflect.Type
				if v := c.vars.get(a.Var.Name); v != nil && v.Type != "" {
					want = v.Type.GoType(false)
				}
				c.checkExpr(a.Expr, exprPlace{setVar: a.Var.Name}, env, want)
			}
		}
	}
}

var noFieldRE = regexp.MustCompile(`^type .* has no field (\S+)$`)

// exprResult is what parsing and type-checking one expression source in
// one environment found. Policies repeat guards, so the results of the
// expressions expr's parser reads are memoized.
type exprResult struct {
	syntaxErr, limitErr, typeErr error
	reads                        []string
	got                          reflect.Type
}

type exprKey struct {
	env uintptr // identity of the environment map
	src string
}

// compileExpr compiles e's source as the engine does (CompileExpr), in
// env.
func (c *checker) compileExpr(e *Expr, env *exprEnv) *exprResult {
	src := e.Src
	// A source of the simple shapes is parsed here, to the tree expr's
	// parser would make of it, and typed here, without expr's checker and
	// compiler: it compiles, to a program of this type. Doing that again
	// for a repeated source costs less than remembering it: the result
	// is c.scratch, valid until the next call.
	tree, native := c.parser.parse(src)
	if native {
		c.scratch = exprResult{}
		c.tree = tree
		ok := c.typed(e, &c.scratch, &c.tree, env)
		c.tree = nil
		if ok {
			return &c.scratch
		}
	}
	// Any other goes to expr, which parses it (again, when the tree read
	// here did not type).
	key := exprKey{reflect.ValueOf(env.m).Pointer(), src}
	if r, ok := c.exprCache[key]; ok {
		return r
	}
	r := c.results.new()
	if native {
		r.reads = c.readList(c.scratch.reads)
	}
	if c.exprCache == nil {
		c.exprCache = map[exprKey]*exprResult{}
	}
	c.exprCache[key] = r
	config := c.exprConfigs[key.env]
	if config == nil {
		if c.exprConfigs == nil {
			c.exprConfigs = map[uintptr]*conf.Config{}
		}
		config = newExprConfig(env.m)
		c.exprConfigs[key.env] = config
	}
	prog, stage, err := compileWith(src, config, func(tree *ast.Node) bool {
		if native {
			return false // lent and read above
		}
		ok := c.typed(e, r, tree, env)
		r.reads = c.readList(r.reads)
		return ok
	})
	switch {
	case err == nil && prog == nil: // typed by ExprTypeOf
	case err == nil:
		r.got = prog.Node().Type()
	case stage == exprParsed:
		r.syntaxErr = err
	case stage == exprLimited:
		r.limitErr = err
	default:
		r.typeErr = err
	}
	return r
}

// typed lends e's parsed tree to the caller of the checks, records in
// r the variables it reads (in c.reads, until the next call) and, when
// ExprTypeOf types it, its type: it reports whether it did.
func (c *checker) typed(e *Expr, r *exprResult, tree *ast.Node, env *exprEnv) bool {
	if c.opts.parsed != nil {
		c.opts.parsed(e, *tree)
	}
	c.reads = c.reads[:0]
	c.reads.walk(tree)
	slices.Sort(c.reads)
	c.reads = slices.Compact(c.reads)
	r.reads = c.reads
	t, ok := env.typeOf(*tree)
	r.got = t
	return ok
}

// readList returns a list of the variables in reads (sorted, each
// once) for an exprResult to keep: nil for none, a list shared with
// every other expression that reads only the same one, or a copy.
func (c *checker) readList(reads []string) []string {
	switch len(reads) {
	case 0:
		return nil
	case 1:
		if l, ok := c.oneRead[reads[0]]; ok {
			return l
		}
		if c.oneRead == nil {
			c.oneRead = map[string][]string{}
		}
		l := []string{reads[0]}
		c.oneRead[reads[0]] = l
		return l
	}
	return slices.Clone(reads)
}

// exprPlace names where an expression sits, for its diagnostics: what
// ("match rule", "guard", "decide"), or the variable an assignment sets.
// The name is made only for a diagnostic.
type exprPlace struct{ what, setVar string }

func (p exprPlace) String() string {
	if p.what == "" {
		return fmt.Sprintf("value of %q", p.setVar)
	}
	return p.what
}

// checkExpr checks one expression; want, when not nil, is the type its
// result must have (interface results pass: they are checked at run time).
func (c *checker) checkExpr(e *Expr, place exprPlace, env *exprEnv, want reflect.Type) {
	if e == nil {
		return
	}
	r := c.compileExpr(e, env)
	switch {
	case r.syntaxErr != nil:
		c.exprError(CodeExprSyntax, e, place.String(), r.syntaxErr, env.m)
		return
	case r.limitErr != nil:
		c.d.errorf(CodeLimit, e.Pos, "%s has more than %d syntax nodes (policy.MaxExprNodes); split it into several, or simplify it", place, MaxExprNodes)
		return
	case r.typeErr != nil:
		c.markRead(r.reads)
		c.exprError(CodeExprType, e, place.String(), r.typeErr, env.m)
		return
	}
	c.markRead(r.reads)
	if want == nil || r.got == nil || r.got.Kind() == reflect.Interface || assignable(r.got, want) {
		return
	}
	c.d.errorf(CodeExprType, e.Pos, "%s is %s, but must be %s", place, article(typeName(r.got)), article(typeName(want)))
}

// markRead records that an expression reads the variables reads.
func (c *checker) markRead(reads []string) {
	for _, v := range reads {
		if i := c.vars.index(v); i >= 0 {
			c.varsRead[i] = true
		}
	}
}

// article prefixes a type name with "a" or "an".
func article(name string) string {
	if name != "" && strings.ContainsRune("aeiou", rune(name[0])) {
		return "an " + name
	}
	return "a " + name
}

// assignable reports whether an expression result of type got fits a
// variable whose Go type (from FieldType.GoType) is want.
func assignable(got, want reflect.Type) bool {
	if got.Kind() == reflect.Pointer {
		got = got.Elem()
	}
	switch {
	case want.Kind() == reflect.Interface:
		return true
	case want == reflect.TypeFor[float64]():
		return isNumber(got.Kind())
	case want == reflect.TypeFor[time.Duration]():
		return got == want || isInt(got.Kind())
	case want == reflect.TypeFor[int]():
		return isInt(got.Kind()) && got != reflect.TypeFor[time.Duration]()
	case want.Kind() == reflect.Slice:
		return got.Kind() == reflect.Slice || got.Kind() == reflect.Array
	case want.Kind() == reflect.Map:
		return got.Kind() == reflect.Map || got.Kind() == reflect.Struct
	}
	return got == want
}

func isInt(k reflect.Kind) bool {
	return k >= reflect.Int && k <= reflect.Uint64
}

func isNumber(k reflect.Kind) bool {
	return isInt(k) || k == reflect.Float32 || k == reflect.Float64
}

func typeName(t reflect.Type) string {
	switch {
	case t.Kind() == reflect.Pointer:
		return "optional " + typeName(t.Elem()) // an optional field
	case t == reflect.TypeFor[bool]():
		return "bool"
	case t.Kind() == reflect.String:
		return "string"
	case t.Kind() == reflect.Float64 || t.Kind() == reflect.Float32:
		return "number"
	case isInt(t.Kind()) && t.Name() != "Duration":
		return "int"
	case t.Name() == "Duration":
		return "duration"
	case t.Name() == "Time":
		return "time"
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		return "list"
	case t.Kind() == reflect.Map || t.Kind() == reflect.Struct:
		return "map"
	}
	return t.String()
}

func (c *checker) exprError(code Code, e *Expr, what string, err error, env map[string]any) {
	pos, msg := e.Locate(err)
	var fe *file.Error
	if errors.As(err, &fe) {
		if m := noFieldRE.FindStringSubmatch(msg); m != nil {
			msg = c.noFieldMessage(e.Src, fe, m[1], env)
		}
	}
	if m := unknownNameRE.FindStringSubmatch(msg); m != nil {
		if why := unreadable(m[1], env); why != "" {
			msg = why
		}
	}
	c.d.errorf(code, pos, "%s: %s", what, msg)
}

var unknownNameRE = regexp.MustCompile(`^unknown name (\S+)$`)

// unreadable explains why an expression cannot read name, one of the
// names some place provides, where env does not: what the place lacks,
// and what it can read. It returns "" for a name no place provides.
func unreadable(name string, env map[string]any) string {
	switch name {
	case EnvContent, EnvMsg, EnvVars, EnvChoices, EnvPeer, EnvSessions:
	default:
		return ""
	}
	var names []string
	for _, n := range []string{EnvContent, EnvMsg, EnvVars, EnvChoices, EnvPeer, EnvSessions} {
		if _, ok := env[n]; ok {
			names = append(names, n)
		}
	}
	readable := "nothing"
	if len(names) > 0 {
		readable = strings.Join(names, " and ")
	}
	_, hasMsg := env[EnvMsg]
	switch {
	case !hasMsg && (name == EnvContent || name == EnvMsg):
		return fmt.Sprintf("%s cannot be read here: no message comes with a timeout or a child policy's return, so this expression can read only %s", name, readable)
	case name == EnvVars:
		return fmt.Sprintf("vars cannot be read here: a match rule classifies a message by itself, before any state is known, so it can read only %s", readable)
	}
	return fmt.Sprintf("%s cannot be read here; this expression can read %s", name, readable)
}

// Locate returns where in the policy file an error that expr reported
// for e (compiling or evaluating it) points, and its message without the
// position: the character expr points at, or e's start for an error
// without a position.
func (e *Expr) Locate(err error) (Pos, string) {
	var fe *file.Error
	if !errors.As(err, &fe) {
		return e.Pos, err.Error()
	}
	return e.PosAt(fe.Line, byteColumn(e.Src, fe.Line, fe.Column)), fe.Message
}

// byteColumn converts expr's column (0-based, counted in runes) on line
// (1-based) of src into a byte count, which is how Pos counts columns.
func byteColumn(src string, line, col int) int {
	lines := strings.Split(src, "\n")
	if line < 1 || line > len(lines) || col <= 0 {
		return col
	}
	n := 0
	for i := range lines[line-1] {
		if n == col {
			return i
		}
		n++
	}
	return len(lines[line-1]) + col - n
}

// noFieldMessage rewrites expr's "type struct {...} has no field x" into
// words about the policy: which value lacks the field, and what is near.
func (c *checker) noFieldMessage(src string, fe *file.Error, field string, env map[string]any) string {
	base := ""
	lines := strings.Split(src, "\n")
	if fe.Line >= 1 && fe.Line <= len(lines) {
		line := []rune(lines[fe.Line-1])
		end := min(fe.Column, len(line))
		prefix := strings.TrimRight(string(line[:end]), ".?")
		i := len(prefix)
		for i > 0 && (isIdent(prefix[i-1])) {
			i--
		}
		base = prefix[i:]
	}
	var cands []string
	if v, ok := env[base]; ok {
		t := reflect.TypeOf(v)
		if t.Kind() == reflect.Struct {
			for i := range t.NumField() {
				cands = append(cands, t.Field(i).Tag.Get("expr"))
			}
		}
	}
	switch base {
	case EnvContent:
		return fmt.Sprintf("the message content has no field %q%s", field, didYouMean(field, cands))
	case EnvVars:
		return fmt.Sprintf("there is no variable %q (declare it under vars)%s", field, didYouMean(field, cands))
	case EnvMsg:
		return fmt.Sprintf("the message envelope has no parameter %q%s", field, didYouMean(field, cands))
	}
	return fmt.Sprintf("no field %q%s", field, didYouMean(field, cands))
}

func isIdent(b byte) bool {
	return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

// varReads is an ast.Visitor recording vars.NAME accesses (a name as
// often as it is read).
type varReads []string

func (v *varReads) Visit(node *ast.Node) {
	m, ok := (*node).(*ast.MemberNode)
	if !ok {
		return
	}
	if id, ok := m.Node.(*ast.IdentifierNode); ok && id.Value == EnvVars {
		if s, ok := m.Property.(*ast.StringNode); ok {
			*v = append(*v, s.Value)
		}
	}
}

// walk is ast.Walk(node, v), done directly for the nodes exprParser
// makes and by ast.Walk for the others.
func (v *varReads) walk(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.IdentifierNode, *ast.IntegerNode, *ast.FloatNode, *ast.StringNode, *ast.BoolNode:
	case *ast.UnaryNode:
		v.walk(&n.Node)
	case *ast.BinaryNode:
		v.walk(&n.Left)
		v.walk(&n.Right)
	case *ast.MemberNode:
		v.walk(&n.Node)
		v.walk(&n.Property)
		v.Visit(node)
	default:
		ast.Walk(node, v)
	}
}

package decision

import "github.com/expr-lang/expr/ast"

// fast is the native form of a boolean expression built from
//
//   - presence tests on the content: "key" in content;
//   - comparisons of a field of content or vars with a literal number,
//     string or boolean: content.n > 0, vars.state == "open", 0 < content.n;
//   - !, not, &&, and, ||, or over those.
//
// Guards and match rules are mostly of these shapes, and evaluating them
// natively skips the expression VM and its reflection on the maps. A
// comparison it cannot decide exactly as expr would (a missing field, a
// value of another type, a nil map of vars) makes the whole evaluation
// fall back to the VM, which then gives expr's own result or error.
type fast struct {
	kind        fastKind
	vars        bool   // a comparison reads vars, not content
	key         string // the key tested or compared
	op          cmpOp
	lit         literal
	left, right *fast // the operands of && and ||; left alone for !
}

type fastKind uint8

const (
	fastHas fastKind = iota // key in content
	fastCmp                 // field op literal
	fastNot
	fastAnd
	fastOr
)

type cmpOp uint8

const (
	opEq cmpOp = iota
	opNe
	opLt
	opLe
	opGt
	opGe
)

// cmpOpOf returns the comparison operator op names.
func cmpOpOf(op string) (cmpOp, bool) {
	switch op {
	case "==":
		return opEq, true
	case "!=":
		return opNe, true
	case "<":
		return opLt, true
	case "<=":
		return opLe, true
	case ">":
		return opGt, true
	case ">=":
		return opGe, true
	}
	return 0, false
}

// flipped is the operator with its operands swapped: 0 < n is n > 0.
var flipped = [...]cmpOp{opEq: opEq, opNe: opNe, opLt: opGt, opLe: opGe, opGt: opLt, opGe: opLe}

type litKind uint8

const (
	litInt litKind = iota
	litFloat
	litString
	litBool
)

// literal is the constant side of a comparison.
type literal struct {
	kind litKind
	i    int
	f    float64
	s    string
	b    bool
}

// eval returns the expression's value on an Env of content and vars, and
// false when it cannot be decided natively. field, when not nil, is the
// value content holds under the one field of content the expression
// reads (see contentField), which is then not looked up.
func (p *fast) eval(content, vars map[string]any, field *any) (value, decided bool) {
	switch p.kind {
	case fastHas:
		if field != nil {
			return true, true
		}
		_, ok := content[p.key]
		return ok, true
	case fastCmp:
		return p.compare(content, vars, field)
	case fastNot:
		v, ok := p.left.eval(content, vars, field)
		return !v, ok
	case fastAnd:
		l, ok := p.left.eval(content, vars, field)
		if !ok || !l {
			return false, ok
		}
		return p.right.eval(content, vars, field)
	default: // fastOr
		l, ok := p.left.eval(content, vars, field)
		if !ok || l {
			return l, ok
		}
		return p.right.eval(content, vars, field)
	}
}

// presenceOnly reports whether p is built of presence tests alone,
// which eval always decides.
func (p *fast) presenceOnly() bool {
	switch p.kind {
	case fastHas:
		return true
	case fastNot:
		return p.left.presenceOnly()
	case fastAnd, fastOr:
		return p.left.presenceOnly() && p.right.presenceOnly()
	}
	return false
}

// contentField returns the key of content the expression reads, and
// whether it reads one and only one (vars aside).
func (p *fast) contentField() (string, bool) {
	key, n := "", 0
	var walk func(q *fast)
	walk = func(q *fast) {
		switch q.kind {
		case fastHas, fastCmp:
			if q.kind == fastCmp && q.vars {
				return
			}
			if n == 0 || q.key != key {
				key = q.key
				n++
			}
		default:
			walk(q.left)
			if q.right != nil {
				walk(q.right)
			}
		}
	}
	walk(p)
	if n != 1 {
		return "", false
	}
	return key, true
}

// compare evaluates field op literal as expr's runtime helpers do for the
// types handled here: integers of every size compare as int, against a
// float as float64, strings with strings and booleans (== and != only)
// with booleans. field is as for eval.
func (p *fast) compare(content, vars map[string]any, field *any) (bool, bool) {
	var v any
	switch {
	case p.vars:
		if vars == nil {
			return false, false
		}
		var ok bool
		if v, ok = vars[p.key]; !ok {
			return false, false
		}
	case field != nil:
		v = *field
	default:
		var ok bool
		if v, ok = content[p.key]; !ok {
			return false, false
		}
	}
	switch p.lit.kind {
	case litInt:
		if x, ok := asInt(v); ok {
			return ordered(p.op, x, p.lit.i), true
		}
		if x, ok := asFloat(v); ok {
			return ordered(p.op, x, float64(p.lit.i)), true
		}
	case litFloat:
		if x, ok := asFloat(v); ok {
			return ordered(p.op, x, p.lit.f), true
		}
	case litString:
		if x, ok := v.(string); ok {
			return ordered(p.op, x, p.lit.s), true
		}
	case litBool:
		if x, ok := v.(bool); ok && (p.op == opEq || p.op == opNe) {
			return (x == p.lit.b) == (p.op == opEq), true
		}
	}
	return false, false
}

func ordered[T int | float64 | string](op cmpOp, x, y T) bool {
	switch op {
	case opEq:
		return x == y
	case opNe:
		return x != y
	case opLt:
		return x < y
	case opLe:
		return x <= y
	case opGt:
		return x > y
	default:
		return x >= y
	}
}

// asInt converts an integer of any Go type to int, as expr does when it
// compares integers.
func asInt(v any) (int, bool) {
	switch x := v.(type) {
	case int:
		return x, true
	case int64:
		return int(x), true
	case int32:
		return int(x), true
	case int16:
		return int(x), true
	case int8:
		return int(x), true
	case uint:
		return int(x), true
	case uint64:
		return int(x), true
	case uint32:
		return int(x), true
	case uint16:
		return int(x), true
	case uint8:
		return int(x), true
	}
	return 0, false
}

// asFloat converts a number of any Go type to float64, as expr does when
// it compares a number with a float.
func asFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case int16:
		return float64(x), true
	case int8:
		return float64(x), true
	case uint:
		return float64(x), true
	case uint64:
		return float64(x), true
	case uint32:
		return float64(x), true
	case uint16:
		return float64(x), true
	case uint8:
		return float64(x), true
	}
	return 0, false
}

// fastBlock hands out the nodes of native forms from a block, one
// allocation for many; the nil *fastBlock allocates each.
type fastBlock struct{ block []fast }

// fastBlockSize is how many nodes a fastBlock allocates at once.
const fastBlockSize = 64

func (b *fastBlock) new(f fast) *fast {
	if b == nil {
		n := new(fast)
		*n = f
		return n
	}
	if len(b.block) == 0 {
		b.block = make([]fast, fastBlockSize)
	}
	n := &b.block[0]
	*n = f
	b.block = b.block[1:]
	return n
}

// fastNode returns the native form of n, nil when it has none, with its
// nodes from b.
func (b *fastBlock) fastNode(n ast.Node) *fast {
	switch n := n.(type) {
	case *ast.UnaryNode:
		if n.Operator != "!" && n.Operator != "not" {
			return nil
		}
		inner := b.fastNode(n.Node)
		if inner == nil {
			return nil
		}
		return b.new(fast{kind: fastNot, left: inner})
	case *ast.BinaryNode:
		switch n.Operator {
		case "in":
			key, ok := n.Left.(*ast.StringNode)
			id, ok2 := n.Right.(*ast.IdentifierNode)
			if !ok || !ok2 || id.Value != "content" {
				return nil
			}
			return b.new(fast{kind: fastHas, key: key.Value})
		case "&&", "and", "||", "or":
			l, r := b.fastNode(n.Left), b.fastNode(n.Right)
			if l == nil || r == nil {
				return nil
			}
			kind := fastAnd
			if n.Operator == "||" || n.Operator == "or" {
				kind = fastOr
			}
			return b.new(fast{kind: kind, left: l, right: r})
		}
		op, ok := cmpOpOf(n.Operator)
		if !ok {
			return nil
		}
		if f, ok := comparison(n.Left, n.Right, op); ok {
			return b.new(f)
		}
		if f, ok := comparison(n.Right, n.Left, flipped[op]); ok {
			return b.new(f)
		}
		return nil
	}
	return nil
}

// comparison returns field op lit natively, and false when field is not
// a field of content or vars or lit not a literal.
func comparison(field, lit ast.Node, op cmpOp) (fast, bool) {
	m, ok := field.(*ast.MemberNode)
	if !ok || m.Optional || m.Method {
		return fast{}, false
	}
	root, ok := m.Node.(*ast.IdentifierNode)
	key, ok2 := m.Property.(*ast.StringNode)
	if !ok || !ok2 || (root.Value != "content" && root.Value != "vars") {
		return fast{}, false
	}
	l, ok := literalOf(lit)
	if !ok {
		return fast{}, false
	}
	return fast{kind: fastCmp, vars: root.Value == "vars", key: key.Value, op: op, lit: l}, true
}

func literalOf(n ast.Node) (literal, bool) {
	switch n := n.(type) {
	case *ast.IntegerNode:
		return literal{kind: litInt, i: n.Value}, true
	case *ast.FloatNode:
		return literal{kind: litFloat, f: n.Value}, true
	case *ast.StringNode:
		return literal{kind: litString, s: n.Value}, true
	case *ast.BoolNode:
		return literal{kind: litBool, b: n.Value}, true
	case *ast.UnaryNode:
		if n.Operator != "-" {
			return literal{}, false
		}
		switch x := n.Node.(type) {
		case *ast.IntegerNode:
			return literal{kind: litInt, i: -x.Value}, true
		case *ast.FloatNode:
			return literal{kind: litFloat, f: -x.Value}, true
		}
	}
	return literal{}, false
}

// msgReader finds whether an expression may read the message envelope:
// it names msg (or the whole environment) anywhere.
type msgReader struct{ reads bool }

func (v *msgReader) Visit(n *ast.Node) {
	if id, ok := (*n).(*ast.IdentifierNode); ok && (id.Value == "msg" || id.Value == "$env") {
		v.reads = true
	}
}

// readsMsg is whether a msgReader walking node would find that it
// reads msg: found directly for the nodes of the simple shapes (those
// policy's parser makes), by ast.Walk for the others.
func readsMsg(node *ast.Node) bool {
	switch n := (*node).(type) {
	case *ast.IdentifierNode:
		return n.Value == "msg" || n.Value == "$env"
	case *ast.IntegerNode, *ast.FloatNode, *ast.StringNode, *ast.BoolNode:
		return false
	case *ast.UnaryNode:
		return readsMsg(&n.Node)
	case *ast.BinaryNode:
		return readsMsg(&n.Left) || readsMsg(&n.Right)
	case *ast.MemberNode:
		return readsMsg(&n.Node) || readsMsg(&n.Property)
	}
	v := new(msgReader)
	ast.Walk(node, v)
	return v.reads
}

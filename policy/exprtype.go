package policy

import (
	"reflect"
	"sync"

	"github.com/expr-lang/expr/ast"
)

// ExprTypeOf returns the type of the parsed expression tree in env (an
// environment as CompileExpr takes it: a struct, or a map whose values'
// types are the names' types), when tree is of the simple shapes it can
// type by itself, and false otherwise. A tree it types compiles in env
// (CompileExpr returns no error for its source, and its program's result
// has that type), so a caller may type-check it without expr's checker;
// when it returns false, CompileExpr decides.
//
// The shapes are the ones guards, match rules and most assignments take:
// names of env, their fields (by name, on structs and on maps of string
// keys) and the fields of those; integer, float, string
// and boolean literals; "name" in a struct or map; !, not, unary + and -;
// comparisons, &&, and, ||, or and arithmetic (+ - * / % ** ^), where not
// both operands are constants (expr folds those, and may fail doing it)
// and each operand is a bool, an int, a float64, a string (or an optional
// one) or a value of unknown type, as expr's checker allows them.
func ExprTypeOf(tree ast.Node, env any) (reflect.Type, bool) {
	ty := exprTyper{env: env}
	t, ok := ty.typeOf(tree)
	if !ok || ty.nodes > MaxExprNodes/2 || !simple(t) {
		return nil, false
	}
	return t, true
}

var (
	typeAny    = reflect.TypeFor[any]()
	typeBool   = reflect.TypeFor[bool]()
	typeInt    = reflect.TypeFor[int]()
	typeFloat  = reflect.TypeFor[float64]()
	typeString = reflect.TypeFor[string]()
)

// exprTyper types one tree in env, counting its nodes.
type exprTyper struct {
	env   any
	nodes int
}

func (ty *exprTyper) typeOf(node ast.Node) (reflect.Type, bool) {
	ty.nodes++
	switch n := node.(type) {
	case *ast.IntegerNode:
		return typeInt, true
	case *ast.FloatNode:
		return typeFloat, true
	case *ast.StringNode:
		return typeString, true
	case *ast.BoolNode:
		return typeBool, true
	case *ast.IdentifierNode:
		return envName(ty.env, n.Value)
	case *ast.MemberNode:
		prop, ok := n.Property.(*ast.StringNode)
		if !ok || n.Optional || n.Method {
			return nil, false
		}
		ty.nodes++
		base, ok := ty.typeOf(n.Node)
		if !ok {
			return nil, false
		}
		return fieldOf(base, prop.Value)
	case *ast.UnaryNode:
		t, ok := ty.typeOf(n.Node)
		if !ok {
			return nil, false
		}
		t = derefType(t)
		switch n.Operator {
		case "!", "not":
			if t == typeBool || t == typeAny {
				return typeBool, true
			}
		case "+", "-":
			if t == typeInt || t == typeFloat || t == typeAny {
				return t, true
			}
		}
		return nil, false
	case *ast.BinaryNode:
		if constant(n.Left) && constant(n.Right) {
			return nil, false
		}
		l, ok := ty.typeOf(n.Left)
		if !ok {
			return nil, false
		}
		r, ok := ty.typeOf(n.Right)
		if !ok {
			return nil, false
		}
		if n.Operator == "in" {
			return inType(derefType(l), r)
		}
		l, r = derefType(l), derefType(r)
		if !simple(l) || !simple(r) {
			return nil, false
		}
		return binaryType(n.Operator, l, r)
	}
	return nil, false
}

// envName returns the type of name in env.
func envName(env any, name string) (reflect.Type, bool) {
	if m, ok := env.(map[string]any); ok {
		v, ok := m[name]
		if !ok || v == nil {
			return nil, false
		}
		return reflect.TypeOf(v), true
	}
	t := reflect.TypeOf(env)
	if t == nil || t.Kind() != reflect.Struct {
		return nil, false
	}
	return fieldOf(t, name)
}

// fieldOf returns the type of field name of a value of type t: a value
// of unknown type has fields of unknown type, a map of string keys its
// element type, and a struct its exported field tagged (expr:"name") or
// called name, when it has no method of that name.
func fieldOf(t reflect.Type, name string) (reflect.Type, bool) {
	switch {
	case t == typeAny:
		return typeAny, true
	case t.Kind() == reflect.Map && t.Key() == typeString && t.Name() == "":
		return t.Elem(), true
	case t.Kind() != reflect.Struct:
		return nil, false
	}
	info := structInfoOf(t)
	if info.methods[name] {
		return nil, false // expr prefers a method of that name
	}
	f, ok := info.fields[name]
	return f, ok
}

// structInfo is what fieldOf reads of a struct type: the exported
// methods of a pointer to it, and its exported fields by name (the tag
// expr:"name", or the field's name; the first of a name) up to its
// first embedded field, behind which fieldOf finds nothing.
type structInfo struct {
	methods map[string]bool
	fields  map[string]reflect.Type
}

// structInfos caches structInfo by type, up to maxStructInfos types
// (then it starts again): the checks type many expressions against the
// few environment types of a policy.
var structInfos struct {
	sync.Mutex
	m map[reflect.Type]*structInfo
}

const maxStructInfos = 1024

func structInfoOf(t reflect.Type) *structInfo {
	structInfos.Lock()
	info := structInfos.m[t]
	structInfos.Unlock()
	if info != nil {
		return info
	}
	info = &structInfo{fields: map[string]reflect.Type{}}
	if pt := reflect.PointerTo(t); pt.NumMethod() > 0 {
		info.methods = make(map[string]bool, pt.NumMethod())
		for i := range pt.NumMethod() {
			info.methods[pt.Method(i).Name] = true
		}
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			break
		}
		if !f.IsExported() {
			continue
		}
		tag, ok := f.Tag.Lookup("expr")
		if !ok {
			tag = f.Name
		}
		if _, dup := info.fields[tag]; !dup {
			info.fields[tag] = f.Type
		}
	}
	structInfos.Lock()
	if structInfos.m == nil || len(structInfos.m) >= maxStructInfos {
		structInfos.m = map[reflect.Type]*structInfo{}
	}
	structInfos.m[t] = info
	structInfos.Unlock()
	return info
}

// inType types key in r, where r is a struct, a map of string keys or a
// value of unknown type.
func inType(key, r reflect.Type) (reflect.Type, bool) {
	switch {
	case r == typeAny:
		return typeBool, true
	case key != typeString && key != typeAny:
		return nil, false
	case r.Kind() == reflect.Struct, r.Kind() == reflect.Map && r.Key() == typeString && r.Name() == "":
		return typeBool, true
	}
	return nil, false
}

// binaryType types l op r for operands of simple types, as expr's checker
// does.
func binaryType(op string, l, r reflect.Type) (reflect.Type, bool) {
	unknown := l == typeAny || r == typeAny
	// maybe is expr's "maybe compatible": both unknown, or one unknown and
	// the other one of the kinds.
	maybe := func(kinds ...reflect.Type) bool {
		other := l
		if l == typeAny {
			other = r
		}
		if other == typeAny {
			return unknown
		}
		for _, k := range kinds {
			if other == k {
				return unknown
			}
		}
		return false
	}
	num := isNum(l) && isNum(r)
	switch op {
	case "==", "!=":
		if unknown || l == r || num {
			return typeBool, true
		}
	case "&&", "||", "and", "or":
		if l == typeBool && r == typeBool || maybe(typeBool) {
			return typeBool, true
		}
	case "<", ">", "<=", ">=":
		if num || l == typeString && r == typeString || maybe(typeInt, typeFloat, typeString) {
			return typeBool, true
		}
	case "+":
		if l == typeString && r == typeString {
			return typeString, true
		}
		if num {
			return promote(l, r), true
		}
		if maybe(typeInt, typeFloat, typeString) {
			return typeAny, true
		}
	case "-", "*":
		if num {
			return promote(l, r), true
		}
		if maybe(typeInt, typeFloat) {
			return typeAny, true
		}
	case "/", "**", "^":
		if num || maybe(typeInt, typeFloat) {
			return typeFloat, true
		}
	case "%":
		if l == typeInt && r == typeInt || maybe(typeInt) {
			return typeInt, true
		}
	}
	return nil, false
}

func isNum(t reflect.Type) bool { return t == typeInt || t == typeFloat }

// promote is the type of arithmetic on two numbers: float64 if either is.
func promote(l, r reflect.Type) reflect.Type {
	if l == typeFloat || r == typeFloat {
		return typeFloat
	}
	return typeInt
}

// simple reports whether t is one of the types ExprTypeOf's operators
// take (an optional one dereferenced).
func simple(t reflect.Type) bool {
	switch t {
	case typeAny, typeBool, typeInt, typeFloat, typeString:
		return true
	}
	return false
}

func derefType(t reflect.Type) reflect.Type {
	if t.Kind() == reflect.Pointer {
		return t.Elem()
	}
	return t
}

// constant reports whether n is a literal, or a sign or negation of one:
// what expr's optimizer folds.
func constant(n ast.Node) bool {
	switch n := n.(type) {
	case *ast.IntegerNode, *ast.FloatNode, *ast.StringNode, *ast.BoolNode:
		return true
	case *ast.UnaryNode:
		return constant(n.Node)
	}
	return false
}

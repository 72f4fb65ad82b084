package policy

import (
	"reflect"
	"sync"

	"github.com/expr-lang/expr/ast"
)

// This file keeps ExprTypeOf as it was before it read types by class,
// as the reference the typer must agree with (see
// TestExprTypeOfAgreesWithTheReference).

// refExprTypeOf is the reference ExprTypeOf.
func refExprTypeOf(tree ast.Node, env any) (reflect.Type, bool) {
	ty := refTyper{env: env}
	t, ok := ty.typeOf(tree)
	if !ok || ty.nodes > MaxExprNodes/2 || !refSimple(t) {
		return nil, false
	}
	return t, true
}

// refTyper types one tree in env, counting its nodes.
type refTyper struct {
	env   any
	nodes int
}

func (ty *refTyper) typeOf(node ast.Node) (reflect.Type, bool) {
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
		return refEnvName(ty.env, n.Value)
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
		return refFieldOf(base, prop.Value)
	case *ast.UnaryNode:
		t, ok := ty.typeOf(n.Node)
		if !ok {
			return nil, false
		}
		t = refDerefType(t)
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
		if refConstant(n.Left) && refConstant(n.Right) {
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
			return refInType(refDerefType(l), r)
		}
		l, r = refDerefType(l), refDerefType(r)
		if !refSimple(l) || !refSimple(r) {
			return nil, false
		}
		return refBinaryType(n.Operator, l, r)
	}
	return nil, false
}

// refEnvName returns the type of name in env.
func refEnvName(env any, name string) (reflect.Type, bool) {
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
	return refFieldOf(t, name)
}

// refFieldOf returns the type of field name of a value of type t: a value
// of unknown type has fields of unknown type, a map of string keys its
// element type, and a struct its exported field tagged (expr:"name") or
// called name, when it has no method of that name.
func refFieldOf(t reflect.Type, name string) (reflect.Type, bool) {
	switch {
	case t == typeAny:
		return typeAny, true
	case t.Kind() == reflect.Map && t.Key() == typeString && t.Name() == "":
		return t.Elem(), true
	case t.Kind() != reflect.Struct:
		return nil, false
	}
	info := refStructInfoOf(t)
	if info.methods[name] {
		return nil, false // expr prefers a method of that name
	}
	f, ok := info.fields[name]
	return f, ok
}

// refStructInfo is what refFieldOf reads of a struct type: the exported
// methods of a pointer to it, and its exported fields by name (the tag
// expr:"name", or the field's name; the first of a name) up to its
// first embedded field, behind which refFieldOf finds nothing.
type refStructInfo struct {
	methods map[string]bool
	fields  map[string]reflect.Type
}

// refStructInfos caches refStructInfo by type, up to refMaxStructInfos types
// (then it starts again): the checks type many expressions against the
// few environment types of a policy.
var refStructInfos struct {
	sync.Mutex
	m map[reflect.Type]*refStructInfo
}

const refMaxStructInfos = 1024

func refStructInfoOf(t reflect.Type) *refStructInfo {
	refStructInfos.Lock()
	info := refStructInfos.m[t]
	refStructInfos.Unlock()
	if info != nil {
		return info
	}
	info = &refStructInfo{fields: map[string]reflect.Type{}}
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
	refStructInfos.Lock()
	if refStructInfos.m == nil || len(refStructInfos.m) >= refMaxStructInfos {
		refStructInfos.m = map[reflect.Type]*refStructInfo{}
	}
	refStructInfos.m[t] = info
	refStructInfos.Unlock()
	return info
}

// refInType types key in r, where r is a struct, a map of string keys or a
// value of unknown type.
func refInType(key, r reflect.Type) (reflect.Type, bool) {
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

// refBinaryType types l op r for operands of refSimple types, as expr's checker
// does.
func refBinaryType(op string, l, r reflect.Type) (reflect.Type, bool) {
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
	num := refIsNum(l) && refIsNum(r)
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
			return refPromote(l, r), true
		}
		if maybe(typeInt, typeFloat, typeString) {
			return typeAny, true
		}
	case "-", "*":
		if num {
			return refPromote(l, r), true
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

func refIsNum(t reflect.Type) bool { return t == typeInt || t == typeFloat }

// refPromote is the type of arithmetic on two numbers: float64 if either is.
func refPromote(l, r reflect.Type) reflect.Type {
	if l == typeFloat || r == typeFloat {
		return typeFloat
	}
	return typeInt
}

// refSimple reports whether t is one of the types ExprTypeOf's operators
// take (an optional one dereferenced).
func refSimple(t reflect.Type) bool {
	switch t {
	case typeAny, typeBool, typeInt, typeFloat, typeString:
		return true
	}
	return false
}

func refDerefType(t reflect.Type) reflect.Type {
	if t.Kind() == reflect.Pointer {
		return t.Elem()
	}
	return t
}

// refConstant reports whether n is a literal, or a sign or negation of one:
// what expr's optimizer folds.
func refConstant(n ast.Node) bool {
	switch n := n.(type) {
	case *ast.IntegerNode, *ast.FloatNode, *ast.StringNode, *ast.BoolNode:
		return true
	case *ast.UnaryNode:
		return refConstant(n.Node)
	}
	return false
}

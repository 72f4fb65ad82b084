package policy

import (
	"reflect"
	"sync"
	"sync/atomic"

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
	return typeIn(tree, exprTyper{env: env})
}

// typeIn is ExprTypeOf with ty.
func typeIn(tree ast.Node, ty exprTyper) (reflect.Type, bool) {
	t, ok := ty.typeOf(tree)
	if !ok || ty.nodes > MaxExprNodes/2 || !t.class.simple() {
		return nil, false
	}
	return t.t, true
}

var (
	typeAny    = reflect.TypeFor[any]()
	typeBool   = reflect.TypeFor[bool]()
	typeInt    = reflect.TypeFor[int]()
	typeFloat  = reflect.TypeFor[float64]()
	typeString = reflect.TypeFor[string]()
	typeMapAny = reflect.TypeFor[map[string]any]()
)

// typeClass is what the typer's operators read of a type: which of the
// simple types it is, or none (classOther).
type typeClass uint8

const (
	classOther typeClass = iota
	classAny
	classBool
	classInt
	classFloat
	classString
)

func (c typeClass) simple() bool { return c != classOther }

func (c typeClass) num() bool { return c == classInt || c == classFloat }

// classTypes are the simple types by class.
var classTypes = [...]reflect.Type{classAny: typeAny, classBool: typeBool, classInt: typeInt, classFloat: typeFloat, classString: typeString}

// classOf returns the class of t.
func classOf(t reflect.Type) typeClass {
	switch t.Kind() {
	case reflect.Interface:
		if t == typeAny {
			return classAny
		}
	case reflect.Bool:
		if t == typeBool {
			return classBool
		}
	case reflect.Int:
		if t == typeInt {
			return classInt
		}
	case reflect.Float64:
		if t == typeFloat {
			return classFloat
		}
	case reflect.String:
		if t == typeString {
			return classString
		}
	}
	return classOther
}

// exprType is a type as the typer reads it: the type, its class, and
// the class of what it points to for a pointer (an optional value), its
// own otherwise, which is what the operators take.
type exprType struct {
	t            reflect.Type
	class, deref typeClass
	// info, when not nil, is structInfoOf(t), read once for the names
	// of a prepared environment.
	info *structInfo
}

// exprTypeOf reads t.
func exprTypeOf(t reflect.Type) exprType {
	x := exprType{t: t, class: classOf(t)}
	x.deref = x.class
	if x.class == classOther && t.Kind() == reflect.Pointer {
		x.deref = classOf(t.Elem())
	}
	return x
}

// classType is the simple type of class c.
func classType(c typeClass) exprType { return exprType{t: classTypes[c], class: c, deref: c} }

// exprTyper types one tree in env, counting its nodes; prepared, when
// not nil, has env's names.
type exprTyper struct {
	env      any
	prepared *exprEnv
	nodes    int
}

// ExprEnv is an environment prepared for typing many expressions with
// TypeOf: the types of its names (and the fields of those that are
// structs) are read once, rather than for each expression. The
// environment must not change once prepared. An ExprEnv is immutable
// and safe for concurrent use.
type ExprEnv struct{ e exprEnv }

// PrepareExprEnv prepares env, an environment as ExprTypeOf takes it (a
// struct, or a map whose values' types are the names' types).
func PrepareExprEnv(env any) *ExprEnv {
	e := &ExprEnv{e: exprEnv{env: env}}
	if m, ok := env.(map[string]any); ok {
		for name, v := range m {
			if v != nil { // else envName finds no type
				e.e.add(name, exprTypeOf(reflect.TypeOf(v)))
			}
		}
		return e
	}
	if t := reflect.TypeOf(env); t != nil && t.Kind() == reflect.Struct {
		info := structInfoOf(t)
		for _, name := range info.names {
			if x, ok := info.field(name); ok { // not hidden by a method
				e.e.add(name, x)
			}
		}
	}
	return e
}

// TypeOf returns what ExprTypeOf(tree, env) returns for the environment
// e was prepared from.
func (e *ExprEnv) TypeOf(tree ast.Node) (reflect.Type, bool) { return e.e.typeOf(tree) }

// exprEnv is an environment prepared for typing (see ExprEnv). The
// checks prepare theirs, maps, with newExprEnv.
type exprEnv struct {
	env   any
	m     map[string]any // env, when it is a map
	names []string
	types []exprType
}

func newExprEnv(m map[string]any) *exprEnv {
	e := &PrepareExprEnv(m).e
	e.m = m
	return e
}

// add makes name, of type x, one of e's names.
func (e *exprEnv) add(name string, x exprType) {
	if x.t.Kind() == reflect.Struct {
		x.info = structInfoOf(x.t)
	}
	e.names = append(e.names, name)
	e.types = append(e.types, x)
}

// typeOf is ExprTypeOf(tree, e.env).
func (e *exprEnv) typeOf(tree ast.Node) (reflect.Type, bool) {
	return typeIn(tree, exprTyper{env: e.env, prepared: e})
}

// name is envName(e.env, name).
func (e *exprEnv) name(name string) (exprType, bool) {
	for i, n := range e.names {
		if n == name {
			return e.types[i], true
		}
	}
	return exprType{}, false
}

func (ty *exprTyper) typeOf(node ast.Node) (exprType, bool) {
	ty.nodes++
	switch n := node.(type) {
	case *ast.IntegerNode:
		return classType(classInt), true
	case *ast.FloatNode:
		return classType(classFloat), true
	case *ast.StringNode:
		return classType(classString), true
	case *ast.BoolNode:
		return classType(classBool), true
	case *ast.IdentifierNode:
		if ty.prepared != nil {
			return ty.prepared.name(n.Value)
		}
		return envName(ty.env, n.Value)
	case *ast.MemberNode:
		prop, ok := n.Property.(*ast.StringNode)
		if !ok || n.Optional || n.Method {
			return exprType{}, false
		}
		ty.nodes++
		base, ok := ty.typeOf(n.Node)
		if !ok {
			return exprType{}, false
		}
		return fieldType(base, prop.Value)
	case *ast.UnaryNode:
		x, ok := ty.typeOf(n.Node)
		if !ok {
			return exprType{}, false
		}
		switch t := x.deref; n.Operator {
		case "!", "not":
			if t == classBool || t == classAny {
				return classType(classBool), true
			}
		case "+", "-":
			if t == classInt || t == classFloat || t == classAny {
				return classType(t), true
			}
		}
		return exprType{}, false
	case *ast.BinaryNode:
		if constant(n.Left) && constant(n.Right) {
			return exprType{}, false
		}
		l, ok := ty.typeOf(n.Left)
		if !ok {
			return exprType{}, false
		}
		r, ok := ty.typeOf(n.Right)
		if !ok {
			return exprType{}, false
		}
		if n.Operator == "in" {
			return inType(l.deref, r)
		}
		if !l.deref.simple() || !r.deref.simple() {
			return exprType{}, false
		}
		c, ok := binaryType(n.Operator, l.deref, r.deref)
		if !ok {
			return exprType{}, false
		}
		return classType(c), true
	}
	return exprType{}, false
}

// envName returns the type of name in env.
func envName(env any, name string) (exprType, bool) {
	if m, ok := env.(map[string]any); ok {
		v, ok := m[name]
		if !ok || v == nil {
			return exprType{}, false
		}
		return exprTypeOf(reflect.TypeOf(v)), true
	}
	t := reflect.TypeOf(env)
	if t == nil || t.Kind() != reflect.Struct {
		return exprType{}, false
	}
	return structInfoOf(t).field(name)
}

// fieldOf returns the type of field name of a value of type t: a value
// of unknown type has fields of unknown type, a map of string keys its
// element type, and a struct its exported field tagged (expr:"name") or
// called name, when it has no method of that name.
func fieldOf(t reflect.Type, name string) (reflect.Type, bool) {
	x, ok := fieldType(exprTypeOf(t), name)
	return x.t, ok
}

// fieldType is fieldOf on a type as the typer reads it.
func fieldType(x exprType, name string) (exprType, bool) {
	switch t := x.t; {
	case x.class == classAny:
		return x, true
	case x.info != nil:
		return x.info.field(name)
	case t == typeMapAny: // content and vars at run time
		return classType(classAny), true
	case t.Kind() == reflect.Map && t.Key() == typeString && t.Name() == "":
		return exprTypeOf(t.Elem()), true
	case t.Kind() != reflect.Struct:
		return exprType{}, false
	}
	return structInfoOf(x.t).field(name)
}

// structInfo is what fieldOf reads of a struct type: the exported
// methods of a pointer to it, and its exported fields by name (the tag
// expr:"name", or the field's name; the first of a name) up to its
// first embedded field, behind which fieldOf finds nothing. A struct
// has a handful of each, found by comparing names; more are indexed.
type structInfo struct {
	t       reflect.Type
	methods []string
	names   []string
	fields  []exprType
	index   map[string]int // names, when there are more than maxScannedDecls
	method  map[string]bool
}

// field returns the type of the field called name, when there is one
// and no method of that name.
func (info *structInfo) field(name string) (exprType, bool) {
	if info.method != nil {
		if info.method[name] {
			return exprType{}, false // expr prefers a method of that name
		}
	} else {
		for _, m := range info.methods {
			if m == name {
				return exprType{}, false
			}
		}
	}
	if info.index != nil {
		if i, ok := info.index[name]; ok {
			return info.fields[i], true
		}
		return exprType{}, false
	}
	for i, n := range info.names {
		if n == name {
			return info.fields[i], true
		}
	}
	return exprType{}, false
}

// structInfos caches structInfo by type, up to maxStructInfos types
// (then it starts again): the checks type many expressions against the
// few environment types of a policy. recentInfos holds the last few
// found, which are read without the lock.
var (
	structInfos struct {
		sync.Mutex
		m map[reflect.Type]*structInfo
	}
	recentInfos [4]atomic.Pointer[structInfo]
	nextRecent  atomic.Uint32
)

const maxStructInfos = 1024

func structInfoOf(t reflect.Type) *structInfo {
	for i := range recentInfos {
		if info := recentInfos[i].Load(); info != nil && info.t == t {
			return info
		}
	}
	structInfos.Lock()
	info := structInfos.m[t]
	structInfos.Unlock()
	if info == nil {
		info = newStructInfo(t)
		structInfos.Lock()
		if structInfos.m == nil || len(structInfos.m) >= maxStructInfos {
			structInfos.m = map[reflect.Type]*structInfo{}
		}
		structInfos.m[t] = info
		structInfos.Unlock()
	}
	recentInfos[nextRecent.Add(1)%uint32(len(recentInfos))].Store(info)
	return info
}

func newStructInfo(t reflect.Type) *structInfo {
	info := &structInfo{t: t}
	pt := reflect.PointerTo(t)
	for i := range pt.NumMethod() {
		info.methods = append(info.methods, pt.Method(i).Name)
	}
	if len(info.methods) > maxScannedDecls {
		info.method = make(map[string]bool, len(info.methods))
		for _, m := range info.methods {
			info.method[m] = true
		}
	}
	seen := map[string]bool{}
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
		if !seen[tag] {
			seen[tag] = true
			info.names = append(info.names, tag)
			info.fields = append(info.fields, exprTypeOf(f.Type))
		}
	}
	if len(info.names) > maxScannedDecls {
		info.index = make(map[string]int, len(info.names))
		for i, n := range info.names {
			info.index[n] = i
		}
	}
	return info
}

// inType types key in r, where key is a struct, a map of string keys or a
// value of unknown type; key is the class of the key (dereferenced).
func inType(key typeClass, r exprType) (exprType, bool) {
	switch t := r.t; {
	case r.class == classAny:
		return classType(classBool), true
	case key != classString && key != classAny:
		return exprType{}, false
	case t.Kind() == reflect.Struct, t.Kind() == reflect.Map && t.Key() == typeString && t.Name() == "":
		return classType(classBool), true
	}
	return exprType{}, false
}

// binaryType types l op r for operands of simple types, as expr's checker
// does.
func binaryType(op string, l, r typeClass) (typeClass, bool) {
	unknown := l == classAny || r == classAny
	// maybe is expr's "maybe compatible": both unknown, or one unknown and
	// the other one of the kinds.
	maybe := func(kinds ...typeClass) bool {
		if !unknown {
			return false
		}
		other := l
		if l == classAny {
			other = r
		}
		if other == classAny {
			return true
		}
		for _, k := range kinds {
			if other == k {
				return true
			}
		}
		return false
	}
	num := l.num() && r.num()
	switch op {
	case "==", "!=":
		if unknown || l == r || num {
			return classBool, true
		}
	case "&&", "||", "and", "or":
		if l == classBool && r == classBool || maybe(classBool) {
			return classBool, true
		}
	case "<", ">", "<=", ">=":
		if num || l == classString && r == classString || maybe(classInt, classFloat, classString) {
			return classBool, true
		}
	case "+":
		if l == classString && r == classString {
			return classString, true
		}
		if num {
			return promote(l, r), true
		}
		if maybe(classInt, classFloat, classString) {
			return classAny, true
		}
	case "-", "*":
		if num {
			return promote(l, r), true
		}
		if maybe(classInt, classFloat) {
			return classAny, true
		}
	case "/", "**", "^":
		if num || maybe(classInt, classFloat) {
			return classFloat, true
		}
	case "%":
		if l == classInt && r == classInt || maybe(classInt) {
			return classInt, true
		}
	}
	return classOther, false
}

// promote is the class of arithmetic on two numbers: float64 if either is.
func promote(l, r typeClass) typeClass {
	if l == classFloat || r == classFloat {
		return classFloat
	}
	return classInt
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

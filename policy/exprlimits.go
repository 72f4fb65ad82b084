package policy

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	exprchecker "github.com/expr-lang/expr/checker"
	"github.com/expr-lang/expr/compiler"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/optimizer"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"
	"github.com/expr-lang/expr/vm/runtime"
)

// The limits of embedded expressions. A peer's content can be arbitrarily
// large, and expressions run on every message, so each one is bounded in
// size when it is compiled and in memory and time when it runs.
// CompileExpr applies them, for the static checks (CheckPolicy, and so
// cpvalidate) and for the engine alike, so that both accept the same
// expressions. Exceeding one while compiling is a CP006 diagnostic at the
// expression; while running, an error that wraps ErrExprLimit.
const (
	// MaxExprNodes caps the syntax nodes of one expression (each name,
	// literal, operator, call, member access and argument counts one).
	MaxExprNodes = 2000

	// ExprMemoryBudget caps the bytes one evaluation builds: every string
	// it makes (by +, repeat, replace, join, upper, lower, string, toJSON,
	// toBase64, fromBase64 or a method call) counts its length, and every
	// list or map element that split, keys, values, toPairs, fromPairs,
	// uniq, concat, flatten, fromJSON or a method call makes counts 16
	// bytes (64 for a pair or a map entry, and for each value fromJSON may
	// decode; 8 for each number median sorts). expr's VM separately counts
	// the elements of the lists, maps and ranges it builds itself
	// (literals, map, filter, sort, a..b) against MaxExprElements.
	ExprMemoryBudget = 4 << 20

	// MaxExprElements is ExprMemoryBudget in 16-byte elements: the most
	// list, map and range elements expr's VM builds in one evaluation.
	MaxExprElements = ExprMemoryBudget / elemBytes

	// MaxExprString caps the length in bytes of one string an evaluation
	// builds. Strings from the peer may be longer: they can be read,
	// compared and sliced, but not copied into a longer one.
	MaxExprString = 1 << 20

	// MaxExprSteps caps the work of one evaluation, in steps of about
	// one node: a loop (all, any, none, one, map, filter, find, findIndex,
	// findLast, findLastIndex, count, sum, groupBy, sortBy, reduce) over
	// n elements takes n × (1 + the nodes of its predicate) steps when it
	// starts, whether or not it stops early, and min, max, mean and median
	// take one step per number they visit. Without a loop an expression
	// runs each of its at most MaxExprNodes nodes at most once.
	MaxExprSteps = 1 << 22

	// ExprTimeLimit caps how long one evaluation runs, measured from the
	// first loop (or min, max, mean or median) it starts: the clock is
	// checked whenever a loop starts, and at each iteration of a loop
	// whose predicate may take longer than its steps account for (one
	// that compares two values neither of which is a literal, searches a
	// list or string with in, contains or matches, calls a method, or
	// splits, joins or replaces).
	ExprTimeLimit = 100 * time.Millisecond

	// MaxExprPattern caps the length of a regular expression that
	// "matches" compiles at run time (a pattern that is not a literal); a
	// literal pattern is compiled once, with the expression.
	MaxExprPattern = 4096
)

// elemBytes is what one list element (an interface value) counts against
// ExprMemoryBudget, pairBytes a pair of toPairs or an entry of a map.
const (
	elemBytes = 16
	pairBytes = 64
)

// ErrExprLimit is wrapped by the error of an expression that exceeds one
// of the expression limits, at compile time or at run time.
var ErrExprLimit = errors.New("over the expression limits")

func limitErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrExprLimit}, args...)...)
}

// nodeLimitMessage is what expr's parser reports beyond MaxNodes.
const nodeLimitMessage = "compilation failed: expression exceeds maximum allowed nodes"

// ExprMeter is the budget of one evaluation of a program CompileExpr
// compiled: what it has built, how many steps it has taken and when it
// took the first. The zero ExprMeter is an unspent budget; an environment
// provides a fresh one for each evaluation (see ExprMetered).
type ExprMeter struct {
	bytes int
	steps int
	start time.Time
}

// ExprMetered is implemented by the environments that programs compiled by
// CompileExpr run against: ExprMeter returns the budget of the evaluation
// in progress. A program that has bounded operations fetches it when it
// starts, and fails against any other environment.
type ExprMetered interface {
	ExprMeter() *ExprMeter
}

var errNoMeter = errors.New("the expression is evaluated without a budget (the environment is not an ExprMetered)")

func meterOf(env any) (*ExprMeter, error) {
	if e, ok := env.(ExprMetered); ok {
		if m := e.ExprMeter(); m != nil {
			return m, nil
		}
	}
	return nil, errNoMeter
}

// take spends n bytes of the budget.
func (m *ExprMeter) take(n int) error {
	if n < 0 || n > m.left() {
		return limitErrorf("more than %d bytes built", ExprMemoryBudget)
	}
	m.bytes += n
	return nil
}

// str spends the bytes of a string of n bytes about to be built.
func (m *ExprMeter) str(n int) error {
	if n > MaxExprString || n < 0 {
		return limitErrorf("a string of %d bytes (at most %d)", n, MaxExprString)
	}
	return m.take(n)
}

// fits checks that a string of n bytes may be built, without spending
// anything yet.
func (m *ExprMeter) fits(n int) error {
	if n > MaxExprString || n < 0 {
		return limitErrorf("a string of %d bytes (at most %d)", n, MaxExprString)
	}
	if n > m.left() {
		return limitErrorf("more than %d bytes built", ExprMemoryBudget)
	}
	return nil
}

// left returns the bytes of the budget not spent yet.
func (m *ExprMeter) left() int { return ExprMemoryBudget - m.bytes }

// work takes n steps at once.
func (m *ExprMeter) work(n int) error {
	if n < 0 || n > MaxExprSteps-m.steps {
		return limitErrorf("more than %d steps", MaxExprSteps)
	}
	m.steps += n
	return m.clock()
}

// clock starts the clock the first time, and checks it after.
func (m *ExprMeter) clock() error {
	if m.start.IsZero() {
		m.start = time.Now()
		return nil
	}
	if time.Since(m.start) > ExprTimeLimit {
		return limitErrorf("running longer than %v", ExprTimeLimit)
	}
	return nil
}

// newExprConfig is the configuration expressions against env compile
// with: env's names, the node limit and the bounded functions.
func newExprConfig(env any) *conf.Config {
	config := conf.New(env)
	config.MaxNodes = MaxExprNodes
	for name, fn := range boundedFunctions {
		config.Functions[name] = fn
	}
	return config
}

// exprConfigs pools, by the environment's type, the configurations of
// environments that are structs: making one (expr's conf.New, which
// builds its table of builtins and reads the type) was a third of
// compiling a guard. Compiling only reads a configuration, but for its
// cache of types, so a configuration serves one compile at a time.
var exprConfigs sync.Map // reflect.Type -> *sync.Pool of *conf.Config

// exprConfig returns a configuration for env, and the function that
// gives it back when the compile is done. A map environment, whose
// names are its keys, gets a configuration of its own (the checks,
// which compile many expressions in each of a few maps, keep one for
// each map: see checker.compileExpr).
func exprConfig(env any) (*conf.Config, func()) {
	t := reflect.TypeOf(env)
	if t == nil || t.Kind() != reflect.Struct {
		return newExprConfig(env), func() {}
	}
	pool, ok := exprConfigs.Load(t)
	if !ok {
		pool, _ = exprConfigs.LoadOrStore(t, &sync.Pool{New: func() any { return newExprConfig(reflect.Zero(t).Interface()) }})
	}
	p := pool.(*sync.Pool)
	config := p.Get().(*conf.Config)
	return config, func() { p.Put(config) }
}

// CompileExpr compiles the expression src for evaluation against
// environments of env's type (a struct, or a map, whose fields or keys are
// the names the expression reads), within the expression limits: at most
// MaxExprNodes nodes, and bounded operations that spend the ExprMeter of
// the environment they run against (see ExprMetered). The engine runs the
// program with a vm.VM whose MemoryBudget is MaxExprElements.
//
// A syntax or type error is a *file.Error; an expression over the node
// limit is an error wrapping ErrExprLimit.
func CompileExpr(src string, env any) (*vm.Program, error) {
	prog, _, err := compileExpr(src, env, nil)
	return prog, err
}

// exprStage is how far compileExpr got before failing.
type exprStage int

const (
	exprParsed  exprStage = iota // a syntax error
	exprLimited                  // over MaxExprNodes
	exprChecked                  // a type error
)

// compileExpr is CompileExpr, reporting at which stage it failed; parsed,
// when not nil, sees the syntax tree before it is type-checked, and may
// end the compile there (returning true: the program is then nil, and
// the error too). The tree is lent through a pointer to it, which a
// caller that walks it (ast.Walk) can pass on without the tree's
// interface value escaping to the heap.
func compileExpr(src string, env any, parsed func(*ast.Node) (done bool)) (*vm.Program, exprStage, error) {
	config, done := exprConfig(env)
	defer done()
	return compileWith(src, config, parsed)
}

// compileWith is compileExpr with the configuration of the environment,
// which it uses for this compile alone.
func compileWith(src string, config *conf.Config, parsed func(*ast.Node) (done bool)) (*vm.Program, exprStage, error) {
	tree, err := parser.ParseWithConfig(src, config)
	if err != nil {
		var fe *file.Error
		if errors.As(err, &fe) && fe.Message == nodeLimitMessage {
			return nil, exprLimited, limitErrorf("more than %d syntax nodes", MaxExprNodes)
		}
		return nil, exprParsed, err
	}
	if parsed != nil && parsed(&tree.Node) {
		return nil, exprChecked, nil
	}
	if _, err := exprchecker.Check(tree, config); err != nil {
		return nil, exprChecked, err
	}
	// Bound the checked tree, then check it again to type the nodes the
	// bounding added.
	var b bounder
	ast.Walk(&tree.Node, &b)
	if b.used {
		meter := &ast.CallNode{Callee: &ast.IdentifierNode{Value: fnMeter}, Arguments: []ast.Node{&ast.IdentifierNode{Value: "$env"}}}
		root := &ast.VariableDeclaratorNode{Name: meterVar, Value: meter, Expr: tree.Node}
		for _, n := range []ast.Node{meter.Callee, meter.Arguments[0], meter, root} {
			n.SetLocation(tree.Node.Location())
		}
		tree.Node = root
	}
	if _, err := exprchecker.Check(tree, config); err != nil {
		return nil, exprChecked, err
	}
	if err := optimizer.Optimize(&tree.Node, config); err != nil {
		var fe *file.Error
		if errors.As(err, &fe) {
			return nil, exprChecked, fe.Bind(tree.Source)
		}
		return nil, exprChecked, err
	}
	prog, err := compiler.Compile(tree, config)
	if err != nil {
		return nil, exprChecked, err
	}
	return prog, exprChecked, nil
}

// Names of the bounded functions the bounder calls, and of the variable
// that holds the meter. Each has a space, so no expression can name it.
const (
	meterVar  = "$ meter"
	fnMeter   = "$ meter of"
	fnLoop    = "$ loop"
	fnTick    = "$ tick"
	fnAdd     = "$ add"
	fnMatches = "$ matches"
	fnCharge  = "$ charge"
)

// bounder rewrites a type-checked syntax tree so that every operation that
// builds something of a size the input decides, or loops, spends the
// evaluation's ExprMeter first:
//
//   - a + that may concatenate strings calls fnAdd;
//   - a matches with a pattern that is not a literal calls fnMatches;
//   - a builtin of boundedBuiltins calls its bounded version;
//   - a method call returning a string, list or map calls fnCharge on
//     its result;
//   - a loop builtin passes its list through fnLoop, and ticks the clock
//     (fnTick) at each iteration when its predicate is not quick.
//
// Each call passes the meter first, and takes the checked type of the
// node it replaces, so the rest of the tree compiles as before. A + of
// numbers is left alone, as is any expression where the types say nothing
// is built: when the bounder added a call (used), the expression fetches
// the meter from the environment ($env) once, into a variable.
type bounder struct {
	used bool
}

// Visit implements ast.Visitor; ast.Walk visits the children of a node
// before the node.
func (b *bounder) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.BinaryNode:
		switch n.Operator {
		case "+":
			_, lc := n.Left.(*ast.StringNode)
			_, rc := n.Right.(*ast.StringNode)
			if !mayBeString(n.Left) || !mayBeString(n.Right) || lc && rc {
				break
			}
			if left, ok := n.Left.(*ast.CallNode); ok && isCall(left, fnAdd) {
				// a + b + c concatenates once, in one call.
				b.call(node, fnAdd, append(left.Arguments[1:], n.Right)...)
				break
			}
			b.call(node, fnAdd, n.Left, n.Right)
		case "matches":
			if _, ok := n.Right.(*ast.StringNode); !ok {
				b.call(node, fnMatches, n.Left, n.Right)
			}
		}
	case *ast.BuiltinNode:
		if f := builtin.Builtins[builtin.Index[n.Name]]; f.Name == n.Name && f.Predicate && len(n.Arguments) > 0 {
			b.loop(n)
		}
		if _, ok := boundedBuiltins[n.Name]; ok {
			b.call(node, "$ "+n.Name, n.Arguments...)
		}
	case *ast.CallNode:
		switch n.Type().Kind() {
		case reflect.String, reflect.Slice, reflect.Map, reflect.Interface:
			b.call(node, fnCharge, n)
		}
	}
}

// isCall reports whether n calls the bounded function name.
func isCall(n *ast.CallNode, name string) bool {
	id, ok := n.Callee.(*ast.IdentifierNode)
	return ok && id.Value == name
}

// mayBeString reports whether n may be a string at run time.
func mayBeString(n ast.Node) bool {
	t := n.Type()
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.String || t.Kind() == reflect.Interface
}

// loop bounds the loop builtin n: its list argument becomes a call of
// fnLoop, which takes a step for each element and each node of each
// element's iteration before the loop starts; a predicate that may be
// slow also ticks the clock (fnTick) at each iteration.
func (b *bounder) loop(n *ast.BuiltinNode) {
	weight := 1
	for _, a := range n.Arguments[1:] {
		p, ok := a.(*ast.PredicateNode)
		if !ok {
			continue
		}
		weight += nodeCount(p.Node)
		if !quick(p.Node) {
			tick := meteredCall(fnTick, n.Location())
			p.Node = &ast.SequenceNode{Nodes: []ast.Node{tick, p.Node}}
			p.Node.SetLocation(p.Location())
		}
	}
	w := &ast.IntegerNode{Value: weight}
	w.SetLocation(n.Location())
	b.call(&n.Arguments[0], fnLoop, n.Arguments[0], w)
	n.Arguments[0].SetLocation(n.Location())
}

// nodeCount returns the number of nodes of n.
func nodeCount(n ast.Node) int {
	var c counter
	ast.Walk(&n, &c)
	return int(c)
}

type counter int

func (c *counter) Visit(*ast.Node) { *c++ }

// quick reports whether each iteration of a predicate n takes a time its
// steps account for, whatever the values: every node runs in constant
// time (names, literals, member accesses, logic, comparisons and
// arithmetic with a literal operand, constant-time builtins such as len),
// or in time proportional to what it spends of the meter (concatenation,
// the bounded builtins that do not scan, loops, which take their own
// steps). A predicate holding a loop whose own predicate is not quick is
// not quick either.
func quick(n ast.Node) bool {
	q := quickness(true)
	ast.Walk(&n, &q)
	return bool(q)
}

type quickness bool

func (q *quickness) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.PointerNode, *ast.IdentifierNode, *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.NilNode,
		*ast.StringNode, *ast.ConstantNode, *ast.MemberNode, *ast.ChainNode, *ast.SliceNode, *ast.UnaryNode,
		*ast.ConditionalNode, *ast.SequenceNode, *ast.VariableDeclaratorNode, *ast.PredicateNode:
	case *ast.BinaryNode:
		switch n.Operator {
		case "&&", "||", "and", "or", "??":
		case "..", "matches", "in", "contains":
			*q = false // they scan a list or string, or build a range
		default:
			if !literal(n.Left) && !literal(n.Right) {
				*q = false // two long strings or lists may take long to compare
			}
		}
	case *ast.BuiltinNode:
		// A loop inside the predicate bounds itself (its list argument is a
		// call of fnLoop); other builtins may take the length of their
		// arguments, except these.
		if f := builtin.Builtins[builtin.Index[n.Name]]; f.Name != n.Name || !f.Predicate && !constantTime[n.Name] {
			*q = false
		}
	case *ast.CallNode:
		// A bounded function takes time in proportion to what it spends,
		// except those that scan more than they build; any other call may
		// take any time.
		id, ok := n.Callee.(*ast.IdentifierNode)
		if !ok {
			*q = false
			break
		}
		b, bounded := boundedBuiltins[strings.TrimPrefix(id.Value, "$ ")]
		if id.Value != fnLoop && id.Value != fnAdd && (!bounded || b.scans) {
			*q = false
		}
	default:
		*q = false
	}
}

// constantTime are the builtins that take constant time, whatever their
// arguments.
var constantTime = map[string]bool{
	"len": true, "type": true, "abs": true, "ceil": true, "floor": true, "round": true,
	"first": true, "last": true, "get": true, "take": true, "now": true,
	"bitand": true, "bitor": true, "bitxor": true, "bitnand": true, "bitnot": true,
	"bitshl": true, "bitshr": true, "bitushr": true,
}

func literal(n ast.Node) bool {
	switch n.(type) {
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.NilNode, *ast.StringNode, *ast.ConstantNode:
		return true
	}
	return false
}

// call replaces *node by a call of the bounded function name with the
// meter and args, of the same type and at the same place.
func (b *bounder) call(node *ast.Node, name string, args ...ast.Node) {
	b.used = true
	orig := *node
	call := meteredCall(name, orig.Location(), args...)
	if orig.Type() != reflect.TypeFor[any]() {
		call.SetNature(*orig.Nature())
	}
	*node = call
}

// meteredCall returns a call of the bounded function name with the meter
// and args, at loc.
func meteredCall(name string, loc file.Location, args ...ast.Node) *ast.CallNode {
	callee := &ast.IdentifierNode{Value: name}
	meter := &ast.IdentifierNode{Value: meterVar}
	call := &ast.CallNode{Callee: callee, Arguments: append([]ast.Node{meter}, args...)}
	for _, n := range []ast.Node{callee, meter, call} {
		n.SetLocation(loc)
	}
	return call
}

// boundedFunctions are the functions the bounder calls, by name.
var boundedFunctions = func() map[string]*builtin.Function {
	fns := map[string]*builtin.Function{
		fnMeter: {Name: fnMeter, Func: func(args ...any) (any, error) { return meterOf(args[0]) }},
		fnAdd:   {Name: fnAdd, Func: boundedAdd},
	}
	add := func(name string, f func(m *ExprMeter, args []any) (any, error)) {
		fns[name] = &builtin.Function{Name: name, Func: func(args ...any) (any, error) {
			m, ok := args[0].(*ExprMeter)
			if !ok {
				return nil, errNoMeter
			}
			return f(m, args[1:])
		}}
	}
	add(fnLoop, func(m *ExprMeter, args []any) (any, error) {
		weight, _ := args[1].(int)
		return args[0], m.work(mulSat(length(args[0]), weight))
	})
	add(fnTick, func(m *ExprMeter, _ []any) (any, error) { return true, m.clock() })
	add(fnMatches, boundedMatches)
	add(fnCharge, func(m *ExprMeter, args []any) (any, error) { return args[0], m.charge(args[0]) })
	for name, b := range boundedBuiltins {
		orig := builtin.Builtins[builtin.Index[name]]
		add("$ "+name, func(m *ExprMeter, args []any) (any, error) {
			for i := range args {
				args[i] = deref(args[i])
			}
			if err := b.check(m, args); err != nil {
				return nil, err
			}
			out, err := callBuiltin(orig, args)
			if s, ok := out.(string); ok && err == nil && b.strings {
				return s, m.str(len(s))
			}
			return out, err
		})
	}
	return fns
}()

// boundedAdd adds its operands (after the meter) from left to right:
// when they are all strings, it concatenates them at once.
func boundedAdd(args ...any) (any, error) {
	m, ok := args[0].(*ExprMeter)
	if !ok {
		return nil, errNoMeter
	}
	size := 0
	for _, a := range args[1:] {
		s, ok := deref(a).(string)
		if !ok {
			return addEach(m, args[1:])
		}
		size += len(s)
	}
	if err := m.str(size); err != nil {
		return nil, err
	}
	if len(args) == 3 {
		return deref(args[1]).(string) + deref(args[2]).(string), nil
	}
	var b strings.Builder
	b.Grow(size)
	for _, a := range args[1:] {
		b.WriteString(deref(a).(string))
	}
	return b.String(), nil
}

// addEach adds operands one by one, as expr does, spending the meter for
// each string it builds.
func addEach(m *ExprMeter, operands []any) (any, error) {
	sum := deref(operands[0])
	for _, o := range operands[1:] {
		o = deref(o)
		if a, ok := sum.(string); ok {
			if b, ok := o.(string); ok {
				if err := m.str(len(a) + len(b)); err != nil {
					return nil, err
				}
				sum = a + b
				continue
			}
		}
		sum = runtime.Add(sum, o)
	}
	return sum, nil
}

func boundedMatches(_ *ExprMeter, args []any) (any, error) {
	s, pattern := deref(args[0]), deref(args[1])
	if runtime.IsNil(s) || runtime.IsNil(pattern) {
		return false, nil
	}
	p, ok := pattern.(string)
	if !ok {
		return nil, fmt.Errorf("invalid operation: matches (pattern is %T, not a string)", pattern)
	}
	if len(p) > MaxExprPattern {
		return nil, limitErrorf("a pattern of %d bytes (at most %d)", len(p), MaxExprPattern)
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, err
	}
	switch s := s.(type) {
	case string:
		return re.MatchString(s), nil
	case []byte:
		return re.Match(s), nil
	}
	return nil, fmt.Errorf("invalid operation: %T matches string", s)
}

// charge spends what a method call built: its string, or the elements of
// its list or map.
func (m *ExprMeter) charge(v any) error {
	switch v := v.(type) {
	case nil, bool, int, float64:
		return nil
	case string:
		return m.str(len(v))
	case []any:
		return m.take(elemBytes * len(v))
	case map[string]any:
		return m.take(pairBytes * len(v))
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.String:
		return m.str(rv.Len())
	case reflect.Slice:
		return m.take(elemBytes * rv.Len())
	case reflect.Map:
		return m.take(pairBytes * rv.Len())
	}
	return nil
}

func callBuiltin(f *builtin.Function, args []any) (any, error) {
	switch {
	case f.Fast != nil:
		if len(args) != 1 {
			return nil, fmt.Errorf("invalid number of arguments for %s (expected 1, got %d)", f.Name, len(args))
		}
		return f.Fast(args[0]), nil
	case f.Safe != nil:
		out, _, err := f.Safe(args...)
		return out, err
	}
	return f.Func(args...)
}

// deref returns what v points to, as expr's VM dereferences the
// arguments of a builtin.
func deref(v any) any {
	switch v.(type) {
	case nil, string, float64, int, bool, []any, map[string]any:
		return v
	}
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return nil
		}
		rv = rv.Elem()
	}
	if !rv.CanInterface() {
		return v
	}
	return rv.Interface()
}

// toInt returns v as an int, as the builtins convert their counts (a count
// from the peer's content is a float64).
func toInt(v any) (int, bool) {
	switch v := v.(type) {
	case int:
		return v, true
	case float64:
		if -(1<<63) <= v && v < 1<<63 {
			return int(v), true
		}
		return 0, false // out of range, or NaN
	}
	rv := reflect.ValueOf(v)
	switch {
	case rv.CanInt():
		return int(rv.Int()), true
	case rv.CanUint() && rv.Uint() <= math.MaxInt64:
		return int(rv.Uint()), true
	}
	return 0, false
}

// A boundedBuiltin checks, before a builtin runs on args, that what it
// would build fits the meter. A builtin that builds a string (strings is
// true) need only check that its estimate fits: the string it built is
// spent after it ran. Any other spends its estimate in check. One that
// may scan much more than it builds (scans is true) does not make its
// time bounded by the budget, so a loop calling it ticks the clock.
type boundedBuiltin struct {
	check   func(m *ExprMeter, args []any) error
	strings bool
	scans   bool
}

// boundedBuiltins are the builtins whose result the input can make large,
// or that visit nested lists, by name.
var boundedBuiltins = map[string]boundedBuiltin{
	"repeat": {strings: true, check: func(m *ExprMeter, args []any) error {
		s, ok := args[0].(string)
		n, ok2 := toInt(args[1])
		if !ok || !ok2 || n < 0 {
			return nil // the builtin reports the error
		}
		return m.fits(mulSat(len(s), n))
	}},
	"replace": {strings: true, scans: true, check: func(m *ExprMeter, args []any) error {
		s, ok := args[0].(string)
		old, ok2 := args[1].(string)
		repl, ok3 := args[2].(string)
		if !ok || !ok2 || !ok3 {
			return nil
		}
		k := occurrences(s, old) - 1
		if len(args) == 4 {
			if n, ok := toInt(args[3]); ok && n >= 0 && n < k {
				k = n
			}
		}
		return m.fits(len(s) + mulSat(k, len(repl)-len(old)))
	}},
	"join": {strings: true, scans: true, check: func(m *ExprMeter, args []any) error {
		sep := ""
		if len(args) == 2 {
			sep, _ = args[1].(string)
		}
		return m.fits(joinedSize(args[0], sep))
	}},
	"upper":      {strings: true, check: func(m *ExprMeter, args []any) error { return m.fits(stringLen(args[0])) }},
	"lower":      {strings: true, check: func(m *ExprMeter, args []any) error { return m.fits(stringLen(args[0])) }},
	"toBase64":   {strings: true, check: func(m *ExprMeter, args []any) error { return m.fits(4 * ((stringLen(args[0]) + 2) / 3)) }},
	"fromBase64": {strings: true, check: func(m *ExprMeter, args []any) error { return m.fits((stringLen(args[0]) + 3) / 4 * 3) }},
	"string":     {strings: true, check: func(m *ExprMeter, args []any) error { return m.printed(args[0], false) }},
	"toJSON":     {strings: true, check: func(m *ExprMeter, args []any) error { return m.printed(args[0], true) }},
	"fromJSON":   {check: func(m *ExprMeter, args []any) error { return m.take(jsonCost(args[0])) }},
	"split":      {scans: true, check: splitArgs},
	"splitAfter": {scans: true, check: splitArgs},
	"keys":       {check: func(m *ExprMeter, args []any) error { return m.take(elemBytes * length(args[0])) }},
	"values":     {check: func(m *ExprMeter, args []any) error { return m.take(elemBytes * length(args[0])) }},
	"toPairs":    {check: func(m *ExprMeter, args []any) error { return m.take(pairBytes * length(args[0])) }},
	"fromPairs":  {check: func(m *ExprMeter, args []any) error { return m.take(pairBytes * length(args[0])) }},
	"uniq":       {check: func(m *ExprMeter, args []any) error { return m.take(elemBytes * length(args[0])) }},
	"concat": {check: func(m *ExprMeter, args []any) error {
		n := 0
		for _, a := range args {
			n = addSat(n, length(a))
		}
		return m.take(mulSat(elemBytes, n))
	}},
	"flatten": {check: func(m *ExprMeter, args []any) error {
		return m.take(mulSat(elemBytes, leaves(args, m.left()/elemBytes+1)))
	}},
	"min":  {check: aggregateArgs},
	"max":  {check: aggregateArgs},
	"mean": {check: aggregateArgs},
	"median": {check: func(m *ExprMeter, args []any) error {
		n := leaves(args, MaxExprSteps+1)
		if err := m.work(n); err != nil {
			return err
		}
		return m.take(mulSat(8, n))
	}},
}

func splitArgs(m *ExprMeter, args []any) error {
	s, ok := args[0].(string)
	sep, ok2 := args[1].(string)
	if !ok || !ok2 {
		return nil
	}
	k := occurrences(s, sep)
	if len(args) == 3 {
		if n, ok := toInt(args[2]); ok && n >= 0 && n < k {
			k = n
		}
	}
	return m.take(mulSat(elemBytes, k))
}

func aggregateArgs(m *ExprMeter, args []any) error {
	return m.work(leaves(args, MaxExprSteps+1))
}

// occurrences returns how many pieces strings.Split(s, sep) makes: one
// more than the replacements strings.Replace(s, sep, ...) makes.
func occurrences(s, sep string) int {
	if sep == "" {
		return utf8.RuneCountInString(s) + 1
	}
	return strings.Count(s, sep) + 1
}

// joinedSize returns the length of strings.Join of the strings in list.
func joinedSize(list any, sep string) int {
	size, n := 0, 0
	add := func(s string) { size, n = addSat(size, len(s)), n+1 }
	switch list := list.(type) {
	case []string:
		for _, s := range list {
			add(s)
		}
	case []any:
		for _, e := range list {
			if s, ok := e.(string); ok {
				add(s)
			}
		}
	}
	if n > 0 {
		size = addSat(size, mulSat(n-1, len(sep)))
	}
	return size
}

func stringLen(v any) int {
	if s, ok := v.(string); ok {
		return len(s)
	}
	return 0
}

// length returns the length of a list or map, 0 for anything else.
func length(v any) int {
	switch v := v.(type) {
	case []any:
		return len(v)
	case map[string]any:
		return len(v)
	case nil:
		return 0
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map:
		return rv.Len()
	}
	return 0
}

// leaves counts the values in vs that are not lists, descending into
// lists as flatten and the aggregate builtins do; it stops counting past
// limit.
func leaves(vs []any, limit int) int {
	n := 0
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		switch v := v.(type) {
		case nil, bool, int, float64, string:
			n++
			return
		case []any:
			if depth > maxSizeDepth {
				n = limit + 1
			}
			for i := 0; i < len(v) && n <= limit; i++ {
				walk(v[i], depth+1)
			}
			return
		}
		rv := reflect.ValueOf(v)
		if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
			n++
			return
		}
		if depth > maxSizeDepth {
			n = limit + 1
		}
		for i := 0; i < rv.Len() && n <= limit; i++ {
			walk(rv.Index(i).Interface(), depth+1)
		}
	}
	for i := 0; i < len(vs) && n <= limit; i++ {
		walk(vs[i], 0)
	}
	return n
}

// jsonCost bounds what decoding the JSON text v builds: its bytes, and a
// map entry for each value it can hold (one per ',', ':', '[' and '{').
func jsonCost(v any) int {
	s, ok := v.(string)
	if !ok {
		return 0
	}
	values := 1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ',', ':', '[', '{':
			values++
		}
	}
	return addSat(len(s), mulSat(pairBytes, values))
}

func addSat(a, b int) int {
	if b > 0 && a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

// mulSat multiplies a >= 0 by b, saturating at math.MaxInt; a negative b
// (a replacement that shrinks the string) gives the plain product.
func mulSat(a, b int) int {
	if b > 0 && a > math.MaxInt/b {
		return math.MaxInt
	}
	return a * b
}

// printed checks that string (json false) or toJSON (json true) of v
// fits the meter: at most MaxExprString bytes, and what is left of the
// budget. It bounds the output without building it, and stops as soon as
// the bound passes the limit.
func (m *ExprMeter) printed(v any, json bool) error {
	limit := min(MaxExprString, m.left())
	z := sizer{left: limit, json: json}
	if z.value(v, 0) {
		return nil
	}
	if limit == MaxExprString {
		return limitErrorf("a string longer than %d bytes", MaxExprString)
	}
	return limitErrorf("more than %d bytes built", ExprMemoryBudget)
}

// maxSizeDepth is how deep the sizer and leaves descend into nested
// values; deeper values count as too large.
const maxSizeDepth = 10_000

// sizer bounds the length of fmt's %v (json false) or of
// json.MarshalIndent(v, "", "  ") (json true) of a value, spending left;
// it stops once left is negative.
type sizer struct {
	left int
	json bool
}

func (z *sizer) add(n int) bool {
	z.left -= n
	return z.left >= 0
}

// value adds the bound of v at nesting depth.
func (z *sizer) value(v any, depth int) bool {
	switch v := v.(type) {
	case nil:
		return z.add(5)
	case string:
		return z.str(v)
	case bool, int, float64:
		return z.add(24)
	case []any:
		if !z.open(depth) {
			return false
		}
		for _, e := range v {
			if !z.elem(depth) || !z.value(e, depth+1) {
				return false
			}
		}
		return true
	case map[string]any:
		if !z.open(depth) {
			return false
		}
		for k, e := range v {
			if !z.elem(depth) || !z.str(k) || !z.value(e, depth+1) {
				return false
			}
		}
		return true
	}
	return z.reflected(reflect.ValueOf(v), depth)
}

// open adds the brackets of a list, map or struct at depth, and the
// indentation of its closing line.
func (z *sizer) open(depth int) bool {
	if depth > maxSizeDepth {
		z.left = -1
		return false
	}
	return z.add(6 + 2*depth)
}

// elem adds the separators and indentation of an element at depth, and
// a map key's colon.
func (z *sizer) elem(depth int) bool { return z.add(6 + 2*depth) }

// str adds a string: its bytes for %v, its escaped and quoted form for
// JSON (with HTML escaping, as encoding/json does).
func (z *sizer) str(s string) bool {
	if !z.json || len(s)+2 > z.left {
		return z.add(len(s) + 2)
	}
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
				n += 2
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			n += 6
		} else {
			n += size
		}
		i += size
	}
	return z.add(n)
}

var (
	timeType     = reflect.TypeFor[time.Time]()
	durationType = reflect.TypeFor[time.Duration]()
	stringerType = reflect.TypeFor[fmt.Stringer]()
)

// reflected adds the bound of v at depth, for values other than the
// decoded JSON that value handles.
func (z *sizer) reflected(v reflect.Value, depth int) bool {
	if !v.IsValid() {
		return z.add(5)
	}
	switch v.Type() {
	case timeType:
		if v.CanInterface() {
			return z.add(64 + len(v.Interface().(time.Time).Location().String()))
		}
	case durationType:
		return z.add(32)
	}
	if v.CanInterface() && v.Type().Implements(stringerType) && v.Kind() != reflect.Pointer && v.Kind() != reflect.Interface {
		// fmt prints what String returns.
		return z.str(v.Interface().(fmt.Stringer).String())
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return z.add(5)
		}
		if !z.add(18) {
			return false
		}
		if v.Kind() == reflect.Interface && v.Elem().CanInterface() {
			return z.value(v.Elem().Interface(), depth)
		}
		return z.reflected(v.Elem(), depth)
	case reflect.String:
		return z.str(v.String())
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return z.add(4*v.Len() + 6)
		}
		if !z.open(depth) {
			return false
		}
		for i := range v.Len() {
			if !z.elem(depth) || !z.reflected(v.Index(i), depth+1) {
				return false
			}
		}
		return true
	case reflect.Map:
		if !z.open(depth) {
			return false
		}
		for it := v.MapRange(); it.Next(); {
			if !z.elem(depth) || !z.reflected(it.Key(), depth+1) || !z.reflected(it.Value(), depth+1) {
				return false
			}
		}
		return true
	case reflect.Struct:
		if !z.open(depth) {
			return false
		}
		t := v.Type()
		for i := range v.NumField() {
			name := len(t.Field(i).Name) + len(t.Field(i).Tag)
			if !z.elem(depth) || !z.add(name+2) || !z.reflected(v.Field(i), depth+1) {
				return false
			}
		}
		return true
	}
	return z.add(64) // numbers, complex numbers, and the addresses fmt prints for funcs and channels
}

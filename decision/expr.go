package decision

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"

	"github.com/parleyhq/parley/policy"
)

// Env is what an embedded expression can read at run time; see
// policy.EnvContent for which names exist where. The engine fills one per
// evaluation.
type Env struct {
	Content  map[string]any   `expr:"content"`
	Msg      policy.Envelope  `expr:"msg"`
	Vars     map[string]any   `expr:"vars"`
	Choices  []string         `expr:"choices"`
	Peer     string           `expr:"peer"`
	Sessions []map[string]any `expr:"sessions"`

	meter policy.ExprMeter // the budget of the evaluation in progress
}

// ExprMeter returns the budget of the evaluation in progress, which the
// bounded operations of a compiled expression spend. Expressions cannot
// call it; Eval runs each evaluation with a fresh budget.
func (e *Env) ExprMeter() *policy.ExprMeter { return &e.meter }

// Expression is a compiled embedded expression. It is immutable and safe for
// concurrent use.
type Expression struct {
	Src *policy.Expr
	// prog is the VM program, built by Compile or, for an expression
	// policy.ExprTypeOf types (which therefore compiles), on the first
	// evaluation that needs it (once).
	prog    *vm.Program
	progErr error
	built   sync.Once
	fast    *fast // a native form of the expression, when it has one
	// field is the one field of content fast reads, when oneField (see
	// ContentField).
	field    string
	oneField bool
	// readsMsg is whether the expression may read Env.Msg; when not, the
	// caller need not build the envelope.
	readsMsg bool
}

// ReadsMsg reports whether the expression may read the message envelope
// (Env.Msg). When it does not, an Env without Msg evaluates it the same,
// so a caller can skip building the envelope.
func (p *Expression) ReadsMsg() bool { return p.readsMsg }

// run is what one evaluation needs, pooled: the VM and the copy of the
// caller's Env the program runs against.
type run struct {
	vm  vm.VM
	env Env
}

var runs = sync.Pool{New: func() any { return &run{vm: vm.VM{MemoryBudget: policy.MaxExprElements}} }}

// Compile compiles e for evaluation against an Env, within the expression
// limits of policy.CompileExpr. The policy's checks type-check
// expressions against the message schemas; this compilation only resolves
// names, since at run time content is untyped JSON.
//
// An expression of the simple shapes policy.ExprTypeOf types against an
// Env (guards and match rules that compare fields with literals, and
// arithmetic on fields) is known to compile without compiling it: its VM
// program is built when an evaluation first needs it, which for a guard
// the native form decides may be never.
func Compile(e *policy.Expr) (*Expression, error) {
	tree, err := parser.Parse(e.Src)
	if err != nil {
		return compile(e, nil, new(Expression), nil)
	}
	return compile(e, &tree.Node, new(Expression), nil)
}

// compile is Compile from e's syntax tree, nil when its source does not
// parse, into x (zero), with the nodes of its native form from fasts.
// The tree comes by a pointer, which ast.Walk takes, so that walking it
// does not move it to the heap.
func compile(e *policy.Expr, tree *ast.Node, x *Expression, fasts *fastBlock) (*Expression, error) {
	x.Src, x.readsMsg = e, true
	if tree != nil {
		x.fast = fasts.fastNode(*tree)
		if x.fast != nil {
			x.field, x.oneField = x.fast.contentField()
		}
		x.readsMsg = readsMsg(tree)
		if _, ok := envTypes.TypeOf(*tree); ok {
			return x, nil
		}
	}
	prog, err := policy.CompileExpr(e.Src, Env{})
	if err != nil {
		return nil, &EvalError{Expr: e, Err: err}
	}
	x.prog = prog
	return x, nil
}

// Compiler compiles the expressions of a policy as Compile does, from the
// syntax trees the policy's checks parse: give Parsed to the checks
// (policy.WithExprTrees), then Compile each expression. A Compiler is
// for one policy, and one goroutine at a time.
type Compiler struct {
	// parsed holds what Parsed compiled, in its order; Compile, asked
	// for the expressions in that order (as the checks and engine.Check
	// visit them), takes each from next. Asked for one out of order, it
	// moves what is left to done, by expression.
	parsed []compiled
	next   int
	done   map[*policy.Expr]compiled
	// tree holds the tree Parsed was given while compile walks it.
	tree ast.Node
	// block is where Parsed's next Expressions come from, and fasts the
	// nodes of their native forms: one allocation for many.
	block []Expression
	fasts fastBlock
}

// exprBlock is how many Expressions a Compiler allocates at once.
const exprBlock = 64

type compiled struct {
	e   *policy.Expr
	x   *Expression
	err error
}

// Parsed compiles e from its syntax tree, for Compile to return; it
// keeps nothing of the tree.
func (c *Compiler) Parsed(e *policy.Expr, tree ast.Node) {
	if len(c.block) == 0 {
		c.block = make([]Expression, exprBlock)
	}
	c.tree = tree
	x, err := compile(e, &c.tree, &c.block[0], &c.fasts)
	c.tree = nil
	if err == nil {
		c.block = c.block[1:]
	} else {
		c.block[0] = Expression{} // not handed out: the next one's
	}
	if c.done != nil {
		c.done[e] = compiled{e, x, err}
		return
	}
	if len(c.parsed) == cap(c.parsed) {
		// Double it: append grows a long slice by a quarter, copying a
		// large policy's list a dozen times.
		c.parsed = slices.Grow(c.parsed, len(c.parsed)+16)
	}
	c.parsed = append(c.parsed, compiled{e, x, err})
}

// Compile returns what Compile(e) returns: e compiled from the tree
// Parsed was given, or from its source when Parsed was not called with
// it.
func (c *Compiler) Compile(e *policy.Expr) (*Expression, error) {
	if c.next < len(c.parsed) {
		if r := c.parsed[c.next]; r.e == e {
			c.parsed[c.next] = compiled{}
			c.next++
			return r.x, r.err
		}
		// Out of Parsed's order (an expression the checks did not parse
		// again, as they do not a repeated one, or another order).
		c.done = make(map[*policy.Expr]compiled, len(c.parsed)-c.next)
		for _, r := range c.parsed[c.next:] {
			c.done[r.e] = r
		}
		c.parsed, c.next = nil, 0
	}
	if r, ok := c.done[e]; ok {
		delete(c.done, e)
		return r.x, r.err
	}
	return Compile(e)
}

// envTypes is the environment expressions compile against, prepared
// for policy.ExprTypeOf.
var envTypes = policy.PrepareExprEnv(Env{})

// program returns the VM program, compiling it on first use.
func (p *Expression) program() (*vm.Program, error) {
	p.built.Do(func() {
		if p.prog == nil {
			p.prog, p.progErr = policy.CompileExpr(p.Src.Src, Env{})
		}
	})
	return p.prog, p.progErr
}

// Eval evaluates the program against env, within the expression limits:
// an evaluation that would build more than policy.ExprMemoryBudget bytes
// or a string longer than policy.MaxExprString, or take more than
// policy.MaxExprSteps steps or longer than policy.ExprTimeLimit, stops
// with an *EvalError wrapping policy.ErrExprLimit, at the operation that
// would exceed it (see the package documentation). It does not keep env, so the caller's Env need not
// escape to the heap: the program runs on a pooled copy.
func (p *Expression) Eval(env *Env) (any, error) {
	prog, err := p.program()
	if err != nil {
		return nil, &EvalError{Expr: p.Src, Err: err}
	}
	r := runs.Get().(*run)
	r.env = *env
	r.env.meter = policy.ExprMeter{}
	out, err := r.vm.Run(prog, &r.env)
	r.env = Env{}
	runs.Put(r)
	if err != nil {
		return nil, &EvalError{Expr: p.Src, Err: vmLimit(err)}
	}
	return out, nil
}

// vmLimit makes expr's own error for a VM over its MemoryBudget (the
// elements of the lists, maps and ranges it builds) an expression-limit
// error like the others.
func vmLimit(err error) error {
	if fe, ok := errors.AsType[*file.Error](err); ok && fe.Message == "memory budget exceeded" && fe.Prev == nil {
		fe.Message = fmt.Sprintf("%v: more than %d list, map and range elements built", policy.ErrExprLimit, policy.MaxExprElements)
		fe.Wrap(policy.ErrExprLimit)
	}
	return err
}

// Bool evaluates the program and requires a boolean result.
func (p *Expression) Bool(env *Env) (bool, error) {
	if p.fast != nil {
		if v, ok := p.fast.eval(env.Content, env.Vars, nil); ok {
			return v, nil
		}
	}
	return p.vmBool(env)
}

// ContentField returns the field of content the expression reads, when
// its native form reads that one alone (and perhaps vars): n for
// content.n > 0 && content.n < 10. A caller that has looked the field up
// in env's content already hands its value to BoolField.
func (p *Expression) ContentField() (string, bool) { return p.field, p.oneField }

// BoolField is Bool on an Env of content and vars, for content that
// holds v under the field ContentField returns: the same result and
// error, for which the native form compares v instead of looking the
// field up again, and builds no Env unless it falls back to the VM. (An
// expression with a ContentField does not read the envelope.) Without
// such a field it is Bool.
func (p *Expression) BoolField(content, vars map[string]any, v any) (bool, error) {
	if p.oneField {
		if r, ok := p.fast.eval(content, vars, &v); ok {
			return r, nil
		}
	}
	env := Env{Content: content, Vars: vars}
	return p.vmBool(&env)
}

// Presence reports whether the expression's value depends on nothing
// but whether content holds one key: its native form tests that key's
// presence ("key" in content, under !, not, &&, and, ||, or) and nothing
// else. It then returns the key and what Bool returns, with no error,
// on content that holds the key and on content that does not, whatever
// else the content, the variables and the envelope hold. A caller that
// knows already whether content holds the key (a match rule's, after
// the content's fields were looked up) has the answer without
// evaluating the expression.
func (p *Expression) Presence() (key string, present, absent, ok bool) {
	if p.fast == nil || !p.oneField || !p.fast.presenceOnly() {
		return "", false, false, false
	}
	present, _ = p.fast.eval(map[string]any{p.field: nil}, nil, nil)
	absent, _ = p.fast.eval(nil, nil, nil)
	return p.field, present, absent, true
}

// vmBool is Bool on the VM.
func (p *Expression) vmBool(env *Env) (bool, error) {
	out, err := p.Eval(env)
	if err != nil {
		return false, err
	}
	b, ok := out.(bool)
	if !ok {
		return false, &EvalError{Expr: p.Src, Err: fmt.Errorf("result is %T, not bool", out)}
	}
	return b, nil
}

// EvalError is an expression that failed to compile or evaluate, with its
// position in the policy file.
type EvalError struct {
	Expr *policy.Expr
	Err  error
}

func (e *EvalError) Error() string {
	pos, msg := e.Expr.Locate(e.Err)
	return fmt.Sprintf("%s: expression %s: %s", pos, policy.Quote(e.Expr.Src), msg)
}

// Pos returns the position of the problem in the policy file: the
// character the expression compiler points at, or the expression's start.
func (e *EvalError) Pos() policy.Pos {
	pos, _ := e.Expr.Locate(e.Err)
	return pos
}

// Message returns what is wrong, without the position.
func (e *EvalError) Message() string {
	_, msg := e.Expr.Locate(e.Err)
	return msg
}

func (e *EvalError) Unwrap() error { return e.Err }

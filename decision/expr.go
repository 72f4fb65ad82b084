package decision

import (
	"errors"
	"fmt"
	"sync"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/file"
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
}

// Limits bound embedded expressions: MaxNodes caps an expression's size
// when it is compiled, MemoryBudget what one evaluation may allocate (expr
// has no loops without bounds, so these bound its running time too).
const (
	MaxNodes     = 2000
	MemoryBudget = 100_000
)

// Expression is a compiled embedded expression. It is immutable and safe for
// concurrent use.
type Expression struct {
	Src  *policy.Expr
	prog *vm.Program
	fast *presence // a native form of the expression, when it has one
}

var (
	vms  = sync.Pool{New: func() any { return &vm.VM{MemoryBudget: MemoryBudget} }}
	envs = sync.Pool{New: func() any { return new(Env) }}
)

// Compile compiles e for evaluation against an Env. The policy's checks
// type-check expressions against the message schemas; this compilation
// only resolves names, since at run time content is untyped JSON.
func Compile(e *policy.Expr) (*Expression, error) {
	prog, err := expr.Compile(e.Src, expr.Env(Env{}), expr.MaxNodes(MaxNodes))
	if err != nil {
		return nil, &EvalError{Expr: e, Err: err}
	}
	return &Expression{Src: e, prog: prog, fast: presenceOf(e.Src)}, nil
}

// Eval evaluates the program against env. It does not keep env, so the
// caller's Env need not escape to the heap: the program runs on a pooled
// copy.
func (p *Expression) Eval(env *Env) (any, error) {
	m := vms.Get().(*vm.VM)
	m.MemoryBudget = MemoryBudget
	e := envs.Get().(*Env)
	*e = *env
	out, err := m.Run(p.prog, e)
	*e = Env{}
	envs.Put(e)
	vms.Put(m)
	if err != nil {
		return nil, &EvalError{Expr: p.Src, Err: err}
	}
	return out, nil
}

// Bool evaluates the program and requires a boolean result.
func (p *Expression) Bool(env *Env) (bool, error) {
	if p.fast != nil {
		return p.fast.eval(env.Content), nil
	}
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
	return fmt.Sprintf("%s: expression %q: %s", e.Pos(), e.Expr.Src, e.Message())
}

// Pos returns the position of the problem in the policy file: the
// character the expression compiler points at, or the expression's start.
func (e *EvalError) Pos() policy.Pos {
	if fe, ok := errors.AsType[*file.Error](e.Err); ok {
		return e.Expr.PosAt(fe.Line, fe.Column)
	}
	return e.Expr.Pos
}

// Message returns what is wrong, without the position.
func (e *EvalError) Message() string {
	if fe, ok := errors.AsType[*file.Error](e.Err); ok {
		return fe.Message
	}
	return e.Err.Error()
}

func (e *EvalError) Unwrap() error { return e.Err }

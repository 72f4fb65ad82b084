package engine

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/policy"
)

// Compiled is a policy checked and compiled once, for any of its roles:
// Check runs every static check, keeps the projection onto each role,
// and compiles each embedded expression once; Program builds a role's
// program from them. cpvalidate reports exactly what Check reports, so a
// policy that validates clean compiles. A Compiled is immutable (its
// programs are built once, on first use) and safe for concurrent use.
type Compiled struct {
	p           *policy.Policy
	o           compileOptions
	projections map[string]*policy.Projection
	decider     decision.Decider

	mu sync.Mutex
	// compiled holds each expression compiled, in the order of the
	// policy; exprs indexes them by expression once a program needs
	// them (checking a policy never does).
	compiled []compiledExpr
	exprs    map[*policy.Expr]*decision.Expression
	programs map[string]*Program
}

// compiledExpr is an expression of the policy and its compilation.
type compiledExpr struct {
	e *policy.Expr
	x *decision.Expression
}

// Check checks p (with the child policies WithPolicies resolves) and
// compiles its expressions. The diagnostics are p's load diagnostics and
// those of every static check, sorted; the result is nil when they hold
// an error. A policy that runs child policies needs WithPolicies: without
// a resolver they cannot be checked, and Check reports each one
// unresolved.
func Check(p *policy.Policy, opts ...CompileOption) (*Compiled, policy.Diagnostics) {
	if p == nil {
		return nil, policy.Diagnostics{{Severity: policy.SeverityError, Code: policy.CodeUnresolved, Message: "no policy"}}
	}
	var o compileOptions
	for _, opt := range opts {
		opt(&o)
	}
	// The checks parse every expression; the compiler works from their
	// trees instead of parsing again.
	var exprs decision.Compiler
	checkOpts := []policy.CheckOption{policy.WithExprTrees(exprs.Parsed)}
	if o.resolve != nil {
		checkOpts = append(checkOpts, policy.WithPolicies(o.resolve))
	}
	a := policy.Analyze(p, checkOpts...)
	ds := a.Diagnostics
	if o.resolve == nil {
		ds = append(ds, unresolvedChildren(p)...)
		ds.Sort()
	}
	if ds.HasErrors() {
		return nil, ds
	}
	c := &Compiled{p: p, o: o, projections: a.Projections, programs: map[string]*Program{}}
	decide := map[string]*decision.Expression{}
	var errs policy.Diagnostics
	compile := func(e *policy.Expr) *decision.Expression {
		if e == nil {
			return nil
		}
		x, err := exprs.Compile(e)
		if err != nil {
			errs = append(errs, exprDiagnostic(e, err))
			return nil
		}
		if len(c.compiled) == cap(c.compiled) {
			// Double it: append grows a long slice by a quarter, copying
			// a large policy's list a dozen times.
			c.compiled = slices.Grow(c.compiled, len(c.compiled)+16)
		}
		c.compiled = append(c.compiled, compiledExpr{e, x})
		return x
	}
	for _, m := range p.Messages {
		compile(m.Match)
	}
	for _, s := range p.States {
		if x := compile(s.Decide); x != nil {
			decide[s.Name] = x
		}
		for _, t := range s.Transitions {
			compile(t.Guard)
			for _, a := range t.Set {
				compile(a.Expr)
			}
		}
	}
	if len(errs) > 0 {
		ds = append(ds, errs...)
		ds.Sort()
		return nil, ds
	}
	c.decider = decision.Bind(p.Name, decide)
	return c, ds
}

// unresolvedChildren reports the child policies of p, which cannot be
// checked without a resolver.
func unresolvedChildren(p *policy.Policy) policy.Diagnostics {
	var ds policy.Diagnostics
	for _, s := range p.States {
		if s.Child != nil {
			ds = append(ds, policy.Diagnostic{Severity: policy.SeverityError, Code: policy.CodeUnresolved, Pos: s.Child.Pos,
				Message: fmt.Sprintf("state %s runs child policy %s, which cannot be found: give the compiler a resolver (engine.WithPolicies, agent.WithResolver)",
					policy.Quote(s.Name), policy.Quote(s.Child.Policy.Name))})
		}
	}
	return ds
}

// exprDiagnostic turns an expression's compile error into a diagnostic at
// the expression's position.
func exprDiagnostic(e *policy.Expr, err error) policy.Diagnostic {
	d := policy.Diagnostic{Severity: policy.SeverityError, Code: policy.CodeExprType, Pos: e.Pos, Message: err.Error()}
	if errors.Is(err, policy.ErrExprLimit) {
		d.Code = policy.CodeLimit
	}
	if ee, ok := errors.AsType[*decision.EvalError](err); ok {
		d.Pos, d.Message = ee.Pos(), ee.Message()
	}
	return d
}

// Policy returns the policy.
func (c *Compiled) Policy() *policy.Policy { return c.p }

// Roles returns the names of the policy's roles.
func (c *Compiled) Roles() []string {
	out := make([]string, len(c.p.Roles))
	for i, r := range c.p.Roles {
		out[i] = r.Name
	}
	return out
}

// Decider returns the decision logic of the policy's decide expressions
// (see decision.FromPolicy), compiled once.
func (c *Compiled) Decider() decision.Decider { return c.decider }

// Program returns the program for role, built on first use.
func (c *Compiled) Program(role string) (*Program, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if pr, ok := c.programs[role]; ok {
		return pr, nil
	}
	if c.p.Role(role) == nil {
		return nil, fmt.Errorf("engine: policy %s has no role %s (roles: %v)", policy.Quote(c.p.Name), policy.Quote(role), c.Roles())
	}
	proj := c.projections[role]
	if proj == nil {
		// A role that sends and receives nothing, or sees every step, was
		// not projected by the checks; its projection has nothing to tell
		// apart.
		var ds policy.Diagnostics
		if proj, ds = policy.Project(c.p, role); ds.HasErrors() {
			return nil, ds.Err()
		}
	}
	if c.exprs == nil {
		c.exprs = make(map[*policy.Expr]*decision.Expression, len(c.compiled))
		for _, ce := range c.compiled {
			c.exprs[ce.e] = ce.x
		}
		c.compiled = nil
	}
	pr, err := build(c.p, role, proj, &c.o, c.exprs)
	if err != nil {
		return nil, err
	}
	c.programs[role] = pr
	return pr, nil
}

// Compile checks p and compiles it for role: Check, then Program. The
// program is nil when the diagnostics hold an error or p has no such
// role.
func Compile(p *policy.Policy, role string, opts ...CompileOption) (*Program, policy.Diagnostics) {
	c, ds := Check(p, opts...)
	if c == nil {
		return nil, ds
	}
	pr, err := c.Program(role)
	if err != nil {
		ds = append(ds, policy.Diagnostic{Severity: policy.SeverityError, Code: policy.CodeUndeclaredRole, Pos: p.Pos, Message: err.Error()})
		return nil, ds
	}
	return pr, ds
}

// Package decision connects conversation policies to an agent's decision
// logic. At every decision point the engine asks a Decider which of the
// allowed choices to take and for the content of the message that choice
// sends.
//
// Deciders come in several shapes: a Go function (Func), the expressions
// bound to decision points in the policy file itself (FromPolicy), the
// ABLE-style function (conversationID, decisionPoint, data) → (decision,
// formData) through ABLE, and a Registry that picks one by policy and
// decision point. Chain tries several in turn.
//
// This package also compiles and runs the expressions embedded in policies
// (guards, assignments, match rules, decide bindings), with
// policy.CompileExpr, which the policy's checks use too: validation and
// the engine accept the same expressions.
//
// Expressions read what peers send, so each is bounded (see the limits in
// package policy): Compile refuses one of more than policy.MaxExprNodes
// (2000) syntax nodes, and one evaluation may build at most
// policy.ExprMemoryBudget (4 MiB) of strings and list elements, no string
// longer than policy.MaxExprString (1 MiB), at most
// policy.MaxExprElements (262,144) elements of the lists, maps and ranges
// expr builds itself, take at most policy.MaxExprSteps (4,194,304) steps
// (a loop over n elements takes n × (1 + the nodes of its predicate)),
// run at most policy.ExprTimeLimit (100ms), and compile no pattern longer
// than policy.MaxExprPattern (4096 bytes). Each is checked before the
// operation that would exceed it (the clock, and what a method call
// returns, right after); Eval then fails with an *EvalError at that
// operation's position, wrapping policy.ErrExprLimit.
package decision

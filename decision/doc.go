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
// (guards, assignments, match rules, decide bindings): it is the only
// package besides policy's type checker that imports expr-lang/expr.
package decision

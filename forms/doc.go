// Package forms holds the wire Message, with FIPA ACL's parameters, and
// message forms: the per-message-type logic that classifies an inbound
// message into one of a policy's message types, validates its content
// against the type's fields, and builds an outbound message from decision
// data.
//
// A Form is immutable once compiled and safe for concurrent use. Match
// rules are expressions; forms does not evaluate them itself but asks a
// Predicate, so the expression engine stays in package decision.
package forms

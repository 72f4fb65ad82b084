// Package engine runs conversation policies: it is Parley's deterministic
// core. Check checks a policy once and compiles it (one projection per
// role, each embedded expression compiled once); Compiled.Program (or
// Compile, for one role) gives an immutable Program: the policy projected
// onto that role, with interned states, transition tables, message forms
// and compiled expressions. A Handler runs one conversation of a Program.
//
// A Handler is the ConversationPolicyHandler of IBM's ABLE: Process takes
// one input event and appends the output events it causes to a Queue. It
// is deterministic and does no I/O: it starts no goroutines, reads no
// clock (time comes in on the events) and sends nothing (messages to send
// come out as events). The same inputs always give the same outputs, so a
// conversation can be replayed, and a Handler's whole state can be
// snapshotted and restored.
//
// A Driver hosts a set of handlers on one goroutine with virtual time:
// it routes what they send, fires their timers and asks decision logic.
// It is how to test a policy or decision logic and replay a conversation.
// The concurrent runtime that hosts an agent's conversations for real,
// with a clock, transports and limits, is package agent.
//
// Violations by peers are not errors: a message the policy does not allow
// becomes a ProtocolErrorEvent with a stable code (see docs/protocol-errors.md).
// Process returns an error only when it is misused.
package engine

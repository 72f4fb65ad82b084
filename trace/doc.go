// Package trace reads and writes conversation traces and checks them
// against policies.
//
// A trace is JSON Lines. A message line is one observed message, as a
// monitor between the agents would see it, with the message's envelope
// (at, performative, sender, receiver, conversation_id, reply_with,
// in_reply_to, reply_by, protocol, language, ontology) and its content. A
// timer line (at, timer, agent, conversation_id) says that an agent's
// timer fired. The same format is the conversation manager's journal, so
// any conversation Parley ran can be checked afterwards, timeouts
// included. Read is strict: a line that is not one JSON object of these
// fields, mixes the fields of both kinds of line, repeats a key, has a
// time out of order or out of range, or breaks a limit (see Limits) is a
// problem with a stable TR code.
//
// Check runs real handlers — one per agent and conversation, each in its
// bound role, in observe mode, on an engine.Driver — and feeds every
// message line to them as a send by its sender and a receipt by each
// receiver, firing the policy's timers from the lines' times; a timer
// line must name a timer the policy fires then. There is no separate
// checker: a trace conforms exactly when the engine would have accepted
// it.
package trace

// Package trace reads and writes conversation traces and checks them
// against policies.
//
// A trace is JSON Lines: one observed message per line, as a monitor
// between the agents would see it (DESIGN.md §6). The same format is the
// conversation manager's message journal, so any conversation Parley ran
// can be checked afterwards.
//
// Check runs real handlers — one per agent and conversation, each in its
// bound role, in observe mode — and feeds every line to them as a send by
// its sender and a receipt by each receiver, firing the policy's timers
// from the lines' times. There is no separate checker: a trace conforms
// exactly when the engine would have accepted it.
package trace

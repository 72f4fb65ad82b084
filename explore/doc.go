// Package explore checks a policy as a whole system: it runs every
// role's handler together over asynchronous channels and visits every
// global state the roles can reach, to find what no single role's check
// sees — deadlocks, orphan messages, roles left unfinished, replies that
// cross a deadline and commitments left open at a terminal state.
//
// Explore composes the engine's own handlers (engine.Compiled.Program and
// Program.NewHandler), so what it explores is what the engine runs. Each
// global state is every handler's snapshot (Handler.Snapshot, restored
// with Program.Restore to take a step), the messages in each channel, the
// timers armed, the decisions open and the child policies running. Two
// states are the same when they differ only in counters, reply-with
// numbers and absolute times (timers count by the time left).
//
// The model:
//   - Channels: one per sender and receiver, first in first out, holding
//     at most the buffer bound (WithBuffer). A message is delivered at any
//     time after it was sent, so messages of different senders arrive in
//     any order, and a reply may arrive after the waiting role's timer.
//   - Decisions: every choice a decision point offers is explored; at a
//     join, every combination of the sessions' choices. The content of the
//     message is made up: for each required field, "x" for strings and
//     any, 1 for numbers and ints, true, the current time, "1s", an empty
//     list or map. A choice whose guard that content fails is not
//     explored.
//   - Timers fire at their deadlines, in deadline order (timers due
//     together in every order); time moves only when one fires.
//   - Child policies: a child run (its policy and the agents it binds)
//     ends once every parent that has not ended has started it, with each
//     outcome the in-child state has a child-return transition for, for
//     every parent at once; when nothing else can happen, it ends for the
//     parents that started it (the child's own timers would end it). The
//     child's own messages are not explored (explore the child policy for
//     them).
//   - Many roles: WithInstances agents (DefaultInstances, 2) play a many
//     role, named after the role with a number ("Participant1").
//
// Bounds: WithMaxStates states (DefaultMaxStates) and WithBuffer
// messages per channel; the report says when either cut the
// exploration short (Report.Truncated), and how many states it visited.
// At most 50 findings are kept, each once by code, role, state and
// message. The cost grows as the states visited times the steps each
// allows; the states grow with the buffer bound (each channel may hold
// up to that many messages), see BenchmarkExplore.
package explore

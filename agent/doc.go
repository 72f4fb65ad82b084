// Package agent is the runtime that hosts an agent's conversations. A
// Manager registers the policies the agent speaks (checked and compiled
// once by engine.Check), starts conversations and accepts new ones when
// an opening message arrives, routes messages by conversation id, runs
// child policies, owns time (a Clock: RealClock, or FakeClock for
// deterministic tests) and I/O (a Transport; the in-process Bus connects
// managers in one process), and asks decision logic at every decision
// point.
//
// The runtime talks to the engine only through its exported API: each
// conversation is an engine.Handler, fed one input at a time by a worker
// goroutine. Conversation ids are unguessable, a transport says who sent
// each message, decision logic and sends run off the workers with
// timeouts, a plug-in's panic aborts only its conversation, and every
// resource a peer can make a manager spend is bounded (Limits). The
// guarantees and limits are documented in docs/runtime.md.
package agent

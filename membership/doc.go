// Package membership keeps a group of agents: who is in it, with which
// role, capabilities, priority and capacity (the most tasks a member takes
// at once); how healthy each is, from its heartbeats on the runtime's
// clock; how many tasks each has in progress; and a bounded history of
// joins, departures and removals. A member that stays unhealthy for the
// removal delay is removed automatically.
//
// A Manager addresses a many role from a group: Available returns the
// healthy members with a capability and room for a task, the peers of a
// Contract Net's Participant role for agent.StartRequest.Peers.
//
// Elect picks a leader among the healthy members with a Strategy: Random,
// FirstJoined, LastJoined, RoundRobin (which keeps whose turn it was),
// MostCapable, HighestPriority, or None. Agents that elect a leader among
// themselves, by message, run the shipped leader-election policy (the
// bully algorithm) with the candidates a group gives them.
//
// Limits: a group holds at most DefaultMaxMembers members (WithMaxMembers),
// each with a name, role and capabilities of at most MaxNameBytes and at
// most MaxCapabilities capabilities; its history keeps the latest
// DefaultHistory events (WithHistory).
package membership

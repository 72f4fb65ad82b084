// Package a2a connects Parley agents to agents of other stacks over the
// Agent2Agent protocol (A2A 0.3, JSON-RPC binding), on the official Go
// SDK. Server exposes the roles an agent.Manager accepts conversations
// in as an A2A agent; Client is an agent.Transport that lets a Parley
// conversation talk to an external A2A agent by URL.
//
// A conversation is an A2A context (its id is the contextId), the
// external party's part in it is a Task, and each policy message is an A2A
// Message whose content is a data part and whose message type,
// performative, reply-with and in-reply-to travel in its metadata under
// ExtensionURI. docs/a2a.md documents the mapping, the task states and
// the limits.
package a2a

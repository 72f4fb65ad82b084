package forms

import (
	"time"

	"github.com/parleyhq/parley/policy"
)

// Message is an ACL message on the wire (FIPA SC00061G). Content is a JSON
// object; the shipped policies' conventions for it are in
// docs/trace-format.md ("Content conventions of the FIPA policies").
//
// The engine never modifies a Message it is given, and never keeps one it
// builds after handing it out.
type Message struct {
	Performative   string
	Sender         string
	Receivers      []string
	ReplyTo        string
	Content        map[string]any
	Language       string
	Encoding       string
	Ontology       string
	Protocol       string
	ConversationID string
	ReplyWith      string
	InReplyTo      string
	ReplyBy        time.Time
}

// Envelope returns the message's parameters as expressions see them under
// msg.
func (m *Message) Envelope() policy.Envelope {
	return policy.Envelope{
		Performative:   m.Performative,
		Sender:         m.Sender,
		Receivers:      m.Receivers,
		ReplyTo:        m.ReplyTo,
		ConversationID: m.ConversationID,
		ReplyWith:      m.ReplyWith,
		InReplyTo:      m.InReplyTo,
		ReplyBy:        m.ReplyBy,
		Protocol:       m.Protocol,
		Language:       m.Language,
		Encoding:       m.Encoding,
		Ontology:       m.Ontology,
	}
}

// HasReceiver reports whether agent is among m's receivers.
func (m *Message) HasReceiver(agent string) bool {
	for _, r := range m.Receivers {
		if r == agent {
			return true
		}
	}
	return false
}

package agent

import (
	"time"

	"github.com/parleyhq/parley/forms"
)

// Store keeps an agent's conversations across restarts: a Manager with
// WithStore commits, in one Commit per group of inputs, the new state of
// every conversation those inputs changed, the messages they produced
// and which inbound messages they consumed, before any of those messages
// leaves; Resume loads it all back. store/bolt is the embedded default,
// on one bbolt file.
//
// Commit must be atomic for each root conversation: all or nothing of
// what a Batch holds for a root and its children (their Put and Delete,
// and the outbox entries of their messages), since an input changes one
// root's conversations only. store/bolt commits a whole Batch at once;
// store/natskv, one root at a time. A Commit is durable when it returns,
// when the store says it syncs. Load and Commit are called from one
// goroutine at a time. Commit may keep the values of b's lists (a
// StoredConversation, an OutboxEntry), not the lists: the manager
// reuses them once Commit has returned.
type Store interface {
	// Load returns everything stored. A store that finds records it
	// cannot read returns the readable ones and an error naming the file
	// and the unreadable records.
	Load() (*Stored, error)
	// Commit applies b atomically.
	Commit(b *Batch) error
	// Close closes the store.
	Close() error
}

// Stored is what a Store holds for one agent.
type Stored struct {
	Conversations []StoredConversation
	// Outbox holds the messages sent and not yet acknowledged by every
	// receiver, in the order they were produced.
	Outbox []OutboxEntry
}

// StoredConversation is one conversation as a Store keeps it.
type StoredConversation struct {
	ID          string `json:"id"`
	Policy      string `json:"policy"`
	Role        string `json:"role"`
	Fingerprint string `json:"fingerprint"`
	// Handler is the handler's engine snapshot.
	Handler []byte `json:"handler"`
	// Opener is the peer that opened the conversation here, if one did.
	Opener string `json:"opener,omitempty"`
	// A child conversation names its parent, and the session and epoch
	// it reports its end to.
	Parent        string `json:"parent,omitempty"`
	ParentSession string `json:"parent_session,omitempty"`
	ParentEpoch   uint64 `json:"parent_epoch,omitempty"`
	Children      int    `json:"children,omitempty"`
	// Ended, Outcome and Abort describe an ended conversation kept for
	// its retention.
	Ended   time.Time `json:"ended,omitzero"`
	Outcome string    `json:"outcome,omitempty"`
	Abort   string    `json:"abort,omitempty"`
	// Applied lists the ids of the inbound messages the conversation has
	// applied (see MessageID), so a message delivered again is applied
	// once.
	Applied []string `json:"applied,omitempty"`
}

// OutboxEntry is a message sent and not yet acknowledged by all of its
// receivers.
type OutboxEntry struct {
	// Seq orders entries; it grows with every message the agent sends.
	Seq          uint64         `json:"seq"`
	Conversation string         `json:"conversation"`
	Message      *forms.Message `json:"message"`
	// Pending lists the receivers that have not acknowledged it.
	Pending []string `json:"pending"`
}

// Batch is one atomic change to a Store.
type Batch struct {
	// Put replaces (or adds) conversations, by id.
	Put []StoredConversation
	// Delete removes conversations, by id.
	Delete []string
	// Send adds outbox entries; Acked removes entries, by Seq, and
	// Update replaces entries some receivers have acknowledged.
	Send   []OutboxEntry
	Update []OutboxEntry
	Acked  []uint64
}

// addTo appends what b changes to dst.
func (b *Batch) addTo(dst *Batch) {
	dst.Put = append(dst.Put, b.Put...)
	dst.Delete = append(dst.Delete, b.Delete...)
	dst.Send = append(dst.Send, b.Send...)
	dst.Update = append(dst.Update, b.Update...)
	dst.Acked = append(dst.Acked, b.Acked...)
}

// Empty reports whether b changes nothing.
func (b *Batch) Empty() bool {
	return len(b.Put) == 0 && len(b.Delete) == 0 && len(b.Send) == 0 && len(b.Update) == 0 && len(b.Acked) == 0
}

// MessageID identifies an inbound message for de-duplication: its sender
// and reply-with, which a Parley handler makes unique for every message
// it sends. A message without reply-with has no id and is not
// de-duplicated.
func MessageID(m *forms.Message) string {
	if m.ReplyWith == "" {
		return ""
	}
	return m.Sender + "\x00" + m.ReplyWith
}

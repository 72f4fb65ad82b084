package bolt

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/forms"
)

// FuzzDecodeEntry feeds log entries, valid and broken, to the decoders:
// they return an error or records, and never panic or allocate by a
// corrupt length.
func FuzzDecodeEntry(f *testing.F) {
	msg := &forms.Message{Performative: "request", Sender: "alice", Receivers: []string{"bob"}, ConversationID: "c1", Content: map[string]any{"n": 1.0}}
	for _, b := range []agent.Batch{
		{Put: []agent.StoredConversation{{ID: "c1", Handler: []byte(`{}`), Applied: []string{"x"}}}, Delete: []string{"c0"},
			Send: []agent.OutboxEntry{{Seq: 7, Conversation: "c1", Message: msg, Pending: []string{"bob"}}}, Acked: []uint64{3}},
		{},
	} {
		for _, enc := range []outboxEncoder{{}, {format4: true}} {
			e, err := appendEntry(nil, &b, &enc)
			require.NoError(f, err)
			f.Add(e)
		}
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeEntry(b)
		if err != nil {
			return
		}
		for _, rec := range e.put {
			sc, err := decodeConversation(rec)
			if err != nil {
				continue
			}
			id, err := recordKey(rec)
			assert.NoError(t, err)
			assert.Equal(t, sc.ID, string(id))
			rec := appendConversation(nil, &sc)
			assert.Len(t, rec, conversationSize(&sc), "conversationSize is the record's length")
			again, err := decodeConversation(rec)
			assert.NoError(t, err)
			assert.Equal(t, sc, again, "a decoded record encodes to itself")
		}
		for _, o := range e.out {
			decodeOutbox(o.seq, o.rec)
		}
	})
}

// TestOutboxJSONIsWhatJSONMarshalWrites: the reused encoder writes each
// entry as json.Marshal does (HTML escaped, no newline), one after the
// other.
func TestOutboxJSONIsWhatJSONMarshalWrites(t *testing.T) {
	tests := []struct {
		name string
		e    agent.OutboxEntry
	}{
		{"a message", agent.OutboxEntry{Seq: 1, Conversation: "c1", Message: &forms.Message{Performative: "request", Sender: "alice", Receivers: []string{"bob"}, Content: map[string]any{"n": 1.5}}, Pending: []string{"bob"}}},
		{"markup to escape", agent.OutboxEntry{Seq: 2, Conversation: "<c&2>", Message: &forms.Message{Performative: "inform", Content: map[string]any{"html": "<b>&amp;</b>\u2028"}}}},
		{"no message", agent.OutboxEntry{Seq: 3}},
	}
	var j outboxJSON
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := json.Marshal(&tt.e)
			require.NoError(t, err)
			got, err := j.encode(&tt.e)
			require.NoError(t, err)
			assert.Equal(t, string(want), string(got))
		})
	}
}

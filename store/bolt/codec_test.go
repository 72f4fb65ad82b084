package bolt

import (
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
		e, err := appendEntry(nil, &b)
		require.NoError(f, err)
		f.Add(e)
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
			id, err := recordID(rec)
			assert.NoError(t, err)
			assert.Equal(t, sc.ID, id)
			again, err := decodeConversation(appendConversation(nil, &sc))
			assert.NoError(t, err)
			assert.Equal(t, sc, again, "a decoded record encodes to itself")
		}
		for _, o := range e.out {
			decodeOutbox(o.seq, o.json)
		}
	})
}

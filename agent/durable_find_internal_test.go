package agent

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/parleyhq/parley/forms"
)

func TestFindTellsTheOutboxEntryOfAMessageID(t *testing.T) {
	d := newDurable()
	sent := []*forms.Message{
		{Sender: "alice", ReplyWith: "r1"},
		{Sender: "al\x00ice", ReplyWith: "r2"},
		{Sender: "bob", ReplyWith: "r\x003"},
	}
	for i, m := range sent {
		d.byID[keyOf(m)] = uint64(i + 1)
	}
	tests := []struct {
		name string
		id   string
		seq  uint64
		ok   bool
	}{
		{name: "plain", id: MessageID(sent[0]), seq: 1, ok: true},
		{name: "separator in the sender", id: MessageID(sent[1]), seq: 2, ok: true},
		{name: "separator in the reply-with", id: MessageID(sent[2]), seq: 3, ok: true},
		{name: "unknown", id: MessageID(&forms.Message{Sender: "alice", ReplyWith: "r9"}), ok: false},
		{name: "no separator", id: "alice", ok: false},
		{name: "empty", id: "", ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, seq, ok := d.find(tt.id)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.seq, seq)
			if tt.ok {
				assert.Equal(t, tt.id, k.sender+"\x00"+k.replyWith)
			}
		})
	}
}

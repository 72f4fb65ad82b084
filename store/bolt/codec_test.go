package bolt

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/parleyhq/parley/agent"
)

// FuzzDecodeEntry feeds log entries, valid and broken, to the decoders:
// they return an error or records, and never panic or allocate by a
// corrupt length.
func FuzzDecodeEntry(f *testing.F) {
	f.Add(appendEntry(nil, []agent.StoredConversation{{ID: "c1", Handler: []byte(`{}`), Applied: []string{"x"}}}, []string{"c0"}))
	f.Add(appendEntry(nil, nil, nil))
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
	})
}

package bolt_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/store/bolt"
)

// BenchmarkCommit commits what a group commit of a busy agent holds: 128
// conversations changed (each with a 600-byte handler snapshot, about a
// FIPA Request's), 64 messages sent and 64 acknowledged, over 1,000 live
// conversations. It reports the cost per record.
func BenchmarkCommit(b *testing.B) {
	for _, tt := range []struct {
		name string
		opts []bolt.Option
	}{
		{"sync", nil},
		{"nosync", []bolt.Option{bolt.WithoutSync()}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			s, err := bolt.Open(filepath.Join(b.TempDir(), "a.db"), tt.opts...)
			require.NoError(b, err)
			defer s.Close()
			snap := []byte(`{"version":2,"pad":"` + strings.Repeat("x", 560) + `"}`)
			const live, changed, sent = 1000, 128, 64
			var seq uint64
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				var batch agent.Batch
				for k := range changed {
					id := fmt.Sprintf("alice-%026d", (i*changed+k)%live)
					batch.Put = append(batch.Put, agent.StoredConversation{ID: id, Policy: "fipa-request", Role: "Initiator",
						Fingerprint: "sha256:1a51306e7dcb3e133d1a0cb0304fcdd4d498c2cf83484360b78129d52dabce57", Handler: snap, Applied: []string{"bob\x00" + id + "/bob#1"}})
				}
				for range sent {
					seq++
					msg := &forms.Message{Performative: "request", Sender: "alice", Receivers: []string{"bob"}, ConversationID: "c", Protocol: "fipa-request", ReplyWith: fmt.Sprintf("c/alice#%d", seq), Content: map[string]any{"action": "x"}}
					batch.Send = append(batch.Send, agent.OutboxEntry{Seq: seq, Conversation: "c", Message: msg, Pending: []string{"bob"}})
					if seq > sent {
						batch.Acked = append(batch.Acked, seq-sent)
					}
				}
				if err := s.Commit(&batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(changed+2*sent)), "ns/record")
		})
	}
}

package engine_test

import (
	"testing"

	"github.com/parleyhq/parley/engine"
)

// snapshotCases are the handlers BenchmarkSnapshot and BenchmarkRestore
// snapshot: FIPA Request's participant with a commitment detached (what a
// durable manager checkpoints most), Contract Net's initiator at its join
// with three participants, and a two-buyer Buyer2 holding a message.
func snapshotCases(tb testing.TB) []struct {
	name string
	h    *engine.Handler
} {
	agreed := seq(start(), say("alice", "request", content{"action": "paint", "args": []any{"red", 2, true}}), say("bob", "agree", nil))
	atJoin := seq(start(), say("alice", "cfp", content{"task": "t"}), say("bob", "propose", content{"price": 1}),
		say("carol", "refuse", nil), say("dave", "propose", content{"price": 2.5}))
	request := newConv(tb, "fipa-request", cast("fipa-request"))
	agreed(request)
	cn := newConv(tb, "fipa-contract-net", cast("fipa-contract-net"))
	atJoin(cn)
	held := multipartyHandler(tb, "two-buyer", "Buyer2")
	var q engine.Queue
	if err := held.Process(&engine.MessageEvent{At: t0, Message: share(4)}, &q); err != nil {
		tb.Fatal(err)
	}
	return []struct {
		name string
		h    *engine.Handler
	}{
		{"request-participant", request.handlers["bob"]},
		{"contract-net-initiator", cn.handlers["alice"]},
		{"two-buyer-held", held},
	}
}

// BenchmarkSnapshot measures Snapshot of a handler mid-conversation, and
// reports the snapshot's length.
func BenchmarkSnapshot(b *testing.B) {
	for _, c := range snapshotCases(b) {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var n int
			for b.Loop() {
				data, err := c.h.Snapshot()
				if err != nil {
					b.Fatal(err)
				}
				n = len(data)
			}
			b.ReportMetric(float64(n), "bytes")
		})
	}
}

// BenchmarkAppendSnapshot measures AppendSnapshot into a buffer reused
// from one snapshot to the next, as a runtime that checkpoints often
// would.
func BenchmarkAppendSnapshot(b *testing.B) {
	for _, c := range snapshotCases(b) {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var buf []byte
			var err error
			for b.Loop() {
				if buf, err = c.h.AppendSnapshot(buf[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRestore measures Restore of the snapshots BenchmarkSnapshot
// takes.
func BenchmarkRestore(b *testing.B) {
	for _, c := range snapshotCases(b) {
		data, err := c.h.Snapshot()
		if err != nil {
			b.Fatal(err)
		}
		pr := c.h.Program()
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := pr.Restore(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

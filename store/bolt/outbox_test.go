package bolt

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/forms"
)

// nested is a value of content nested depth deep in objects and arrays
// by turns.
func nested(depth int) any {
	var v any = "leaf"
	for i := range depth {
		if i%2 == 0 {
			v = []any{v}
		} else {
			v = map[string]any{"k": v}
		}
	}
	return v
}

type point struct {
	X int `json:"x"`
	Y int `json:"-"`
}

// restoredAsJSON decodes e's JSON as formats up to 4 wrote it, with
// decodeOutbox.
func restoredAsJSON(t *testing.T, e *agent.OutboxEntry) (agent.OutboxEntry, bool) {
	t.Helper()
	j, err := json.Marshal(e)
	require.NoError(t, err)
	return decodeOutbox(e.Seq, j)
}

// TestAnOutboxRecordRestoresAsItsJSONDoes: whatever an entry holds, its
// record restores to what its JSON restores to (float64 numbers, the
// kinds of values json.Unmarshal makes, U+FFFD for bytes that are not
// UTF-8, nil and empty lists as they were), binary where it can be.
func TestAnOutboxRecordRestoresAsItsJSONDoes(t *testing.T) {
	zone := time.FixedZone("", 5*3600+1800)
	msg := func(content map[string]any) *forms.Message {
		return &forms.Message{Performative: "request", Sender: "alice", Receivers: []string{"bob"}, ConversationID: "c1", ReplyWith: "c1/alice#1", Content: content}
	}
	tests := []struct {
		name   string
		e      agent.OutboxEntry
		binary bool
	}{
		{"a request", agent.OutboxEntry{Seq: 7, Conversation: "c1", Message: msg(map[string]any{"action": "x"}), Pending: []string{"bob"}}, true},
		{"every envelope field", agent.OutboxEntry{Seq: 8, Conversation: "c1", Message: &forms.Message{
			Performative: "inform", Sender: "bob", Receivers: []string{"alice", "carol"}, ReplyTo: "dave", Language: "json", Encoding: "utf-8",
			Ontology: "o", Protocol: "fipa-request", ConversationID: "c1", ReplyWith: "c1/bob#2", InReplyTo: "c1/alice#1",
			ReplyBy: time.Date(2026, 5, 1, 9, 0, 0, 123456789, zone),
		}, Pending: []string{"alice", "carol"}}, true},
		{"reply-by in UTC", agent.OutboxEntry{Seq: 1, Message: &forms.Message{ReplyBy: time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)}}, true},
		{"reply-by local, with a monotonic reading", agent.OutboxEntry{Seq: 1, Message: &forms.Message{ReplyBy: time.Now()}}, true},
		{"nil and empty lists", agent.OutboxEntry{Seq: 2, Message: &forms.Message{Receivers: []string{}}}, true},
		{"nil and empty content", agent.OutboxEntry{Seq: 3, Message: msg(map[string]any{})}, true},
		{"numbers", agent.OutboxEntry{Seq: 4, Message: msg(map[string]any{
			"int": 3, "negative": int64(-1 << 62), "past 2^53": 1<<53 + 1, "max uint64": uint64(math.MaxUint64), "uint32": uint32(7), "int32": int32(-7), "uint": uint(9),
			"float": 1.5, "small": 5e-324, "large": math.MaxFloat64, "negative zero": math.Copysign(0, -1),
		})}, true},
		{"JSON's kinds of values, nested", agent.OutboxEntry{Seq: 5, Message: msg(map[string]any{
			"list": []any{1, "two", true, false, nil, []any{}, map[string]any{}, []any(nil), map[string]any(nil)},
			"map":  map[string]any{"a": map[string]any{"b": []any{2.5}}},
		})}, true},
		{"strings JSON escapes", agent.OutboxEntry{Seq: 6, Conversation: "<c&1>", Message: msg(map[string]any{"html": "<b>&amp;</b>\u2028\u2029", "control": "\x00\t\n\"\\", "emoji": "\U0001F600"})}, true},
		{"values of other types", agent.OutboxEntry{Seq: 9, Message: msg(map[string]any{
			"strings": []string{"a"}, "empty strings": []string{}, "nil strings": []string(nil), "ints": []int{1, 2}, "map": map[string]string{"k": "v"},
			"struct": point{X: 1, Y: 2}, "pointer": &point{X: 3}, "nil pointer": (*point)(nil), "time": time.Date(2026, 1, 2, 3, 4, 5, 6, zone),
			"number": json.Number("12.50"), "raw": json.RawMessage(`{"z":[1,2]}`), "bytes": []byte("hi"), "float32": float32(0.1), "int8": int8(-3),
		})}, true},
		{"a content string that is not UTF-8", agent.OutboxEntry{Seq: 10, Message: msg(map[string]any{"bad": "a\xffb\xc3", "good": "é"})}, true},
		{"a content key that is not UTF-8", agent.OutboxEntry{Seq: 11, Message: msg(map[string]any{"k\xfe": map[string]any{"x": 1}})}, true},
		{"deeper than a record nests", agent.OutboxEntry{Seq: 12, Message: msg(map[string]any{"deep": nested(3 * maxValueDepth)})}, true},
		{"an envelope string that is not UTF-8", agent.OutboxEntry{Seq: 13, Conversation: "c\xff", Message: msg(nil)}, false},
		{"a receiver that is not UTF-8", agent.OutboxEntry{Seq: 14, Message: &forms.Message{Receivers: []string{"b\x80"}}}, false},
		{"a pending receiver that is not UTF-8", agent.OutboxEntry{Seq: 15, Message: msg(nil), Pending: []string{"\xc0"}}, false},
		{"no message", agent.OutboxEntry{Seq: 16, Conversation: "c1"}, false},
	}
	var enc outboxEncoder
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, wantOK := restoredAsJSON(t, &tt.e)
			rec, err := enc.encode(&tt.e)
			require.NoError(t, err)
			assert.Equal(t, tt.binary, rec[0] == outboxBinary, "binary")
			got, ok := decodeOutbox(tt.e.Seq, rec)
			assert.Equal(t, wantOK, ok)
			assert.Equal(t, want, got)
			_, ok = decodeOutbox(tt.e.Seq+1, rec)
			assert.False(t, ok, "another entry's record")
		})
	}
}

// TestAnOutboxEntryJSONCannotWriteIsAnError: a value JSON cannot write
// (NaN, infinity, a channel, a cycle) fails the record as it failed the
// JSON, and a reply-by RFC 3339 cannot write goes to JSON, which fails.
func TestAnOutboxEntryJSONCannotWriteIsAnError(t *testing.T) {
	cycle := map[string]any{}
	cycle["self"] = cycle
	tests := []struct {
		name string
		msg  *forms.Message
	}{
		{"NaN", &forms.Message{Content: map[string]any{"n": math.NaN()}}},
		{"infinity, nested", &forms.Message{Content: map[string]any{"l": []any{math.Inf(-1)}}}},
		{"a channel", &forms.Message{Content: map[string]any{"c": make(chan int)}}},
		{"a cycle", &forms.Message{Content: cycle}},
		{"reply-by in year 10000", &forms.Message{ReplyBy: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}},
	}
	var enc outboxEncoder
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := agent.OutboxEntry{Seq: 1, Message: tt.msg}
			_, jsonErr := json.Marshal(&e)
			require.Error(t, jsonErr)
			_, err := enc.encode(&e)
			assert.Error(t, err)
		})
	}
}

// FuzzDecodeOutbox feeds outbox records, binary and JSON, valid and
// broken, to decodeOutbox: it never panics, and an entry it reads from a
// binary record encodes to a record that reads back the same, and
// restores from its JSON the same.
func FuzzDecodeOutbox(f *testing.F) {
	var enc outboxEncoder
	for _, e := range []agent.OutboxEntry{
		{Seq: 7, Conversation: "c1", Message: &forms.Message{Performative: "request", Sender: "alice", Receivers: []string{"bob"},
			Content: map[string]any{"n": 1, "l": []any{"x", nil, true, map[string]any{"m": []any{}}}, "s": []string{"t"}},
			ReplyBy: time.Date(2026, 5, 1, 9, 0, 0, 1, time.UTC)}, Pending: []string{"bob"}},
		{Seq: 1, Message: &forms.Message{}},
		{Seq: 2, Message: &forms.Message{Content: map[string]any{"deep": nested(maxValueDepth + 2)}}},
	} {
		rec, err := enc.encode(&e)
		require.NoError(f, err)
		f.Add(e.Seq, append([]byte(nil), rec...))
		j, err := json.Marshal(&e)
		require.NoError(f, err)
		f.Add(e.Seq, j)
	}
	f.Add(uint64(1), []byte{outboxBinary, 1, 0, 0, 0, 0, valObject, 0xff, 0xff, 0xff, 0x0f})
	f.Add(uint64(1), []byte{outboxBinary, 1, 0, 0, 0, 0, valArray, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add(uint64(1), append([]byte{outboxBinary, 1, 0, 0, 0, 0}, []byte(strings.Repeat(string(valArray)+"\x01", 1000))...))
	f.Fuzz(func(t *testing.T, seq uint64, rec []byte) {
		e, ok := decodeOutbox(seq, rec)
		if !ok || rec[0] != outboxBinary {
			return
		}
		again, err := enc.encode(&e)
		require.NoError(t, err)
		got, ok := decodeOutbox(seq, again)
		assert.True(t, ok)
		assert.Equal(t, e, got, "a decoded record encodes to itself")
		asJSON, ok := restoredAsJSON(t, &e)
		assert.True(t, ok)
		assert.Equal(t, e, asJSON, "and restores as its JSON does")
	})
}

// writeFormat4 writes a store of format 4 at path, as format 4 wrote it:
// the outbox entries of checkpointed (committed with a checkpoint) in
// the outbox table as JSON, and those of logged in the log file, JSON
// inside each entry; the files are left as a crash leaves them.
func writeFormat4(t *testing.T, path string, checkpointed, logged []*agent.Batch) {
	t.Helper()
	s, err := Open(path)
	require.NoError(t, err)
	s.out.format4 = true
	for _, b := range checkpointed {
		s.checkpoint = 1
		require.NoError(t, s.Commit(b))
	}
	s.checkpoint = defaultCheckpoint
	for _, b := range logged {
		require.NoError(t, s.Commit(b))
	}
	Crash(s)
	db, err := bbolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keyVersion, []byte("4"))
	}))
	require.NoError(t, db.Close())
}

// outboxRecords returns the outbox table's records, by key, and the
// file's format version.
func outboxRecords(t *testing.T, path string) (map[uint64][]byte, string) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	require.NoError(t, err)
	defer db.Close()
	recs := map[uint64][]byte{}
	var version string
	require.NoError(t, db.View(func(tx *bbolt.Tx) error {
		version = string(tx.Bucket(bucketMeta).Get(keyVersion))
		return tx.Bucket(bucketOutbox).ForEach(func(k, v []byte) error {
			recs[binary.BigEndian.Uint64(k)] = bytes.Clone(v)
			return nil
		})
	}))
	return recs, version
}

// TestAStoreOfFormat4ReadsItsJSONOutboxEntries opens a store that format
// 4 wrote, its outbox entries JSON in the outbox table and in the log
// file: Load gives each back as format 4 restored it (numbers float64),
// the next commits write binary records beside them, and the file is
// marked format 5 from then on.
func TestAStoreOfFormat4ReadsItsJSONOutboxEntries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	entry := func(seq uint64, pending ...string) agent.OutboxEntry {
		return agent.OutboxEntry{Seq: seq, Conversation: "c1", Pending: pending, Message: &forms.Message{
			Performative: "inform", Sender: "alice", Receivers: []string{"bob", "carol"}, ConversationID: "c1",
			ReplyWith: fmt.Sprint("c1/alice#", seq), Content: map[string]any{"n": int(seq), "list": []any{1, "x"}},
		}}
	}
	writeFormat4(t, path, []*agent.Batch{
		{Put: []agent.StoredConversation{{ID: "c1", Handler: []byte("h")}}, Send: []agent.OutboxEntry{entry(1, "bob", "carol"), entry(2, "bob")}},
		{Send: []agent.OutboxEntry{entry(3, "bob")}, Update: []agent.OutboxEntry{entry(1, "carol")}},
	}, []*agent.Batch{
		{Send: []agent.OutboxEntry{entry(4, "carol")}, Acked: []uint64{2}},
	})
	recs, version := outboxRecords(t, path)
	require.Equal(t, "4", version)
	require.Len(t, recs, 3)
	for seq, rec := range recs {
		require.Equal(t, byte('{'), rec[0], "entry %d is JSON", seq)
	}
	restored := func(es ...agent.OutboxEntry) []agent.OutboxEntry {
		var out []agent.OutboxEntry
		for i := range es {
			e, ok := restoredAsJSON(t, &es[i])
			require.True(t, ok)
			out = append(out, e)
		}
		return out
	}

	s, err := Open(path)
	require.NoError(t, err)
	st, err := s.Load()
	require.NoError(t, err)
	assert.Equal(t, restored(entry(1, "carol"), entry(3, "bob"), entry(4, "carol")), st.Outbox)
	assert.Equal(t, 1.0, st.Outbox[0].Message.Content["n"], "numbers are float64, as JSON restored them")
	require.NoError(t, s.Commit(&agent.Batch{Send: []agent.OutboxEntry{entry(5, "bob")}, Acked: []uint64{3}}))
	st, err = s.Load()
	require.NoError(t, err)
	want := restored(entry(1, "carol"), entry(4, "carol"), entry(5, "bob"))
	assert.Equal(t, want, st.Outbox)
	require.NoError(t, s.Close())

	recs, version = outboxRecords(t, path)
	assert.Equal(t, formatVersion, version)
	assert.Equal(t, byte('{'), recs[1][0], "entry 1 stays as format 4 wrote it")
	assert.Equal(t, byte('{'), recs[4][0], "entry 4 is folded as the log file held it")
	assert.Equal(t, outboxBinary, recs[5][0], "entry 5 is binary")
	s, err = Open(path)
	require.NoError(t, err)
	defer s.Close()
	st, err = s.Load()
	require.NoError(t, err)
	assert.Equal(t, want, st.Outbox)
}

// TestACheckpointDeletesOnlyTheOutboxEntriesItsTableHolds: an entry a
// checkpoint folded into the outbox table is deleted from it by the
// checkpoint after its acknowledgement, before and after a restart; an
// entry sent and acknowledged between two checkpoints never reaches
// it.
func TestACheckpointDeletesOnlyTheOutboxEntriesItsTableHolds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	send := func(seq uint64) agent.OutboxEntry {
		return agent.OutboxEntry{Seq: seq, Conversation: "c1", Message: &forms.Message{Performative: "inform", ReplyWith: fmt.Sprint("c1/alice#", seq)}, Pending: []string{"bob"}}
	}
	tests := []struct {
		name    string
		reopen  bool
		commits []*agent.Batch
		want    []uint64
	}{
		{"sent", false, []*agent.Batch{{Send: []agent.OutboxEntry{send(1), send(2)}}}, []uint64{1, 2}},
		{"acknowledged, and sent and acknowledged", false, []*agent.Batch{{Acked: []uint64{1}}, {Send: []agent.OutboxEntry{send(3)}}, {Acked: []uint64{3}}}, []uint64{2}},
		{"acknowledged after a restart", true, []*agent.Batch{{Send: []agent.OutboxEntry{send(4)}}, {Acked: []uint64{2}}}, []uint64{4}},
	}
	s, err := Open(path)
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.reopen {
				require.NoError(t, s.Close())
				s, err = Open(path)
				require.NoError(t, err)
			}
			for i, b := range tt.commits {
				if i == len(tt.commits)-1 {
					s.checkpoint = 1
				}
				require.NoError(t, s.Commit(b))
				s.checkpoint = defaultCheckpoint
			}
			require.Zero(t, s.wal.off, "checkpointed")
			var tabled []uint64
			for seq := range s.tabled {
				tabled = append(tabled, seq)
			}
			assert.ElementsMatch(t, tt.want, tabled)
			require.NoError(t, s.db.View(func(tx *bbolt.Tx) error {
				var keys []uint64
				err := tx.Bucket(bucketOutbox).ForEach(func(k, _ []byte) error {
					keys = append(keys, binary.BigEndian.Uint64(k))
					return nil
				})
				assert.Equal(t, tt.want, keys, "the outbox table")
				return err
			}))
		})
	}
	require.NoError(t, s.Close())
}

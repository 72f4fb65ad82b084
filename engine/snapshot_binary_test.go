package engine_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/policies"
)

var update = flag.Bool("update", false, "rewrite the binary golden snapshots in testdata/snapshot")

// goldenProgram is the program a golden snapshot was taken with, by its
// policy and role.
func goldenProgram(tb testing.TB, data []byte) *engine.Program {
	tb.Helper()
	var sn struct{ Policy, Role string }
	require.NoError(tb, json.Unmarshal(data, &sn))
	if sn.Policy == "two-buyer" {
		return multipartyProgram(tb, sn.Policy, sn.Role)
	}
	return program(tb, sn.Policy, sn.Role)
}

// TestSnapshotGoldens reads the JSON snapshots (format version 2) in
// testdata/snapshot/*.v2.json, which the release before the binary
// format wrote (the policies' roles mid-conversation, one done by an
// abort, one not started, one with content of every kind, one holding
// a message). Each still restores, into a handler whose binary snapshot
// holds what the JSON did and is the bytes pinned in the .v3.bin beside
// it (rewritten with -update): a change to those bytes is a new format
// version, or stores written before it would not open.
func TestSnapshotGoldens(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "snapshot", "*.v2.json"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".v2.json")
		t.Run(name, func(t *testing.T) {
			old, err := os.ReadFile(path)
			require.NoError(t, err)
			pr := goldenProgram(t, old)
			h, err := pr.Restore(old)
			require.NoError(t, err)
			data, err := h.Snapshot()
			require.NoError(t, err)
			converted, err := engine.SnapshotJSON(data)
			require.NoError(t, err)
			assert.JSONEq(t, string(old), string(converted), "the binary snapshot holds what the JSON one did")

			golden := filepath.Join("testdata", "snapshot", name+".v3.bin")
			if *update {
				require.NoError(t, os.WriteFile(golden, data, 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err)
			assert.Equal(t, want, data, "the binary format changed")
			back, err := pr.Restore(want)
			require.NoError(t, err)
			again, err := back.Snapshot()
			require.NoError(t, err)
			assert.Equal(t, want, again)
		})
	}
}

// TestSnapshotContentValues checks what a snapshot gives back for each
// kind of value content may hold: what the JSON format gave back (numbers
// as float64, times as RFC 3339 strings), but strings byte for byte.
func TestSnapshotContentValues(t *testing.T) {
	pr := program(t, "fipa-request", "Initiator")
	plus2 := time.FixedZone("", 2*3600)
	tests := []struct {
		name  string
		value any
		want  any
		// fromJSON is what the JSON format gave back, when not want.
		fromJSON any
	}{
		{name: "an int", value: 7, want: 7.0},
		{name: "a negative int8", value: int8(-5), want: -5.0},
		{name: "the largest int64", value: int64(math.MaxInt64), want: float64(math.MaxInt64)},
		{name: "an int64 a float64 rounds", value: int64(1)<<53 + 1, want: float64(1 << 53)},
		{name: "the largest uint64", value: uint64(math.MaxUint64), want: float64(math.MaxUint64)},
		{name: "a uint8", value: uint8(200), want: 200.0},
		{name: "a float64", value: 2.5, want: 2.5},
		{name: "a large float64", value: 1e300, want: 1e300},
		{name: "the smallest float64", value: 5e-324, want: 5e-324},
		{name: "negative zero", value: math.Copysign(0, -1), want: math.Copysign(0, -1)},
		{name: "an integer beyond 2^53", value: 1 << 60, want: float64(1 << 60)},
		{name: "a float32 as JSON writes it", value: float32(0.1), want: 0.1},
		{name: "a json.Number", value: json.Number("12.50"), want: 12.5},
		{name: "a duration in nanoseconds", value: 1500 * time.Millisecond, want: 1.5e9},
		{name: "a time in UTC", value: time.Date(2026, 3, 1, 9, 0, 0, 5, time.UTC), want: "2026-03-01T09:00:00.000000005Z"},
		{name: "a time with an offset", value: time.Date(2026, 3, 1, 9, 0, 0, 0, plus2), want: "2026-03-01T09:00:00+02:00"},
		{name: "a string", value: "café", want: "café"},
		{name: "an empty string", value: "", want: ""},
		{name: "a string that is not UTF-8", value: "a\xffb", want: "a\xffb", fromJSON: "a\ufffdb"},
		{name: "nil", value: nil, want: nil},
		{name: "true", value: true, want: true},
		{name: "false", value: false, want: false},
		{name: "an empty list", value: []any{}, want: []any{}},
		{name: "an empty map", value: map[string]any{}, want: map[string]any{}},
		{name: "a nil map", value: map[string]any(nil), want: nil},
		{name: "a nil list", value: []any(nil), want: nil},
		{name: "nested lists and maps", value: []any{1, []any{"a", map[string]any{"k": true, "j": nil}}, map[string]any{"z": []any{}}},
			want: []any{1.0, []any{"a", map[string]any{"k": true, "j": nil}}, map[string]any{"z": []any{}}}},
		{name: "a slice of another type", value: []string{"a", "b"}, want: []any{"a", "b"}},
		{name: "a struct", value: struct {
			A int `json:"a"`
		}{1}, want: map[string]any{"a": 1.0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := pr.NewHandler(convID, "alice", engine.WithPeers("Participant", "bob"), engine.WithContent(map[string]any{"v": tt.value}))
			require.NoError(t, err)
			var q engine.Queue
			require.NoError(t, h.Start(t0, &q))
			data, err := h.Snapshot()
			require.NoError(t, err)
			restored, err := pr.Restore(data)
			require.NoError(t, err)
			got := engine.SessionContent(restored, 0)["v"]
			assert.Equal(t, tt.want, got)
			if f, ok := tt.want.(float64); ok {
				assert.Equal(t, math.Signbit(f), math.Signbit(got.(float64)), "the sign of zero")
			}
			again, err := restored.Snapshot()
			require.NoError(t, err)
			assert.Equal(t, data, again)

			old, err := engine.JSONSnapshot(h)
			require.NoError(t, err)
			fromJSON, err := pr.Restore(old)
			require.NoError(t, err)
			want := tt.want
			if tt.fromJSON != nil {
				want = tt.fromJSON
			}
			assert.Equal(t, want, engine.SessionContent(fromJSON, 0)["v"], "the JSON format")
		})
	}
}

// TestSnapshotRefusesWhatJSONCannotCarry checks that Snapshot and
// AppendSnapshot refuse, as the JSON format did, a value no snapshot can
// give back, and that AppendSnapshot then returns its buffer unchanged.
func TestSnapshotRefusesWhatJSONCannotCarry(t *testing.T) {
	pr := program(t, "fipa-request", "Initiator")
	deep := any("x")
	for range 33 {
		deep = []any{deep}
	}
	tests := []struct {
		name  string
		value any
		want  string
	}{
		{name: "NaN", value: math.NaN(), want: `engine: snapshot: session 0: content: field "v": a number that is not finite (NaN or an infinity), which JSON cannot carry`},
		{name: "an infinity in a list", value: []any{1, math.Inf(-1)}, want: `engine: snapshot: session 0: content: field "v": item 1: a number that is not finite (NaN or an infinity), which JSON cannot carry`},
		{name: "a json.Number that is not a number", value: json.Number("many"), want: `engine: snapshot: session 0: content: field "v": json.Number "many" is not a number JSON can carry`},
		{name: "a time after 9999", value: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), want: `engine: snapshot: session 0: content: field "v": a time in the year 10000, outside the years 0 to 9999`},
		{name: "lists nested too deep", value: deep, want: `engine: snapshot: session 0: content: field "v": ` + strings.Repeat("item 0: ", 32) + "maps and lists nested more than 33 deep"},
		{name: "a channel", value: make(chan int), want: `engine: snapshot: session 0: content: field "v": json: unsupported type: chan int`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := pr.NewHandler(convID, "alice", engine.WithPeers("Participant", "bob"), engine.WithContent(map[string]any{"v": tt.value}))
			require.NoError(t, err)
			data, err := h.Snapshot()
			assert.Nil(t, data)
			assert.EqualError(t, err, tt.want)
			buf := []byte("kept")
			out, err := h.AppendSnapshot(buf)
			assert.Error(t, err)
			assert.Equal(t, []byte("kept"), out)
		})
	}
}

// TestAppendSnapshot checks that AppendSnapshot appends the bytes
// Snapshot returns, keeping what the buffer held, and that a buffer can
// be reused.
func TestAppendSnapshot(t *testing.T) {
	for _, c := range snapshotCases(t) {
		t.Run(c.name, func(t *testing.T) {
			want, err := c.h.Snapshot()
			require.NoError(t, err)
			out, err := c.h.AppendSnapshot([]byte("prefix"))
			require.NoError(t, err)
			assert.Equal(t, append([]byte("prefix"), want...), out)
			reused, err := c.h.AppendSnapshot(out[:0])
			require.NoError(t, err)
			assert.Equal(t, want, reused)
		})
	}
}

// TestSnapshotIsDeterministic checks that a handler's snapshot is the
// same bytes every time, and for another handler of the same state,
// though Go iterates maps in random order.
func TestSnapshotIsDeterministic(t *testing.T) {
	pr := program(t, "fipa-request", "Initiator")
	fields := func() map[string]any {
		m := map[string]any{}
		for k := range 40 {
			m[fmt.Sprintf("f%02d", k)] = map[string]any{"a": k, "b": []any{k, "x"}, "c": map[string]any{"d": nil, "e": true}}
		}
		return m
	}
	var first []byte
	for range 10 {
		h, err := pr.NewHandler(convID, "alice", engine.WithPeers("Participant", "bob"), engine.WithContent(fields()))
		require.NoError(t, err)
		var q engine.Queue
		require.NoError(t, h.Start(t0, &q))
		for range 5 {
			data, err := h.Snapshot()
			require.NoError(t, err)
			if first == nil {
				first = data
			}
			require.Equal(t, first, data)
		}
	}
}

// TestSnapshotKeepsBudgetCounts checks the run budget's counts through
// the binary format.
func TestSnapshotKeepsBudgetCounts(t *testing.T) {
	h, _ := startPingPong(t, "budget: {messages: 5, visits: 3}", "A")
	data, err := h.Snapshot()
	require.NoError(t, err)
	asJSON, err := engine.SnapshotJSON(data)
	require.NoError(t, err)
	assert.Contains(t, string(asJSON), `"visits":[1,0,0]`)
	checkFormats(t, h.Program(), h, data)
}

// binaryWith returns the binary snapshot of base (of either format) with
// session 0's content replaced by {"x": raw}, raw being the bytes of one
// encoded value.
func binaryWith(t *testing.T, base []byte, raw []byte) []byte {
	t.Helper()
	const mark = "MARK-THE-VALUE"
	data, err := engine.BinarySnapshot(edited(t, base, func(m map[string]any) { sessionOf(m, 0)["content"] = map[string]any{"x": mark} }))
	require.NoError(t, err)
	encoded := append([]byte{5, byte(len(mark))}, mark...)
	require.Equal(t, 1, bytes.Count(data, encoded))
	return bytes.Replace(data, encoded, raw, 1)
}

// TestRestoreRefusesCorruptBinary checks Restore's errors for binary
// snapshots that no Snapshot wrote.
func TestRestoreRefusesCorruptBinary(t *testing.T) {
	request := program(t, "fipa-request", "Initiator")
	h, err := request.NewHandler(convID, "alice", engine.WithPeers("Participant", "bob"))
	require.NoError(t, err)
	var q engine.Queue
	require.NoError(t, h.Start(t0, &q))
	base, err := h.Snapshot()
	require.NoError(t, err)
	// The mode and flags follow the version, the fingerprint and four
	// strings.
	modeAt := 1 + 33
	for _, s := range []string{"fipa-request", "Initiator", convID, "alice"} {
		modeAt += 1 + len(s)
	}
	set := func(at int, c byte) []byte {
		out := slices.Clone(base)
		out[at] = c
		return out
	}
	nested := func(lists int) []byte {
		return append(bytes.Repeat([]byte{6, 1}, lists), 0)
	}
	nan := binary.LittleEndian.AppendUint64([]byte{4}, math.Float64bits(math.NaN()))
	inf := binary.LittleEndian.AppendUint64([]byte{4}, math.Float64bits(math.Inf(1)))
	tests := []struct {
		name string
		data []byte
		want string // the error, after "engine: restore: "
	}{
		{name: "version 0", data: set(0, 0), want: "snapshot format version 0, want 3"},
		{name: "a fingerprint kind", data: set(1, 7), want: "binary snapshot: fingerprint kind 7"},
		{name: "another fingerprint", data: set(2, base[2]^1),
			want: fmt.Sprintf(`the snapshot is of policy "fipa-request" with fingerprint sha256:%02x%s, but this program runs "fipa-request" with fingerprint %s`, base[2]^1, strings.TrimPrefix(request.Fingerprint(), "sha256:")[2:], request.Fingerprint())},
		{name: "a mode", data: set(modeAt, 7), want: "mode 7 is neither enforce (0) nor observe (1)"},
		{name: "a flag", data: set(modeAt+1, 8), want: "binary snapshot: flags 0x8"},
		{name: "a byte after the end", data: append(slices.Clone(base), 0), want: "data after the snapshot"},
		{name: "a value tag", data: binaryWith(t, base, []byte{9}), want: "binary snapshot: value tag 9 at byte "},
		{name: "NaN", data: binaryWith(t, base, nan), want: "a number that is not finite (NaN or an infinity), which JSON cannot carry"},
		{name: "an infinity", data: binaryWith(t, base, inf), want: "a number that is not finite (NaN or an infinity), which JSON cannot carry"},
		{name: "keys out of order", data: binaryWith(t, base, []byte{7, 2, 1, 'b', 0, 1, 'a', 0}), want: "is not after the one before it"},
		{name: "a repeated key", data: binaryWith(t, base, []byte{7, 2, 1, 'a', 0, 1, 'a', 0}), want: "is not after the one before it"},
		{name: "a list longer than the data", data: binaryWith(t, base, []byte{6, 0xff, 0xff, 0xff, 0xff, 0x0f}), want: "binary snapshot: a count of 4294967295 at byte "},
		{name: "a map longer than the data", data: binaryWith(t, base, []byte{7, 0xff, 0x7f}), want: "binary snapshot: a count of 16383 at byte "},
		{name: "a string longer than the data", data: binaryWith(t, base, []byte{5, 0xff, 0x01}), want: "binary snapshot: a count of 255 at byte "},
		{name: "a number of more than 64 bits", data: binaryWith(t, base, append(append([]byte{3}, bytes.Repeat([]byte{0xff}, 10)...), 1)), want: "overflows 64 bits"},
		{name: "lists nested one too deep for content", data: binaryWith(t, base, nested(32)), want: "session 0: content nests maps and lists more than 32 deep"},
		{name: "lists nested deeper", data: binaryWith(t, base, nested(33)), want: "maps and lists nested more than 33 deep"},
		{name: "a truncated float", data: binaryWith(t, base, []byte{4, 1, 2}), want: "binary snapshot: truncated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			restored, err := request.Restore(tt.data)
			assert.Nil(t, restored)
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), "engine: restore: "), err.Error())
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	t.Run("lists nested as deep as content may", func(t *testing.T) {
		restored, err := request.Restore(binaryWith(t, base, nested(31)))
		require.NoError(t, err)
		fields := fmt.Sprint(engine.SessionContent(restored, 0))
		assert.Equal(t, strings.Repeat("[", 31)+"<nil>"+strings.Repeat("]", 31), strings.TrimSuffix(strings.TrimPrefix(fields, "map[x:"), "]"))
	})
}

// TestRestoreRefusesTruncatedBinary cuts real snapshots short at every
// byte: Restore refuses each cut without panicking, and SnapshotJSON too.
func TestRestoreRefusesTruncatedBinary(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "snapshot", "*.v3.bin"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			old, err := os.ReadFile(strings.TrimSuffix(path, ".v3.bin") + ".v2.json")
			require.NoError(t, err)
			pr := goldenProgram(t, old)
			for n := range len(data) {
				h, err := pr.Restore(data[:n])
				require.Error(t, err, "cut at %d of %d bytes", n, len(data))
				assert.Nil(t, h)
				if n > 0 {
					_, err = engine.SnapshotJSON(data[:n])
					require.Error(t, err, "cut at %d of %d bytes", n, len(data))
				}
			}
		})
	}
}

// ExampleSnapshotJSON snapshots a handler, restores it, and reads the
// snapshot's fields as JSON.
func ExampleSnapshotJSON() {
	p, err := policies.Load("fipa-request")
	if err != nil {
		panic(err)
	}
	pr, diags := engine.Compile(p, "Initiator")
	if pr == nil {
		panic(fmt.Sprint(diags))
	}
	h, err := pr.NewHandler("c1", "alice", engine.WithPeers("Participant", "bob"))
	if err != nil {
		panic(err)
	}
	var q engine.Queue
	if err := h.Start(time.Unix(0, 0), &q); err != nil {
		panic(err)
	}
	data, err := h.Snapshot()
	if err != nil {
		panic(err)
	}
	restored, err := pr.Restore(data)
	if err != nil {
		panic(err)
	}
	fmt.Println("format version", data[0], "restored in state", restored.State(""))
	asJSON, err := engine.SnapshotJSON(data)
	if err != nil {
		panic(err)
	}
	var sn struct {
		Version  int
		Self     string
		Sessions []struct{ State string }
	}
	if err := json.Unmarshal(asJSON, &sn); err != nil {
		panic(err)
	}
	fmt.Println("as JSON: version", sn.Version, "of", sn.Self, "in state", sn.Sessions[0].State)
	// Output:
	// format version 3 restored in state start
	// as JSON: version 2 of alice in state start
}

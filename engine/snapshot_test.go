package engine_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/forms"
)

// normalize renders an output event through JSON, as a snapshot keeps
// content: numbers come back as float64 but render the same.
func normalize(tb testing.TB, ev engine.Event) string {
	data, err := json.Marshal(ev)
	require.NoError(tb, err)
	return fmt.Sprintf("%T %s", ev, data)
}

// outputs feeds inputs to h and returns its normalized outputs, one
// string per input.
func outputs(tb testing.TB, h *engine.Handler, inputs []engine.Event) []string {
	var q engine.Queue
	out := make([]string, len(inputs))
	for i, in := range inputs {
		q.Reset()
		require.NoError(tb, h.Process(in, &q))
		var lines []string
		for _, ev := range q.Events() {
			lines = append(lines, normalize(tb, ev))
		}
		out[i] = strings.Join(lines, "\n")
	}
	return out
}

// checkSnapshots replays inputs into a fresh handler of agent a and, at
// every step, snapshots it, restores the snapshot into a new handler and
// requires both to give the same outputs for the rest of the inputs.
func checkSnapshots(t *testing.T, pr *engine.Program, a agent, mode engine.Mode, inputs []engine.Event) {
	t.Helper()
	opts := append(a.opts, engine.WithMode(mode))
	for k := 0; k <= len(inputs); k++ {
		h, err := pr.NewHandler(convID, a.name, opts...)
		require.NoError(t, err)
		var q engine.Queue
		require.NoError(t, h.Start(t0, &q))
		outputs(t, h, inputs[:k])
		data, err := h.Snapshot()
		require.NoError(t, err)
		restored, err := pr.Restore(data)
		require.NoError(t, err, "restore after %d inputs", k)
		again, err := restored.Snapshot()
		require.NoError(t, err)
		require.JSONEq(t, string(data), string(again), "a restored handler snapshots the same, after %d inputs", k)
		assert.Equal(t, h.Done(), restored.Done())
		assert.Equal(t, h.Sessions(), restored.Sessions())
		want, got := outputs(t, h, inputs[k:]), outputs(t, restored, inputs[k:])
		for i := range want {
			if !assert.Equal(t, want[i], got[i], "%s: snapshot after %d inputs, then input %d: %s", a.name, k, k+i, describeInput(inputs[k+i])) {
				return
			}
		}
	}
}

func describeInput(ev engine.Event) string {
	data, _ := json.Marshal(ev)
	return fmt.Sprintf("%T %s", ev, data)
}

// TestSnapshotRestoreProperty drives many random conversations of every
// fuzz policy (the shipped ones and a child-policy one), with the fuzz
// target's operations drawn from a seeded generator, and checks the
// snapshot property for every agent, so every role, at every step.
func TestSnapshotRestoreProperty(t *testing.T) {
	conversations, ops := 12, 48
	if testing.Short() {
		conversations, ops = 3, 24
	}
	for pi, name := range fuzzPolicies {
		for n := range conversations {
			rng := rand.New(rand.NewPCG(uint64(pi), uint64(n)))
			data := []byte{byte(pi), byte(n % 2)}
			for range ops * 8 {
				data = append(data, byte(rng.IntN(256)))
			}
			// Every other conversation starts with a seed's conforming
			// path, so that the random part starts deep.
			if n%2 == 1 {
				seeds := fuzzSeeds()
				s := seeds[rng.IntN(len(seeds))]
				if s.data[0] == byte(pi) {
					data = append(slices.Clone(s.data), data[2:]...)
				}
			}
			t.Run(fmt.Sprintf("%s/%d", name, n), func(t *testing.T) {
				r := runFuzz(t, data)
				mode := engine.Mode(data[1] % 2)
				for _, a := range r.agents {
					checkSnapshots(t, fuzzProgram(t, name, a.role), a, mode, r.inputs[a.name])
				}
			})
		}
	}
}

// TestSnapshotRestoreConversations checks the snapshot property along
// the conforming conversations of the fuzz seeds.
func TestSnapshotRestoreConversations(t *testing.T) {
	for _, seed := range fuzzSeeds() {
		t.Run(seed.name, func(t *testing.T) {
			r := runFuzz(t, seed.data)
			name := fuzzPolicies[seed.data[0]]
			for _, a := range r.agents {
				checkSnapshots(t, fuzzProgram(t, name, a.role), a, engine.Mode(seed.data[1]), r.inputs[a.name])
			}
		})
	}
}

func TestRestoreErrors(t *testing.T) {
	request := program(t, "fipa-request", "Initiator")
	query := program(t, "fipa-query", "Initiator")
	participant := program(t, "fipa-request", "Participant")
	h, err := request.NewHandler(convID, "alice", engine.WithPeers("Participant", "bob"))
	require.NoError(t, err)
	var q engine.Queue
	require.NoError(t, h.Start(t0, &q))
	data, err := h.Snapshot()
	require.NoError(t, err)
	edit := func(fn func(m map[string]any)) []byte {
		var m map[string]any
		require.NoError(t, json.Unmarshal(data, &m))
		fn(m)
		out, err := json.Marshal(m)
		require.NoError(t, err)
		return out
	}
	tests := []struct {
		name string
		prog *engine.Program
		data []byte
		want string
	}{
		{name: "another policy", prog: query, data: data,
			want: fmt.Sprintf(`engine: restore: the snapshot is of policy "fipa-request" with fingerprint %s, but this program runs "fipa-query" with fingerprint %s`, request.Fingerprint(), query.Fingerprint())},
		{name: "another role", prog: participant, data: data,
			want: `engine: restore: the snapshot plays role "Initiator", this program "Participant"`},
		{name: "not JSON", prog: request, data: []byte("{"),
			want: "engine: restore: unexpected end of JSON input"},
		{name: "a later format version", prog: request, data: edit(func(m map[string]any) { m["version"] = 3 }),
			want: "engine: restore: snapshot format version 3, want 2"},
		{name: "format version 1, with commitment timers by name", prog: request, data: edit(func(m map[string]any) { m["version"] = 1 }),
			want: `engine: restore: snapshot format version 1, want 2: version 1 named commitment timers "commitment:<name>", and the timers kept for it would not reach the restored handler`},
		{name: "a state the program does not have", prog: request, data: edit(func(m map[string]any) {
			m["sessions"].([]any)[0].(map[string]any)["state"] = "limbo"
		}), want: `engine: restore: the program has no state "limbo"`},
		{name: "timers that do not fit the state", prog: request, data: edit(func(m map[string]any) {
			m["sessions"].([]any)[0].(map[string]any)["state"] = "requested"
		}), want: `engine: restore: state "requested" arms 1 timers, the snapshot has 0`},
		{name: "roles that do not fit", prog: request, data: edit(func(m map[string]any) { m["peers"] = []any{"alice"} }),
			want: "engine: restore: the snapshot binds 1 roles, the policy has 2"},
		{name: "sessions that do not fit", prog: request, data: edit(func(m map[string]any) { m["sessions"] = []any{} }),
			want: "engine: restore: 0 sessions for a role with one peer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.prog.Restore(tt.data)
			assert.EqualError(t, err, tt.want)
		})
	}

	t.Run("the same policy from XML has the same fingerprint", func(t *testing.T) {
		assert.NotEqual(t, request.Fingerprint(), query.Fingerprint())
		assert.Equal(t, request.Fingerprint(), participant.Fingerprint())
		_, err := participant.Restore(data)
		assert.Error(t, err)
	})
}

// A restored handler holds the last content it received as JSON (numbers
// as float64); it must still recognise a repeat of that message that has
// no reply-with, whose numbers are ints.
func TestSnapshotKeepsDuplicateDetection(t *testing.T) {
	pr := program(t, "fipa-request", "Initiator")
	h, err := pr.NewHandler(convID, "alice", engine.WithPeers("Participant", "bob"))
	require.NoError(t, err)
	var q engine.Queue
	require.NoError(t, h.Start(t0, &q))
	ticket := q.Events()[0].(*engine.DecisionEvent).Ticket
	refuse := &forms.Message{Performative: "refuse", Sender: "bob", Receivers: []string{"alice"}, ConversationID: convID,
		Content: map[string]any{"reason": "busy", "retry_in": 10}}
	outputs(t, h, []engine.Event{
		&engine.DecisionEvent{At: t0, Ticket: ticket, Answer: decisionChoice("request")},
		&engine.MessageEvent{At: t0, Message: refuse},
	})
	data, err := h.Snapshot()
	require.NoError(t, err)
	restored, err := pr.Restore(data)
	require.NoError(t, err)
	again := []engine.Event{&engine.MessageEvent{At: t0, Message: refuse}}
	want := outputs(t, h, again)
	assert.Contains(t, want[0], `"Code":"PE006"`)
	assert.Equal(t, want, outputs(t, restored, again))
}

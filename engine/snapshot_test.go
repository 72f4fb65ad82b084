package engine_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/decision"
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
		checkFormats(t, pr, h, data)
		restored, err := pr.Restore(data)
		require.NoError(t, err, "restore after %d inputs", k)
		again, err := restored.Snapshot()
		require.NoError(t, err)
		require.Equal(t, data, again, "a restored handler snapshots the same bytes, after %d inputs", k)
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

// checkFormats checks binary snapshot data of h against the JSON format
// earlier releases wrote: it holds the same fields with the same values,
// and h's JSON snapshot restores into a handler whose binary snapshot is
// data.
func checkFormats(t *testing.T, pr *engine.Program, h *engine.Handler, data []byte) {
	t.Helper()
	old, err := engine.JSONSnapshot(h)
	require.NoError(t, err)
	converted, err := engine.SnapshotJSON(data)
	require.NoError(t, err)
	require.JSONEq(t, string(old), string(converted), "the binary snapshot holds what the JSON one did")
	fromJSON, err := pr.Restore(old)
	require.NoError(t, err, "the JSON snapshot restores")
	again, err := fromJSON.Snapshot()
	require.NoError(t, err)
	require.Equal(t, data, again, "the handler restored from JSON snapshots the same bytes")
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
	edit := func(fn func(m map[string]any)) []byte { return edited(t, data, fn) }
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
			want: "engine: restore: unexpected EOF"},
		{name: "nothing", prog: request, data: nil,
			want: "engine: restore: EOF"},
		{name: "a later JSON format version", prog: request, data: edit(func(m map[string]any) { m["version"] = 3 }),
			want: "engine: restore: JSON snapshot format version 3, want 2"},
		{name: "a later binary format version", prog: request, data: append([]byte{4}, data[1:]...),
			want: "engine: restore: snapshot format version 4, want 3"},
		{name: "format version 1, with commitment timers by name", prog: request, data: edit(func(m map[string]any) { m["version"] = 1 }),
			want: `engine: restore: snapshot format version 1, want 2: version 1 named commitment timers "commitment:<name>", and the timers kept for it would not reach the restored handler`},
		{name: "a state the program does not have", prog: request, data: edit(func(m map[string]any) {
			m["sessions"].([]any)[0].(map[string]any)["state"] = "limbo"
		}), want: `engine: restore: session 0: the program has no state "limbo"`},
		{name: "timers that do not fit the state", prog: request, data: edit(func(m map[string]any) {
			m["sessions"].([]any)[0].(map[string]any)["state"] = "requested"
		}), want: `engine: restore: session 0: state "requested" arms 1 timers, the snapshot has 0`},
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

// snapshotAt snapshots agent name's handler after running steps (without
// checking their output) in a conversation of policyName.
func snapshotAt(t *testing.T, policyName, name string, do action) (*engine.Program, []byte) {
	t.Helper()
	c := newConv(t, policyName, cast(policyName))
	do(c)
	h := c.handlers[name]
	data, err := h.Snapshot()
	require.NoError(t, err)
	return h.Program(), data
}

// edited returns snapshot data, of either format, changed by fn, as
// JSON.
func edited(t *testing.T, data []byte, fn func(m map[string]any)) []byte {
	t.Helper()
	data, err := engine.SnapshotJSON(data)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	fn(m)
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return out
}

// sessionOf returns session i of a snapshot decoded as JSON.
func sessionOf(m map[string]any, i int) map[string]any {
	return m["sessions"].([]any)[i].(map[string]any)
}

// Restore checks every field it reads against the program and the rest
// of the snapshot, in either format. A snapshot whose session had lost
// its state once restored and then panicked on the next event.
func TestRestoreChecksEveryField(t *testing.T) {
	agreed := func(c *conv) {
		for _, s := range requestAgreed() {
			c.now = t0.Add(s.at)
			s.do(c)
		}
	}
	atJoin := seq(start(), say("alice", "cfp", content{"task": "t"}), say("bob", "propose", content{"price": 1}), say("carol", "refuse", nil), say("dave", "propose", content{"price": 2}))
	request, alice := snapshotAt(t, "fipa-request", "alice", agreed)
	participant, bob := snapshotAt(t, "fipa-request", "bob", agreed)
	cn, buyer := snapshotAt(t, "fipa-contract-net", "alice", atJoin)
	unstarted, err := request.NewHandler(convID, "alice")
	require.NoError(t, err)
	fresh, err := unstarted.Snapshot()
	require.NoError(t, err)
	deep := any("x")
	for range 40 {
		deep = []any{deep}
	}
	tests := []struct {
		name string
		prog *engine.Program
		data []byte
		edit func(m map[string]any)
		want string
		// jsonOnly is set for an edit the binary format cannot hold, or
		// that Snapshot refuses to write.
		jsonOnly bool
	}{
		{name: "a session without its state", prog: request, data: alice, edit: func(m map[string]any) { delete(sessionOf(m, 0), "state") },
			want: "session 0: the handler has started, but the session has no state"},
		{name: "an unknown field", prog: request, data: alice, edit: func(m map[string]any) { m["states"] = []any{} },
			want: `json: unknown field "states"`, jsonOnly: true},
		{name: "an unknown field of a session", prog: request, data: alice, edit: func(m map[string]any) { sessionOf(m, 0)["timer"] = 1 },
			want: `json: unknown field "timer"`, jsonOnly: true},
		{name: "data after the snapshot", prog: request, data: append(edited(t, alice, func(map[string]any) {}), "{}"...),
			want: "data after the snapshot", jsonOnly: true},
		{name: "data after the binary snapshot", prog: request, data: append(slices.Clone(alice), 0),
			want: "data after the snapshot"},
		{name: "a mode", prog: request, data: alice, edit: func(m map[string]any) { m["mode"] = 7 },
			want: "mode 7 is neither enforce (0) nor observe (1)"},
		{name: "a counter too large for tickets", prog: request, data: alice, edit: func(m map[string]any) { m["counter"] = uint64(1) << 41 },
			want: "counter 2199023255552 is too large for tickets"},
		{name: "the many role bound to an agent", prog: cn, data: buyer, edit: func(m map[string]any) { m["peers"] = []any{"alice", "bob"} },
			want: `role "Participant" has a session per agent, but the snapshot binds it to "bob"`},
		{name: "join bookkeeping for one peer", prog: request, data: alice, edit: func(m map[string]any) { m["join_ticket"] = 1 << 24 },
			want: "join and group decisions for a role with one peer"},
		{name: "done but never started", prog: request, data: fresh, edit: func(m map[string]any) { m["done"] = true },
			want: "the conversation is done but was never started"},
		{name: "aborted but not done", prog: request, data: alice, edit: func(m map[string]any) { m["aborted"] = true },
			want: "the conversation was aborted but is not done"},
		{name: "a join ticket not yet issued", prog: cn, data: buyer, edit: func(m map[string]any) { m["join_ticket"] = 99 << 24 },
			want: "join ticket 99 was not issued: the counter is at 16"},
		{name: "a group ticket for a session", prog: cn, data: buyer, edit: func(m map[string]any) { m["group_ticket"] = 1<<24 | 2 },
			want: "group ticket 16777218 names a session"},
		{name: "a peer for a role with one", prog: request, data: alice, edit: func(m map[string]any) { sessionOf(m, 0)["peer"] = "bob" },
			want: `session 0: a role with one peer keeps one session without a peer, not one with "bob"`},
		{name: "a many role's session without a peer", prog: cn, data: buyer, edit: func(m map[string]any) { delete(sessionOf(m, 1), "peer") },
			want: "session 1: a session of a many role has no peer"},
		{name: "two sessions with one peer", prog: cn, data: buyer, edit: func(m map[string]any) { sessionOf(m, 2)["peer"] = "bob" },
			want: `session 2: "bob" has two sessions`},
		{name: "a timed-out state the program does not have", prog: request, data: alice, edit: func(m map[string]any) { sessionOf(m, 0)["timed_out_from"] = "limbo" },
			want: `session 0: the program has no state "limbo"`},
		{name: "a state before the start", prog: request, data: fresh, edit: func(m map[string]any) { sessionOf(m, 0)["state"] = "start" },
			want: `session 0: the session is in state "start", but the handler has not started`},
		{name: "a decision before the start", prog: request, data: fresh, edit: func(m map[string]any) { sessionOf(m, 0)["ticket"] = 1<<24 | 1 },
			want: "session 0: a session that has not started has timers, decisions, commitments or messages"},
		{name: "an epoch not yet issued", prog: request, data: alice, edit: func(m map[string]any) { sessionOf(m, 0)["epoch"] = 9 },
			want: "session 0: epoch 9 was not issued: the counter is at 8"},
		{name: "no epoch", prog: request, data: alice, edit: func(m map[string]any) { sessionOf(m, 0)["epoch"] = 0 },
			want: "session 0: epoch 0 was not issued: the counter is at 8"},
		{name: "deadlines that do not fit the state", prog: request, data: alice, edit: func(m map[string]any) { sessionOf(m, 0)["deadlines"] = []any{1, 2} },
			want: `session 0: state "agreed" arms 1 timers, the snapshot has 2`},
		{name: "a ticket not yet issued", prog: request, data: alice, edit: func(m map[string]any) { sessionOf(m, 0)["ticket"] = 9<<24 | 1 },
			want: "session 0: ticket 9 was not issued: the counter is at 8"},
		{name: "a ticket of another session", prog: cn, data: buyer, edit: func(m map[string]any) { sessionOf(m, 0)["ticket"] = 5<<24 | 3 },
			want: `session 0: ticket 83886083 cannot be pending in state "proposed" of this session`},
		{name: "a ticket where nothing is decided", prog: participant, data: bob, edit: func(m map[string]any) {
			sessionOf(m, 0)["state"], sessionOf(m, 0)["deadlines"] = "start", nil
		}, want: `session 0: ticket 117440513 cannot be pending in state "start" of this session`},
		{name: "a ticket after the end", prog: request, data: alice, edit: func(m map[string]any) {
			sessionOf(m, 0)["state"], sessionOf(m, 0)["deadlines"], sessionOf(m, 0)["commitments"] = "done", nil, nil
			m["ended"], m["done"] = 1, true
		}, want: "session 0: ticket 134217729 is pending in a session that has ended"},
		{name: "deadline sources that do not fit", prog: request, data: alice, edit: func(m map[string]any) { sessionOf(m, 0)["source_times"] = []any{1, 2} },
			want: "session 0: 2 deadline sources, the program has 1"},
		{name: "a message type the program does not have", prog: request, data: alice, edit: func(m map[string]any) { sessionOf(m, 0)["last_message"] = "bribe" },
			want: `session 0: the program has no message type "bribe"`},
		{name: "content too deep", prog: participant, data: bob, edit: func(m map[string]any) { sessionOf(m, 0)["content"] = map[string]any{"x": deep} },
			want: "session 0: content nests maps and lists more than 32 deep", jsonOnly: true},
		{name: "a variable the policy does not declare", prog: request, data: alice, edit: func(m map[string]any) { sessionOf(m, 0)["vars"] = map[string]any{"limit": 1} },
			want: `session 0: the policy declares no variable "limit"`},
		{name: "commitments that do not fit", prog: request, data: alice, edit: func(m map[string]any) {
			sessionOf(m, 0)["commitments"] = []any{map[string]any{"epoch": 0}, map[string]any{"epoch": 0}}
		}, want: "session 0: 2 commitments, the policy declares 1"},
		{name: "a commitment state", prog: request, data: alice, edit: func(m map[string]any) {
			sessionOf(m, 0)["commitments"] = []any{map[string]any{"state": "forgiven", "epoch": 6}}
		}, want: `session 0: commitment "perform" is in state "forgiven", which commitments do not have`},
		{name: "a commitment epoch not yet issued", prog: request, data: alice, edit: func(m map[string]any) {
			sessionOf(m, 0)["commitments"] = []any{map[string]any{"state": "detached", "epoch": 80}}
		}, want: "session 0: commitment epoch 80 was not issued: the counter is at 8"},
		{name: "a commitment never created with an epoch", prog: request, data: alice, edit: func(m map[string]any) {
			sessionOf(m, 0)["commitments"] = []any{map[string]any{"epoch": 6}}
		}, want: `session 0: commitment "perform" was never created but has epoch 6`},
		{name: "an open commitment after the end", prog: request, data: alice, edit: func(m map[string]any) {
			sessionOf(m, 0)["state"], sessionOf(m, 0)["deadlines"], sessionOf(m, 0)["ticket"] = "done", nil, 0
			m["ended"], m["done"] = 1, true
		}, want: `session 0: commitment "perform" is detached in a session that has ended`},
		{name: "a deadline where no timer is armed", prog: request, data: alice, edit: func(m map[string]any) {
			sessionOf(m, 0)["commitments"] = []any{map[string]any{"state": "discharged", "epoch": 6, "deadline": 1}}
		}, want: `session 0: commitment "perform" is "discharged", which arms no timer, but has a deadline`},
		{name: "ended sessions miscounted", prog: cn, data: buyer, edit: func(m map[string]any) { m["ended"] = 0 },
			want: "1 sessions are in a terminal state, the snapshot counts 0"},
		{name: "sessions at the join miscounted", prog: cn, data: buyer, edit: func(m map[string]any) { m["at_join"] = 3 },
			want: "2 sessions are at a join, the snapshot counts 3"},
		{name: "done while sessions run", prog: request, data: alice, edit: func(m map[string]any) { m["done"], sessionOf(m, 0)["ticket"] = true, 0 },
			want: "done is true, but 0 of 1 sessions have ended"},
		{name: "not done when every session has ended", prog: request, data: alice, edit: func(m map[string]any) {
			sessionOf(m, 0)["state"], sessionOf(m, 0)["deadlines"], sessionOf(m, 0)["ticket"], sessionOf(m, 0)["commitments"] = "done", nil, 0, nil
			m["ended"] = 1
		}, want: "done is false, but 1 of 1 sessions have ended"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := tt.data
			if tt.edit != nil {
				data = edited(t, data, tt.edit)
			}
			h, err := tt.prog.Restore(data)
			assert.Nil(t, h)
			assert.EqualError(t, err, "engine: restore: "+tt.want)
			if tt.jsonOnly || tt.edit == nil {
				return
			}
			bin, err := engine.BinarySnapshot(data)
			require.NoError(t, err)
			h, err = tt.prog.Restore(bin)
			assert.Nil(t, h)
			assert.EqualError(t, err, "engine: restore: "+tt.want, "binary")
		})
	}
	t.Run("the snapshots themselves restore", func(t *testing.T) {
		for _, c := range []struct {
			prog *engine.Program
			data []byte
		}{{request, alice}, {participant, bob}, {cn, buyer}, {request, fresh}} {
			_, err := c.prog.Restore(c.data)
			assert.NoError(t, err)
		}
	})
}

// A deadline before 1970 is a negative number of Unix nanoseconds, and
// a snapshot holding one restores: a proposal's reply_by in 1969 arms the
// award timer, and the commitment's deadline with it, in the past.
func TestSnapshotKeepsDeadlinesBefore1970(t *testing.T) {
	y1969 := time.Date(1969, 7, 20, 20, 17, 0, 0, time.UTC)
	propose := seq(start(), say("alice", "cfp", content{"task": "t"}),
		answer("bob", "", decision.Answer{Choice: "propose", Content: content{"price": 1}, ReplyBy: y1969}))
	for _, name := range []string{"alice", "bob"} {
		pr, data := snapshotAt(t, "fipa-contract-net", name, propose)
		asJSON, err := engine.SnapshotJSON(data)
		require.NoError(t, err)
		require.Contains(t, string(asJSON), `"deadline":-`, "the commitment's deadline is before 1970")
		h, err := pr.Restore(data)
		require.NoError(t, err, name)
		again, err := h.Snapshot()
		require.NoError(t, err)
		assert.Equal(t, data, again)
	}
}

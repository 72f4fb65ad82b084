package engine_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/forms"
)

// restoreTargets are the programs FuzzRestore restores snapshots into.
var restoreTargets = []struct{ policy, role string }{
	{"fipa-request", "Initiator"}, {"fipa-request", "Participant"},
	{"fipa-contract-net", "Initiator"}, {"fipa-contract-net", "Participant"},
	{"two-buyer", "Buyer2"},
}

// FuzzRestore restores arbitrary bytes into each target program: Restore
// either refuses them or returns a handler that processes events of
// every kind (messages received and overheard, decisions, timers, child
// ends, an abort) without panicking, and whose snapshot restores again;
// SnapshotJSON reads what Restore accepts, and never panics either.
// The seeds are snapshots of both formats, binary and JSON.
func FuzzRestore(f *testing.F) {
	held := holdSeeds(f)
	for _, s := range slices.Concat(restoreSeeds(f), held, binarySeeds(held), goldenSeeds(f)) {
		f.Add(s.target, s.data)
	}
	f.Fuzz(func(t *testing.T, target uint8, data []byte) {
		tg := restoreTargets[int(target)%len(restoreTargets)]
		pr := restoreProgram(t, tg.policy, tg.role)
		_, jsonErr := engine.SnapshotJSON(data)
		h, err := pr.Restore(data)
		if err == nil && jsonErr != nil {
			t.Fatalf("Restore accepted what SnapshotJSON refuses: %v", jsonErr)
		}
		if err != nil {
			if h != nil {
				t.Fatalf("Restore returned a handler and the error %v", err)
			}
			return
		}
		exerciseRestored(t, pr, h, data)
	})
}

// restoreSeed is a FuzzRestore input: a target and a snapshot.
type restoreSeed struct {
	target uint8
	data   []byte
}

// restoreSeeds are real snapshots of every agent after every step of
// FIPA Request and Contract Net conversations, in both formats, and
// edits of them that Restore must refuse or survive.
func restoreSeeds(tb testing.TB) []restoreSeed {
	agreed := seq(start(), say("alice", "request", content{"action": "paint"}), say("bob", "agree", nil))
	convs := []struct {
		policy string
		steps  []action
	}{
		{"fipa-request", []action{start(), say("alice", "request", content{"action": "paint"}), say("bob", "agree", nil), say("bob", "inform-result", content{"result": 42})}},
		{"fipa-request", []action{agreed, say("alice", "cancel", nil), say("bob", "inform-done", nil)}},
		{"fipa-request", []action{start(), say("alice", "request", nil), fireEach("reply", "alice", "bob")}},
		{"fipa-request", []action{agreed, abort("alice", "a send failed")}},
		{"fipa-contract-net", []action{
			start(), say("alice", "cfp", content{"task": "t"}), say("bob", "propose", content{"price": 1}),
			say("carol", "refuse", nil), say("dave", "propose", content{"price": 2}),
			join("alice", map[string]string{"bob": "accept-proposal", "dave": "reject-proposal"}),
			say("bob", "inform-done", content{"done": true}),
		}},
		{"fipa-contract-net", []action{start(), say("alice", "cfp", content{"task": "t"}), say("bob", "propose", content{"price": 1}), abort("alice", "decision logic panicked")}},
	}
	var out []restoreSeed
	for _, cv := range convs {
		c := newConv(tb, cv.policy, cast(cv.policy))
		for k := -1; k < len(cv.steps); k++ {
			if k >= 0 {
				c.now = c.now.Add(time.Second)
				cv.steps[k](c)
			}
			for _, a := range c.agents {
				out = append(out, snapshotSeeds(tb, c, a.name)...)
			}
		}
	}
	return out
}

// snapshotSeeds are the snapshot of agent name's handler in c, in both
// formats, and edits of it: of the JSON and of the binary (in both
// formats, and cut short).
func snapshotSeeds(tb testing.TB, c *conv, name string) []restoreSeed {
	h := c.handlers[name]
	bin, err := h.Snapshot()
	if err != nil {
		tb.Fatal(err)
	}
	data, err := engine.JSONSnapshot(h)
	if err != nil {
		tb.Fatal(err)
	}
	pr := h.Program()
	target := uint8(slices.IndexFunc(restoreTargets, func(t struct{ policy, role string }) bool {
		return t.policy == pr.Policy().Name && t.role == pr.Role()
	}))
	out := []restoreSeed{{target, bin}, {target, data}, {target, bin[:len(bin)/2]}, {target, bin[:len(bin)-1]}}
	edits := len(out)
	states := pr.States()
	for k, edit := range []func(m map[string]any){
		func(m map[string]any) { forSessions(m, func(s map[string]any) { delete(s, "state") }) },
		func(m map[string]any) { forSessions(m, func(s map[string]any) { s["state"] = states[len(states)-1] }) },
		func(m map[string]any) { forSessions(m, func(s map[string]any) { s["epoch"] = 0 }) },
		func(m map[string]any) { forSessions(m, func(s map[string]any) { s["ticket"] = 1<<24 | 1 }) },
		func(m map[string]any) { forSessions(m, func(s map[string]any) { delete(s, "deadlines") }) },
		func(m map[string]any) { forSessions(m, func(s map[string]any) { delete(s, "commitments") }) },
		func(m map[string]any) { m["started"], m["done"] = !m["started"].(bool), !m["done"].(bool) },
		func(m map[string]any) { m["counter"], m["ended"], m["at_join"] = 1, 0, 0 },
		func(m map[string]any) { m["sessions"] = append(m["sessions"].([]any), m["sessions"].([]any)...) },
	} {
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			tb.Fatal(err)
		}
		edit(m)
		mutated, err := json.Marshal(m)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, restoreSeed{target, mutated})
		// Another program's target too, now and then.
		if k == 0 {
			out = append(out, restoreSeed{target + 1, data}, restoreSeed{target + 1, bin})
		}
	}
	return append(out, binarySeeds(out[edits:])...)
}

// goldenSeeds are the snapshots in testdata/snapshot, of both formats,
// each for the first target (most are of another program).
func goldenSeeds(tb testing.TB) []restoreSeed {
	var out []restoreSeed
	for _, pattern := range []string{"*.v2.json", "*.v3.bin"} {
		paths, err := filepath.Glob(filepath.Join("testdata", "snapshot", pattern))
		if err != nil {
			tb.Fatal(err)
		}
		for _, path := range paths {
			data, err := os.ReadFile(path)
			if err != nil {
				tb.Fatal(err)
			}
			out = append(out, restoreSeed{0, data})
		}
	}
	return out
}

// binarySeeds returns, for each of seeds of JSON that reads as a
// snapshot, the same snapshot in the binary format.
func binarySeeds(seeds []restoreSeed) []restoreSeed {
	var out []restoreSeed
	for _, s := range seeds {
		if len(s.data) == 0 || s.data[0] != '{' {
			continue
		}
		if bin, err := engine.BinarySnapshot(s.data); err == nil {
			out = append(out, restoreSeed{s.target, bin})
		}
	}
	return out
}

func forSessions(m map[string]any, fn func(s map[string]any)) {
	for _, s := range m["sessions"].([]any) {
		fn(s.(map[string]any))
	}
}

// exerciseRestored feeds h, restored from data, events of every kind
// built from what the snapshot holds (its peers, epochs and tickets) and
// from the program's names, and requires that none panics and that the
// handler's snapshot restores again, into a handler that snapshots the
// same bytes.
func exerciseRestored(t *testing.T, pr *engine.Program, h *engine.Handler, data []byte) {
	first, err := h.Snapshot()
	if err != nil {
		t.Fatalf("snapshot of a restored handler: %v", err)
	}
	back, err := pr.Restore(first)
	if err != nil {
		t.Fatalf("the snapshot of a restored handler does not restore: %v\n%q", err, first)
	}
	if second, err := back.Snapshot(); err != nil || !bytes.Equal(first, second) {
		t.Fatalf("a handler restored from a snapshot snapshots other bytes (%v):\n%q\n%q", err, first, second)
	}
	asJSON, err := engine.SnapshotJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	var sn struct {
		Sessions []struct {
			Peer        string `json:"peer"`
			Epoch       uint64 `json:"epoch"`
			Ticket      uint64 `json:"ticket"`
			Commitments []struct {
				Epoch uint64 `json:"epoch"`
			} `json:"commitments"`
		} `json:"sessions"`
		GroupTicket uint64   `json:"group_ticket"`
		JoinTicket  uint64   `json:"join_ticket"`
		Peers       []string `json:"peers"`
	}
	if err := json.Unmarshal(asJSON, &sn); err != nil {
		t.Fatalf("Restore accepted what json.Unmarshal refuses: %v", err)
	}
	peers := []string{"", "alice", "bob"}
	for _, p := range sn.Peers {
		if !slices.Contains(peers, p) {
			peers = append(peers, p)
		}
	}
	epochs := []uint64{0}
	tickets := []uint64{sn.GroupTicket, sn.JoinTicket}
	for _, s := range sn.Sessions {
		if !slices.Contains(peers, s.Peer) {
			peers = append(peers, s.Peer)
		}
		epochs = append(epochs, s.Epoch)
		tickets = append(tickets, s.Ticket)
		for _, c := range s.Commitments {
			epochs = append(epochs, c.Epoch)
		}
	}
	p := pr.Policy()
	var names, performatives, commitments []string
	for _, m := range p.Messages {
		names = append(names, m.Name)
		if !slices.Contains(performatives, m.Performative) {
			performatives = append(performatives, m.Performative)
		}
	}
	for _, c := range p.Commitments {
		commitments = append(commitments, c.Name)
	}
	commitments = append(commitments, "")
	at := t0.Add(time.Hour)
	var q engine.Queue
	feed := func(ev engine.Event) {
		q.Reset()
		_ = h.Process(ev, &q) // errors are misuse (no agent bound), not panics
	}
	q.Reset()
	_ = h.Start(at, &q)
	for _, from := range peers {
		for _, perf := range append(performatives, "junk") {
			m := &forms.Message{Performative: perf, Sender: from, Receivers: []string{"alice", "bob"}, ConversationID: h.ConversationID(),
				Content: map[string]any{"price": 1, "done": true, "result": 2}}
			feed(&engine.MessageEvent{At: at, Message: m})
			feed(&engine.MessageEvent{At: at, Message: m, Sent: true})
		}
	}
	for _, ticket := range tickets {
		for _, name := range names {
			answer := decision.Answer{Choice: name, Content: map[string]any{"price": 1}}
			for _, peer := range peers {
				if answer.Sessions == nil {
					answer.Sessions = map[string]decision.SessionAnswer{}
				}
				answer.Sessions[peer] = decision.SessionAnswer{Choice: name}
			}
			feed(&engine.DecisionEvent{At: at, Ticket: ticket, Answer: decision.Answer{Choice: name}})
			feed(&engine.DecisionEvent{At: at, Ticket: ticket, Answer: answer})
		}
	}
	for _, peer := range peers {
		for _, epoch := range epochs {
			for _, timer := range p.Timers {
				for _, c := range commitments {
					feed(&engine.TimerEvent{At: at, Name: timer.Name, Commitment: c, Session: peer, Epoch: epoch})
				}
			}
			feed(&engine.CPDoneEvent{At: at, Policy: "conversation-setup", Outcome: "accepted", Session: peer, Epoch: epoch})
		}
	}
	again, err := h.Snapshot()
	if err != nil {
		t.Fatalf("snapshot of a restored handler: %v", err)
	}
	if _, err := pr.Restore(again); err != nil {
		t.Fatalf("the snapshot of a restored handler does not restore: %v\n%q", err, again)
	}
	q.Reset()
	if err := h.Abort(at, "fuzz", &q); err != nil {
		t.Fatalf("Abort after Start: %v", err)
	}
	if again, err = h.Snapshot(); err != nil {
		t.Fatalf("snapshot after Abort: %v", err)
	}
	if _, err := pr.Restore(again); err != nil {
		t.Fatalf("the snapshot after Abort does not restore: %v\n%q", err, again)
	}
}

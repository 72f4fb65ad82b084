package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/policy"
)

// maxDifferences is the most differences replay prints for one
// conversation, and replayMaxListed the most names (sessions, message
// ids) one difference lists; a last line or an "and N more" says how
// many more there are.
const (
	maxDifferences  = 10
	replayMaxListed = 10
)

// snapshotView is what replay compares of an engine snapshot (see
// engine.Handler.Snapshot): the meaningful state, not the bookkeeping
// (epochs, tickets, counters, reply-with numbers), which depends on the
// decisions the agent took and the journal does not record.
type snapshotView struct {
	Self     string        `json:"self"`
	Done     bool          `json:"done"`
	Aborted  bool          `json:"aborted"`
	Sessions []sessionView `json:"sessions"`
}

type sessionView struct {
	Peer         string           `json:"peer"`
	State        string           `json:"state"`
	TimedOutFrom string           `json:"timed_out_from"`
	Vars         map[string]any   `json:"vars"`
	Commitments  []commitmentView `json:"commitments"`
}

type commitmentView struct {
	State    string `json:"state"`
	Deadline int64  `json:"deadline"`
}

func decodeSnapshot(data []byte) (*snapshotView, error) {
	data, err := engine.SnapshotJSON(data)
	if err != nil {
		return nil, err
	}
	var v snapshotView
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// verdict is what replay says of one conversation.
type verdict uint8

const (
	verdictMatch    verdict = iota + 1
	verdictMismatch         // the replay and the store differ
	verdictGone             // ended in the replay, and no longer stored
)

// replayResult is the verdict on one conversation, with the differences
// (a mismatch) or a note.
type replayResult struct {
	id      string
	verdict verdict
	lines   []string
}

// results compares every conversation replayed or stored (of the
// conversation trees replayed) and returns the verdicts in id order.
func (r *replayer) results() ([]replayResult, error) {
	ids := slices.Collect(maps.Keys(r.convs))
	for id, sc := range r.stored {
		if _, ok := r.convs[id]; ok || !r.wanted(rootOf(id), "") {
			continue
		}
		ids = append(ids, id)
		if rootOf(id) != id {
			continue
		}
		// Started by the agent, and nothing journaled since: its handler
		// as Start left it.
		c, err := r.open(id, "", time.Time{}, sc.Opener, sc.Opener == "")
		if err != nil {
			return nil, err
		}
		if sc.Opener != "" {
			c.problem("the store has it opened by %s, but the journal has no line of it", policy.Quote(sc.Opener))
		}
	}
	slices.Sort(ids)
	out := make([]replayResult, 0, len(ids))
	for _, id := range ids {
		out = append(out, r.result(id))
	}
	return out, nil
}

func (r *replayer) result(id string) replayResult {
	c, sc := r.convs[id], r.stored[id]
	switch {
	case c == nil:
		return replayResult{id, verdictMismatch, []string{"the store holds this child conversation, but the replay of its parent did not start it"}}
	case sc == nil && len(c.problems) == 0 && c.h != nil && c.h.Done():
		return replayResult{id, verdictGone, []string{fmt.Sprintf("replay ends it with outcome %s, and the agent swept it after its retention", policy.Quote(c.outcome))}}
	case sc == nil:
		lines := append([]string{}, c.problems...)
		state := "not started"
		if c.h != nil {
			state = "running, " + describeStates(c.h)
		}
		lines = append(lines, "not in the store, but the replay has it "+state)
		return replayResult{id, verdictMismatch, cappedDifferences(lines)}
	}
	diffs := r.compare(c, sc)
	if len(diffs) > 0 {
		return replayResult{id, verdictMismatch, cappedDifferences(diffs)}
	}
	if sc.Abort != "" {
		return replayResult{id, verdictMatch, []string{"the agent aborted it, " + policy.Quote(sc.Abort) + ", which the journal does not record: replay aborts it when the store says"}}
	}
	return replayResult{id, verdictMatch, nil}
}

// cappedDifferences keeps the first maxDifferences lines and says how many more
// there are.
func cappedDifferences(lines []string) []string {
	if len(lines) <= maxDifferences {
		return lines
	}
	more := len(lines) - maxDifferences
	return append(lines[:maxDifferences:maxDifferences], fmt.Sprintf("... and %s", plural(more, "more difference", "more differences")))
}

// describeStates says in which state each of h's sessions is.
func describeStates(h *engine.Handler) string {
	peers := h.Sessions()
	if peers == nil {
		return "in state " + policy.Quote(h.State(""))
	}
	parts := make([]string, 0, min(len(peers), replayMaxListed))
	for i, p := range peers {
		if i == replayMaxListed {
			parts = append(parts, fmt.Sprintf("and %d more", len(peers)-replayMaxListed))
			break
		}
		parts = append(parts, policy.Quote(p)+" in "+policy.Quote(h.State(p)))
	}
	return fmt.Sprintf("with sessions %s", strings.Join(parts, ", "))
}

// compare returns how the replayed conversation c differs from the
// store's sc.
func (r *replayer) compare(c *replayConv, sc *agent.StoredConversation) []string {
	diffs := append([]string{}, c.problems...)
	if c.h == nil {
		return diffs
	}
	prog := c.h.Program()
	if got := prog.Policy().Name; got != sc.Policy || prog.Role() != sc.Role {
		return append(diffs, fmt.Sprintf("replay runs %s as %s, the store %s as %s", policy.Quote(got), policy.Quote(prog.Role()), policy.Quote(sc.Policy), policy.Quote(sc.Role)))
	}
	if prog.Fingerprint() != sc.Fingerprint {
		return append(diffs, fmt.Sprintf("the store ran policy %s with fingerprint %s, the policy given has %s: replay needs the policy the agent ran",
			policy.Quote(sc.Policy), policy.Clip(sc.Fingerprint), prog.Fingerprint()))
	}
	stored, err := prog.Restore(sc.Handler)
	if err != nil {
		return append(diffs, fmt.Sprintf("the store's snapshot does not restore: %v", err))
	}
	snap, err := c.h.Snapshot()
	if err != nil {
		return append(diffs, fmt.Sprintf("the replayed handler has no snapshot: %v", err))
	}
	rv, err1 := decodeSnapshot(snap)
	sv, err2 := decodeSnapshot(sc.Handler)
	if err1 != nil || err2 != nil {
		return append(diffs, fmt.Sprintf("cannot read the snapshots: %v", firstError(err1, err2)))
	}
	if sv.Self != r.self {
		diffs = append(diffs, fmt.Sprintf("the store's snapshot is of agent %s, not %s", policy.Quote(sv.Self), policy.Quote(r.self)))
	}
	diffs = append(diffs, compareEnd(c, sc, rv, sv)...)
	diffs = append(diffs, compareSessions(prog, rv, sv)...)
	diffs = append(diffs, compareTimers(prog, c.h, stored, c.started && rootOf(c.id) == c.id)...)
	return append(diffs, compareHost(c, sc)...)
}

func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// compareEnd compares whether and how the conversation ended.
func compareEnd(c *replayConv, sc *agent.StoredConversation, rv, sv *snapshotView) []string {
	var diffs []string
	switch {
	case rv.Done && !sv.Done:
		diffs = append(diffs, fmt.Sprintf("replay ends it with outcome %s, the store has it running", policy.Quote(c.outcome)))
	case !rv.Done && sv.Done:
		diffs = append(diffs, fmt.Sprintf("replay has it running, the store has it ended with outcome %s", policy.Quote(sc.Outcome)))
	case rv.Done && c.outcome != sc.Outcome:
		diffs = append(diffs, fmt.Sprintf("outcome: replay %s, store %s", policy.Quote(c.outcome), policy.Quote(sc.Outcome)))
	}
	if rv.Aborted != sv.Aborted {
		diffs = append(diffs, fmt.Sprintf("aborted: replay %v, store %v", rv.Aborted, sv.Aborted))
	}
	return diffs
}

// compareSessions compares the sessions, matched by peer: state, the
// state a timeout left, variables and commitments.
func compareSessions(prog *engine.Program, rv, sv *snapshotView) []string {
	var diffs []string
	byPeer := func(v *snapshotView) map[string]*sessionView {
		m := make(map[string]*sessionView, len(v.Sessions))
		for i := range v.Sessions {
			m[v.Sessions[i].Peer] = &v.Sessions[i]
		}
		return m
	}
	replayed, stored := byPeer(rv), byPeer(sv)
	for _, s := range sv.Sessions {
		if replayed[s.Peer] == nil {
			diffs = append(diffs, fmt.Sprintf("%sin the store only (state %s)", sessionLabel(s.Peer), policy.Quote(s.State)))
		}
	}
	commits := prog.Policy().Commitments
	for _, r := range rv.Sessions {
		s := stored[r.Peer]
		label := sessionLabel(r.Peer)
		if s == nil {
			diffs = append(diffs, fmt.Sprintf("%sin the replay only (state %s)", label, policy.Quote(r.State)))
			continue
		}
		if r.State != s.State {
			diffs = append(diffs, fmt.Sprintf("%sstate: replay %s, store %s", label, policy.Quote(r.State), policy.Quote(s.State)))
		}
		if r.TimedOutFrom != s.TimedOutFrom {
			diffs = append(diffs, fmt.Sprintf("%stimed out from: replay %s, store %s", label, policy.Quote(r.TimedOutFrom), policy.Quote(s.TimedOutFrom)))
		}
		names := slices.Sorted(maps.Keys(r.Vars))
		for n := range s.Vars {
			if _, ok := r.Vars[n]; !ok {
				names = append(names, n)
			}
		}
		slices.Sort(names)
		for _, n := range names {
			rval, rok := r.Vars[n]
			sval, sok := s.Vars[n]
			if rok == sok && reflect.DeepEqual(rval, sval) {
				continue
			}
			diffs = append(diffs, fmt.Sprintf("%svariable %s: replay %s, store %s", label, policy.Quote(n), showValue(rval, rok), showValue(sval, sok)))
		}
		for k := range max(len(r.Commitments), len(s.Commitments)) {
			var rc, st commitmentView
			if k < len(r.Commitments) {
				rc = r.Commitments[k]
			}
			if k < len(s.Commitments) {
				st = s.Commitments[k]
			}
			name := fmt.Sprintf("#%d", k+1)
			if k < len(commits) {
				name = policy.Quote(commits[k].Name)
			}
			if rc.State != st.State {
				diffs = append(diffs, fmt.Sprintf("%scommitment %s: replay %s, store %s", label, name, showCommitment(rc.State), showCommitment(st.State)))
			} else if rc.Deadline != st.Deadline {
				diffs = append(diffs, fmt.Sprintf("%scommitment %s: deadline: replay %s, store %s", label, name, showNanos(rc.Deadline), showNanos(st.Deadline)))
			}
		}
	}
	return diffs
}

func sessionLabel(peer string) string {
	if peer == "" {
		return ""
	}
	return "session " + policy.Quote(peer) + ": "
}

// showValue shows a variable's value as JSON, cut to policy.MaxQuoted
// bytes, or "unset".
func showValue(v any, ok bool) string {
	if !ok {
		return "unset"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "unshowable"
	}
	return policy.Clip(string(b))
}

func showCommitment(state string) string {
	if state == "" {
		return "not created"
	}
	return policy.Quote(state)
}

func showNanos(n int64) string {
	if n == 0 {
		return "none"
	}
	return time.Unix(0, n).UTC().Format(time.RFC3339Nano)
}

// armedTimer is a state timer as compared: by session and name.
type armedTimer struct{ session, name string }

// compareTimers compares the deadlines of the states' armed timers
// (commitments' deadlines are compared with the commitments). With
// skipInitial, sessions in the initial state are left out: the agent
// started the conversation, and the journal does not say when.
func compareTimers(prog *engine.Program, replayed, stored *engine.Handler, skipInitial bool) []string {
	initial := prog.States()[0]
	collect := func(h *engine.Handler) map[armedTimer][]time.Time {
		m := map[armedTimer][]time.Time{}
		for _, t := range h.Armed() {
			if t.Commitment != "" || skipInitial && h.State(t.Session) == initial {
				continue
			}
			k := armedTimer{t.Session, t.Name}
			m[k] = append(m[k], t.Deadline)
		}
		return m
	}
	rt, st := collect(replayed), collect(stored)
	keys := slices.Collect(maps.Keys(rt))
	for k := range st {
		if _, ok := rt[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b armedTimer) int {
		return cmp.Or(cmp.Compare(a.session, b.session), cmp.Compare(a.name, b.name))
	})
	var diffs []string
	for _, k := range keys {
		if slices.EqualFunc(rt[k], st[k], time.Time.Equal) {
			continue
		}
		diffs = append(diffs, fmt.Sprintf("%stimer %s: replay %s, store %s", sessionLabel(k.session), policy.Quote(k.name), showDeadlines(rt[k]), showDeadlines(st[k])))
	}
	return diffs
}

func showDeadlines(ts []time.Time) string {
	if len(ts) == 0 {
		return "not armed"
	}
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = "due " + t.UTC().Format(time.RFC3339Nano)
	}
	return strings.Join(out, ", ")
}

// compareHost compares what the manager keeps besides the handler: the
// messages applied, the peer that opened the conversation, the parent and
// the number of children started.
func compareHost(c *replayConv, sc *agent.StoredConversation) []string {
	var diffs []string
	stored := map[string]struct{}{}
	for _, id := range sc.Applied {
		stored[id] = struct{}{}
	}
	var onlyReplay, onlyStore []string
	for id := range c.applied {
		if _, ok := stored[id]; !ok {
			onlyReplay = append(onlyReplay, showMessageID(id))
		}
	}
	for id := range stored {
		if _, ok := c.applied[id]; !ok {
			onlyStore = append(onlyStore, showMessageID(id))
		}
	}
	slices.Sort(onlyReplay)
	slices.Sort(onlyStore)
	if len(onlyStore) > 0 {
		diffs = append(diffs, fmt.Sprintf("the store has applied %s, which the journal does not have the agent receive", strings.Join(onlyStore[:min(len(onlyStore), replayMaxListed)], ", ")+more(len(onlyStore))))
	}
	if len(onlyReplay) > 0 {
		diffs = append(diffs, fmt.Sprintf("the journal has the agent receive %s, which the store has not applied", strings.Join(onlyReplay[:min(len(onlyReplay), replayMaxListed)], ", ")+more(len(onlyReplay))))
	}
	if c.opener != sc.Opener {
		diffs = append(diffs, fmt.Sprintf("opened by: replay %s, store %s", showAgent(c.opener), showAgent(sc.Opener)))
	}
	parent := ""
	if c.parent != nil {
		parent = c.parent.id
	}
	if parent != sc.Parent {
		diffs = append(diffs, fmt.Sprintf("parent: replay %s, store %s", policy.Quote(parent), policy.Quote(sc.Parent)))
	}
	if c.children != sc.Children {
		diffs = append(diffs, fmt.Sprintf("child conversations started: replay %d, store %d", c.children, sc.Children))
	}
	return diffs
}

func more(n int) string {
	if n <= replayMaxListed {
		return ""
	}
	return fmt.Sprintf(" and %d more", n-replayMaxListed)
}

// showMessageID shows a MessageID (sender, NUL, reply-with) as
// "reply-with from sender".
func showMessageID(id string) string {
	for i := range len(id) {
		if id[i] == 0 {
			return policy.Quote(id[i+1:]) + " from " + policy.Quote(id[:i])
		}
	}
	return policy.Quote(id)
}

func showAgent(a string) string {
	if a == "" {
		return "this agent"
	}
	return policy.Quote(a)
}

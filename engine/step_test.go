package engine

import (
	"fmt"
	"io/fs"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policies"
	"github.com/parleyhq/parley/policy"
)

// stepPolicy has what step must get right besides the shipped policies'
// shapes: receives of one message type told apart by guards on one field,
// on two, and (in s2) on one field each but not the same, a guard reading
// vars, assignments, a reply_by deadline, a fixed timer, a run budget,
// and (in s1) match rules: one that tests whether content holds a
// declared field, one that compares a field, one that tests two fields.
const stepPolicy = `policy: step-shapes
version: 1
roles: [A, B]
messages:
  ask: {performative: request, fields: {n: int, m: optional number}}
  tag: {performative: inform, fields: {t: string}}
  done: {performative: inform, fields: {r: optional int}, match: '"r" in content'}
  note: {performative: inform, fields: {k: int}, match: 'content.k > 1'}
  other: {performative: inform, fields: {z: optional string}, match: '!("q" in content) && "z" in content'}
  stop: cancel
timers:
  wait: {deadline: ask.reply_by, default: 1m}
  idle: 30s
vars:
  seen: int
budget: {messages: 12, visits: 6}
states:
  s0:
    - {send: ask, from: A, to: B, next: s1, guard: content.n > 0 && content.n < 10, set: {seen: 1}}
    - {send: ask, from: A, to: B, next: s1, guard: content.n >= 10 || "m" in content}
    - {send: stop, from: A, to: B, next: end}
  s1:
    arm: [wait, idle]
    on:
      - {send: tag, from: A, to: B, next: s0, guard: 'vars.seen == 1 && content.t == "x"'}
      - {send: tag, from: A, to: B, next: s2}
      - {send: done, from: A, to: B, next: end}
      - {send: note, from: A, to: B, next: s0}
      - {send: other, from: A, to: B, next: s2}
      - {timeout: idle, next: end}
      - {timeout: wait, next: end}
  s2:
    - {send: ask, from: A, to: B, next: s0, guard: content.m > 1}
    - {send: ask, from: A, to: B, next: s1, guard: content.n == 9}
    - {send: ask, from: A, to: B, next: s0}
    - {send: stop, from: A, to: B, next: end}
  end: {terminal: done}
`

// stepPolicies returns every policy the equivalence test runs: the
// shipped ones, the repository's test and example policies, and
// stepPolicy.
func stepPolicies(t *testing.T) map[string]*policy.Policy {
	t.Helper()
	out := map[string]*policy.Policy{}
	for _, name := range policies.Names() {
		p, err := policies.Load(name)
		require.NoError(t, err)
		out[name] = p
	}
	var files []string
	for _, dir := range []string{"../testdata/policies", "../testdata/explore", "../examples", "../schema/testdata", "../a2a/testdata"} {
		require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".yaml") {
				files = append(files, path)
			}
			return err
		}))
	}
	for _, path := range files {
		src, err := os.ReadFile(path)
		require.NoError(t, err)
		if p, ds := policy.LoadYAML(path, src); !ds.HasErrors() {
			out[path] = p
		}
	}
	p, ds := policy.LoadYAML("step.yaml", []byte(stepPolicy))
	require.False(t, ds.HasErrors(), "%v", ds)
	out["step-shapes"] = p
	return out
}

// TestStepIsReceived checks step against received: over random
// conversations of every policy in stepPolicies, as each role, in both
// modes, a handler fed through step (received when step declines, as
// Process does) and one fed through received alone output the same
// events and end every input in the same snapshot. The inputs are mostly
// messages the state takes, with content of the declared types, and
// also every kind of violation: another conversation, a stranger, a
// performative nobody sends, content of the wrong types or over the
// limits, a stray in-reply-to, a late message.
func TestStepIsReceived(t *testing.T) {
	stepped, reported, handlers := 0, 0, 0
	for name, p := range stepPolicies(t) {
		for _, role := range p.Roles {
			prog, _ := Compile(p, role.Name, WithPolicies(policies.Resolve))
			if prog == nil {
				continue
			}
			handlers++
			for _, mode := range []Mode{Enforce, Observe} {
				for seed := range uint64(4) {
					t.Run(fmt.Sprintf("%s/%s/%d/%d", name, role.Name, mode, seed), func(t *testing.T) {
						s, r := runStepWalk(t, prog, mode, seed)
						stepped, reported = stepped+s, reported+r
					})
				}
			}
		}
	}
	t.Logf("%d programs, %d messages stepped, %d reported by step", handlers, stepped, reported)
	require.Greater(t, handlers, 40, "programs compiled")
	assert.Greater(t, stepped, 2000, "messages step took")
	assert.Greater(t, reported, 2000, "messages step reported")
}

// stepWalk is one random conversation fed to two handlers of one program.
type stepWalk struct {
	t        *testing.T
	rnd      *rand.Rand
	prog     *Program
	fast     *Handler // fed through step, then received
	slow     *Handler // fed through received
	qf, qs   Queue
	now      time.Time
	agents   map[int][]string // the agents bound to each other role
	replies  []string         // reply-withs the handlers sent
	timers   []TimerEvent     // timers set
	decision *DecisionEvent   // the latest decision raised
	// stepped and reported count the messages step took and reported.
	stepped, reported int
}

// runStepWalk runs one walk of 200 inputs, a new conversation whenever
// one ends, and returns how many messages step took and reported.
func runStepWalk(t *testing.T, prog *Program, mode Mode, seed uint64) (stepped, reported int) {
	w := &stepWalk{t: t, rnd: rand.New(rand.NewPCG(seed, 7)), prog: prog, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), agents: map[int][]string{}}
	opts := []HandlerOption{WithMode(mode)}
	for r, name := range prog.roles {
		if r == prog.roleIdx {
			continue
		}
		agents := []string{strings.ToLower(name)}
		if r == prog.manyRole {
			agents = []string{"p1", "p2"}
		}
		w.agents[r] = agents
		if r == prog.manyRole || seed%2 == 0 { // odd seeds leave the others to bind at their first message
			opts = append(opts, WithPeers(name, agents...))
		}
	}
	for k := range 200 {
		if w.fast == nil || w.fast.Done() {
			w.start(opts)
		}
		w.next(k)
	}
	return w.stepped, w.reported
}

// start starts a new conversation.
func (w *stepWalk) start(opts []HandlerOption) {
	var err error
	w.fast, err = w.prog.NewHandler("c1", "me", opts...)
	require.NoError(w.t, err)
	w.slow, err = w.prog.NewHandler("c1", "me", opts...)
	require.NoError(w.t, err)
	w.qf.Reset()
	w.qs.Reset()
	w.replies, w.timers, w.decision = w.replies[:0], w.timers[:0], nil
	require.NoError(w.t, w.fast.Start(w.now, &w.qf))
	require.NoError(w.t, w.slow.Start(w.now, &w.qs))
	w.compare("start")
}

// next feeds both handlers one random input: mostly a message, else an
// answer to the latest decision, a timer or a move of the clock.
func (w *stepWalk) next(k int) {
	var in Event
	switch r := w.rnd.IntN(10); {
	case r < 6:
		in = &MessageEvent{At: w.at(), Message: w.message()}
	case r < 8 && w.decision != nil:
		d := w.decision
		a := d.Request.Choices
		choice := "nope"
		if len(a) > 0 && w.rnd.IntN(4) > 0 {
			choice = a[w.rnd.IntN(len(a))]
		}
		in = &DecisionEvent{At: w.now, Ticket: d.Ticket}
		in.(*DecisionEvent).Answer.Choice = choice
		in.(*DecisionEvent).Answer.Content = w.content(w.sendForm(d, choice))
	case r < 9 && len(w.timers) > 0:
		e := w.timers[w.rnd.IntN(len(w.timers))]
		e.Op, e.At = 0, w.now
		in = &e
	default:
		w.now = w.now.Add(time.Duration(w.rnd.IntN(90)) * time.Second)
		return
	}
	w.qf.Reset()
	w.qs.Reset()
	errF := w.processFast(in)
	errS := w.processSlow(in)
	require.Equal(w.t, errS, errF, "input %d", k)
	w.compare(fmt.Sprintf("input %d: %s", k, render(in)))
}

// processFast is Process, which tries step first.
func (w *stepWalk) processFast(in Event) error {
	e, ok := in.(*MessageEvent)
	if !ok {
		return w.process(w.fast, in, &w.qf)
	}
	declined := false
	err := w.fast.step(e, &w.qf, func(h *Handler, in Event, out *Queue) error {
		declined = true
		return w.process(h, in, out)
	})
	switch {
	case declined:
	case slices.ContainsFunc(w.qf.Events(), func(e Event) bool { _, ok := e.(*ProtocolErrorEvent); return ok }):
		w.reported++
	default:
		w.stepped++
	}
	return err
}

// stepTakes runs step on e and reports whether it took e, leaving a
// message it declines to nothing else.
func stepTakes(t *testing.T, h *Handler, e *MessageEvent, out *Queue) bool {
	declined := false
	require.NoError(t, h.step(e, out, func(*Handler, Event, *Queue) error {
		declined = true
		return nil
	}))
	return !declined
}

// processSlow is Process without step.
func (w *stepWalk) processSlow(in Event) error { return w.process(w.slow, in, &w.qs) }

func (w *stepWalk) process(h *Handler, in Event, out *Queue) error {
	err := h.dispatch(in, out)
	if len(h.heldList()) > 0 && err == nil {
		h.deliverHeld(eventTime(in), out)
	}
	return err
}

// compare fails the test unless both handlers output the same events and
// have the same snapshot; it notes what the outputs ask for.
func (w *stepWalk) compare(what string) {
	f, s := w.qf.Events(), w.qs.Events()
	require.Equal(w.t, renderAll(s), renderAll(f), "%s: events", what)
	sf, errF := w.fast.Snapshot()
	ss, errS := w.slow.Snapshot()
	require.Equal(w.t, errS, errF, "%s: snapshot errors", what)
	require.Equal(w.t, ss, sf, "%s: snapshots", what)
	for _, e := range f {
		switch e := e.(type) {
		case *MessageEvent:
			w.replies = append(w.replies, e.Message.ReplyWith)
		case *TimerEvent:
			if e.Op == TimerSet {
				w.timers = append(w.timers, *e)
			}
		case *DecisionEvent:
			d := *e
			w.decision = &d
		}
	}
}

// at returns when the next message arrives: mostly now, sometimes at no
// time or an hour late.
func (w *stepWalk) at() time.Time {
	switch w.rnd.IntN(10) {
	case 0:
		return time.Time{}
	case 1:
		return w.now.Add(time.Hour)
	}
	return w.now
}

// message returns a message from a peer: mostly one the state takes
// (less often one that ends the conversation), from its agent, in this
// conversation, sometimes not.
func (w *stepWalk) message() *forms.Message {
	m := &forms.Message{ConversationID: "c1", Receivers: []string{"me"}, ReplyWith: fmt.Sprintf("r%d", w.rnd.IntN(4))}
	var f *forms.Form
	if st := w.fast.sessions[0].state; st >= 0 && len(w.prog.states[st].recvs) > 0 && w.rnd.IntN(5) > 0 {
		recvs := w.prog.states[st].recvs
		t := &recvs[w.rnd.IntN(len(recvs))]
		if w.prog.states[t.next].terminal && w.rnd.IntN(4) > 0 {
			t = &recvs[w.rnd.IntN(len(recvs))] // the conversation goes on longer
		}
		f = t.form
		m.Sender = w.pickAgent(t.peer)
	} else {
		f = w.prog.msgs[w.rnd.IntN(len(w.prog.msgs))].form
		m.Sender = w.pickAgent(w.rnd.IntN(len(w.prog.roles)))
	}
	m.Performative = f.Type.Performative
	m.Content = w.content(f)
	switch w.rnd.IntN(12) {
	case 0:
		m.Performative = "junk"
	case 1:
		m.ConversationID = "c2"
	case 2:
		m.ConversationID = ""
	case 3:
		m.Sender = "stranger"
	}
	switch r := w.rnd.IntN(8); {
	case r < 3 && len(w.replies) > 0:
		m.InReplyTo = w.replies[w.rnd.IntN(len(w.replies))]
	case r == 3:
		m.InReplyTo = "c1/me#99"
	case r == 4:
		m.InReplyTo = "elsewhere"
	}
	if w.rnd.IntN(4) == 0 {
		m.ReplyBy = w.now.Add(time.Duration(w.rnd.IntN(120)) * time.Second)
	}
	if w.rnd.IntN(2) == 0 {
		// As a message from another process: its strings are not the
		// very strings the handler holds (see sameString).
		m.ConversationID, m.Sender, m.Performative = strings.Clone(m.ConversationID), strings.Clone(m.Sender), strings.Clone(m.Performative)
	}
	return m
}

// pickAgent returns an agent bound to role r, or one of its agents
// before it is bound.
func (w *stepWalk) pickAgent(r int) string {
	if a := w.agents[r]; len(a) > 0 {
		return a[w.rnd.IntN(len(a))]
	}
	return "me"
}

// sendForm returns the form of the message choice sends from the state
// decision d was raised in, or nil.
func (w *stepWalk) sendForm(d *DecisionEvent, choice string) *forms.Form {
	st, ok := w.prog.stateIndex[d.Request.Point]
	if !ok {
		return nil
	}
	for _, t := range w.prog.states[st].sends {
		if t.key == choice {
			return t.form
		}
	}
	return nil
}

// content returns content for form f (nil for none): mostly of its
// fields' types, with values on either side of the guards' literals,
// sometimes a field missing, of another type, an extra field or content
// over the limits.
func (w *stepWalk) content(f *forms.Form) map[string]any {
	c := map[string]any{}
	if f != nil {
		for _, fd := range f.Type.Fields {
			if fd.Optional && w.rnd.IntN(2) == 0 {
				continue
			}
			c[fd.Name] = w.value(fd.Type)
		}
	}
	keys := slices.Sorted(maps.Keys(c))
	switch w.rnd.IntN(16) {
	case 0:
		if len(keys) > 0 {
			c[keys[0]] = "wrong"
		}
	case 1:
		if len(keys) > 0 {
			delete(c, keys[0])
		}
	case 2:
		c["extra"] = 1
	case 3:
		c["nested"] = []any{[]any{[]any{math.Inf(1)}}}
	case 4:
		c["n"] = math.NaN()
	case 5:
		c["t"] = "x"
	}
	if len(c) == 0 && w.rnd.IntN(2) == 0 {
		return nil
	}
	return c
}

// value returns a value of type ft.
func (w *stepWalk) value(ft policy.FieldType) any {
	switch ft {
	case policy.TypeString:
		return []string{"x", "y", ""}[w.rnd.IntN(3)]
	case policy.TypeNumber:
		return []any{1.5, 0.0, -2, 12}[w.rnd.IntN(4)]
	case policy.TypeInt:
		return []any{0, 1, 9, 10, 11.0, int64(-3)}[w.rnd.IntN(6)]
	case policy.TypeBool:
		return w.rnd.IntN(2) == 0
	case policy.TypeTime:
		return w.now.Add(time.Minute).Format(time.RFC3339)
	case policy.TypeDuration:
		return time.Second
	case policy.TypeList:
		return []any{1, "a"}
	case policy.TypeMap:
		return map[string]any{"k": 1}
	}
	return "any"
}

// renderAll renders events for comparison.
func renderAll(events []Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = render(e)
	}
	return out
}

// render spells e with what its pointers point to, so that the events of
// two handlers compare equal when they say the same.
func render(e Event) string {
	switch e := e.(type) {
	case *MessageEvent:
		return fmt.Sprintf("message %v sent=%v %+v", e.At, e.Sent, *e.Message)
	case *ProtocolErrorEvent:
		c := *e
		c.Message = nil
		msg := "<nil>"
		if e.Message != nil {
			msg = fmt.Sprintf("%+v", *e.Message)
		}
		return fmt.Sprintf("error %+v of %s", c, msg)
	case *DecisionEvent:
		return fmt.Sprintf("decision %+v", *e)
	case *TimerEvent:
		return fmt.Sprintf("timer %+v", *e)
	case *CommitmentEvent:
		return fmt.Sprintf("commitment %+v", *e)
	case *LoadCPEvent:
		return fmt.Sprintf("load %+v", *e)
	case *CPDoneEvent:
		return fmt.Sprintf("done %+v", *e)
	}
	return fmt.Sprintf("%T", e)
}

// TestStepPolicyShapes pins what stepPolicy is for: the guarded
// receives of ask, the vars guard, the unguarded receives and those
// told apart by match rules are taken through step, which also reports
// a message no guard admits, and leaves one from a stranger to
// received.
func TestStepPolicyShapes(t *testing.T) {
	prog := compileB(t, stepPolicy)
	h, err := prog.NewHandler("c1", "b", WithPeers("A", "a"))
	require.NoError(t, err)
	var q Queue
	require.NoError(t, h.Start(time.Time{}, &q))
	msg := func(perf string, content map[string]any) *forms.Message {
		return &forms.Message{Performative: perf, Sender: "a", Receivers: []string{"b"}, ConversationID: "c1", Content: content}
	}
	tests := []struct {
		name string
		m    *forms.Message
		want string
	}{
		{"low", msg("request", map[string]any{"n": 3}), "s1"},
		{"tag with the vars guard", msg("inform", map[string]any{"t": "x"}), "s0"},
		{"high", msg("request", map[string]any{"n": 12}), "s1"},
		{"tag without", msg("inform", map[string]any{"t": "y"}), "s2"},
		{"ask unguarded", msg("request", map[string]any{"n": 0, "m": 0.5}), "s0"},
		{"low again", msg("request", map[string]any{"n": 3}), "s1"},
		{"note, matched by comparing a field", msg("inform", map[string]any{"k": 5}), "s0"},
		{"high again", msg("request", map[string]any{"n": 12}), "s1"},
		{"other, matched by two fields", msg("inform", map[string]any{"z": "a"}), "s2"},
		{"ask unguarded again", msg("request", map[string]any{"n": 0, "m": 0.5}), "s0"},
		{"low once more", msg("request", map[string]any{"n": 3}), "s1"},
		{"done, matched by a declared field's presence", msg("inform", map[string]any{"r": 1}), "end"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q.Reset()
			require.True(t, stepTakes(t, h, &MessageEvent{Message: tt.m}, &q), "step declined")
			assert.Equal(t, tt.want, h.State(""))
			for _, e := range q.Events() {
				assert.NotEqual(t, "*engine.ProtocolErrorEvent", fmt.Sprintf("%T", e))
			}
		})
	}
	h, err = prog.NewHandler("c1", "b", WithPeers("A", "a"))
	require.NoError(t, err)
	q.Reset()
	require.NoError(t, h.Start(time.Time{}, &q))
	q.Reset()
	require.True(t, stepTakes(t, h, &MessageEvent{Message: msg("request", map[string]any{"n": 0})}, &q), "a request no guard admits")
	require.Equal(t, 1, q.Len(), "events of a message no transition takes")
	pe, ok := q.Events()[0].(*ProtocolErrorEvent)
	require.True(t, ok, "%T, want a protocol error", q.Events()[0])
	assert.Equal(t, CodeUnexpected, pe.Code)
	assert.Equal(t, "s0", h.State(""), "the state after an unexpected message")
	q.Reset()
	stranger := msg("request", map[string]any{"n": 3})
	stranger.Sender = "z"
	assert.False(t, stepTakes(t, h, &MessageEvent{Message: stranger}, &q), "a request from an agent A is not played by")
	assert.Zero(t, q.Len(), "events of a declined step")
	assert.Equal(t, "s0", h.State(""), "the state after a declined step")
}

// TestShortKey checks that strings of 4 to 8 bytes have the same key
// exactly when they are equal, whichever byte differs, and that other
// lengths have no key.
func TestShortKey(t *testing.T) {
	tests := []struct {
		name string
		s    string
		key  bool
	}{
		{"empty", "", false},
		{"three bytes", "ask", false},
		{"four bytes", "stop", true},
		{"six bytes", "inform", true},
		{"seven bytes", "request", true},
		{"eight bytes", "call-for", true},
		{"nine bytes", "subscribe", false},
		{"zero bytes within", "\x00\x00\x00\x00", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := shortKey(tt.s)
			assert.Equal(t, tt.key, key != [2]uint32{}, "has a key")
			if !tt.key {
				return
			}
			for i := range len(tt.s) {
				b := []byte(tt.s)
				b[i]++
				assert.NotEqual(t, key, shortKey(string(b)), "byte %d changed", i)
			}
			assert.Equal(t, key, shortKey(strings.Clone(tt.s)), "a copy")
		})
	}
}

// byPerfPolicy has receives told apart by performative alone, of
// performatives with a key (perfKey64) and without: shorter than four
// bytes, longer than eight.
const byPerfPolicy = `policy: by-perf
version: 1
roles: [A, B]
messages: {ask: cfp, huh: not-understood, tell: inform, stop: cancel}
states:
  s0:
    - {send: tell, from: A, to: B, next: s0}
    - {send: ask, from: A, to: B, next: s1}
    - {send: huh, from: A, to: B, next: s2}
  s1:
    - {send: stop, from: A, to: B, next: end}
    - {send: huh, from: A, to: B, next: s0}
  s2:
    - {send: tell, from: A, to: B, next: s1}
  end: {terminal: done}
`

// TestPlanSteps checks what planSteps compiles: the states whose
// receives are told apart by performative alone, the order classifying
// considers the others' in, and for each performative its first receive
// and, when that has a match rule or a guard, all of them in that order.
func TestPlanSteps(t *testing.T) {
	tests := []struct {
		name, src, state string
		byPerf           bool
		perfs            []string  // perfRecvs' performatives
		recvs            [][]int32 // and their receives, nil for the first alone
		order            []int32   // recvOrder, unless byPerf
	}{
		{"by performative", byPerfPolicy, "s0", true, []string{"inform", "cfp", "not-understood"}, [][]int32{nil, nil, nil}, nil},
		{"by performative, another state", byPerfPolicy, "s1", true, []string{"cancel", "not-understood"}, [][]int32{nil, nil}, nil},
		{"guards", stepPolicy, "s0", false, []string{"request", "cancel"}, [][]int32{{0, 1}, nil}, []int32{0, 1, 2}},
		{"match rules first", stepPolicy, "s1", false, []string{"inform"}, [][]int32{{2, 3, 4, 0, 1}}, []int32{2, 3, 4, 0, 1}},
		{"guards after a receive without", stepPolicy, "s2", false, []string{"request", "cancel"}, [][]int32{{0, 1, 2}, nil}, []int32{0, 1, 2, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prog := compileB(t, tt.src)
			sp := &prog.states[prog.stateIndex[tt.state]]
			assert.Equal(t, tt.byPerf, sp.byPerf, "byPerf")
			var perfs []string
			var recvs [][]int32
			for _, r := range sp.perfRecvs {
				perfs = append(perfs, r.t.perf)
				recvs = append(recvs, r.recvs)
				assert.Equal(t, perfKey64(r.t.perf), r.key, "key of %s", r.t.perf)
				assert.Equal(t, len(r.t.perf), r.n, "length of %s", r.t.perf)
			}
			assert.Equal(t, tt.perfs, perfs, "perfRecvs")
			assert.Equal(t, tt.recvs, recvs, "perfRecvs' receives")
			if !tt.byPerf {
				assert.Equal(t, tt.order, sp.recvOrder, "recvOrder")
			}
		})
	}
}

// TestStepByPerf checks that step takes the receive of a message's
// performative in a byPerf state, whether the performative has a key
// or not, and reports one no receive of the state has.
func TestStepByPerf(t *testing.T) {
	h, err := compileB(t, byPerfPolicy).NewHandler("c1", "b", WithPeers("A", "a"))
	require.NoError(t, err)
	var q Queue
	require.NoError(t, h.Start(time.Time{}, &q))
	tests := []struct {
		name, perf, want string
		code             ErrorCode // of the protocol error step reports, if any
	}{
		{"a key", "inform", "s0", ""},
		{"shorter than a key", "cfp", "s1", ""},
		{"longer than a key", "not-understood", "s0", ""},
		{"longer again", "not-understood", "s2", ""},
		{"of no receive of the state", "cancel", "s2", CodeUnexpected},
		{"of the same length as one", "inforn", "s2", CodeUnexpected},
		{"a key again", "inform", "s1", ""},
		{"the last", "cancel", "end", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q.Reset()
			m := &forms.Message{Performative: tt.perf, Sender: "a", Receivers: []string{"b"}, ConversationID: "c1"}
			require.True(t, stepTakes(t, h, &MessageEvent{Message: m}, &q), "step declined")
			assert.Equal(t, tt.want, h.State(""))
			var codes []ErrorCode
			for _, e := range q.Events() {
				if pe, ok := e.(*ProtocolErrorEvent); ok {
					codes = append(codes, pe.Code)
				}
			}
			if tt.code == "" {
				assert.Empty(t, codes, "protocol errors")
			} else {
				assert.Equal(t, []ErrorCode{tt.code}, codes, "protocol errors")
			}
		})
	}
}

// compileB compiles the policy of YAML src for role B.
func compileB(t *testing.T, src string) *Program {
	t.Helper()
	p, ds := policy.LoadYAML("p.yaml", []byte(src))
	require.False(t, ds.HasErrors(), "%v", ds)
	prog, ds := Compile(p, "B")
	require.NotNil(t, prog, "%v", ds)
	return prog
}

// plainPolicy is the benchmarks' ping-pong: every state of B's is plain
// (see stateProg), every receive plain.
const plainPolicy = `policy: ping-pong
version: 1
roles: [A, B]
messages: {ping: request, pong: inform, stop: cancel}
states:
  s0:
    - {send: ping, from: A, to: B, next: s1}
    - {send: stop, from: A, to: B, next: end}
  s1:
    - {send: pong, from: A, to: B, next: s0}
  end: {terminal: done}
`

// TestStepPlain checks step in a plain state, which it decides itself
// for a message without content or in-reply-to whose conversation id
// and sender are the very strings the handler holds, and leaves to
// stepChecked otherwise: a message whose strings are copies is taken
// all the same, one of another conversation or agent is declined, one
// with content or in reply to a message is checked as received does.
func TestStepPlain(t *testing.T) {
	conv, agent := "conv-1", "a"
	prog := compileB(t, plainPolicy)
	for k := range prog.states {
		assert.Equal(t, !prog.states[k].terminal, prog.states[k].plain, "state %s", prog.states[k].name)
	}
	h, err := prog.NewHandler(conv, "b")
	require.NoError(t, err)
	var q Queue
	require.NoError(t, h.Start(time.Time{}, &q))
	msg := func(perf, conv, sender string) *forms.Message {
		return &forms.Message{Performative: perf, Sender: sender, Receivers: []string{"b"}, ConversationID: conv}
	}
	tests := []struct {
		name  string
		m     *forms.Message
		take  bool
		state string
		code  ErrorCode // of the protocol error step reports, if any
	}{
		{"the first, which binds A", msg("request", conv, agent), true, "s1", ""},
		{"the very strings", msg("inform", conv, agent), true, "s0", ""},
		{"copies of them", msg(strings.Clone("request"), strings.Clone(conv), strings.Clone(agent)), true, "s1", ""},
		{"no conversation id", msg("inform", "", agent), true, "s0", ""},
		{"another conversation of the same length", msg("request", "conv-2", agent), false, "s0", ""},
		{"another conversation", msg("request", "c2", agent), false, "s0", ""},
		{"another agent", msg("request", conv, "z"), false, "s0", ""},
		{"another agent of the same length", msg("request", conv, "b"), false, "s0", ""},
		{"of no receive of the state", msg("agree", conv, agent), true, "s0", CodeUnexpected},
		{"with content", &forms.Message{Performative: "request", Sender: agent, ConversationID: conv, Content: map[string]any{"x": 1}}, true, "s1", ""},
		{"in reply to a message, none sent yet", &forms.Message{Performative: "inform", Sender: agent, ConversationID: conv, InReplyTo: "r9"}, true, "s0", ""},
		{"content over the limits", &forms.Message{Performative: "request", Sender: agent, ConversationID: conv, Content: map[string]any{"x": math.NaN()}}, false, "s0", ""},
		{"the last", msg("cancel", conv, agent), true, "end", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q.Reset()
			assert.Equal(t, tt.take, stepTakes(t, h, &MessageEvent{Message: tt.m}, &q), "taken")
			assert.Equal(t, tt.state, h.State(""))
			var codes []ErrorCode
			for _, e := range q.Events() {
				if pe, ok := e.(*ProtocolErrorEvent); ok {
					codes = append(codes, pe.Code)
				}
			}
			if tt.code == "" {
				assert.Empty(t, codes)
			} else {
				assert.Equal(t, []ErrorCode{tt.code}, codes)
			}
		})
	}
}

// TestSameStringIsEquality compares sameString with == on strings of
// every length up to 40: the same memory, equal in other memory, and
// differing in each byte, and strings of other lengths.
func TestSameStringIsEquality(t *testing.T) {
	const text = "conversation-0123456789/agent-abcdefghij"
	for n := range len(text) + 1 {
		a := text[:n]
		assert.True(t, sameString(a, a), "%q against itself", a)
		assert.True(t, sameString(a, strings.Clone(a)), "%q against a copy", a)
		for k := range n {
			c := []byte(a)
			c[k] ^= 0x20
			assert.False(t, sameString(a, string(c)), "%q against %q", a, c)
		}
		if n > 0 {
			assert.False(t, sameString(a, a[:n-1]), "%q against %q", a, a[:n-1])
			assert.False(t, sameString(a[:n-1], a), "%q against %q", a[:n-1], a)
		}
	}
}

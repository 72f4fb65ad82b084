package engine_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policy"
)

// multipartyDir holds the textbook multiparty protocols.
const multipartyDir = "../testdata/policies/multiparty"

// multipartyPolicy loads the textbook protocol name, a file under
// multipartyDir.
func multipartyPolicy(tb testing.TB, name string) *policy.Policy {
	tb.Helper()
	file := filepath.Join(multipartyDir, name+".yaml")
	src, err := os.ReadFile(file)
	require.NoError(tb, err)
	p, ds := policy.Load(filepath.Base(file), src)
	require.Empty(tb, ds)
	return p
}

// multipartyProgram compiles the textbook protocol name for role.
func multipartyProgram(tb testing.TB, name, role string) *engine.Program {
	tb.Helper()
	pr, ds := engine.Compile(multipartyPolicy(tb, name), role)
	require.NotNil(tb, pr, "compile %s as %s: %v", name, role, ds)
	return pr
}

// agentOf names the agent that plays role in the textbook tests.
func agentOf(role string) string { return strings.ToLower(role) }

// newMultipartyHandler returns a handler of pr, not started, with every
// other role bound to its agent.
func newMultipartyHandler(tb testing.TB, pr *engine.Program) *engine.Handler {
	tb.Helper()
	var opts []engine.HandlerOption
	for _, r := range pr.Policy().Roles {
		if r.Name != pr.Role() {
			opts = append(opts, engine.WithPeers(r.Name, agentOf(r.Name)))
		}
	}
	h, err := pr.NewHandler(convID, agentOf(pr.Role()), opts...)
	require.NoError(tb, err)
	return h
}

// multipartyHandler returns a started handler of the textbook protocol
// name as role.
func multipartyHandler(tb testing.TB, name, role string) *engine.Handler {
	tb.Helper()
	h := newMultipartyHandler(tb, multipartyProgram(tb, name, role))
	var q engine.Queue
	require.NoError(tb, h.Start(t0, &q))
	return h
}

// from is a message of the textbook tests: performative perf from role's
// agent, with content.
func from(role, perf string, content map[string]any) *forms.Message {
	return &forms.Message{Performative: perf, Sender: agentOf(role), ConversationID: convID, Content: content}
}

// feedAll processes each message in turn and returns the codes and
// reasons of the protocol errors, one "code: reason" line each.
func feedAll(t *testing.T, h *engine.Handler, msgs ...*forms.Message) []string {
	t.Helper()
	var errs []string
	for _, m := range msgs {
		var q engine.Queue
		require.NoError(t, h.Process(&engine.MessageEvent{At: t0, Message: m}, &q))
		errs = append(errs, protocolErrors(q.Events())...)
	}
	return errs
}

func protocolErrors(events []engine.Event) []string {
	var out []string
	for _, e := range events {
		if pe, ok := e.(*engine.ProtocolErrorEvent); ok {
			out = append(out, string(pe.Code)+": "+pe.Reason)
		}
	}
	return out
}

var (
	quote = func(price int) *forms.Message {
		return from("Seller", "inform", map[string]any{"price": price})
	}
	share = func(amount int) *forms.Message {
		return from("Buyer1", "propose", map[string]any{"amount": amount})
	}
)

// TestHoldEarlyMessages runs Buyer2 of Two-Buyer: Buyer1's share may
// arrive before the Seller's quote, which Buyer2 takes first.
func TestHoldEarlyMessages(t *testing.T) {
	tests := []struct {
		name string
		msgs []*forms.Message
		// held is how many messages are held at the end; state is
		// Buyer2's state then.
		held  int
		state string
		want  []string
	}{
		{name: "in order", msgs: []*forms.Message{quote(10), share(4)}, state: "shared"},
		{name: "the share before the quote is held, then taken", msgs: []*forms.Message{share(4)}, held: 1, state: "start|asked|quoted1"},
		{name: "a held share is taken after the quote", msgs: []*forms.Message{share(4), quote(10)}, state: "shared"},
		{
			name:  "a message no reachable state takes is refused at once",
			msgs:  []*forms.Message{from("Buyer1", "agree", nil)},
			state: "start|asked|quoted1",
			want:  []string{`PE001: unexpected "agree" from "buyer1": state "start|asked|quoted1" allows quote from Seller`},
		},
		{
			name:  "a message its sender sends only after this role has sent it something is refused at once",
			msgs:  []*forms.Message{quote(10), share(4), from("Seller", "inform", map[string]any{"date": "monday"})},
			state: "shared",
			want:  []string{`PE001: unexpected inform from "seller": state "shared" expects no message: Buyer2 sends next`},
		},
		{
			name:  "an unknown agent's share is not held",
			msgs:  []*forms.Message{{Performative: "propose", Sender: "mallory", ConversationID: convID, Content: map[string]any{"amount": 1}}},
			state: "start|asked|quoted1",
			want:  []string{`PE001: unexpected propose from "mallory": state "start|asked|quoted1" allows quote from Seller`},
		},
		{
			name:  "held messages no state takes any more are reported when the role moves on",
			msgs:  []*forms.Message{share(1), share(2), quote(10)},
			state: "shared",
			want:  []string{`PE001: unexpected propose from "buyer1": state "shared" expects no message: Buyer2 sends next`},
		},
		{
			name: "the held messages are bounded",
			msgs: append(slices.Repeat([]*forms.Message{share(1)}, engine.MaxHeld), share(2)),
			held: engine.MaxHeld, state: "start|asked|quoted1",
			want: []string{fmt.Sprintf(`PE001: propose from "buyer1" cannot be taken in state "start|asked|quoted1" yet, and %d messages are held already, the most a handler holds; state "start|asked|quoted1" allows quote from Seller`, engine.MaxHeld)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := multipartyHandler(t, "two-buyer", "Buyer2")
			got := feedAll(t, h, tc.msgs...)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.held, h.Held())
			assert.Equal(t, tc.state, h.State(""))
		})
	}
}

// TestHeldMessageWhenTheConversationEnds checks that a message still held
// when the conversation ends, or is aborted, is reported then.
func TestHeldMessageWhenTheConversationEnds(t *testing.T) {
	t.Run("ended", func(t *testing.T) {
		// The Service takes the Customer's payment only after the
		// Agency's yes; the Agency says no instead.
		h := multipartyHandler(t, "travel-agency", "Service")
		got := feedAll(t, h, from("Customer", "inform", map[string]any{"card": "4242"}))
		require.Empty(t, got)
		require.Equal(t, 1, h.Held())
		got = feedAll(t, h, from("Agency", "reject-proposal", nil))
		assert.Equal(t, []string{`PE001: inform from "customer" was held for a later state, but the conversation ended with outcome "declined" first`}, got)
		assert.Zero(t, h.Held())
		assert.True(t, h.Done())
	})
	t.Run("aborted", func(t *testing.T) {
		h := multipartyHandler(t, "two-buyer", "Buyer2")
		require.Empty(t, feedAll(t, h, share(4)))
		var q engine.Queue
		require.NoError(t, h.Abort(t0, "send failed", &q))
		assert.Equal(t, []string{`PE005: propose from "buyer1" was held for a later state, but the conversation was aborted first`}, protocolErrors(q.Events()))
		assert.Zero(t, h.Held())
	})
}

// TestSnapshotKeepsHeldMessages checks that a snapshot taken while a
// message is held restores into a handler that delivers it.
func TestSnapshotKeepsHeldMessages(t *testing.T) {
	h := multipartyHandler(t, "two-buyer", "Buyer2")
	require.Empty(t, feedAll(t, h, share(4)))
	data, err := h.Snapshot()
	require.NoError(t, err)
	back, err := h.Program().Restore(data)
	require.NoError(t, err)
	assert.Equal(t, 1, back.Held())
	require.Empty(t, feedAll(t, back, quote(10)))
	assert.Equal(t, "shared", back.State(""))
	assert.Zero(t, back.Held())
}

// TestRestoreChecksHeldMessages edits the held messages of a snapshot
// into ones the restored handler would not hold.
func TestRestoreChecksHeldMessages(t *testing.T) {
	h := multipartyHandler(t, "two-buyer", "Buyer2")
	require.Empty(t, feedAll(t, h, share(4)))
	data, err := engine.JSONSnapshot(h)
	require.NoError(t, err)
	tests := []struct {
		name string
		edit func(sn map[string]any, held map[string]any)
		want string
	}{
		{"no sender", func(_, m map[string]any) { delete(m, "sender") }, "held message 0: no sender or no performative"},
		{"another conversation", func(_, m map[string]any) { m["conversation_id"] = "other" }, `held message 0: it is of conversation "other", not "c1"`},
		{"what the state takes now", func(_, m map[string]any) { m["sender"], m["performative"] = "seller", "inform" }, `held message 0: state "start|asked|quoted1" takes inform from "seller" now`},
		{"what no state takes", func(_, m map[string]any) { m["performative"] = "agree" }, `held message 0: no state reachable from "start|asked|quoted1" takes "agree" from "buyer1"`},
		{"content beyond the limits", func(_, m map[string]any) {
			m["content"] = map[string]any{"amount": strings.Repeat("x", forms.DefaultLimits.MaxBytes+1)}
		}, "held message 0: "},
		{"more than MaxHeld", func(sn, m map[string]any) { sn["held"] = slices.Repeat([]any{m}, engine.MaxHeld+1) }, fmt.Sprintf("%d held messages, more than MaxHeld (%d)", engine.MaxHeld+1, engine.MaxHeld)},
		{"in a conversation that is done", func(sn, _ map[string]any) { sn["done"] = true }, "done is true"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sn := map[string]any{}
			require.NoError(t, json.Unmarshal(data, &sn))
			tc.edit(sn, sn["held"].([]any)[0].(map[string]any))
			edited, err := json.Marshal(sn)
			require.NoError(t, err)
			back, err := h.Program().Restore(edited)
			require.Error(t, err)
			assert.Nil(t, back)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	t.Run("a role with one peer holds nothing", func(t *testing.T) {
		sn := map[string]any{}
		require.NoError(t, json.Unmarshal(data, &sn))
		pr := program(t, "fipa-request", "Participant")
		other, err := pr.NewHandler(convID, "bob")
		require.NoError(t, err)
		var q engine.Queue
		require.NoError(t, other.Start(t0, &q))
		base, err := engine.JSONSnapshot(other)
		require.NoError(t, err)
		target := map[string]any{}
		require.NoError(t, json.Unmarshal(base, &target))
		target["held"] = sn["held"]
		edited, err := json.Marshal(target)
		require.NoError(t, err)
		_, err = pr.Restore(edited)
		assert.ErrorContains(t, err, "held messages for a role that holds none")
	})
}

// channel is a FIFO channel of the interleaving test: the messages one
// agent sent another, not yet delivered.
type channel struct {
	from, to string
	steps    []engine.Step
}

// runResult is what one interleaving of a textbook conversation ended
// with.
type runResult struct {
	outcomes map[string]string
	errors   []string
	// options[k] is how many steps were open at the k-th step.
	options []int
	held    bool
}

// runInterleaving runs the textbook protocol name between one agent per
// role. At the k-th step it takes the schedule[k]-th of the steps open
// (the first past the schedule's end): delivering the message at the head
// of a channel, or answering a pending decision. Each agent's decisions
// follow choices: at a decision point with more than one choice, the role
// takes the next choice of its list.
func runInterleaving(t *testing.T, name string, choices map[string][]string, contents map[string]map[string]any, schedule []int) runResult {
	t.Helper()
	res := runResult{outcomes: map[string]string{}}
	used := map[string]int{}
	answer := func(req *decision.Request) decision.Answer {
		choice := req.Choices[0]
		if len(req.Choices) > 1 {
			list := choices[req.Role]
			require.Less(t, used[req.Role], len(list), "%s has no choice left at %s", req.Role, req.Point)
			choice = list[used[req.Role]]
			used[req.Role]++
		}
		return decision.Answer{Choice: choice, Content: contents[choice]}
	}
	d := engine.NewDriver(t0, engine.WithObserver(func(s engine.Step) {
		if pe, ok := s.Event.(*engine.ProtocolErrorEvent); ok {
			res.errors = append(res.errors, s.Agent+": "+string(pe.Code)+": "+pe.Reason)
		}
	}))
	var agents []string
	for _, r := range multipartyPolicy(t, name).Roles {
		require.NoError(t, d.Add(newMultipartyHandler(t, multipartyProgram(t, name, r.Name))))
		agents = append(agents, agentOf(r.Name))
	}
	for _, a := range agents {
		require.NoError(t, d.Start(a, convID))
	}
	var chans []*channel
	for k := 0; ; k++ {
		for _, s := range d.TakeInFlight() {
			m := s.Event.(*engine.MessageEvent).Message
			i := slices.IndexFunc(chans, func(c *channel) bool { return c.from == m.Sender && c.to == s.To })
			if i < 0 {
				chans = append(chans, &channel{from: m.Sender, to: s.To})
				i = len(chans) - 1
			}
			chans[i].steps = append(chans[i].steps, s)
		}
		var ready []*channel
		for _, c := range chans {
			if len(c.steps) > 0 {
				ready = append(ready, c)
			}
		}
		slices.SortFunc(ready, func(a, b *channel) int { return cmp.Or(cmp.Compare(a.from, b.from), cmp.Compare(a.to, b.to)) })
		// The next step is a delivery or the answer to a pending
		// decision: a role may decide before or after a message reaches
		// it.
		pending := d.Pending()
		n := len(ready) + len(pending)
		if n == 0 {
			break
		}
		res.options = append(res.options, n)
		pick := 0
		if k < len(schedule) {
			pick = schedule[k]
		}
		if pick < len(ready) {
			c := ready[pick]
			s := c.steps[0]
			c.steps = c.steps[1:]
			require.NoError(t, d.Process(s.To, convID, s.Event))
		} else {
			p := pending[pick-len(ready)]
			require.NoError(t, d.Answer(p.Agent, p.Conversation, p.Ticket, answer(&p.Request)))
		}
		for _, h := range d.Handlers() {
			res.held = res.held || h.Held() > 0
		}
	}
	for k, h := range d.Handlers() {
		res.outcomes[k.Agent] = h.Outcome("")
		if !h.Done() {
			res.errors = append(res.errors, fmt.Sprintf("%s: not done, in state %s", k.Agent, h.State("")))
		}
	}
	return res
}

// TestTextbookProtocolsInEveryInterleaving runs each textbook protocol
// with its messages delivered in every order the channels allow (each
// channel, one sender to one receiver, is FIFO) and requires the same
// outcomes, and no protocol error, in every one.
func TestTextbookProtocolsInEveryInterleaving(t *testing.T) {
	contents := map[string]map[string]any{
		"title": {"title": "War and Peace"}, "quote": {"price": 30}, "share": {"amount": 10},
		"rest": {"amount": 20}, "ok": {"address": "1 Main St"}, "date": {"date": "2026-03-02"},
		"query": {"journey": "Paris"}, "payment": {"card": "4242"},
	}
	tests := []struct {
		name    string
		policy  string
		choices map[string][]string
		want    map[string]string
		// held says whether some interleaving holds a message.
		held bool
	}{
		{"Two-Buyer, bought", "two-buyer", map[string][]string{"Buyer2": {"ok"}},
			map[string]string{"buyer1": "bought|quit", "buyer2": "bought", "seller": "bought"}, true},
		{"Two-Buyer, quit", "two-buyer", map[string][]string{"Buyer2": {"quit"}},
			map[string]string{"buyer1": "bought|quit", "buyer2": "quit", "seller": "quit"}, true},
		{"Three-Buyer, accepted", "three-buyer", map[string][]string{"Carol": {"accept"}},
			map[string]string{"alice": "bought|quit", "bob": "bought", "carol": "bought", "seller": "bought"}, true},
		{"Three-Buyer, declined", "three-buyer", map[string][]string{"Carol": {"decline"}},
			map[string]string{"alice": "bought|quit", "bob": "quit", "carol": "quit", "seller": "quit"}, true},
		{"Two-Buyer with timers, bought", "two-buyer-timed", map[string][]string{"Buyer2": {"ok"}},
			map[string]string{"buyer1": "bought|quit|timeout", "buyer2": "bought", "seller": "bought"}, true},
		{"Travel Agency, a quote then booked", "travel-agency", map[string][]string{"Customer": {"query", "yes"}},
			map[string]string{"customer": "booked", "agency": "booked", "service": "booked"}, true},
		{"Travel Agency, one quote then declined", "travel-agency", map[string][]string{"Customer": {"query", "no"}},
			map[string]string{"customer": "declined", "agency": "declined", "service": "declined"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runs, held := 0, false
			// Enumerate the schedules like an odometer: run one, then
			// advance the last delivery that had another option left.
			for schedule := []int{}; ; runs++ {
				require.Less(t, runs, 10000, "too many interleavings")
				res := runInterleaving(t, tc.policy, tc.choices, contents, schedule)
				require.Empty(t, res.errors, "schedule %v", schedule)
				require.Equal(t, tc.want, res.outcomes, "schedule %v", schedule)
				held = held || res.held
				full := slices.Clone(schedule)
				for len(full) < len(res.options) {
					full = append(full, 0)
				}
				k := len(full) - 1
				for k >= 0 && full[k]+1 >= res.options[k] {
					k--
				}
				if k < 0 {
					break
				}
				schedule = append(full[:k], full[k]+1)
			}
			assert.Greater(t, runs, 1, "a single interleaving")
			assert.Equal(t, tc.held, held, "whether an interleaving held a message")
			t.Logf("%d interleavings", runs+1)
		})
	}
}

// TestInReplyToWithSeveralPeers is the regression test for replies in a
// conversation of three or more roles: a handler set in-reply-to from the
// last message received even when it came from another peer, and checked
// a reply against the last two messages sent to any peer, so the Seller
// of Two-Buyer refused Buyer2's answer with PE010.
func TestInReplyToWithSeveralPeers(t *testing.T) {
	var msgs []*forms.Message
	decide := decision.Func(func(_ context.Context, req *decision.Request) (decision.Answer, error) {
		contents := map[string]map[string]any{"title": {"title": "t"}, "quote": {"price": 3}, "share": {"amount": 1}, "ok": {"address": "a"}, "date": {"date": "d"}}
		return decision.Answer{Choice: req.Choices[0], Content: contents[req.Choices[0]]}, nil
	})
	d := engine.NewDriver(t0, engine.WithDecider(decide), engine.WithObserver(func(s engine.Step) {
		if me, ok := s.Event.(*engine.MessageEvent); ok && s.Kind == engine.StepInput {
			m := *me.Message // the driver reuses its messages
			m.Receivers = slices.Clone(m.Receivers)
			msgs = append(msgs, &m)
		}
	}))
	var seller *engine.Handler
	for _, r := range []string{"Buyer1", "Buyer2", "Seller"} {
		h := newMultipartyHandler(t, multipartyProgram(t, "two-buyer", r))
		require.NoError(t, d.Add(h))
		if r == "Seller" {
			seller = h
		}
	}
	for _, a := range []string{"seller", "buyer2", "buyer1"} {
		require.NoError(t, d.Start(a, convID))
	}
	require.NoError(t, d.Settle())
	// Each in-reply-to names a message its receiver sent its sender.
	sentTo := map[string][]string{}
	answered := 0
	for _, m := range msgs {
		if m.InReplyTo != "" {
			assert.Contains(t, sentTo[m.Receivers[0]+">"+m.Sender], m.InReplyTo, "%s from %s to %s", m.Performative, m.Sender, m.Receivers[0])
			answered++
		}
		sentTo[m.Sender+">"+m.Receivers[0]] = append(sentTo[m.Sender+">"+m.Receivers[0]], m.ReplyWith)
	}
	assert.Equal(t, 2, answered, "the Seller's quote answers Buyer1's title, its date Buyer2's ok")
	assert.Equal(t, "bought", seller.Outcome(""))

	t.Run("a reply to what the handler never sent", func(t *testing.T) {
		h := multipartyHandler(t, "two-buyer", "Seller")
		m := from("Buyer1", "request", map[string]any{"title": "t"})
		m.InReplyTo = convID + "/seller#7"
		assert.Equal(t, []string{`PE010: title from "buyer1" is in reply to "c1/seller#7", which "seller" never sent`}, feedAll(t, h, m))
	})
}

var (
	multipartyMu       sync.Mutex
	multipartyPrograms = map[[2]string]*engine.Program{}
)

// restoreProgram is the program FuzzRestore restores into: a shipped
// policy's, or a textbook protocol's, compiled once.
func restoreProgram(tb testing.TB, name, role string) *engine.Program {
	tb.Helper()
	if _, err := os.Stat(filepath.Join(multipartyDir, name+".yaml")); err != nil {
		return program(tb, name, role)
	}
	multipartyMu.Lock()
	defer multipartyMu.Unlock()
	key := [2]string{name, role}
	if pr, ok := multipartyPrograms[key]; ok {
		return pr
	}
	pr := multipartyProgram(tb, name, role)
	multipartyPrograms[key] = pr
	return pr
}

// holdSeeds are FuzzRestore inputs for the textbook target: snapshots of
// Buyer2 of Two-Buyer holding no message, one and MaxHeld, after taking
// them, and edits of the held messages that Restore must refuse.
func holdSeeds(tb testing.TB) []restoreSeed {
	target := uint8(slices.IndexFunc(restoreTargets, func(t struct{ policy, role string }) bool { return t.policy == "two-buyer" }))
	var out []restoreSeed
	for _, msgs := range [][]*forms.Message{
		nil,
		{share(4)},
		slices.Repeat([]*forms.Message{share(1)}, engine.MaxHeld),
		{share(4), quote(10)},
		{quote(10), share(4)},
	} {
		h := multipartyHandler(tb, "two-buyer", "Buyer2")
		for _, m := range msgs {
			var q engine.Queue
			if err := h.Process(&engine.MessageEvent{At: t0, Message: m}, &q); err != nil {
				tb.Fatal(err)
			}
		}
		data, err := engine.JSONSnapshot(h)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, restoreSeed{target, data})
		if h.Held() == 0 {
			continue
		}
		for _, edit := range []func(sn map[string]any, held []any){
			func(_ map[string]any, held []any) { held[0].(map[string]any)["performative"] = "agree" },
			func(_ map[string]any, held []any) { held[0].(map[string]any)["sender"] = "seller" },
			func(_ map[string]any, held []any) {
				held[0].(map[string]any)["content"] = map[string]any{"amount": "x"}
			},
			func(_ map[string]any, held []any) { held[0].(map[string]any)["at"] = "yesterday" },
			func(sn map[string]any, held []any) { sn["held"] = append(held, held...) },
			func(sn map[string]any, _ []any) { sn["done"] = true },
		} {
			var sn map[string]any
			if err := json.Unmarshal(data, &sn); err != nil {
				tb.Fatal(err)
			}
			edit(sn, sn["held"].([]any))
			mutated, err := json.Marshal(sn)
			if err != nil {
				tb.Fatal(err)
			}
			out = append(out, restoreSeed{target, mutated})
		}
	}
	return out
}

// TestTimersBelongToTheRolesThatRunThem checks that a handler arms only
// the timers of the states its role takes part in: Buyer2 of Two-Buyer
// with timers waits for its quote under quote2-by, and does not arm
// quote1-by, the Seller's and Buyer1's.
func TestTimersBelongToTheRolesThatRunThem(t *testing.T) {
	for _, tc := range []struct {
		role string
		want []string
	}{
		{"Buyer2", []string{"quote2-by"}},
		{"Seller", []string{}},
	} {
		t.Run(tc.role, func(t *testing.T) {
			h := newMultipartyHandler(t, multipartyProgram(t, "two-buyer-timed", tc.role))
			var q engine.Queue
			require.NoError(t, h.Start(t0, &q))
			got := []string{}
			for _, e := range q.Events() {
				if te, ok := e.(*engine.TimerEvent); ok && te.Op == engine.TimerSet {
					got = append(got, te.Name)
				}
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestReplyCrossingTheDeadline runs Two-Buyer with timers until Buyer2
// answers the Seller, holds that answer in flight past the deadline of
// the Seller's wait, and then delivers it: the Seller's clock has fired,
// so the answer is a late reply (PE004), and each role ends by its own
// clock.
func TestReplyCrossingTheDeadline(t *testing.T) {
	contents := map[string]map[string]any{"title": {"title": "t"}, "quote": {"price": 3}, "share": {"amount": 1}, "ok": {"address": "a"}}
	decide := decision.Func(func(_ context.Context, req *decision.Request) (decision.Answer, error) {
		return decision.Answer{Choice: req.Choices[0], Content: contents[req.Choices[0]]}, nil
	})
	var errs []string
	d := engine.NewDriver(t0, engine.WithDecider(decide), engine.WithObserver(func(s engine.Step) {
		if pe, ok := s.Event.(*engine.ProtocolErrorEvent); ok {
			errs = append(errs, s.Agent+": "+string(pe.Code)+": "+pe.Reason)
		}
	}))
	for _, r := range []string{"Buyer1", "Buyer2", "Seller"} {
		require.NoError(t, d.Add(newMultipartyHandler(t, multipartyProgram(t, "two-buyer-timed", r))))
	}
	for _, a := range []string{"seller", "buyer2", "buyer1"} {
		require.NoError(t, d.Start(a, convID))
	}
	var answer *engine.Step
	for steps := d.TakeInFlight(); len(steps) > 0; steps = d.TakeInFlight() {
		for k := range steps {
			if m := steps[k].Event.(*engine.MessageEvent).Message; m.Performative == "accept-proposal" {
				answer = &steps[k]
				continue
			}
			require.NoError(t, d.Process(steps[k].To, convID, steps[k].Event))
		}
	}
	require.NotNil(t, answer, "Buyer2 answered")
	require.Equal(t, "quoted2|shared|timed-out", d.Handler("seller", convID).State(""))
	require.NoError(t, d.AdvanceTo(t0.Add(31*time.Second)))
	require.NoError(t, d.Process(answer.To, convID, answer.Event))
	assert.Equal(t, []string{`seller: PE004: ok from "buyer2" is late: state "quoted2|shared|timed-out" timed out and the conversation ended with outcome "timeout"`}, errs)
	got := map[string]string{}
	for k, h := range d.Handlers() {
		got[k.Agent] = h.Outcome("")
	}
	assert.Equal(t, map[string]string{"buyer1": "bought|quit|timeout", "buyer2": "timeout", "seller": "timeout"}, got)
}

// TestOpensWithAnEarlyMessage checks that a message the initial state
// would hold opens a conversation: Buyer1's share may be the first
// message Buyer2 hears of it.
func TestOpensWithAnEarlyMessage(t *testing.T) {
	pr := multipartyProgram(t, "two-buyer", "Buyer2")
	for _, tc := range []struct {
		name string
		m    *forms.Message
		want bool
	}{
		{"the quote it takes first", quote(10), true},
		{"the share it holds", share(4), true},
		{"a message no state takes", from("Buyer1", "agree", nil), false},
		{"any inform from the Seller, of the quote's form", from("Seller", "inform", map[string]any{"date": "d"}), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, pr.Opens(tc.m))
		})
	}
	assert.False(t, program(t, "fipa-request", "Participant").Opens(&forms.Message{Performative: "cancel", Sender: "alice"}), "a role with one peer opens only with what its initial state takes")
}

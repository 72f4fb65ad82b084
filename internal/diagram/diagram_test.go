package diagram

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/policy"
)

func TestMermaidIDs(t *testing.T) {
	nodes := []node{{name: "timed-out"}, {name: "timed_out"}, {name: "default"}, {name: "a|b"}, {name: "state"}, {name: "timed.out"}}
	assert.Equal(t, []string{"s_timed_out", "s_timed_out_2", "s_default", "s_a_b", "s_state", "s_timed_out_3"}, mermaidIDs(nodes))
}

func TestMermaidText(t *testing.T) {
	assert.Equal(t, "A→B#58; m [x #62; 1 #38;#38; y#59; #35;z #37;#37; w]", mermaidText("A→B: m [x > 1 && y; #z %% w]"))
	assert.Equal(t, "a b", mermaidText("a\nb"))
}

func TestDotQuote(t *testing.T) {
	assert.Equal(t, `"a \"b\" \\ c\nd"`, dotQuote("a \"b\" \\ c\nd"))
}

// testPolicy has three roles (so labels name both ends), a join of a
// many role, a child policy, timers of both kinds and a commitment.
const testPolicy = `policy: auction
version: 2
roles:
  Seller: {}
  Bidder: {many: true}
  Clerk: {}
messages:
  offer: {performative: cfp}
  bid: {performative: propose, fields: {amount: number}}
  pass: refuse
  sold: inform
timers:
  bidding: {deadline: offer.reply_by, default: 30s}
  closing: 1h30m
commitments:
  pay:
    debtor: Bidder
    creditor: Seller
    create: bid
    discharge: sold
    deadline: closing
states:
  start:
    - {send: offer, from: Seller, to: Bidder, next: open}
  open:
    arm: bidding
    join: true
    on:
      - {send: bid, from: Bidder, to: Seller, next: paperwork}
      - {send: pass, from: Bidder, to: Seller, next: paperwork}
      - {timeout: bidding, next: unsold}
  paperwork:
    child: {policy: fipa-request, roles: {Initiator: Seller, Participant: Clerk}}
    on:
      - {return: done, next: closed}
      - {return: result, next: closed}
      - {return: failed, next: unsold}
  closed:
    arm: closing
    on:
      - {send: sold, from: Seller, to: Bidder, next: over}
      - {timeout: closing, next: over}
  over: {terminal: sold}
  unsold: {terminal: unsold}
`

func loadTestPolicy(t *testing.T) *policy.Policy {
	t.Helper()
	p, ds := policy.LoadYAML("auction.yaml", []byte(testPolicy))
	require.False(t, ds.HasErrors(), "%v", ds)
	return p
}

func TestMermaidDrawsTimersJoinsChildrenAndCommitments(t *testing.T) {
	out := Global(loadTestPolicy(t), "auction v2").Mermaid()
	tests := []struct {
		name string
		want string
	}{
		{name: "a title and spacing in the front matter", want: "---\ntitle: \"auction v2\"\nconfig:\n  flowchart:\n"},
		{name: "left to right", want: ")\n    direction LR\n    state \"start\" as s_start\n"},
		{name: "a deadline timer the state arms", want: "    s_open : timer bidding at offer.reply_by or after 30s\n"},
		{name: "a duration timer, as policies write it", want: "    s_closed : timer closing after 1h30m\n"},
		{name: "a join", want: "    s_open : join#58; waits for every session\n"},
		{name: "a child", want: "    s_paperwork : runs child policy fipa-request\n"},
		{name: "a terminal state whose outcome is its name", want: "    s_unsold : end\n"},
		{name: "a terminal state with another outcome", want: "    s_over : ends#58; sold\n"},
		{name: "three roles: both ends on a label", want: "    s_start --> s_open : Seller→Bidder#58; offer\n"},
		{name: "parallel transitions share an edge", want: "    s_open --> s_paperwork : Bidder→Seller#58; bid<br/>Bidder→Seller#58; pass\n"},
		{name: "parallel child returns", want: "    s_paperwork --> s_closed : child done<br/>child result\n"},
		{name: "the commitments beside the initial state", want: "    note left of s_start\n        commitment pay#58; Bidder owes Seller\n        created by bid\n        discharged by sold\n        deadline closing (after 1h30m)\n    end note\n"},
		{name: "terminal states by their border", want: "    class s_over, s_unsold terminal\n"},
		{name: "joins by theirs", want: "    class s_open join\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Contains(t, out, tt.want)
		})
	}
	assert.NotContains(t, out, "--> [*]", "no edges to an end marker")
}

func TestDotDrawsTimersJoinsChildrenAndCommitments(t *testing.T) {
	var b strings.Builder
	Global(loadTestPolicy(t), "auction v2").WriteDot(&b)
	out := b.String()
	tests := []struct {
		name string
		want string
	}{
		{name: "the title and the commitments", want: "  label=\"auction v2\\ncommitment pay: Bidder owes Seller\\ncreated by bid; discharged by sold; deadline closing (after 1h30m)\";\n"},
		{name: "a join with its timer", want: "  \"open\" [style=bold, label=\"open\\njoin: waits for every session\\ntimer bidding at offer.reply_by or after 30s\"];\n"},
		{name: "a child", want: "  \"paperwork\" [shape=box, style=rounded, label=\"paperwork\\nruns child policy fipa-request\"];\n"},
		{name: "a terminal state", want: "  \"over\" [shape=box, style=rounded, peripheries=2, label=\"over\\nends: sold\"];\n"},
		{name: "parallel transitions", want: "  \"open\" -> \"paperwork\" [label=\"Bidder→Seller: bid\\nBidder→Seller: pass\"];\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Contains(t, out, tt.want)
		})
	}
}

func TestLocalLabels(t *testing.T) {
	p := loadTestPolicy(t)
	proj, ds := policy.Project(p, "Bidder")
	require.False(t, ds.HasErrors(), "%v", ds)
	out := Local(proj, "auction v2").Mermaid()
	assert.Contains(t, out, "title: \"auction v2, as Bidder\"")
	assert.Contains(t, out, "?offer from Seller", "with three roles the peer is named")

	two, ds := policy.LoadYAML("two.yaml", []byte("policy: two\nversion: 1\nroles: [A, B]\nmessages: {m: inform}\nstates:\n  s:\n    - {send: m, from: A, to: B, next: e}\n  e: {terminal: e}\n"))
	require.False(t, ds.HasErrors(), "%v", ds)
	proj, ds = policy.Project(two, "B")
	require.False(t, ds.HasErrors(), "%v", ds)
	assert.Contains(t, Local(proj, "two v1").Mermaid(), "    s_s --> s_e : ?m\n", "with two roles the peer goes without saying")
	assert.Contains(t, Global(two, "two v1").Mermaid(), "    s_s --> s_e : A#58; m\n")
}

func TestDuration(t *testing.T) {
	tests := []struct {
		name string
		d    time.Duration
		want string
	}{
		{name: "seconds", d: 30 * time.Second, want: "30s"},
		{name: "minutes", d: 5 * time.Minute, want: "5m"},
		{name: "hours", d: 2 * time.Hour, want: "2h"},
		{name: "hours and minutes", d: 90 * time.Minute, want: "1h30m"},
		{name: "minutes and seconds", d: 90 * time.Second, want: "1m30s"},
		{name: "milliseconds", d: 1500 * time.Millisecond, want: "1.5s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, duration(tt.d))
		})
	}
}

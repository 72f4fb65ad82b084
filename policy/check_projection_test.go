package policy_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/policies"
	"github.com/parleyhq/parley/policy"
)

// shipYAML is a three-party policy where the Shipper hears which branch
// the Seller took: it is told to ship, or that the order is off.
const shipYAML = `policy: ship
version: 1
roles: [Buyer, Seller, Shipper]
messages:
  order: {performative: request, fields: {item: string}}
  accept: agree
  reject: refuse
  ship: {performative: request, fields: {address: string}}
  stand-down: cancel
  shipped: inform
states:
  start:
    - {send: order, from: Buyer, to: Seller, next: ordered}
  ordered:
    - {send: accept, from: Seller, to: Buyer, next: accepted}
    - {send: reject, from: Seller, to: Buyer, next: rejected}
  accepted:
    - {send: ship, from: Seller, to: Shipper, next: shipping}
  rejected:
    - {send: stand-down, from: Seller, to: Shipper, next: called-off}
  shipping:
    - {send: shipped, from: Shipper, to: Buyer, next: delivered}
  delivered: {terminal: done}
  called-off: {terminal: rejected}
`

func TestCheckProjection(t *testing.T) {
	runCheckCases(t, []checkCase{
		{name: "a two-party policy is always projectable"},
		{name: "a many role is projectable", src: contractNetYAML},
		{name: "a third role informed in each branch", src: shipYAML},
		{
			name:  "a third role not told that the conversation ended",
			src:   shipYAML,
			edits: []edit{{"    - {send: stand-down, from: Seller, to: Shipper, next: called-off}\n", "    - {send: stand-down, from: Seller, to: Buyer, next: called-off}\n"}},
			want: []string{
				`test.yaml:16:7: error: role "Shipper" cannot tell whether the conversation has ended: in state "ordered" the conversation continues either with "reject" from "Seller" to "Buyer" or with "accept" from "Seller" to "Buyer", and "Shipper" sees neither; to fix, have "Seller" (or "Buyer") tell "Shipper" which branch was taken (a message to "Shipper" in each branch) [CP029]`,
			},
			related: []string{
				"test.yaml:15:7: the other branch",
				`test.yaml:24:3: state "called-off"`,
				`test.yaml:17:3: state "accepted"`,
			},
		},
		{
			name: "a third role that may send in one branch only",
			src:  shipYAML,
			edits: []edit{
				{"    - {send: ship, from: Seller, to: Shipper, next: shipping}\n", "    - {send: shipped, from: Shipper, to: Buyer, next: delivered}\n"},
				{"  shipping:\n    - {send: shipped, from: Shipper, to: Buyer, next: delivered}\n", ""},
				{"  ship: {performative: request, fields: {address: string}}\n", ""},
			},
			// The states where the Shipper only waits for others ("start",
			// "ordered") do not count: the diagnostic names the choice
			// the Shipper never hears of.
			want: []string{
				`test.yaml:14:7: error: role "Shipper" cannot tell whether it may send "shipped": it may in state "accepted" but not in state "rejected": in state "ordered" the conversation continues either with "accept" from "Seller" to "Buyer" or with "reject" from "Seller" to "Buyer", and "Shipper" sees neither; to fix, have "Seller" (or "Buyer") tell "Shipper" which branch was taken (a message to "Shipper" in each branch) [CP029]`,
			},
			related: []string{
				"test.yaml:15:7: the other branch",
				`test.yaml:16:3: state "accepted"`,
				`test.yaml:18:3: state "rejected"`,
			},
		},
		{
			name: "a third role that may receive or send after a choice it does not see",
			src:  shipYAML,
			edits: []edit{
				{"    - {send: stand-down, from: Seller, to: Shipper, next: called-off}\n", "    - {send: stand-down, from: Shipper, to: Seller, next: called-off}\n"},
			},
			want: []string{
				`test.yaml:16:7: error: role "Shipper" cannot tell whether it may send "stand-down": it may in state "rejected" but not in state "accepted": in state "ordered" the conversation continues either with "reject" from "Seller" to "Buyer" or with "accept" from "Seller" to "Buyer", and "Shipper" sees neither; to fix, have "Seller" (or "Buyer") tell "Shipper" which branch was taken (a message to "Shipper" in each branch) [CP029]`,
			},
		},
		{
			name: "a third role whose part ends before a choice it does not see",
			src:  shipYAML,
			edits: []edit{
				{"    - {send: shipped, from: Shipper, to: Buyer, next: delivered}\n", "    - {send: shipped, from: Shipper, to: Buyer, next: delivering}\n  delivering:\n    - {send: accept, from: Buyer, to: Seller, next: delivered}\n    - {send: reject, from: Buyer, to: Seller, next: disputed}\n  disputed: {terminal: disputed}\n"},
			},
		},
		{
			name: "a role that sends before a message between two others it does not wait for",
			src: `policy: relay
version: 1
roles: [A, B, C]
messages: {ask: request, tell: inform, note: inform}
states:
  start:
    - {send: ask, from: A, to: B, next: asked}
  asked:
    - {send: tell, from: B, to: C, next: told}
  told:
    - {send: note, from: A, to: C, next: done}
  done: {terminal: done}
`,
		},
		{
			name:  "projection is skipped while other errors stand",
			src:   shipYAML,
			edits: []edit{{"    - {send: stand-down, from: Seller, to: Shipper, next: called-off}\n", "    - {send: stand-down, from: Seller, to: Buyer, next: caled-off}\n"}},
			want:  []string{`test.yaml:20:57: error: state "caled-off" is not declared; did you mean "called-off"? [CP010]`},
		},
	})
}

// TestProjectTwoParty checks that, for every shipped two-party policy,
// each role's projection is the policy graph itself (one local state per
// reachable global state) with sends and receives swapped between the
// two roles.
func TestProjectTwoParty(t *testing.T) {
	files, err := filepath.Glob("../policies/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			p := loadFile(t, file)
			if len(p.Roles) != 2 {
				t.Skip("not a two-party policy")
			}
			a, b := p.Roles[0].Name, p.Roles[1].Name
			pa, da := policy.Project(p, a)
			pb, db := policy.Project(p, b)
			assert.Empty(t, da)
			assert.Empty(t, db)
			require.Equal(t, len(pa.States), len(pb.States))
			assert.Equal(t, a, pa.Role)
			for i, la := range pa.States {
				lb := pb.States[i]
				require.Len(t, la.Global, 1, "state %s of %s's projection", la.Name, a)
				assert.Equal(t, la.Global, lb.Global)
				assert.Equal(t, la.Kind, lb.Kind)
				assert.Equal(t, la.Outcome, lb.Outcome)
				require.Len(t, lb.Transitions, len(la.Transitions))
				for j, ta := range la.Transitions {
					tb := lb.Transitions[j]
					assert.Equal(t, ta.Global, tb.Global)
					assert.Equal(t, ta.Next, tb.Next)
					switch ta.Action {
					case policy.ActionSend:
						assert.Equal(t, policy.ActionReceive, tb.Action)
						assert.Equal(t, b, ta.Peer)
						assert.Equal(t, a, tb.Peer)
					case policy.ActionReceive:
						assert.Equal(t, policy.ActionSend, tb.Action)
						assert.Equal(t, b, ta.Peer)
					default:
						assert.Equal(t, ta.Action, tb.Action)
					}
				}
			}
		})
	}
}

// TestProjectThirdRole checks the projection of shipYAML onto the
// Shipper: the messages between Buyer and Seller are invisible, so its
// first local state stands for every state before it hears of the order.
func TestProjectThirdRole(t *testing.T) {
	p := mustLoad(t, shipYAML)
	proj, ds := policy.Project(p, "Shipper")
	require.Empty(t, ds)
	require.NotEmpty(t, proj.States)
	first := proj.States[0]
	assert.Equal(t, "start|ordered|accepted|rejected", first.Name)
	var got []string
	for _, tr := range first.Transitions {
		got = append(got, tr.Action.String()+" "+tr.Transition().Message.Name+" from "+tr.Peer+" -> "+proj.States[tr.Next].Name)
	}
	assert.Equal(t, []string{
		"receive ship from Seller -> shipping",
		"receive stand-down from Seller -> called-off",
	}, got)
}

// TestProjectOutcomeOfAFinishedRole checks that a role whose part ends
// before a choice it does not see ends with every outcome the
// conversation may still reach, sorted and joined by "|".
func TestProjectOutcomeOfAFinishedRole(t *testing.T) {
	p := mustLoad(t, patch(t, shipYAML, edit{
		"    - {send: shipped, from: Shipper, to: Buyer, next: delivered}\n",
		"    - {send: shipped, from: Shipper, to: Buyer, next: delivering}\n  delivering:\n    - {send: accept, from: Buyer, to: Seller, next: delivered}\n    - {send: reject, from: Buyer, to: Seller, next: disputed}\n  disputed: {terminal: disputed}\n",
	}))
	proj, ds := policy.Project(p, "Shipper")
	require.Empty(t, ds)
	var outcomes []string
	for _, ls := range proj.States {
		if ls.Kind == policy.KindTerminal {
			outcomes = append(outcomes, ls.Outcome)
		}
	}
	assert.ElementsMatch(t, []string{"disputed|done", "rejected"}, outcomes)
	buyer, ds := policy.Project(p, "Buyer")
	require.Empty(t, ds)
	outcomes = nil
	for _, ls := range buyer.States {
		if ls.Kind == policy.KindTerminal {
			outcomes = append(outcomes, ls.Outcome)
		}
	}
	assert.ElementsMatch(t, []string{"done", "disputed", "rejected"}, outcomes)
}

// TestTextbookProtocolsCheckClean checks that the multiparty protocols of
// the session-types literature under testdata/policies/multiparty check
// without a diagnostic, and that each role's projection orders only its
// own steps.
func TestTextbookProtocolsCheckClean(t *testing.T) {
	files, err := filepath.Glob("../testdata/policies/multiparty/*.yaml")
	require.NoError(t, err)
	require.Len(t, files, 4)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			p := loadFile(t, file)
			assert.Empty(t, lines(policy.CheckPolicy(p)))
			for _, r := range p.Roles {
				proj, ds := policy.Project(p, r.Name)
				assert.Empty(t, lines(ds), "role %s", r.Name)
				for _, ls := range proj.States {
					for _, lt := range ls.Transitions {
						assert.Contains(t, []policy.Action{policy.ActionSend, policy.ActionReceive, policy.ActionTimeout}, lt.Action)
					}
				}
			}
		})
	}
}

// TestTimerRoles checks whose clocks run each state's timers in
// Two-Buyer with timers: the roles that take part in the state.
func TestTimerRoles(t *testing.T) {
	p := loadFile(t, "../testdata/policies/multiparty/two-buyer-timed.yaml")
	got := map[string][]string{}
	for _, s := range p.States {
		got[s.Name] = p.TimerRoles(s)
	}
	all := []string{"Buyer1", "Buyer2", "Seller"}
	assert.Equal(t, map[string][]string{
		"start": {"Buyer1", "Seller"}, "asked": {"Buyer1", "Seller"}, "quoted1": {"Buyer2", "Seller"},
		"quoted2": {"Buyer1", "Buyer2"}, "shared": {"Buyer2", "Seller"}, "ordered": {"Buyer2", "Seller"},
		"bought": all, "quit": all, "timed-out": all,
	}, got)
	// Buyer1 neither arms nor sees quote2-by, the Seller's wait for
	// Buyer2: after its quote it may send its share or its own timer
	// share-by fires.
	proj, ds := policy.Project(p, "Buyer1")
	require.Empty(t, ds)
	for _, ls := range proj.States {
		for _, lt := range ls.Transitions {
			if lt.Action == policy.ActionTimeout {
				assert.NotEqual(t, "quote2-by", lt.Transition().Timer.Name, "state %s", ls.Name)
			}
		}
	}
}

// TestCheckProjectionTimers checks knowledge of choice with timers that
// only some roles run.
func TestCheckProjectionTimers(t *testing.T) {
	timed := patch(t, shipYAML,
		edit{"  shipped: inform\n", "  shipped: inform\ntimers: {answer: 30s}\n"},
		edit{"  ordered:\n    - {send: accept, from: Seller, to: Buyer, next: accepted}\n    - {send: reject, from: Seller, to: Buyer, next: rejected}\n",
			"  ordered:\n    arm: answer\n    on:\n      - {send: accept, from: Seller, to: Buyer, next: accepted}\n      - {send: reject, from: Seller, to: Buyer, next: rejected}\n      - {timeout: answer, next: called-off}\n"})
	runCheckCases(t, []checkCase{
		{
			name:  "a role not told that another role's timer ended the conversation",
			src:   timed,
			edits: []edit{{"      - {timeout: answer, next: called-off}\n", "      - {timeout: answer, next: gave-up}\n  gave-up: {terminal: gave-up}\n"}},
			want: []string{
				`test.yaml:20:9: error: role "Shipper" cannot tell whether the conversation has ended: in state "ordered" the conversation continues either with timeout "answer" or with "accept" from "Seller" to "Buyer", and "Shipper" sees neither; to fix, have a role that sees it tell "Shipper" which branch was taken (a message to "Shipper" in each branch) [CP029]`,
			},
		},
		{
			name: "a role whose wait is bounded by its own timer need not be told",
			src:  timed,
			edits: []edit{
				{"      - {timeout: answer, next: called-off}\n", "      - {timeout: answer, next: gave-up}\n  gave-up: {terminal: gave-up}\n"},
				{"timers: {answer: 30s}\n", "timers: {answer: 30s, order: 1m}\n"},
				{"  accepted:\n    - {send: ship, from: Seller, to: Shipper, next: shipping}\n", "  accepted:\n    arm: order\n    on:\n      - {send: ship, from: Seller, to: Shipper, next: shipping}\n      - {timeout: order, next: gave-up}\n"},
				{"  rejected:\n    - {send: stand-down, from: Seller, to: Shipper, next: called-off}\n", "  rejected:\n    arm: order\n    on:\n      - {send: stand-down, from: Seller, to: Shipper, next: called-off}\n      - {timeout: order, next: gave-up}\n"},
				{"  shipping:\n    - {send: shipped, from: Shipper, to: Buyer, next: delivered}\n", "  shipping:\n    arm: order\n    on:\n      - {send: shipped, from: Shipper, to: Buyer, next: delivered}\n      - {timeout: order, next: gave-up}\n"},
			},
		},
	})
}

// loadFile loads the policy file at path, which must load cleanly.
func loadFile(t *testing.T, path string) *policy.Policy {
	t.Helper()
	src, err := os.ReadFile(path)
	require.NoError(t, err)
	p, ds := policy.Load(filepath.Base(path), src)
	require.Empty(t, ds)
	return p
}

// TestRolesThatSeeEveryStepAreNotProjectedByTheChecks checks, for every
// shipped policy, that the projection check leaves out only talking
// roles whose projection reports nothing and has a local state for each
// global state it reaches (so that Project, which a compiler calls for them, gives
// what the check would have kept), and that it leaves out some.
func TestRolesThatSeeEveryStepAreNotProjectedByTheChecks(t *testing.T) {
	left := 0
	for _, name := range policies.Names() {
		p, err := policies.Load(name)
		require.NoError(t, err, name)
		a := policy.Analyze(p, policy.WithPolicies(policies.Resolve))
		require.False(t, a.Diagnostics.HasErrors(), "%s: %v", name, a.Diagnostics)
		talks := map[string]bool{}
		for _, s := range p.States {
			for _, tr := range s.Transitions {
				if tr.Kind == policy.SendMessage {
					talks[tr.From.Name], talks[tr.To.Name] = true, true
				}
			}
		}
		for _, r := range p.Roles {
			if _, ok := a.Projections[r.Name]; ok || !talks[r.Name] {
				continue
			}
			proj, ds := policy.Project(p, r.Name)
			assert.Empty(t, ds, "%s onto %s", name, r.Name)
			for _, ls := range proj.States {
				if assert.Len(t, ls.Global, 1, "%s onto %s: %s", name, r.Name, ls.Name) {
					left++
				}
			}
		}
	}
	assert.Positive(t, left)
}

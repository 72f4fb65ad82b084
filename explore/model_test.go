package explore_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/explore"
	"github.com/parleyhq/parley/policies"
	"github.com/parleyhq/parley/policy"
)

// haggleYAML is a child policy with two outcomes.
const haggleYAML = `policy: haggle
version: 1
roles: [Buyer, Seller]
messages:
  offer: {performative: propose, fields: {price: number}}
  take: accept-proposal
  walk-away: reject-proposal
states:
  start:
    - {send: offer, from: Seller, to: Buyer, next: offered}
  offered:
    - {send: take, from: Buyer, to: Seller, next: agreed}
    - {send: walk-away, from: Buyer, to: Seller, next: no-deal}
  agreed: {terminal: agreement}
  no-deal: {terminal: no-deal}
`

// load loads src, which must load cleanly.
func load(t *testing.T, name, src string) *policy.Policy {
	t.Helper()
	p, ds := policy.Load(name, []byte(src))
	require.NotNil(t, p, "%v", ds)
	require.Empty(t, ds)
	return p
}

// checked loads src and checks it, resolving the child policy haggle.
func checked(t *testing.T, src string) *engine.Compiled {
	t.Helper()
	child := load(t, "haggle.yaml", haggleYAML)
	resolve := func(name string) *policy.Policy {
		if name == child.Name {
			return child
		}
		return nil
	}
	c, ds := engine.Check(load(t, "test.yaml", src), engine.WithPolicies(resolve))
	require.NotNil(t, c, "%v", ds)
	return c
}

// agents returns every agent a report's witnesses name.
func agents(r *explore.Report) []string {
	var out []string
	for _, f := range r.Findings {
		for _, s := range f.Witness {
			for _, a := range []string{s.Agent, s.Peer} {
				if a != "" && !slices.Contains(out, a) {
					out = append(out, a)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// A many role is played by WithInstances agents, named after the role.
func TestManyRoleInstances(t *testing.T) {
	p := policies.Resolve("fipa-contract-net")
	require.NotNil(t, p)
	c, ds := engine.Check(p)
	require.NotNil(t, c, "%v", ds)
	tests := []struct {
		name      string
		instances int
		want      []string
	}{
		{name: "one", instances: 1, want: []string{"Initiator", "Participant1"}},
		{name: "two", instances: 2, want: []string{"Initiator", "Participant1", "Participant2"}},
	}
	states := map[int]int{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := explore.Explore(c, explore.WithInstances(tt.instances), explore.WithMaxStates(1500))
			require.NoError(t, err)
			assert.Equal(t, tt.instances, r.Instances)
			assert.Equal(t, tt.want, agents(r))
			states[tt.instances] = r.States
		})
	}
	assert.Less(t, states[1], states[2], "a second Participant adds states")
}

// A child policy ends with each outcome its parent state returns on; the
// witness shows which.
func TestChildOutcomes(t *testing.T) {
	c := checked(t, `policy: buy
version: 1
roles: [Buyer, Seller]
messages:
  order: request
  bill: inform
states:
  start:
    - {send: order, from: Buyer, to: Seller, next: asking}
  asking:
    child: {policy: haggle, roles: {Buyer: Buyer, Seller: Seller}}
    on:
      - {return: agreement, next: billing}
      - {return: no-deal, next: off}
  billing:
    - {send: bill, from: Seller, to: Buyer, next: billed}
  billed: {terminal: done}
  off: {terminal: off}
`)
	r, err := explore.Explore(c)
	require.NoError(t, err)
	assert.False(t, r.Truncated)
	var outcomes []string
	for _, f := range r.Findings {
		for _, s := range f.Witness {
			if s.Kind == explore.StepChild {
				assert.Equal(t, "haggle", s.Child)
				outcomes = append(outcomes, s.Outcome)
			}
		}
	}
	// The Buyer waits for the bill with no timer: CP106, after the child
	// ended with agreement for both parents. Nothing else: the child ends
	// for both parents at once, so the Seller's bill cannot reach a Buyer
	// whose child has not ended (a regression: ending it for one parent
	// at a time reported a CP102 and a CP103 that no run has).
	require.Len(t, r.Findings, 1, "%v", r.Findings)
	assert.Equal(t, explore.CodeUnboundedWait, r.Findings[0].Diagnostic.Code)
	assert.Equal(t, []string{"agreement", "agreement"}, outcomes, "both parents get the same outcome")
}

// Options are held to their documented ranges.
func TestOptionBounds(t *testing.T) {
	c := compile(t, "CP104-timeout-race.yaml")
	r, err := explore.Explore(c, explore.WithBuffer(0), explore.WithInstances(99), explore.WithMaxStates(-1))
	require.NoError(t, err)
	assert.Equal(t, 1, r.Buffer)
	assert.Equal(t, explore.MaxInstances, r.Instances)
	assert.Equal(t, 1, r.MaxStates)
	assert.True(t, r.Truncated)
	assert.Equal(t, "states", r.Bound)
	_, err = explore.Explore(nil)
	assert.Error(t, err)
}

// A parent that ended does not hold up the child run of the others: the
// Seller's timer may end its conversation before the order arrives, and
// the Buyer's child still ends (a regression: it waited for the Seller
// for ever, and the Buyer was reported unfinished, CP103).
func TestChildRunWithoutEndedParent(t *testing.T) {
	c := checked(t, `policy: buy-timed
version: 1
roles: [Buyer, Seller]
messages:
  order: request
timers:
  wait: {after: 10s}
states:
  start:
    arm: wait
    on:
      - {send: order, from: Buyer, to: Seller, next: asking}
      - {timeout: wait, next: expired}
  asking:
    child: {policy: haggle, roles: {Buyer: Buyer, Seller: Seller}}
    on:
      - {return: agreement, next: bought}
      - {return: no-deal, next: off}
  bought: {terminal: done}
  off: {terminal: off}
  expired: {terminal: timeout}
`)
	r, err := explore.Explore(c)
	require.NoError(t, err)
	for _, f := range r.Findings {
		assert.NotEqual(t, explore.CodeUnfinishedRole, f.Diagnostic.Code, "%s", f.Diagnostic.Error())
		assert.NotEqual(t, explore.CodeDeadlock, f.Diagnostic.Code, "%s", f.Diagnostic.Error())
	}
}

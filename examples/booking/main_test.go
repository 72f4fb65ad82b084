package main

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/explore"
	"github.com/parleyhq/parley/policies"
	"github.com/parleyhq/parley/policy"
)

var t0 = time.Date(2026, 4, 1, 9, 0, 0, 0, time.UTC)

// The policy's decide expression books the cheapest offer within the
// budget (loft at 450, not grand-hall at 480; palace at 520 is over it),
// passes on the others, and the deposit runs as fipa-request.
func TestBookingBooksTheCheapestOfferWithinBudget(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := book(ctx, io.Discard, agent.NewFakeClock(t0))
	require.NoError(t, err)
	assert.Equal(t, "booked=1,declined=1,passed=2", r.planner)
	assert.Equal(t, map[string]string{"barn": "declined", "grand-hall": "passed", "loft": "booked", "palace": "passed"}, r.venues)
	assert.Empty(t, r.errors)
}

func TestRunPrintsTheOutcomes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out bytes.Buffer
	require.NoError(t, run(ctx, &out, agent.NewFakeClock(t0)))
	text := out.String()
	assert.Contains(t, text, "planner    -> loft                             accept-proposal")
	assert.Contains(t, text, "loft       -> planner                          confirm         map[booking:B-17]")
	assert.Contains(t, text, "planner: booked=1,declined=1,passed=2\n")
	assert.Contains(t, text, "  loft       booked\n")
}

// Exploring every role together (two venues, up to 1,000 global states,
// to keep the test short) finds no deadlock and no role left waiting,
// only the timeout races docs/guide.md describes (CP104).
func TestBookingExploresWithoutErrors(t *testing.T) {
	p, err := loadBooking()
	require.NoError(t, err)
	c, ds := engine.Check(p, engine.WithPolicies(policies.Resolve))
	require.NotNil(t, c, "%v", ds)
	rep, err := explore.Explore(c, explore.WithMaxStates(1000))
	require.NoError(t, err)
	assert.Positive(t, rep.States)
	for _, f := range rep.Findings {
		assert.NotEqual(t, policy.SeverityError, f.Diagnostic.Severity, "%s", f.Diagnostic.Message)
		assert.Equal(t, policy.Code("CP104"), f.Diagnostic.Code, "%s", f.Diagnostic.Message)
	}
}

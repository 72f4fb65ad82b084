package policy_test

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/explore"
	"github.com/parleyhq/parley/policies"
	"github.com/parleyhq/parley/policy"
)

const guidePage = "guide.md"

// guideBlock is a YAML block of the guide and what its first line says
// it is: a whole policy that checks clean, one that gives exactly the
// codes after "# expect", or an excerpt of the policy after "# from".
type guideBlock struct {
	docBlock
	expect []string // codes a "# expect" policy gives
	from   string   // the policy a "# from" block is an excerpt of
	body   string   // the block without its first line, for an excerpt
}

func guideBlocks(t *testing.T) []guideBlock {
	t.Helper()
	var out []guideBlock
	for _, b := range docBlocks(t, guidePage) {
		if b.lang != "yaml" {
			continue
		}
		g := guideBlock{docBlock: b}
		first, rest, _ := strings.Cut(b.src, "\n")
		switch {
		case strings.HasPrefix(first, "# expect "):
			g.expect = strings.Fields(strings.TrimPrefix(first, "# expect "))
		case strings.HasPrefix(first, "# from "):
			g.from, g.body = strings.TrimSpace(strings.TrimPrefix(first, "# from ")), rest
		}
		out = append(out, g)
	}
	return out
}

// Every YAML block of the guide is validated: a whole policy loads and
// checks without a diagnostic, or with exactly the codes its "# expect"
// line names; an excerpt ("# from name") is a run of whole lines of the
// guide's policy of that name. A block that is neither fails.
func TestGuideYAMLBlocks(t *testing.T) {
	blocks := guideBlocks(t)
	whole := map[string]string{} // policy name → its source
	for _, b := range blocks {
		if b.from == "" && wholePolicy(b.docBlock) {
			p, _ := loadBlock(b.docBlock)
			if p != nil {
				whole[p.Name] = b.src
			}
		}
	}
	counts := map[string]int{}
	for _, b := range blocks {
		t.Run(b.page+":"+strconv.Itoa(b.line), func(t *testing.T) {
			switch {
			case b.from != "":
				counts["excerpt"]++
				src, ok := whole[b.from]
				require.True(t, ok, "docs/%s:%d: no whole policy %q in the guide to be an excerpt of", b.page, b.line, b.from)
				assert.True(t, strings.Contains("\n"+src, "\n"+b.body), "docs/%s:%d: not an excerpt of %s, line for line:\n%s", b.page, b.line, b.from, b.body)
			case wholePolicy(b.docBlock):
				p, ds := loadBlock(b.docBlock)
				require.NotNil(t, p, "docs/%s:%d: the block is no policy: %v", b.page, b.line, ds)
				var codes []string
				for _, d := range ds {
					codes = append(codes, string(d.Code))
				}
				if b.expect == nil {
					counts["clean"]++
					for _, d := range ds {
						t.Errorf("%s", at(b.docBlock, d))
					}
					return
				}
				counts["expect"]++
				slices.Sort(codes)
				assert.ElementsMatch(t, b.expect, slices.Compact(codes), "docs/%s:%d: the codes the block says it gives", b.page, b.line)
			default:
				t.Errorf("docs/%s:%d: a YAML block is a whole policy (policy: first) or says \"# from <policy>\"", b.page, b.line)
			}
		})
	}
	assert.GreaterOrEqual(t, counts["clean"], 3, "whole policies that check clean")
	assert.GreaterOrEqual(t, counts["expect"], 3, "policies that show a mistake")
	assert.GreaterOrEqual(t, counts["excerpt"], 5, "excerpts")
}

// The guide's clean policies run: exploring every role together (two
// agents for a many role, up to 1,000 global states, to keep the test
// short) finds no error (deadlocks, roles left waiting), only the
// timeout races the guide describes.
func TestGuidePoliciesExploreWithoutErrors(t *testing.T) {
	for _, b := range guideBlocks(t) {
		if b.from != "" || b.expect != nil || !wholePolicy(b.docBlock) {
			continue
		}
		t.Run(b.page+":"+strconv.Itoa(b.line), func(t *testing.T) {
			p, ds := loadBlock(b.docBlock)
			require.NotNil(t, p)
			require.False(t, ds.HasErrors(), "%v", ds)
			c, ds := engine.Check(p, engine.WithPolicies(policies.Resolve))
			require.NotNil(t, c, "%v", ds)
			rep, err := explore.Explore(c, explore.WithMaxStates(1000))
			require.NoError(t, err)
			for _, f := range rep.Findings {
				d := f.Diagnostic
				assert.NotEqual(t, policy.SeverityError, d.Severity, "%s", at(b.docBlock, d))
				assert.Equal(t, policy.Code("CP104"), d.Code, "%s", at(b.docBlock, d))
			}
		})
	}
}

// The booking policy of the guide between a Planner and four Venues on a
// bus: three offer (one over the budget), one declines; the policy's own
// decide expression, which the Planner's decider leaves the join to,
// books the cheapest offer within the budget and passes on the others;
// the booked Venue confirms and is paid its deposit under fipa-request,
// the child policy.
func TestGuideBookingRunsBetweenAgents(t *testing.T) {
	var booking *policy.Policy
	for _, b := range guideBlocks(t) {
		if p, _ := loadBlock(b.docBlock); b.from == "" && p != nil && p.Name == "room-booking" {
			booking = p
		}
	}
	require.NotNil(t, booking, "the guide shows room-booking")
	request, err := policies.Load("fipa-request")
	require.NoError(t, err)

	clock := agent.NewFakeClock(time.Date(2026, 4, 1, 9, 0, 0, 0, time.UTC))
	bus := agent.NewBus()
	var (
		mu   sync.Mutex
		errs []string
	)
	observe := func(o agent.Observation) {
		if pe, ok := o.Event.(*engine.ProtocolErrorEvent); ok {
			mu.Lock()
			errs = append(errs, o.Agent+": "+string(pe.Code)+" "+pe.Reason)
			mu.Unlock()
		}
	}
	newAgent := func(name string, d decision.Func) *agent.Manager {
		m, err := agent.NewManager(name, agent.WithClock(clock), agent.WithLogger(slog.New(slog.DiscardHandler)),
			agent.WithDecider(d), agent.WithObserver(observe), agent.WithResolver(policies.Resolve))
		require.NoError(t, err)
		t.Cleanup(func() { m.Close(context.Background()) })
		require.NoError(t, m.Register(booking))
		require.NoError(t, m.Register(request))
		require.NoError(t, bus.Connect(m))
		return m
	}
	venue := func(price float64) decision.Func {
		return func(_ context.Context, req *decision.Request) (decision.Answer, error) {
			switch req.Policy + ":" + req.Point {
			case "room-booking:asked":
				if price == 0 {
					return decision.Answer{Choice: "decline", Content: map[string]any{"reason": "full"}}, nil
				}
				return decision.Answer{Choice: "offer", Content: map[string]any{"price": price}}, nil
			case "room-booking:booked":
				return decision.Answer{Choice: "confirm", Content: map[string]any{"booking": "B-17"}}, nil
			case "fipa-request:requested":
				return decision.Answer{Choice: "inform-done", Content: map[string]any{"done": true}}, nil
			}
			return decision.Answer{}, decision.ErrNoDecision
		}
	}
	venues := map[string]*agent.Manager{}
	for name, price := range map[string]float64{"grand-hall": 480, "loft": 450, "palace": 520, "barn": 0} {
		venues[name] = newAgent(name, venue(price))
	}
	planner := newAgent("planner", func(_ context.Context, req *decision.Request) (decision.Answer, error) {
		switch req.Policy + ":" + req.Point {
		case "room-booking:start":
			return decision.Answer{Choice: "ask", Content: map[string]any{"seats": 40, "budget": 500}, ReplyBy: clock.Now().Add(30 * time.Second)}, nil
		case "fipa-request:start":
			return decision.Answer{Choice: "request", Content: map[string]any{"action": "pay deposit", "amount": 90}}, nil
		}
		return decision.Answer{}, decision.ErrNoDecision // the join: the policy's decide
	})

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conv, err := planner.Start(ctx, agent.StartRequest{Policy: "room-booking", Role: "Planner",
		Peers: map[string][]string{"Venue": {"barn", "grand-hall", "loft", "palace"}}})
	require.NoError(t, err)
	require.NoError(t, bus.Settle(ctx))

	outcome, err := planner.Wait(ctx, conv)
	require.NoError(t, err)
	assert.Equal(t, "booked=1,declined=1,passed=2", outcome)
	want := map[string]string{"barn": "declined", "grand-hall": "passed", "loft": "booked", "palace": "passed"}
	for name, m := range venues {
		got, err := m.Wait(ctx, conv)
		require.NoError(t, err, name)
		assert.Equal(t, want[name], got, name)
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, errs)
}

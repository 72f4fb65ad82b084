package engine_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/policies"
	"github.com/parleyhq/parley/policy"
)

// TestSnapshotEveryShippedPolicy walks conversations of every shipped
// policy, an agent playing each role (two for a many role), answering
// decisions with a seeded choice and content of the fields' types and
// firing timers now and then. After every step it checks every handler's
// snapshot: it holds what the JSON format did, the JSON one restores
// into a handler of the same bytes, and so does the binary one.
func TestSnapshotEveryShippedPolicy(t *testing.T) {
	walks := 6
	if testing.Short() {
		walks = 2
	}
	for _, name := range policies.Names() {
		p, err := policies.Load(name)
		require.NoError(t, err)
		sent := 0
		for seed := range walks {
			t.Run(fmt.Sprintf("%s/%d", name, seed), func(t *testing.T) {
				sent += walkSnapshots(t, p, rand.New(rand.NewPCG(uint64(seed), 9)))
			})
		}
		require.Positive(t, sent, "%s: the walks sent no message", name)
	}
}

// walkSnapshots walks one conversation of p (see
// TestSnapshotEveryShippedPolicy) and returns how many messages were
// sent.
func walkSnapshots(t *testing.T, p *policy.Policy, rng *rand.Rand) int {
	agents := map[string][]string{}
	for _, r := range p.Roles {
		agents[r.Name] = []string{r.Name}
		if r.Many {
			agents[r.Name] = []string{r.Name + "1", r.Name + "2"}
		}
	}
	sent := 0
	d := engine.NewDriver(t0, engine.WithObserver(func(s engine.Step) {
		if _, ok := s.Event.(*engine.MessageEvent); ok && s.Kind == engine.StepOutput {
			sent++
		}
	}))
	progs := map[string]*engine.Program{}
	var names []string
	for _, r := range p.Roles {
		pr := program(t, p.Name, r.Name)
		for _, a := range agents[r.Name] {
			var opts []engine.HandlerOption
			for _, other := range p.Roles {
				if other.Name != r.Name {
					opts = append(opts, engine.WithPeers(other.Name, agents[other.Name]...))
				}
			}
			h, err := pr.NewHandler(convID, a, opts...)
			require.NoError(t, err)
			require.NoError(t, d.Add(h))
			progs[a] = pr
			names = append(names, a)
		}
	}
	for _, a := range names {
		require.NoError(t, d.Start(a, convID))
	}
	fields := map[string][]*policy.Field{}
	for _, m := range p.Messages {
		fields[m.Name] = m.Fields
	}
	content := func(choice string) map[string]any {
		out := map[string]any{}
		for _, f := range fields[choice] {
			if f.Optional && rng.IntN(2) == 0 {
				continue
			}
			out[f.Name] = fieldValue(f.Type, rng)
		}
		return out
	}
	check := func() {
		for _, a := range names {
			h := d.Handler(a, convID)
			if h == nil {
				continue
			}
			data, err := h.Snapshot()
			require.NoError(t, err)
			checkFormats(t, progs[a], h, data)
			restored, err := progs[a].Restore(data)
			require.NoError(t, err)
			again, err := restored.Snapshot()
			require.NoError(t, err)
			require.Equal(t, data, again, "%s", a)
		}
	}
	for range 24 {
		_ = d.Settle() // a handler's refusal is a protocol error, not the walk's
		check()
		pending := d.Pending()
		if len(pending) == 0 || rng.IntN(6) == 0 {
			if _, ok := d.NextDeadline(); !ok && len(pending) == 0 {
				break
			}
			_ = d.AdvanceTo(d.Now().Add(time.Hour))
			continue
		}
		pd := pending[rng.IntN(len(pending))]
		var a decision.Answer
		if len(pd.Request.Sessions) > 0 {
			a.Sessions = map[string]decision.SessionAnswer{}
			for _, s := range pd.Request.Sessions {
				if len(s.Choices) > 0 {
					c := s.Choices[rng.IntN(len(s.Choices))]
					a.Sessions[s.Peer] = decision.SessionAnswer{Choice: c, Content: content(c)}
				}
			}
		} else if len(pd.Request.Choices) > 0 {
			c := pd.Request.Choices[rng.IntN(len(pd.Request.Choices))]
			a = decision.Answer{Choice: c, Content: content(c)}
		}
		_ = d.Answer(pd.Agent, pd.Conversation, pd.Ticket, a)
	}
	check()
	return sent
}

// fieldValue is a value of type ft, of the Go types decisions give.
func fieldValue(ft policy.FieldType, rng *rand.Rand) any {
	switch ft {
	case policy.TypeString:
		return fmt.Sprintf("s%d", rng.IntN(3))
	case policy.TypeNumber:
		return float64(rng.IntN(100)) / 4
	case policy.TypeInt:
		return rng.IntN(10)
	case policy.TypeBool:
		return rng.IntN(2) == 0
	case policy.TypeTime:
		return t0.Add(time.Duration(rng.IntN(48)) * time.Hour)
	case policy.TypeDuration:
		return time.Duration(rng.IntN(10)) * time.Minute
	case policy.TypeList:
		return []any{rng.IntN(5), "item", []any{true}}
	case policy.TypeMap:
		return map[string]any{"k": rng.IntN(5), "nested": map[string]any{"b": nil}}
	}
	return rng.IntN(7)
}

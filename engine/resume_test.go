package engine_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
)

// timerSig names an armed timer as a host keys it.
func timerSig(e *engine.TimerEvent) string {
	return fmt.Sprintf("%s|%s|%s|%d|%s", e.Name, e.Commitment, e.Session, e.Epoch, e.Deadline.UTC().Format(time.RFC3339Nano))
}

func armedSigs(h *engine.Handler) []string {
	var out []string
	for _, e := range h.Armed() {
		out = append(out, timerSig(&e))
	}
	slices.Sort(out)
	return out
}

func openTickets(h *engine.Handler) []uint64 {
	var out []uint64
	for _, e := range h.Open() {
		out = append(out, e.Ticket)
	}
	slices.Sort(out)
	return out
}

// TestArmedAndOpenTellAHostWhatToRestore drives conversations through the
// driver, stopping wherever decisions are pending, and checks at each stop
// that every handler's Armed timers are exactly the ones its outputs set
// and did not cancel or see fire, that its Open decisions are the
// driver's pending ones, and that a handler restored from its snapshot
// says the same.
func TestArmedAndOpenTellAHostWhatToRestore(t *testing.T) {
	tests := []struct {
		name   string
		policy string
		agents []agent
		// steps answer pending decisions, in order; "" advances the clock
		// by an hour instead.
		steps []string
	}{
		{"request: agree, then the result times out", "fipa-request", cast("fipa-request"), []string{"alice request", "bob agree", ""}},
		{"request: the reply times out", "fipa-request", cast("fipa-request"), []string{"alice request", ""}},
		{"contract net: proposals, then the join", "fipa-contract-net", cast("fipa-contract-net"),
			[]string{"alice cfp", "bob propose", "carol propose", "dave refuse", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			live := map[string]map[string]bool{}
			d := engine.NewDriver(t0, engine.WithObserver(func(s engine.Step) {
				e, ok := s.Event.(*engine.TimerEvent)
				if !ok {
					return
				}
				if live[s.Agent] == nil {
					live[s.Agent] = map[string]bool{}
				}
				switch {
				case s.Kind == engine.StepOutput && e.Op == engine.TimerSet:
					live[s.Agent][timerSig(e)] = true
				case s.Kind == engine.StepInput || e.Op == engine.TimerCancel: // fired, or cancelled
					for k := range live[s.Agent] {
						if sameTimer(k, e) {
							delete(live[s.Agent], k)
						}
					}
				}
			}))
			progs := map[string]*engine.Program{}
			for _, a := range tt.agents {
				progs[a.name] = program(t, tt.policy, a.role)
				h, err := progs[a.name].NewHandler(convID, a.name, a.opts...)
				require.NoError(t, err)
				require.NoError(t, d.Add(h))
			}
			for _, a := range tt.agents {
				require.NoError(t, d.Start(a.name, convID))
			}
			check := func(step string) {
				require.NoError(t, d.Settle())
				pending := map[string][]uint64{}
				for _, p := range d.Pending() {
					pending[p.Agent] = append(pending[p.Agent], p.Ticket)
				}
				for _, a := range tt.agents {
					h := d.Handler(a.name, convID)
					var want []string
					for k := range live[a.name] {
						want = append(want, k)
					}
					slices.Sort(want)
					assert.Equal(t, want, armedSigs(h), "%s after %q: armed timers", a.name, step)
					slices.Sort(pending[a.name])
					assert.Equal(t, pending[a.name], openTickets(h), "%s after %q: open decisions", a.name, step)
					snap, err := h.Snapshot()
					require.NoError(t, err)
					restored, err := progs[a.name].Restore(snap)
					require.NoError(t, err)
					assert.Equal(t, armedSigs(h), armedSigs(restored), "%s after %q: restored timers", a.name, step)
					assert.Equal(t, openTickets(h), openTickets(restored), "%s after %q: restored decisions", a.name, step)
				}
			}
			check("start")
			for _, step := range tt.steps {
				if step == "" {
					require.NoError(t, d.AdvanceTo(d.Now().Add(time.Hour)))
					check("an hour later")
					continue
				}
				var who, choice string
				_, err := fmt.Sscan(step, &who, &choice)
				require.NoError(t, err)
				var p *engine.PendingDecision
				for _, x := range d.Pending() {
					if x.Agent == who {
						p = &x
						break
					}
				}
				require.NotNil(t, p, "%s has a decision pending", who)
				a := decision.Answer{Choice: choice, Content: content{"price": 1.0, "task": "t"}}
				if len(p.Request.Sessions) > 0 {
					a = decision.Answer{Sessions: map[string]decision.SessionAnswer{}}
					for _, s := range p.Request.Sessions {
						a.Sessions[s.Peer] = decision.SessionAnswer{Choice: "reject-proposal"}
					}
				}
				require.NoError(t, d.Answer(who, convID, p.Ticket, a))
				check(step)
			}
			for _, a := range tt.agents {
				assert.Empty(t, d.Handler(a.name, convID).Armed(), "%s: nothing armed at the end", a.name)
			}
		})
	}
}

// sameTimer reports whether sig names timer e (ignoring the deadline,
// which cancel and fired events do not carry alike).
func sameTimer(sig string, e *engine.TimerEvent) bool {
	want := fmt.Sprintf("%s|%s|%s|%d|", e.Name, e.Commitment, e.Session, e.Epoch)
	return len(sig) >= len(want) && sig[:len(want)] == want
}

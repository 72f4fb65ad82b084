package policy

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// This file keeps checkDeterminism as it was before it compared roles
// and message types by number, as the reference the check must agree
// with (see TestDeterminismAgreesWithTheReference).

// refCheckDeterminism is the reference checkDeterminism.
func refCheckDeterminism(c *checker) {
	type trigger struct {
		kind    TransitionKind
		a, b, c string
	}
	// The first transition of each trigger, key, class and match rule
	// in a state, reused from state to state.
	var (
		unguarded firstSeen[trigger]
		keys      firstSeen[[2]string]
		classes   firstSeen[[3]string] // sender, receiver, performative → matchless transition
		matches   firstSeen[[4]string] // sender, receiver, performative, match source
	)
	for _, s := range c.p.States {
		unguarded.reset()
		keys.reset()
		classes.reset()
		matches.reset()
		for _, t := range s.Transitions {
			var tr trigger
			switch t.Kind {
			case SendMessage:
				tr = trigger{t.Kind, t.From.Name, t.To.Name, t.Message.Name}
			case OnTimeout:
				tr = trigger{kind: t.Kind, a: t.Timer.Name}
			case ChildReturn:
				tr = trigger{kind: t.Kind, a: t.Outcome}
			}
			if first, ok := unguarded.get(tr); ok {
				if t.Kind == SendMessage && first.Next.Name != t.Next.Name {
					c.d.errorf(CodeNondeterministic, t.Pos, "state %s has the same message (%s from %s to %s) twice, leading to %s and to %s: the earlier one has no guard and always matches first, so this branch can never be taken; give the earlier one a guard, or send another message here", Quote(s.Name), Quote(t.Message.Name), Quote(t.From.Name), Quote(t.To.Name), Quote(first.Next.Name), Quote(t.Next.Name)).related(first.Pos, "the earlier transition")
				} else {
					c.d.warnf(CodeShadowed, t.Pos, "this %s transition in state %s is never taken: an earlier one with the same %s and no guard always matches first", t.Kind, Quote(s.Name), triggerName(t)).related(first.Pos, "the earlier transition")
				}
				continue
			}
			if t.Guard == nil {
				unguarded.put(tr, t)
			}
			if t.Kind != SendMessage {
				continue
			}
			k := [2]string{t.From.Name, t.MessageKey()}
			if first, ok := keys.get(k); ok && (first.To.Name != t.To.Name || first.Message.Name != t.Message.Name) {
				c.d.errorf(CodeNondeterministic, t.Pos, "state %s offers %s two choices named %s (%s to %s and %s to %s); give one a distinct key", Quote(s.Name), Quote(t.From.Name), Quote(t.MessageKey()), Quote(first.Message.Name), Quote(first.To.Name), Quote(t.Message.Name), Quote(t.To.Name)).related(first.Pos, "the other choice")
			} else if !ok {
				keys.put(k, t)
			}
			m := c.msgs.get(t.Message.Name)
			if m == nil || m.Performative == "" {
				continue
			}
			if m.Match == nil {
				cls := [3]string{t.From.Name, t.To.Name, m.Performative}
				if first, ok := classes.get(cls); ok && first.Message.Name != t.Message.Name {
					c.d.errorf(CodeNondeterministic, t.Pos, "in state %s, %s cannot tell %s from %s: both are %s messages from %s and neither has a match rule; add match to one of the message types", Quote(s.Name), Quote(t.To.Name), Quote(first.Message.Name), Quote(t.Message.Name), clip(m.Performative), Quote(t.From.Name)).related(first.Pos, "the other transition").related(m.Pos, "message type %s", Quote(m.Name))
				} else if !ok {
					classes.put(cls, t)
				}
				continue
			}
			mk := [4]string{t.From.Name, t.To.Name, m.Performative, m.Match.Src}
			if first, ok := matches.get(mk); ok && first.Message.Name != t.Message.Name {
				c.d.errorf(CodeNondeterministic, t.Pos, "in state %s, %s cannot tell %s from %s: both are %s messages from %s with the same match rule", Quote(s.Name), Quote(t.To.Name), Quote(first.Message.Name), Quote(t.Message.Name), clip(m.Performative), Quote(t.From.Name)).related(first.Pos, "the other transition")
			} else if !ok {
				matches.put(mk, t)
			}
		}
	}
}

// TestDeterminismAgreesWithTheReference checks that checkDeterminism
// reports what the reference does, in the same order, on every policy
// file and on random policies whose states offer many transitions (past
// maxSearchedKeys) of every kind, with declared, undeclared and empty
// names, keys, guards, performatives and match rules: both as the
// checker finds them and with the names taken as unresolved.
func TestDeterminismAgreesWithTheReference(t *testing.T) {
	var policies []*Policy
	for _, pattern := range []string{"../policies/*", "../testdata/*/*", "../testdata/*/*/*", "../cmd/cpvalidate/testdata/*/*", "testdata/*/*"} {
		files, err := filepath.Glob(pattern)
		require.NoError(t, err)
		for _, file := range files {
			if _, ok := FormatOf(file); !ok {
				continue
			}
			src, err := os.ReadFile(file)
			require.NoError(t, err)
			if p, _ := Load(file, src); p != nil {
				policies = append(policies, p)
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		policies = append(policies, randomTransitions(rng))
	}
	resolved := 0
	for i, p := range policies {
		for _, unresolve := range []bool{false, true} {
			t.Run(fmt.Sprint(i, p.Name, unresolve), func(t *testing.T) {
				want, got := newChecker(p, checkOptions{}), newChecker(p, checkOptions{})
				if got.resolved && !unresolve {
					resolved++
				}
				if unresolve {
					want.resolved, got.resolved = false, false
				}
				refCheckDeterminism(want)
				checkDeterminism(got)
				assert.Equal(t, want.d.list, got.d.list)
			})
		}
	}
	assert.Greater(t, resolved, 100, "policies whose names all resolve")
}

// randomTransitions makes a policy of a few states, each with up to 24
// transitions drawn from small sets of kinds and names.
func randomTransitions(rng *rand.Rand) *Policy {
	pick := func(names ...string) string { return names[rng.IntN(len(names))] }
	p := &Policy{Name: "random"}
	for _, r := range []string{"A", "B", "C"} {
		p.Roles = append(p.Roles, &Role{Name: r})
	}
	match := &Expr{Src: `"x" in content`}
	for i, perf := range []string{"inform", "inform", "request", "", "inform"} {
		m := &MessageType{Name: fmt.Sprint("m", i), Performative: perf}
		if i >= 3 {
			m.Match = match
		}
		if i == 4 && rng.IntN(2) == 0 {
			m.Match = &Expr{Src: `"y" in content`}
		}
		p.Messages = append(p.Messages, m)
	}
	p.Timers = []*Timer{{Name: "t"}, {Name: "u"}}
	resolves := rng.IntN(3) > 0
	for s := range 4 {
		st := &State{Name: fmt.Sprint("s", s)}
		for j := range rng.IntN(25) {
			tr := &Transition{Pos: Pos{Line: 100*s + j + 1}, Next: Ref{Name: pick("s0", "s1", "s2", "s3")}}
			switch rng.IntN(6) {
			case 0:
				tr.Kind, tr.Timer = OnTimeout, Ref{Name: pick("t", "u")}
			case 1:
				tr.Kind, tr.Outcome = ChildReturn, pick("done", "failed")
			case 2:
				if !resolves {
					tr.Kind = TransitionKind(pick("", "other"))
					break
				}
				fallthrough
			default:
				tr.Kind = SendMessage
				roles, msgs := []string{"A", "B", "C"}, []string{"m0", "m1", "m2", "m3", "m4"}
				if !resolves {
					roles, msgs = append(roles, "", "Z"), append(msgs, "", "zz")
				}
				tr.From, tr.To, tr.Message = Ref{Name: pick(roles...)}, Ref{Name: pick(roles...)}, Ref{Name: pick(msgs...)}
				if rng.IntN(4) == 0 {
					tr.Key = pick("k", "m1", "m2")
				}
			}
			if rng.IntN(2) == 0 {
				tr.Guard = &Expr{Src: "true"}
			}
			st.Transitions = append(st.Transitions, tr)
		}
		p.States = append(p.States, st)
	}
	return p
}

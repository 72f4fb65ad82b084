package policy

import "fmt"

// checkDeterminism reports, per state, transitions the conversation cannot
// tell apart and transitions an earlier one always takes first:
//
//   - a later transition with the same trigger (sender, receiver and
//     message; timer; child outcome) as an earlier unguarded one is
//     shadowed: it can never be taken; for a message that leads to
//     another state, an error (the second branch is dead), else a
//     warning;
//   - two message types with the same performative from the same sender
//     that the receiver cannot classify apart (neither has a match rule, or
//     both have the same one) are nondeterministic;
//   - two choices of one sender with the same message key are
//     nondeterministic: the decision cannot say which it means.
func checkDeterminism(c *checker) {
	// A trigger, key, class and match rule name roles and message types
	// by number: their indices among the declarations when every name
	// resolves, else numbers given to the names (the same for the same
	// name), so that keys are compared as numbers.
	type trigger struct {
		kind          edgeKind
		from, to, msg int32
		name          string // the timer, or the child outcome
	}
	type key struct {
		from int32
		key  string
	}
	type class struct {
		from, to int32
		perf     string
	}
	type match struct {
		from, to   int32
		perf, rule string
	}
	// The first transition of each trigger, key, class and match rule
	// in a state, reused from state to state.
	var (
		unguarded firstSeen[trigger]
		keys      firstSeen[key]
		classes   firstSeen[class] // sender, receiver, performative → matchless transition
		matches   firstSeen[match] // sender, receiver, performative, match source
		numbers   map[string]int32 // the names' numbers, when not every name resolves
	)
	number := func(name string) int32 {
		n, ok := numbers[name]
		if !ok {
			if numbers == nil {
				numbers = map[string]int32{}
			}
			n = int32(len(numbers))
			numbers[name] = n
		}
		return n
	}
	k := 0 // the index of the state's first edge
	for _, s := range c.p.States {
		unguarded.reset()
		keys.reset()
		classes.reset()
		matches.reset()
		edges := c.edges[k : k+len(s.Transitions)]
		k += len(edges)
		for j, t := range s.Transitions {
			e := &edges[j]
			tr := trigger{kind: e.kind}
			switch e.kind {
			case edgeSend:
				if c.resolved {
					tr.from, tr.to, tr.msg = e.from, e.to, e.msg
				} else {
					tr.from, tr.to, tr.msg = number(t.From.Name), number(t.To.Name), number(t.Message.Name)
				}
			case edgeTimeout:
				tr.name = t.Timer.Name
			case edgeReturn:
				tr.name = t.Outcome
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
			if e.kind != edgeSend {
				continue
			}
			ck := key{tr.from, t.MessageKey()}
			if first, ok := keys.get(ck); ok && (first.To.Name != t.To.Name || first.Message.Name != t.Message.Name) {
				c.d.errorf(CodeNondeterministic, t.Pos, "state %s offers %s two choices named %s (%s to %s and %s to %s); give one a distinct key", Quote(s.Name), Quote(t.From.Name), Quote(t.MessageKey()), Quote(first.Message.Name), Quote(first.To.Name), Quote(t.Message.Name), Quote(t.To.Name)).related(first.Pos, "the other choice")
			} else if !ok {
				keys.put(ck, t)
			}
			var m *MessageType
			if c.resolved {
				m = c.msgs.vals[e.msg]
			} else {
				m = c.msgs.get(t.Message.Name)
			}
			if m == nil || m.Performative == "" {
				continue
			}
			if m.Match == nil {
				cls := class{tr.from, tr.to, m.Performative}
				if first, ok := classes.get(cls); ok && first.Message.Name != t.Message.Name {
					c.d.errorf(CodeNondeterministic, t.Pos, "in state %s, %s cannot tell %s from %s: both are %s messages from %s and neither has a match rule; add match to one of the message types", Quote(s.Name), Quote(t.To.Name), Quote(first.Message.Name), Quote(t.Message.Name), clip(m.Performative), Quote(t.From.Name)).related(first.Pos, "the other transition").related(m.Pos, "message type %s", Quote(m.Name))
				} else if !ok {
					classes.put(cls, t)
				}
				continue
			}
			mk := match{tr.from, tr.to, m.Performative, m.Match.Src}
			if first, ok := matches.get(mk); ok && first.Message.Name != t.Message.Name {
				c.d.errorf(CodeNondeterministic, t.Pos, "in state %s, %s cannot tell %s from %s: both are %s messages from %s with the same match rule", Quote(s.Name), Quote(t.To.Name), Quote(first.Message.Name), Quote(t.Message.Name), clip(m.Performative), Quote(t.From.Name)).related(first.Pos, "the other transition")
			} else if !ok {
				matches.put(mk, t)
			}
		}
	}
}

// firstSeen maps keys to the first transition put under each, for the
// handful of transitions of one state: a list searched by comparing
// keys, and a map once it holds more than maxSearchedKeys.
type firstSeen[K comparable] struct {
	keys []K
	ts   []*Transition
	m    map[K]*Transition
}

// get returns the transition put under k.
func (f *firstSeen[K]) get(k K) (*Transition, bool) {
	if f.m != nil {
		t, ok := f.m[k]
		return t, ok
	}
	for i := range f.keys {
		if f.keys[i] == k {
			return f.ts[i], true
		}
	}
	return nil, false
}

// put records t under k, which get does not find.
func (f *firstSeen[K]) put(k K, t *Transition) {
	if f.m != nil {
		f.m[k] = t
		return
	}
	f.keys = append(f.keys, k)
	f.ts = append(f.ts, t)
	if len(f.keys) > maxSearchedKeys {
		f.m = make(map[K]*Transition, 2*len(f.keys))
		for i, k := range f.keys {
			f.m[k] = f.ts[i]
		}
	}
}

// reset empties f. What the lists held stays in their arrays, to be
// written over: it is the policy's, alive as long as the checks run.
func (f *firstSeen[K]) reset() { f.keys, f.ts, f.m = f.keys[:0], f.ts[:0], nil }

func triggerName(t *Transition) string {
	switch t.Kind {
	case SendMessage:
		return fmt.Sprintf("message (%s from %s to %s)", Quote(t.Message.Name), Quote(t.From.Name), Quote(t.To.Name))
	case OnTimeout:
		return fmt.Sprintf("timer (%s)", Quote(t.Timer.Name))
	}
	return fmt.Sprintf("outcome (%s)", Quote(t.Outcome))
}

// checkReflexive reports a role sending a message to itself.
func checkReflexive(c *checker) {
	report := func(t *Transition) {
		c.d.errorf(CodeReflexive, t.To.Pos, "role %s sends %s to itself; a message goes from one role to another", Quote(t.From.Name), Quote(t.Message.Name))
	}
	if c.resolved {
		// Two declared names are the same when their indices are.
		c.eachEdge(func(i, j int, e *edge) {
			if e.kind == edgeSend && e.from == e.to {
				report(c.p.States[i].Transitions[j])
			}
		})
		return
	}
	for _, s := range c.p.States {
		for _, t := range s.Transitions {
			if t.Kind == SendMessage && t.From.Name != "" && t.From.Name == t.To.Name {
				report(t)
			}
		}
	}
}

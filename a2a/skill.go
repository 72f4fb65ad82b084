package a2a

import (
	"fmt"
	"slices"
	"strings"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policy"
)

// skill is one (policy, role) a server accepts conversations in: the
// local role receives the policy's first message from the external role,
// which the A2A client plays.
type skill struct {
	id       string
	policy   *policy.Policy
	role     string // the local role
	external string // the role the A2A client plays
	states   map[string]*policy.State
	forms    map[string]*forms.Form // by message type name
	order    []string               // message type names in declaration order
}

// newSkills returns the skills of p: one for each role that receives p's
// first message (a host accepts new conversations in it).
func newSkills(p *policy.Policy, copts ...engine.CompileOption) ([]*skill, error) {
	c, ds := engine.Check(p, copts...)
	if c == nil {
		return nil, fmt.Errorf("a2a: policy %s: %w", policy.Quote(p.Name), ds.Err())
	}
	fs, order, err := compileForms(p)
	if err != nil {
		return nil, err
	}
	states := map[string]*policy.State{}
	for _, st := range p.States {
		states[st.Name] = st
	}
	var out []*skill
	for _, role := range c.Roles() {
		prog, err := c.Program(role)
		if err != nil {
			return nil, fmt.Errorf("a2a: policy %s as %s: %w", policy.Quote(p.Name), policy.Quote(role), err)
		}
		if !prog.RespondsFirst() {
			continue
		}
		sk := &skill{id: p.Name + "/" + role, policy: p, role: role, states: states, forms: fs, order: order}
		for _, t := range states[p.Initial.Name].Transitions {
			if t.Kind == policy.SendMessage && t.To.Name == role {
				sk.external = t.From.Name
				break
			}
		}
		out = append(out, sk)
	}
	return out, nil
}

// compileForms compiles the form of every message type of p.
func compileForms(p *policy.Policy) (map[string]*forms.Form, []string, error) {
	fs := map[string]*forms.Form{}
	var order []string
	for _, mt := range p.Messages {
		var pred forms.Predicate
		if mt.Match != nil {
			e, err := decision.Compile(mt.Match)
			if err != nil {
				return nil, nil, fmt.Errorf("a2a: policy %s: message %s: %w", policy.Quote(p.Name), policy.Quote(mt.Name), err)
			}
			pred = matchRule{e}
		}
		f, err := forms.New(mt, pred)
		if err != nil {
			return nil, nil, err
		}
		fs[mt.Name] = f
		order = append(order, mt.Name)
	}
	return fs, order, nil
}

// matchRule evaluates a message type's match rule.
type matchRule struct{ e *decision.Expression }

func (m matchRule) Match(msg *forms.Message) (bool, error) {
	return m.e.Bool(&decision.Env{Content: msg.Content, Msg: msg.Envelope()})
}

// view is what a state of the local role means for the A2A client.
type view struct {
	// allowed lists the message types the client may send, in the
	// policy's order.
	allowed []string
	// acts is true when the local role may send, or runs a child policy:
	// the agent is working.
	acts bool
}

// stateView returns what the client may do in the local role's state.
func (sk *skill) stateView(state string) view {
	st := sk.states[state]
	if st == nil {
		return view{acts: true}
	}
	v := view{acts: st.Kind == policy.KindInChild}
	for _, t := range st.Transitions {
		if t.Kind != policy.SendMessage {
			continue
		}
		switch {
		case t.From.Name == sk.external && t.To.Name == sk.role:
			if !slices.Contains(v.allowed, t.Message.Name) {
				v.allowed = append(v.allowed, t.Message.Name)
			}
		case t.From.Name == sk.role:
			v.acts = true
		}
	}
	return v
}

// opening returns the message types that open a conversation of the skill.
func (sk *skill) opening() []string {
	return sk.stateView(sk.policy.Initial.Name).allowed
}

// classify returns the type of the message the client sends: one of
// allowed that fits performative and content. want names the type (or
// is empty), perf the performative (or is empty); plain says the client
// gave neither, and then exactly one type may fit. msg is filled with
// the type's performative.
func (sk *skill) classify(allowed []string, want, perf string, plain bool, msg *forms.Message) (string, error) {
	var candidates []string
	for _, name := range allowed {
		f := sk.forms[name]
		if (want == "" || want == name) && (perf == "" || perf == f.Type.Performative) {
			candidates = append(candidates, name)
		}
	}
	if len(candidates) == 0 {
		what := "message"
		switch {
		case want != "":
			what = "message type " + policy.Quote(want)
		case perf != "":
			what = "performative " + policy.Quote(perf)
		}
		return "", fmt.Errorf("%s is not allowed now; %s", what, allowedText(allowed))
	}
	var fits []string
	var firstErr error
	for _, name := range candidates {
		f := sk.forms[name]
		msg.Performative = f.Type.Performative
		if !f.Matches(msg) {
			if firstErr == nil {
				firstErr = fmt.Errorf("content does not match message type %s", policy.Quote(name))
			}
			continue
		}
		if err := f.Validate(msg.Content); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		fits = append(fits, name)
	}
	switch {
	case len(fits) == 0 && len(candidates) == 1:
		return "", firstErr
	case len(fits) == 0:
		return "", fmt.Errorf("the content fits none of the messages allowed now (%s): %v", quoteAll(candidates), firstErr)
	case len(fits) > 1 && plain:
		return "", fmt.Errorf("the content fits several messages (%s): name one as type in the message metadata under %s", quoteAll(fits), policy.Quote(ExtensionURI))
	}
	msg.Performative = sk.forms[fits[0]].Type.Performative
	return fits[0], nil
}

// typeOf returns the name of the message type msg is of, or "".
func (sk *skill) typeOf(msg *forms.Message) string {
	var fallback string
	for _, name := range sk.order {
		f := sk.forms[name]
		if msg.Performative != f.Type.Performative {
			continue
		}
		if f.HasMatch() && f.Matches(msg) {
			return name
		}
		if !f.HasMatch() && fallback == "" {
			fallback = name
		}
	}
	return fallback
}

func allowedText(allowed []string) string {
	if len(allowed) == 0 {
		return "the client may send nothing now"
	}
	return "allowed: " + quoteAll(allowed)
}

// quoteAll quotes names from a policy and joins them.
func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = policy.Quote(n)
	}
	return strings.Join(q, ", ")
}

package decision

import (
	"context"
	"fmt"

	"github.com/parleyhq/parley/policy"
)

// FromPolicy returns a Decider for the decide expressions bound to the
// decision points (states) of p. Each expression reads content, vars,
// choices and peer (and sessions at a join; then it runs once per
// session) and returns either a choice (a message key) or a map
// {"choice": key, "content": {...}}. For a decision point with no
// expression, and for other policies, it returns ErrNoDecision.
func FromPolicy(p *policy.Policy) (Decider, error) {
	programs := map[string]*Expression{}
	for _, s := range p.States {
		if s.Decide == nil {
			continue
		}
		prog, err := Compile(s.Decide)
		if err != nil {
			return nil, err
		}
		programs[s.Name] = prog
	}
	return Bind(p.Name, programs), nil
}

// Bind returns the Decider of FromPolicy for decide expressions already
// compiled: byPoint maps a decision point (state) of policy policyName to
// its expression.
func Bind(policyName string, byPoint map[string]*Expression) Decider {
	return &bound{policy: policyName, programs: byPoint}
}

type bound struct {
	policy   string
	programs map[string]*Expression
}

func (b *bound) Decide(_ context.Context, req *Request) (Answer, error) {
	prog := b.programs[req.Point]
	if req.Policy != b.policy || prog == nil {
		return Answer{}, ErrNoDecision
	}
	if len(req.Sessions) == 0 {
		out, err := prog.Eval(&Env{Content: req.Content, Vars: req.Vars, Choices: req.Choices, Peer: req.Peer})
		if err != nil {
			return Answer{}, err
		}
		choice, content, err := answerOf(out)
		return Answer{Choice: choice, Content: content}, err
	}
	all := make([]map[string]any, len(req.Sessions))
	for i, s := range req.Sessions {
		all[i] = map[string]any{"peer": s.Peer, "content": s.Content, "vars": s.Vars, "choices": s.Choices}
	}
	a := Answer{Sessions: make(map[string]SessionAnswer, len(req.Sessions))}
	for _, s := range req.Sessions {
		out, err := prog.Eval(&Env{Content: s.Content, Vars: s.Vars, Choices: s.Choices, Peer: s.Peer, Sessions: all})
		if err != nil {
			return Answer{}, err
		}
		choice, content, err := answerOf(out)
		if err != nil {
			return Answer{}, fmt.Errorf("session %q: %w", s.Peer, err)
		}
		a.Sessions[s.Peer] = SessionAnswer{Choice: choice, Content: content}
	}
	return a, nil
}

func answerOf(out any) (string, map[string]any, error) {
	switch v := out.(type) {
	case string:
		return v, nil, nil
	case map[string]any:
		choice, ok := v["choice"].(string)
		if !ok {
			return "", nil, fmt.Errorf("decision: a decide expression returning a map must set \"choice\" to a string")
		}
		var content map[string]any
		if c, ok := v["content"]; ok && c != nil {
			if content, ok = c.(map[string]any); !ok {
				return "", nil, fmt.Errorf("decision: \"content\" must be a map, not %T", c)
			}
		}
		return choice, content, nil
	}
	return "", nil, fmt.Errorf("decision: a decide expression must return a choice or {choice, content}, not %T", out)
}

package agent

import (
	"context"
	"fmt"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/policy"
)

// setupNames are the parts of a conversation-setup policy the manager
// drives, read from the policy itself: the caller sends the proposal (a
// propose with string fields policy and role, and optionally
// conversation) from the initial state; in the state it leads to, the
// responder answers with an accept-proposal (accept) or a
// reject-proposal (decline); the accept's terminal outcome means agreed.
type setupNames struct {
	caller, responder string
	start, proposed   string
	propose           string
	accept, decline   string
	agreed            string
}

func setupNamesOf(p *policy.Policy) (*setupNames, error) {
	bad := func(why string) error {
		return fmt.Errorf("agent: WithSetup: policy %s cannot set up conversations: %s", policy.Quote(p.Name), why)
	}
	state := func(name string) *policy.State {
		for _, s := range p.States {
			if s.Name == name {
				return s
			}
		}
		return nil
	}
	msg := func(name string) *policy.MessageType {
		for _, m := range p.Messages {
			if m.Name == name {
				return m
			}
		}
		return nil
	}
	start := state(p.Initial.Name)
	if start == nil || len(start.Transitions) != 1 || start.Transitions[0].Kind != policy.SendMessage {
		return nil, bad("its initial state must have exactly one send-message transition, the proposal")
	}
	open := start.Transitions[0]
	n := &setupNames{caller: open.From.Name, responder: open.To.Name, start: start.Name, propose: open.MessageKey(), proposed: open.Next.Name}
	pm := msg(open.Message.Name)
	if pm == nil {
		return nil, bad("the proposal's message type is not declared")
	}
	for _, f := range []string{"policy", "role"} {
		if !hasField(pm, f) {
			return nil, bad(fmt.Sprintf("the proposal %s has no field %q", policy.Quote(pm.Name), f))
		}
	}
	proposed := state(n.proposed)
	if proposed == nil {
		return nil, bad("the proposal leads to no state")
	}
	for _, t := range proposed.Transitions {
		if t.Kind != policy.SendMessage || t.From.Name != n.responder {
			continue
		}
		m := msg(t.Message.Name)
		if m == nil {
			continue
		}
		switch m.Performative {
		case "accept-proposal":
			n.accept = t.MessageKey()
			if next := state(t.Next.Name); next != nil && next.Kind == policy.KindTerminal {
				n.agreed = next.Outcome
			}
		case "reject-proposal":
			n.decline = t.MessageKey()
		}
	}
	if n.accept == "" || n.decline == "" || n.agreed == "" {
		return nil, bad("in the state after the proposal the responder must answer with an accept-proposal that ends the conversation and a reject-proposal")
	}
	return n, nil
}

func hasField(m *policy.MessageType, name string) bool {
	for _, f := range m.Fields {
		if f.Name == name {
			return true
		}
	}
	return false
}

// Setup agrees with peer, through the conversation-setup policy (see
// WithSetup), to run r.Policy with peer in peerRole and this agent in
// r.Role, and then starts that conversation. r.Peers binds the roles as
// for Start (peer's role included). It returns the conversation's id, or
// an error saying why the peer declined.
func (m *Manager) Setup(ctx context.Context, peer, peerRole string, r StartRequest) (string, error) {
	if m.closed.Load() {
		return "", ErrClosed
	}
	if m.setup == nil {
		return "", fmt.Errorf("agent: %s has no conversation-setup policy: use WithSetup", m.self)
	}
	if _, err := m.program(r.Policy, r.Role); err != nil {
		return "", err
	}
	if r.ID == "" {
		r.ID = newID(m.self)
	}
	n := m.setup
	proposal := map[string]any{"policy": r.Policy, "role": peerRole, "conversation": r.ID}
	setupID, err := m.Start(ctx, StartRequest{Policy: m.o.setup.Name, Role: n.caller, Peers: map[string][]string{n.responder: {peer}}, Data: proposal})
	if err != nil {
		return "", err
	}
	outcome, err := m.Wait(ctx, setupID)
	if err != nil {
		return "", err
	}
	if outcome != n.agreed {
		return "", fmt.Errorf("agent: %s did not agree to %s as %s: %s", policy.Quote(peer), policy.Quote(r.Policy), policy.Quote(peerRole), outcome)
	}
	return m.Start(ctx, r)
}

// setupDecision decides conversation-setup for the manager: as the
// caller it proposes what Setup asked for; as the responder it accepts a
// policy and role it registered as a responder, and remembers the agreed
// id for opener, the agent that proposed it.
func (m *Manager) setupDecision(req *decision.Request, opener string) (decision.Answer, error) {
	n := m.setup
	switch {
	case req.Role == n.caller && req.Point == n.start:
		return decision.Answer{Choice: n.propose, Content: req.Content}, nil
	case req.Role == n.responder && req.Point == n.proposed:
		policyName, _ := req.Content["policy"].(string)
		role, _ := req.Content["role"].(string)
		id, _ := req.Content["conversation"].(string)
		decline := func(reason string) (decision.Answer, error) {
			return decision.Answer{Choice: n.decline, Content: map[string]any{"reason": reason}}, nil
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		prog := m.reg.Load().programs[[2]string{policyName, role}]
		switch {
		case prog == nil:
			return decline(fmt.Sprintf("%s does not play %s in %s", m.self, policy.Quote(role), policy.Quote(policyName)))
		case !prog.RespondsFirst():
			return decline(fmt.Sprintf("%s does not open %s", policy.Quote(role), policy.Quote(policyName)))
		case id == "":
			return decline("no conversation id proposed")
		case isChild(id):
			return decline("a child conversation id cannot be agreed")
		}
		if _, taken := m.agreed[id]; taken {
			return decline("conversation id already agreed")
		}
		if len(m.agreed) >= m.o.limits.MaxConversations {
			return decline("too many conversations agreed and not yet opened")
		}
		m.agreed[id] = agreement{prog: prog, peer: opener}
		m.nagreed.Add(1)
		return decision.Answer{Choice: n.accept}, nil
	}
	return decision.Answer{}, decision.ErrNoDecision
}

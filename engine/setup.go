package engine

import (
	"context"
	"fmt"

	"github.com/parleyhq/parley/decision"
)

// Setup agrees with peer, through the conversation-setup policy (see
// WithSetup), to run policyName with peer in peerRole and this agent in
// role, and then starts that conversation. peers binds the roles as for
// Start (peer's role included); data is the content of the first
// decision. It returns the conversation's id, or an error saying why the
// peer declined.
func (m *Manager) Setup(ctx context.Context, peer, policyName, peerRole, role string, peers map[string][]string, data map[string]any) (string, error) {
	if m.setup == nil {
		return "", fmt.Errorf("engine: %s has no conversation-setup policy: use WithSetup", m.self)
	}
	if _, err := m.program(policyName, role); err != nil {
		return "", err
	}
	id := m.newID()
	proposal := map[string]any{"policy": policyName, "role": peerRole, "conversation": id}
	setupID, err := m.Start(ctx, m.setup.Name, "Caller", map[string][]string{"Responder": {peer}}, proposal)
	if err != nil {
		return "", err
	}
	outcome, err := m.Wait(ctx, setupID)
	if err != nil {
		return "", err
	}
	if outcome != "accepted" {
		return "", fmt.Errorf("engine: %s did not agree to %s as %s: %s", peer, policyName, peerRole, outcome)
	}
	return m.startAs(ctx, id, policyName, role, peers, data)
}

// setupDecision decides conversation-setup for the manager: as Caller it
// proposes what Setup asked for; as Responder it accepts a policy and
// role it registered as a responder, and remembers the agreed id.
func (m *Manager) setupDecision(req *decision.Request) (decision.Answer, error) {
	switch {
	case req.Role == "Caller" && req.Point == "start":
		return decision.Answer{Choice: "setup", Content: req.Content}, nil
	case req.Role == "Responder" && req.Point == "proposed":
		policyName, _ := req.Content["policy"].(string)
		role, _ := req.Content["role"].(string)
		id, _ := req.Content["conversation"].(string)
		m.mu.Lock()
		defer m.mu.Unlock()
		prog := m.programs[[2]string{policyName, role}]
		switch {
		case prog == nil:
			return decision.Answer{Choice: "decline", Content: map[string]any{"reason": fmt.Sprintf("%s does not play %s in %s", m.self, role, policyName)}}, nil
		case !prog.respondsFirst():
			return decision.Answer{Choice: "decline", Content: map[string]any{"reason": fmt.Sprintf("%s does not open %s", role, policyName)}}, nil
		case id == "":
			return decision.Answer{Choice: "decline", Content: map[string]any{"reason": "no conversation id proposed"}}, nil
		}
		m.agreed[id] = prog
		return decision.Answer{Choice: "accept"}, nil
	}
	return decision.Answer{}, decision.ErrNoDecision
}

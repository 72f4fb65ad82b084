package agent

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSamePeersOnlyForTheSameBinding: start takes the WithPeers option it
// made last without ranging over the peers only when they bind the same
// agents to the same role and nothing else.
func TestSamePeersOnlyForTheSameBinding(t *testing.T) {
	tests := []struct {
		name  string
		last  map[string][]string // the peers of the start before, if any
		peers map[string][]string
		same  bool
	}{
		{"no start before", nil, map[string][]string{"Participant": {"bob"}}, false},
		{"the same binding", map[string][]string{"Participant": {"bob"}}, map[string][]string{"Participant": {"bob"}}, true},
		{"another agent", map[string][]string{"Participant": {"bob"}}, map[string][]string{"Participant": {"carol"}}, false},
		{"one more agent", map[string][]string{"Participant": {"bob"}}, map[string][]string{"Participant": {"bob", "carol"}}, false},
		{"another role", map[string][]string{"Participant": {"bob"}}, map[string][]string{"Broker": {"bob"}}, false},
		{"one more role", map[string][]string{"Participant": {"bob"}}, map[string][]string{"Participant": {"bob"}, "Broker": {"carol"}}, false},
		{"no peers", map[string][]string{"Participant": {"bob"}}, nil, false},
		{"another role where the last bound none", map[string][]string{"Participant": {}}, map[string][]string{"Broker": nil}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &worker{}
			for role, agents := range tt.last {
				w.withPeers(role, agents)
			}
			opt := w.samePeers(tt.peers)
			if !tt.same {
				assert.Nil(t, opt)
				return
			}
			assert.NotNil(t, opt)
			for role, agents := range tt.peers {
				assert.Equal(t, w.peerOpt.role, role)
				assert.Equal(t, w.peerOpt.agents, agents)
			}
		})
	}
}

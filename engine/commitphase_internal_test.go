package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A session keeps a commitment's state as a commitPhase: each state has
// one, which gives the state back and is active when the state is.
func TestCommitPhaseOfEachState(t *testing.T) {
	tests := []struct {
		name  string
		state CommitmentState
		phase commitPhase
	}{
		{name: "never created", state: "", phase: phaseNone},
		{name: "conditional", state: CommitmentConditional, phase: phaseConditional},
		{name: "detached", state: CommitmentDetached, phase: phaseDetached},
		{name: "discharged", state: CommitmentDischarged, phase: phaseDischarged},
		{name: "violated", state: CommitmentViolated, phase: phaseViolated},
		{name: "expired", state: CommitmentExpired, phase: phaseExpired},
		{name: "cancelled", state: CommitmentCancelled, phase: phaseCancelled},
		{name: "released", state: CommitmentReleased, phase: phaseReleased},
		{name: "no such state", state: "pending", phase: phaseNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := phaseOf(tt.state)
			assert.Equal(t, tt.phase, p)
			if tt.phase != phaseNone {
				assert.Equal(t, tt.state, p.state())
			}
			assert.Equal(t, tt.state.active(), p.active())
		})
	}
}

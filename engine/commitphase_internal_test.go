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

// Each commitment operation moves a commitment by the phase it is in:
// movesOf's table, which compile builds once, says for every phase what
// the operation does, and nothing where the lifecycle allows nothing.
func TestMovesOfEachOperation(t *testing.T) {
	none := phaseMove{}
	final := []commitPhase{phaseDischarged, phaseViolated, phaseExpired, phaseCancelled, phaseReleased}
	tests := []struct {
		name       string
		op         opKind
		detachable bool
		// conditional and detached are what the operation does to an
		// active commitment in each phase; inactive to one never created
		// or final.
		conditional, detached, inactive phaseMove
	}{
		{name: "create detachable", op: opCreate, detachable: true,
			conditional: none, detached: none, inactive: phaseMove{phaseConditional, phaseNone}},
		{name: "create not detachable is detached at once", op: opCreate,
			conditional: none, detached: none, inactive: phaseMove{phaseConditional, phaseDetached}},
		{name: "detach", op: opDetach, detachable: true,
			conditional: phaseMove{phaseDetached, phaseNone}, detached: none, inactive: none},
		{name: "discharge", op: opDischarge,
			conditional: phaseMove{phaseDischarged, phaseNone}, detached: phaseMove{phaseDischarged, phaseNone}, inactive: none},
		{name: "cancel", op: opCancel,
			conditional: phaseMove{phaseCancelled, phaseNone}, detached: phaseMove{phaseViolated, phaseNone}, inactive: none},
		{name: "release", op: opRelease,
			conditional: phaseMove{phaseReleased, phaseNone}, detached: phaseMove{phaseReleased, phaseNone}, inactive: none},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			moves := movesOf(tt.op, tt.detachable)
			assert.Equal(t, tt.conditional, moves[phaseConditional], "conditional")
			assert.Equal(t, tt.detached, moves[phaseDetached], "detached")
			for _, p := range append([]commitPhase{phaseNone}, final...) {
				assert.Equal(t, tt.inactive, moves[p], "phase %v", p.state())
			}
		})
	}
}

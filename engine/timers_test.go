package engine_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/engine"
)

// Commitment deadlines are typed: TimerEvent.Commitment names the
// commitment and Name is the policy's timer, so in FIPA Request, where
// the state agreed and the commitment perform both arm the timer result,
// each firing reaches only what armed it, and a timer named as version 1
// named commitment timers ("commitment:perform") reaches nothing.
func TestCommitmentTimersAreTyped(t *testing.T) {
	c := newConv(t, "fipa-request", cast("fipa-request"))
	c.run(t, requestAgreed())
	state, ok := c.timers["alice"]["result"]
	require.True(t, ok)
	commit, ok := c.timers["alice"]["result commitment=perform"]
	require.True(t, ok)
	require.Equal(t, "result", commit.Name)
	require.Equal(t, "perform", commit.Commitment)
	require.NotEqual(t, state.Epoch, commit.Epoch)
	at := t0.Add(6 * time.Minute)
	tests := []struct {
		name string
		ev   engine.TimerEvent
		want string
	}{
		{"the version 1 name", engine.TimerEvent{Name: "commitment:perform", Epoch: commit.Epoch}, ""},
		{"the commitment with the state's epoch", engine.TimerEvent{Name: "result", Commitment: "perform", Epoch: state.Epoch}, ""},
		{"the commitment with a timer it did not arm", engine.TimerEvent{Name: "reply", Commitment: "perform", Epoch: commit.Epoch}, ""},
		{"a commitment the policy does not have", engine.TimerEvent{Name: "result", Commitment: "nope", Epoch: commit.Epoch}, ""},
		{"the state's timer with the commitment's epoch", engine.TimerEvent{Name: "result", Epoch: commit.Epoch}, ""},
		{"the commitment's deadline", commit, `
			alice: timer cancel result commitment=perform
			alice: commitment perform violated bob->alice (deadline)`},
		{"the state's timer", state, `
			alice: timer cancel result
			alice: done timeout`},
	}
	for _, tt := range tests {
		c.out = c.out[:0]
		ev := tt.ev
		ev.Op, ev.Deadline, ev.At = 0, time.Time{}, at
		c.process("alice", &ev)
		assert.Equal(t, dedent(tt.want), joinLines(c.out), tt.name)
	}
}

func joinLines(lines []string) string {
	out := ""
	for i, l := range lines {
		if i > 0 {
			out += "\n"
		}
		out += l
	}
	return out
}

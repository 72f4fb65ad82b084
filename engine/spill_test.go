package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/policies"
)

// TestSpillKeepsEachValue checks the room a session has for its
// deadlines, deadline sources and commitments, in place or in the block
// the program lays out, for every program TestStepIsReceived runs: each
// has the program's length, and a value written to any one of them is
// read back from it after all have been written, so none overlaps
// another; and the block is the session's words when it fits in them,
// one allocated otherwise.
func TestSpillKeepsEachValue(t *testing.T) {
	spilled, allocated := 0, 0
	for name, p := range stepPolicies(t) {
		for _, role := range p.Roles {
			prog, _ := Compile(p, role.Name, WithPolicies(policies.Resolve))
			if prog == nil {
				continue
			}
			t.Run(name+"/"+role.Name, func(t *testing.T) {
				if prog.spillWords > 0 {
					spilled++
				}
				if prog.spillWords > sessionWords {
					allocated++
				}
				s := prog.newSession()
				arms := 0
				for k := range prog.states {
					arms = max(arms, len(prog.states[k].arms))
				}
				deadlines := prog.deadlineSlots(&s, arms)
				srcs := prog.srcSlots(&s)
				commits := prog.commitSlots(&s)
				require.Len(t, deadlines, arms)
				require.Len(t, srcs, len(prog.deadlineSrc))
				require.Len(t, commits, len(prog.commits))
				v := int64(1)
				for j := range deadlines {
					deadlines[j], v = v, v+1
				}
				for j := range srcs {
					srcs[j], v = v, v+1
				}
				for j := range commits {
					commits[j] = commitInst{state: phaseDetached, epoch: uint64(v), deadline: v + 1}
					v += 2
				}
				v = 1
				for j, d := range prog.deadlineSlots(&s, arms) {
					assert.Equal(t, v, d, "deadline %d", j)
					v++
				}
				for j, d := range prog.srcSlots(&s) {
					assert.Equal(t, v, d, "source %d", j)
					v++
				}
				for j, c := range prog.commitSlots(&s) {
					assert.Equal(t, commitInst{state: phaseDetached, epoch: uint64(v), deadline: v + 1}, c, "commitment %d", j)
					v += 2
				}
				assert.Equal(t, prog.spillWords > sessionWords, s.more != nil && s.more.spill != nil, "an allocated block for %d words", prog.spillWords)
			})
		}
	}
	assert.Positive(t, spilled, "programs that spill")
	assert.Positive(t, allocated, "programs whose spill does not fit in a session's words")
	assert.Less(t, allocated, spilled, "programs whose spill fits in a session's words")
}

package policy_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/policy"
)

// TestLoadYAMLStatesReadAgain checks that the states mapping is still
// whole wherever an alias reads it after the states are loaded: the
// loader lets go of each state's nodes once it is read, and must not do
// so to a mapping an alias can name.
func TestLoadYAMLStatesReadAgain(t *testing.T) {
	tests := []struct {
		name string
		tail string
		want []string
	}{
		{
			name: "merged into a later mapping",
			tail: "commitments:\n  c: {<<: *all, debtor: A, creditor: B, create: m, discharge: m}\n",
			want: []string{
				`test.yaml:6:3: error: unknown key "s" in commitment "c" [CP002]`,
				`test.yaml:8:3: error: unknown key "done" in commitment "c" [CP002]`,
			},
		},
		{
			name: "read as a value",
			tail: "initial: *all\n",
			want: []string{`test.yaml:5:9: error: initial must be a non-empty string, not a mapping [CP003]`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "policy: tiny\nversion: 1\nroles: [A, B]\nmessages: {m: inform}\nstates: &all\n" +
				"  s:\n    - {send: m, from: A, to: B, next: done}\n  done: {terminal: done}\n" + tt.tail
			p, ds := policy.LoadYAML("test.yaml", []byte(src))
			require.NotNil(t, p)
			require.Len(t, p.States, 2)
			assert.Equal(t, "done", p.States[0].Transitions[0].Next.Name)
			var got []string
			for _, d := range ds {
				got = append(got, d.Error())
			}
			assert.ElementsMatch(t, tt.want, got)
		})
	}
}

package policy_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/policy"
)

// budgetYAML is baseYAML with a run budget.
var budgetYAML = strings.Replace(baseYAML, "states:\n", "budget: {messages: 6, visits: 2}\nstates:\n", 1)

func TestBudgetLoads(t *testing.T) {
	tests := []struct {
		name     string
		src      string
		messages int
		visits   int
		want     []string
	}{
		{name: "yaml", src: budgetYAML, messages: 6, visits: 2},
		{name: "yaml messages only", src: strings.Replace(baseYAML, "states:\n", "budget: {messages: 3}\nstates:\n", 1), messages: 3},
		{name: "xml", src: string(policy.WriteXML(mustLoad(t, budgetYAML))), messages: 6, visits: 2},
		{name: "zero", src: strings.Replace(baseYAML, "states:\n", "budget: {visits: 0}\nstates:\n", 1),
			want: []string{`test.yaml:11:18: error: budget visits is "0", not a whole number from 1 to 1073741824 [CP003]`}},
		{name: "not a number", src: strings.Replace(baseYAML, "states:\n", "budget: {messages: many}\nstates:\n", 1),
			want: []string{`test.yaml:11:20: error: budget messages is "many", not a whole number from 1 to 1073741824 [CP003]`}},
		{name: "no count", src: strings.Replace(baseYAML, "states:\n", "budget: {}\nstates:\n", 1),
			want: []string{`test.yaml:11:9: error: budget gives no count: give messages, visits or both [CP004]`}},
		{name: "unknown key", src: strings.Replace(baseYAML, "states:\n", "budget: {loops: 3}\nstates:\n", 1), want: []string{"[CP002]"}},
		{name: "xml twice", src: strings.Replace(string(policy.WriteXML(mustLoad(t, budgetYAML))), "<budget ", `<budget messages="1"/><budget `, 1), want: []string{"[CP005]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "test.yaml"
			if strings.HasPrefix(tt.src, "<") {
				name = "test.xml"
			}
			p, ds := policy.Load(name, []byte(tt.src))
			ds = append(ds, policy.CheckPolicy(p)...)
			if tt.want != nil {
				var got []string
				for _, d := range ds {
					got = append(got, d.Error())
				}
				require.Len(t, got, len(tt.want), "%v", got)
				for i, w := range tt.want {
					assert.Contains(t, got[i], w)
				}
				return
			}
			require.Empty(t, ds)
			require.NotNil(t, p.Budget)
			assert.Equal(t, tt.messages, p.Budget.Messages)
			assert.Equal(t, tt.visits, p.Budget.Visits)
		})
	}
}

// A budget survives both writers and is part of the fingerprint.
func TestBudgetRoundTripAndFingerprint(t *testing.T) {
	p := mustLoad(t, budgetYAML)
	for _, f := range []policy.Format{policy.FormatYAML, policy.FormatXML} {
		name := "test.yaml"
		if f == policy.FormatXML {
			name = "test.xml"
		}
		q, ds := policy.Load(name, policy.Write(p, f))
		require.Empty(t, ds)
		assert.Equal(t, *p.Budget, policy.Budget{Messages: q.Budget.Messages, Visits: q.Budget.Visits, Pos: p.Budget.Pos})
		assert.Equal(t, p.Fingerprint(), q.Fingerprint())
	}
	assert.NotEqual(t, mustLoad(t, baseYAML).Fingerprint(), p.Fingerprint(), "a budget changes the fingerprint")
}

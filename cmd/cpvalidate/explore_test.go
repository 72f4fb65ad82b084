package main

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// exploreCases are the seeded policies of the explore package's tests.
const exploreCases = "../../testdata/explore"

func TestExploreGolden(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		golden string
	}{
		{name: "text", args: []string{"explore", exploreCases}, code: exitErrors, golden: "explore.txt"},
		{name: "json", args: []string{"explore", "-format", "json", exploreCases + "/CP104-timeout-race.yaml"}, code: exitOK, golden: "explore-timeout-race.json"},
		{name: "mermaid", args: []string{"explore", "-format", "mermaid", exploreCases + "/CP103-unfinished-role.yaml"}, code: exitErrors, golden: "explore-unfinished-role.mmd"},
		{name: "broken", args: []string{"explore", "testdata/broken/order.yaml"}, code: exitErrors, golden: "explore-broken.txt"},
		{name: "usage", args: []string{"explore", "-h"}, code: exitOK, golden: "usage-explore.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runCLI(t, tt.args...)
			assert.Equal(t, tt.code, code, "exit code; stderr:\n%s", stderr)
			assert.Empty(t, stderr)
			golden(t, tt.golden, stdout)
		})
	}
}

func TestExploreJSONWitness(t *testing.T) {
	code, stdout, stderr := runCLI(t, "explore", "-format", "json", exploreCases+"/CP101-deadlock.yaml")
	require.Equal(t, exitErrors, code, stderr)
	var rep jsonExplore
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
	require.Len(t, rep.Policies, 1)
	p := rep.Policies[0]
	assert.True(t, p.Explored)
	assert.False(t, p.Truncated)
	assert.Positive(t, p.States)
	i := slices.IndexFunc(p.Findings, func(f jsonFinding) bool { return f.Code == "CP101" })
	require.GreaterOrEqual(t, i, 0, "no CP101 among %v", p.Findings)
	f := p.Findings[i]
	assert.Equal(t, 14, f.Line)
	require.NotEmpty(t, f.Witness)
	assert.Len(t, f.Trace, len(f.Witness), "the text witness and the steps agree")
	assert.Contains(t, f.Mermaid, "sequenceDiagram\n")
}

func TestExploreUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "no paths", args: []string{"explore"}, want: "no policy files"},
		{name: "states", args: []string{"explore", "-max-states", "0", "x.yaml"}, want: "-max-states must be 1 to"},
		{name: "buffer", args: []string{"explore", "-buffer", "9", "x.yaml"}, want: "-buffer must be 1 to 8"},
		{name: "instances", args: []string{"explore", "-instances", "5", "x.yaml"}, want: "-instances must be 1 to 4"},
		{name: "validate states", args: []string{"-explore-states", "0", "x.yaml"}, want: "-explore-states must be 1 to"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tt.args...)
			assert.Equal(t, exitUsage, code)
			assert.Contains(t, stderr, tt.want)
		})
	}
}

// Plain cpvalidate explores a small policy, and -explore=false turns it
// off.
func TestValidateExplores(t *testing.T) {
	path := exploreCases + "/CP101-deadlock.yaml"
	code, stdout, _ := runCLI(t, "-q", path)
	assert.Equal(t, exitErrors, code)
	assert.Contains(t, stdout, "[CP101]")
	code, stdout, _ = runCLI(t, "-q", "-explore=false", path)
	assert.Equal(t, exitOK, code)
	assert.Empty(t, stdout)
}

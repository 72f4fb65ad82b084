package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSeverityProfiles(t *testing.T) {
	race := exploreCases + "/CP104-timeout-race.yaml"
	tests := []struct {
		name string
		args []string
		code int
		want []string // substrings of the output
		not  []string
	}{
		{name: "recommended keeps warnings", args: []string{"-q", race}, code: exitOK, want: []string{"warning: ", "[CP104]"}},
		{name: "strict makes warnings errors", args: []string{"-q", "-profile", "strict", race}, code: exitErrors, want: []string{"error: ", "[CP104]"}},
		{name: "strict makes information warnings", args: []string{"-q", "-profile", "strict", exploreCases + "/CP109-exploration-bound.yaml"}, code: exitOK, want: []string{"warning: exploration stopped"}},
		{name: "an override switches a code off", args: []string{"-q", "-severity", "CP104=off", race}, code: exitOK, not: []string{"CP104"}},
		{name: "an override beats the profile", args: []string{"-q", "-profile", "strict", "-severity", "cp104=warning", race}, code: exitOK, want: []string{"warning: "}},
		{name: "overrides separated by commas", args: []string{"-q", "-severity", "CP104=error,CP109=off", race}, code: exitErrors, want: []string{"error: "}},
		{name: "an explore error may be lowered", args: []string{"-q", "-severity", "CP101=warning", exploreCases + "/CP101-deadlock.yaml"}, code: exitOK, want: []string{"warning: deadlock"}},
		{name: "explore takes the profile", args: []string{"explore", "-profile", "strict", race}, code: exitErrors, want: []string{"error: "}},
		{name: "a static warning fails under strict", args: []string{"-q", "-profile", "strict", "../../testdata/diagnostics/CP013-unreachable-state.yaml"}, code: exitErrors, want: []string{"error: state ", " is unreachable"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tt.args...)
			assert.Equal(t, tt.code, code, "stderr: %s", stderr)
			for _, w := range tt.want {
				assert.Contains(t, stdout, w)
			}
			for _, n := range tt.not {
				assert.NotContains(t, stdout, n)
			}
		})
	}
}

func TestSeverityUsageErrors(t *testing.T) {
	tests := []struct {
		name, arg, want string
	}{
		{name: "unknown code", arg: "CP999=off", want: `unknown code "CP999"`},
		{name: "unknown level", arg: "CP013=loud", want: `unknown level "loud"`},
		{name: "no level", arg: "CP013", want: "want CODE=LEVEL"},
		{name: "an engine error cannot be lowered", arg: "CP010=warning", want: "CP010 is an error the engine refuses a policy for"},
		{name: "profile", arg: "", want: "must be one of recommended, strict"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"-severity", tt.arg, exploreCases}
			if tt.arg == "" {
				args = []string{"-profile", "lax", exploreCases}
			}
			code, _, stderr := runCLI(t, args...)
			assert.Equal(t, exitUsage, code)
			assert.Contains(t, stderr, tt.want)
		})
	}
}

// SARIF output says which rules the profile and overrides changed.
func TestSARIFRuleOverrides(t *testing.T) {
	code, stdout, stderr := runCLI(t, "-format", "sarif", "-profile", "strict", "-severity", "CP104=off", exploreCases+"/CP104-timeout-race.yaml")
	require.Equal(t, exitOK, code, stderr)
	var log struct {
		Runs []struct {
			Invocations []sarifInvocation `json:"invocations"`
			Results     []sarifResult     `json:"results"`
		} `json:"runs"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &log))
	require.Len(t, log.Runs, 1)
	require.Len(t, log.Runs[0].Invocations, 1)
	got := map[string]sarifOverrideConfig{}
	for _, o := range log.Runs[0].Invocations[0].RuleConfigurationOverrides {
		got[o.Descriptor.ID] = o.Configuration
	}
	assert.Equal(t, sarifOverrideConfig{Enabled: true, Level: "error"}, got["CP013"])
	assert.Equal(t, sarifOverrideConfig{Enabled: false, Level: "none"}, got["CP104"])
	assert.Equal(t, sarifOverrideConfig{Enabled: true, Level: "warning"}, got["CP109"])
	assert.NotContains(t, got, "CP010", "a rule the profile leaves alone has no override")
	assert.Empty(t, log.Runs[0].Results)
}

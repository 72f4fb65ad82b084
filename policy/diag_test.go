package policy_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/policy"
)

// TestSeverityText pins the text form of severities: JSON carries them as
// "error", "warning" and "info", and reads them back.
func TestSeverityText(t *testing.T) {
	for _, tt := range []struct {
		name string
		sev  policy.Severity
		json string
	}{
		{name: "error", sev: policy.SeverityError, json: `"error"`},
		{name: "warning", sev: policy.SeverityWarning, json: `"warning"`},
		{name: "info", sev: policy.SeverityInfo, json: `"info"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.sev)
			require.NoError(t, err)
			assert.Equal(t, tt.json, string(b))
			var back policy.Severity
			require.NoError(t, json.Unmarshal(b, &back))
			assert.Equal(t, tt.sev, back)
		})
	}
	_, err := json.Marshal(policy.Severity(0))
	assert.ErrorContains(t, err, "invalid severity 0")
	var s policy.Severity
	assert.ErrorContains(t, json.Unmarshal([]byte(`"fatal"`), &s), `unknown severity "fatal" (error, warning or info)`)
	assert.ErrorContains(t, json.Unmarshal([]byte(`"`+strings.Repeat("e", 1000)+`"`), &s), `"…`, "the unknown severity is quoted with Quote")
}

func TestClip(t *testing.T) {
	for _, tt := range []struct {
		name, in, want string
	}{
		{name: "short", in: "inform", want: "inform"},
		{name: "exactly the limit", in: strings.Repeat("x", policy.MaxQuoted), want: strings.Repeat("x", policy.MaxQuoted)},
		{name: "long", in: strings.Repeat("x", 5<<20), want: strings.Repeat("x", policy.MaxQuoted) + "…"},
		{name: "cut at a rune boundary", in: strings.Repeat("a", policy.MaxQuoted-1) + "éé", want: strings.Repeat("a", policy.MaxQuoted-1) + "…"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, policy.Clip(tt.in))
		})
	}
}

func TestQuoteList(t *testing.T) {
	for _, tt := range []struct {
		name  string
		names []string
		max   int
		want  string
	}{
		{name: "none", names: nil, max: 3, want: ""},
		{name: "fewer than max", names: []string{"a", "b"}, max: 3, want: `"a", "b"`},
		{name: "exactly max", names: []string{"a", "b", "c"}, max: 3, want: `"a", "b", "c"`},
		{name: "more than max", names: []string{"a", "b", "c", "d", "e"}, max: 2, want: `"a", "b" and 3 more`},
		{name: "long names are cut", names: []string{strings.Repeat("x", 100)}, max: 1, want: `"` + strings.Repeat("x", policy.MaxQuoted) + `"…`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, policy.QuoteList(tt.names, tt.max))
		})
	}
}

func ExampleQuoteList() {
	fmt.Println(policy.QuoteList([]string{"alice", "bob", "carol", "dave"}, 2))
	// Output: "alice", "bob" and 2 more
}

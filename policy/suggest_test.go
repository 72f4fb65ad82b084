package policy_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/parleyhq/parley/policy"
)

// namePattern is the rule ValidName states, as the regular expression
// it was first written as.
var namePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

func TestValidName(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     bool
	}{
		{"letter", "a", true},
		{"underscore first", "_s1", true},
		{"hyphen and digits", "Req-2_x", true},
		{"empty", "", false},
		{"digit first", "1st", false},
		{"hyphen first", "-a", false},
		{"space", "a b", false},
		{"dot", "a.b", false},
		{"trailing newline", "a\n", false},
		{"non-ASCII letter", "é", false},
		{"the longest", strings.Repeat("a", 128), true},
		{"longer than 128 bytes", strings.Repeat("a", 129), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, policy.ValidName(tc.in))
		})
	}
}

// FuzzValidName requires ValidName to agree with its rule as a regular
// expression.
func FuzzValidName(f *testing.F) {
	for _, s := range []string{"a", "_", "a-1", "1a", "", "a\n", "é", "a b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		assert.Equal(t, len(s) <= 128 && namePattern.MatchString(s), policy.ValidName(s), "%q", s)
	})
}

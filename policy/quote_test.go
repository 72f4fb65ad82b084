package policy_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/parleyhq/parley/policy"
)

func TestQuote(t *testing.T) {
	long := strings.Repeat("a", 5<<20)
	for _, tc := range []struct {
		name, in, want string
	}{
		{"short", "start", `"start"`},
		{"empty", "", `""`},
		{"escapes", "a\"b\n", `"a\"b\n"`},
		{"exactly the limit", strings.Repeat("x", policy.MaxQuoted), `"` + strings.Repeat("x", policy.MaxQuoted) + `"`},
		{"long is cut with an ellipsis", long, `"` + strings.Repeat("a", policy.MaxQuoted) + `"…`},
		{"cut at a rune boundary", strings.Repeat("a", policy.MaxQuoted-1) + "éé", `"` + strings.Repeat("a", policy.MaxQuoted-1) + `"…`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, policy.Quote(tc.in))
		})
	}
}

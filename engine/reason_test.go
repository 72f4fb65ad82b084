package engine

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/parleyhq/parley/policy"
)

// appendQuote must spell exactly what policy.Quote does, cut included.
func TestAppendQuoteIsQuote(t *testing.T) {
	tests := []struct{ name, s string }{
		{"empty", ""},
		{"plain", "bob"},
		{"escapes", "a\"b\n\x00"},
		{"at the limit", strings.Repeat("m", policy.MaxQuoted)},
		{"over the limit", strings.Repeat("m", policy.MaxQuoted+1)},
		{"cut inside a rune", strings.Repeat("m", policy.MaxQuoted-1) + "é" + "tail"},
		{"invalid utf-8", "\xff\xfe" + strings.Repeat("x", 100)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, policy.Quote(tt.s), string(appendQuote([]byte("prefix"), tt.s)[len("prefix"):]))
		})
	}
}

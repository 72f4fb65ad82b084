package policy

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestYAMLLineStartIsTheTable checks that lineStart, reading forward
// from its cursor, gives each line's start as the table of lineStarts
// does, and false for a line the source does not have, for lines asked
// for in order, with gaps, and out of order.
func TestYAMLLineStartIsTheTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var random strings.Builder
	for range 2000 {
		random.WriteByte(" \n\ta\r\x80\xff\n"[rng.IntN(8)])
	}
	tests := []struct {
		name, src string
	}{
		{"empty", ""},
		{"one line", "policy: p"},
		{"a newline", "\n"},
		{"newlines", "\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n"},
		{"trailing newline", "a: 1\nb: 2\n"},
		{"no trailing newline", "a: 1\nb: 2"},
		{"CRLF", "a: 1\r\n  b: 2\r\n\tc: 3\r\n"},
		{"lines of every length", func() string {
			var b strings.Builder
			for i := range 40 {
				b.WriteString(strings.Repeat(" ", i%5) + strings.Repeat("x", i) + "\n")
			}
			return b.String()
		}()},
		{"high bytes", "é\n\x80\x80\x80\x80\x80\x80\x80\x80\n\xff\xfe\n\x8a\x0a\x8a"},
		{"random", random.String()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table := lineStarts([]byte(tt.src))
			want := func(line int) (int, bool) {
				if line < 1 || line > len(table) {
					return 0, false
				}
				return table[line-1], true
			}
			orders := map[string][]int{"in order": {}, "with gaps": {}, "out of order": {}}
			for line := -1; line <= len(table)+2; line++ {
				orders["in order"] = append(orders["in order"], line)
				if line%3 == 0 {
					orders["with gaps"] = append(orders["with gaps"], line)
				}
			}
			orders["with gaps"] = append(orders["with gaps"], len(table)+5, len(table), len(table)+1)
			orders["out of order"] = append(orders["out of order"], rng.Perm(len(table)+4)...)
			for name, lines := range orders {
				l := &yamlLoader{src: []byte(tt.src)}
				for _, line := range lines {
					off, ok := l.lineStart(line)
					wantOff, wantOK := want(line)
					assert.Equal(t, wantOK, ok, "%s: line %d", name, line)
					if wantOK {
						assert.Equal(t, wantOff, off, "%s: line %d", name, line)
					}
				}
			}
		})
	}
}

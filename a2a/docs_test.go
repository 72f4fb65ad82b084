package a2a_test

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/a2a"
)

// TestDocsLimits checks that docs/a2a.md has a row for every limit of
// the server and the client, giving its default.
func TestDocsLimits(t *testing.T) {
	doc, err := os.ReadFile("../docs/a2a.md")
	require.NoError(t, err)
	rows := map[string]string{}
	for _, line := range strings.Split(string(doc), "\n") {
		if name, _, ok := strings.Cut(strings.TrimPrefix(line, "| `"), "`"); ok && strings.HasPrefix(line, "| `") {
			rows[name] += line
		}
	}
	for _, limits := range []any{a2a.DefaultLimits, a2a.DefaultClientLimits} {
		v := reflect.ValueOf(limits)
		for i := range v.NumField() {
			name := v.Type().Field(i).Name
			t.Run(v.Type().Name()+"."+name, func(t *testing.T) {
				row, ok := rows[name]
				require.True(t, ok, "docs/a2a.md has no row for %s", name)
				assert.Contains(t, row, "| "+spell(name, v.Field(i).Interface())+" |")
			})
		}
	}
}

// spell writes a default as the docs do: 10 s, 5 min, 4 MiB, 10,000.
func spell(name string, v any) string {
	switch x := v.(type) {
	case time.Duration:
		if x < time.Minute {
			return fmt.Sprintf("%d s", x/time.Second)
		}
		return fmt.Sprintf("%d min", x/time.Minute)
	case int64:
		if strings.HasSuffix(name, "Bytes") {
			return fmt.Sprintf("%d MiB", x>>20)
		}
		return thousands(int(x))
	case int:
		return thousands(x)
	}
	return fmt.Sprint(v)
}

func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

package trace_test

import (
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/trace"
)

// TestCodesDocumented checks that docs/protocol-errors.md has a row for
// every trace code, in order and with its severity, in its table of trace
// findings, and no row for a code the trace does not have.
func TestCodesDocumented(t *testing.T) {
	data, err := os.ReadFile("../docs/protocol-errors.md")
	require.NoError(t, err)
	rows := regexp.MustCompile(`(?m)^\| (TR\d{3}) \| (\w+) \|`).FindAllStringSubmatch(string(data), -1)
	var documented, want [][2]string
	for _, r := range rows {
		documented = append(documented, [2]string{r[1], r[2]})
	}
	for _, c := range trace.Codes {
		want = append(want, [2]string{c.Code, c.Severity.String()})
	}
	assert.Equal(t, want, documented)
}

package engine_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/engine"
)

// Every protocol error code is documented in docs/protocol-errors.md,
// under a heading with its code and name, and the page documents no code
// the engine does not have.
func TestProtocolErrorsDoc(t *testing.T) {
	data, err := os.ReadFile("../docs/protocol-errors.md")
	require.NoError(t, err)
	doc := string(data)
	headings := regexp.MustCompile(`(?m)^## (PE\d{3}) (\S+)$`).FindAllStringSubmatch(doc, -1)
	documented := map[string]string{}
	for _, h := range headings {
		documented[h[1]] = h[2]
	}
	for _, c := range engine.ErrorCodes {
		t.Run(string(c.Code), func(t *testing.T) {
			assert.Contains(t, doc, "\n## "+string(c.Code)+" "+c.Name+"\n", "heading for %s", c.Code)
			anchor := "#" + strings.ToLower(string(c.Code)) + "-" + c.Name
			assert.Contains(t, doc, "("+anchor+")", "the table links %s", c.Code)
		})
	}
	assert.Len(t, documented, len(engine.ErrorCodes), "documented codes: %v", documented)
	for i, c := range engine.ErrorCodes {
		if i < len(headings) {
			assert.Equal(t, string(c.Code), headings[i][1], "sections in code order")
		}
	}
}

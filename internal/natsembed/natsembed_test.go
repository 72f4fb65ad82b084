package natsembed

import (
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDocsShowThePermissionsTheTestsUse: the server configuration in
// docs/nats.md allows exactly what Permissions allows carrier-1.
func TestDocsShowThePermissionsTheTestsUse(t *testing.T) {
	doc, err := os.ReadFile("../../docs/nats.md")
	require.NoError(t, err)
	block := regexp.MustCompile(`(?s)\{user: carrier-1, .*?publish: \{allow: \[(.*?)\]\}\s*subscribe: \{allow: \[(.*?)\]\}`).FindSubmatch(doc)
	require.NotNil(t, block, "docs/nats.md shows carrier-1's permissions")
	quoted := regexp.MustCompile(`"([^"]+)"`)
	subjects := func(b []byte) []string {
		var out []string
		for _, m := range quoted.FindAllSubmatch(b, -1) {
			out = append(out, string(m[1]))
		}
		slices.Sort(out)
		return out
	}
	p := Permissions(Defaults, "carrier-1")
	tests := []struct {
		name string
		doc  []byte
		want []string
	}{
		{name: "publish", doc: block[1], want: p.Publish.Allow},
		{name: "subscribe", doc: block[2], want: p.Subscribe.Allow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := slices.Clone(tt.want)
			slices.Sort(want)
			assert.Equal(t, want, subjects(tt.doc))
		})
	}
}

package agent

import (
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestIDsFromTheBufferedRandomBytesNeverRepeat: ids take their random
// bits from buffers of crypto/rand's bytes, each read standing for
// idsPerRead ids; however many goroutines take ids, over many reads, no
// two ids are the same, and each has its 128 bits.
func TestIDsFromTheBufferedRandomBytesNeverRepeat(t *testing.T) {
	tests := []struct {
		name       string
		goroutines int
	}{
		{"one goroutine", 1},
		{"eight goroutines", 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const each = 10 * idsPerRead
			ids := make([][]string, tt.goroutines)
			var wg sync.WaitGroup
			for g := range ids {
				wg.Go(func() {
					for range each {
						ids[g] = append(ids[g], newID("alice"))
					}
				})
			}
			wg.Wait()
			seen := map[string]bool{}
			for _, list := range ids {
				for _, id := range list {
					require.False(t, seen[id], "id %s repeats", id)
					seen[id] = true
					assert.True(t, strings.HasPrefix(id, "alice-"))
					assert.Len(t, id, len("alice-")+26, "128 random bits")
				}
			}
			assert.Len(t, seen, tt.goroutines*each)
		})
	}
}

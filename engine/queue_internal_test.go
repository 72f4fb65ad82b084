package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Reset hands each pool's elements out again from the first, whichever
// of get, put and next handed them out, and whether or not they were
// emitted; a Reset after nothing was handed out changes nothing.
func TestQueueResetHandsPoolsOutAgain(t *testing.T) {
	tests := []struct {
		name string
		take func(q *Queue) *ProtocolErrorEvent
		emit bool
	}{
		{"get, emitted", func(q *Queue) *ProtocolErrorEvent { return q.errs.get(&q.dirty) }, true},
		{"put, emitted", func(q *Queue) *ProtocolErrorEvent {
			return q.errs.put(&q.dirty, ProtocolErrorEvent{Code: CodeUnexpected})
		}, true},
		{"next, not emitted", func(q *Queue) *ProtocolErrorEvent { return q.errs.next(&q.dirty) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var q Queue
			for round := range 100 {
				q.Reset()
				if round%3 == 1 {
					assert.False(t, q.dirty, "round %d: dirty after Reset", round)
					continue // a step that handed out nothing
				}
				e := tt.take(&q)
				require.NotEmpty(t, q.errs.items, "round %d", round)
				assert.Same(t, &q.errs.items[0], e, "round %d: the element handed out", round)
				if tt.emit {
					q.emit(e)
				}
			}
			assert.Len(t, q.errs.items, 1, "elements the pool holds")
		})
	}
}

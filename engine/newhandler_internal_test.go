package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/policies"
)

// NewHandler sets the fields of its one session that newSession sets,
// rather than write the whole session over the new handler's zeroes: the
// two must agree.
func TestNewHandlerSessionIsNewSession(t *testing.T) {
	p, err := policies.Load("fipa-request")
	require.NoError(t, err)
	for _, role := range []string{"Initiator", "Participant"} {
		t.Run(role, func(t *testing.T) {
			prog, ds := Compile(p, role)
			require.NotNil(t, prog, ds)
			h, err := prog.NewHandler("c1", "a")
			require.NoError(t, err)
			require.Len(t, h.sessions, 1)
			assert.Equal(t, newSession(), h.sessions[0])
		})
	}
}

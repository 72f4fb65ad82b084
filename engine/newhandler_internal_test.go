package engine

import (
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policies"
)

// NewHandler sets the fields of its one session that the program's newSession sets,
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
			assert.Equal(t, prog.newSession(), h.sessions[0])
		})
	}
}

// A handler of one session, with its session and the agents of two roles
// in place, is one allocation of the 320 B size class, and its session
// 192 B: a many role's initiator keeps thousands.
func TestHandlerSize(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(Handler{}), uintptr(320))
	assert.LessOrEqual(t, unsafe.Sizeof(session{}), uintptr(192))
}

// Every shipped role's handler keeps a manyState only when it has a many
// role or more roles than peerArr has room for, and its peers, wherever
// they are kept, are the ones peer returns.
func TestNewHandlerKeepsManyStateWhenNeeded(t *testing.T) {
	for _, name := range policies.Names() {
		p, err := policies.Load(name)
		require.NoError(t, err)
		c, ds := Check(p, WithPolicies(policies.Resolve))
		require.NotNil(t, c, ds)
		for _, role := range p.Roles {
			t.Run(name+"/"+role.Name, func(t *testing.T) {
				prog, err := c.Program(role.Name)
				require.NoError(t, err)
				h, err := prog.NewHandler("c1", "a")
				require.NoError(t, err)
				n := len(prog.roles)
				assert.Equal(t, prog.manyRole >= 0 || n > len(h.peerArr), h.many != nil)
				require.Len(t, h.peers(), n)
				for r := range n {
					assert.Same(t, &h.peers()[r], h.peer(r), "role %d", r)
				}
				assert.Equal(t, "a", *h.peer(prog.roleIdx))
			})
		}
	}
}

// A handler of one session and two roles keeps a manyState once it holds
// a message, with its many role's fields zero: it awaits no group or
// join decision and opens none.
func TestHoldingHandlerKeepsHeldInManyState(t *testing.T) {
	p, err := policies.Load("fipa-request")
	require.NoError(t, err)
	prog, ds := Compile(p, "Initiator")
	require.NotNil(t, prog, ds)
	h, err := prog.NewHandler("c1", "a")
	require.NoError(t, err)
	require.Nil(t, h.many)
	assert.Nil(t, h.heldList())
	h.setHeld(nil)
	assert.Nil(t, h.many, "setting no held messages keeps none")
	m := heldMsg{msg: &forms.Message{Sender: "b"}}
	h.holdMsg(m)
	require.NotNil(t, h.many)
	assert.Equal(t, []heldMsg{m}, h.heldList())
	assert.Equal(t, uint64(0), h.many.groupTicket)
	assert.Equal(t, uint64(0), h.many.joinTicket)
	assert.Nil(t, h.many.morePeers)
	var q Queue
	require.NoError(t, h.Start(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), &q))
	assert.False(t, h.Awaits(1<<ticketSessionBits))
	for _, d := range h.Open() {
		assert.NotZero(t, d.Ticket&(1<<ticketSessionBits-1), "a decision of the one session, not a group or join decision")
	}
	h.setHeld(h.heldList()[:0])
	assert.Zero(t, h.Held())
}

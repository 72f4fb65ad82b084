package engine

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The peer index finds every session added, by peer, whether its table
// was reserved up front or grew as sessions came, and finds no other.
func TestPeerIndexFindsEverySessionAdded(t *testing.T) {
	tests := []struct {
		name    string
		n       int
		reserve bool
	}{
		{"one", 1, false},
		{"a table's first size", 4, false},
		{"growing", 1000, false},
		{"reserved", 1000, true},
		{"reserved and growing", 5000, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var x peerIndex
			if tt.reserve {
				x.reserve(tt.n / 2)
			}
			for i := range tt.n {
				x.add("p" + strconv.Itoa(i))
				require.LessOrEqual(t, 4*len(x.names), 3*len(x.slots), "the table is at most three quarters full")
			}
			for i := range tt.n {
				got, ok := x.find("p" + strconv.Itoa(i))
				require.True(t, ok, "p%d", i)
				assert.Equal(t, i, got)
			}
			for _, peer := range []string{"", "p", "q0", "p" + strconv.Itoa(tt.n), "p-1"} {
				_, ok := x.find(peer)
				assert.False(t, ok, "%q", peer)
			}
		})
	}
}

// An empty index finds nothing, and has no table to probe.
func TestPeerIndexEmptyFindsNothing(t *testing.T) {
	var x peerIndex
	_, ok := x.find("p0")
	assert.False(t, ok)
	assert.Nil(t, x.slots)
}

// The receivers the index hands out are its names, capped at their
// length, so that a caller appending to them cannot write over the
// names of other sessions.
func TestPeerIndexReceiversAreCapped(t *testing.T) {
	var x peerIndex
	for _, p := range []string{"a", "b", "c"} {
		x.add(p)
	}
	tests := []struct {
		name string
		i    int
		want []string
	}{
		{"one peer", 1, []string{"b"}},
		{"every peer", -1, []string{"a", "b", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := x.receivers(tt.i)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, len(got), cap(got))
			_ = append(got, "z")
			assert.Equal(t, []string{"a", "b", "c"}, x.names)
		})
	}
}

// Reserving room for fewer peers than are indexed changes nothing.
func TestPeerIndexReserveFewerKeepsThePeers(t *testing.T) {
	var x peerIndex
	for i := range 5 {
		x.add("p" + strconv.Itoa(i))
	}
	require.NotPanics(t, func() { x.reserve(2) })
	assert.Len(t, x.names, 5)
	for i := range 5 {
		got, ok := x.find("p" + strconv.Itoa(i))
		require.True(t, ok)
		assert.Equal(t, i, got)
	}
}

package agent

import (
	"crypto/rand"
	"encoding/base32"
)

// idEncoding spells conversation ids in lower-case base32 without padding.
var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// newID returns a fresh conversation id for agent self: the agent's name
// and 128 random bits, so ids cannot be guessed by a peer and do not
// repeat across restarts.
func newID(self string) string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	var stack [96]byte     // the id is spelt here, and copied once into its string
	n := len(self) + 1 + idEncoding.EncodedLen(len(b))
	buf := stack[:0]
	if n > len(stack) {
		buf = make([]byte, 0, n)
	}
	buf = append(append(buf, self...), '-')
	buf = buf[:n]
	idEncoding.Encode(buf[len(self)+1:], b[:])
	return string(buf)
}

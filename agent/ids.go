package agent

import (
	"crypto/rand"
	"encoding/base32"
	"sync"
)

// idEncoding spells conversation ids in lower-case base32 without padding.
var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// idBits is the random part of an id, in bytes.
const idBits = 16

// randBuf holds random bytes from crypto/rand for the next ids: one read
// of the reader stands for idsPerRead ids. Each id's bytes are taken once
// and cleared.
type randBuf struct {
	b    [idBits * idsPerRead]byte
	used int
}

const idsPerRead = 32

var randBufs = sync.Pool{New: func() any { return &randBuf{used: idBits * idsPerRead} }}

// newID returns a fresh conversation id for agent self: the agent's name
// and 128 random bits, so ids cannot be guessed by a peer and do not
// repeat across restarts.
func newID(self string) string {
	rb := randBufs.Get().(*randBuf)
	if rb.used == len(rb.b) {
		_, _ = rand.Read(rb.b[:]) // crypto/rand.Read never fails
		rb.used = 0
	}
	b := rb.b[rb.used : rb.used+idBits]
	rb.used += idBits
	var stack [96]byte // the id is spelt here, and copied once into its string
	n := len(self) + 1 + idEncoding.EncodedLen(idBits)
	buf := stack[:0]
	if n > len(stack) {
		buf = make([]byte, 0, n)
	}
	buf = append(append(buf, self...), '-')
	buf = buf[:n]
	idEncoding.Encode(buf[len(self)+1:], b)
	clear(b)
	randBufs.Put(rb)
	return string(buf)
}

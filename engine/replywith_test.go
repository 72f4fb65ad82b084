package engine

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Reply-withs cut from a Queue's blocks spell what concatenation does,
// and keep spelling it while later ones fill the block and the next, and
// after Reset; one longer than a block is a string of its own.
func TestReplyWithsCutFromBlocksKeepTheirBytes(t *testing.T) {
	tests := []struct {
		name   string
		conv   string
		self   string
		counts int
	}{
		{"short, many blocks", "c1", "alice", 1000},
		{"one short of a block", strings.Repeat("c", replyWithBlock-len("alice/#")-20), "alice", 50},
		{"longer than a block", strings.Repeat("c", replyWithBlock), "alice", 5},
		{"empty names", "", "", 300},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var q Queue
			got := make([]string, 0, tt.counts)
			for n := 1; n <= tt.counts; n++ {
				got = append(got, q.replyWith(tt.conv, tt.self, uint64(n)))
				if n%7 == 0 {
					q.Reset()
				}
			}
			for k, s := range got {
				assert.Equal(t, tt.conv+"/"+tt.self+"#"+strconv.Itoa(k+1), s)
			}
		})
	}
}

// A whole uint64 fits in the room a reply-with is given.
func TestReplyWithOfTheLargestCount(t *testing.T) {
	var q Queue
	a := q.replyWith("c", "a", 1<<64-1)
	b := q.replyWith("c", "a", 2)
	assert.Equal(t, "c/a#18446744073709551615", a)
	assert.Equal(t, "c/a#2", b)
}

// Names of every length, those copied as two words that overlap and
// those copied by copy, spell the reply-with concatenation does, and
// leave the reply-withs cut before them as they were.
func TestReplyWithOfNamesOfEveryLength(t *testing.T) {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	var q Queue
	var got, want []string
	for n := range 41 {
		conv, self := letters[:n], letters[len(letters)-n:]
		got = append(got, q.replyWith(conv, self, uint64(n)), q.replyWith(self, conv, 7))
		want = append(want, conv+"/"+self+"#"+strconv.Itoa(n), self+"/"+conv+"#7")
	}
	assert.Equal(t, want, got)
}

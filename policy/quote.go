package policy

import (
	"strconv"
	"unicode/utf8"
)

// MaxQuoted is the most bytes of a name or value that Quote shows. Names
// and values come from files and peers, so they can be arbitrarily long;
// a message that quotes one shows at most this prefix.
const MaxQuoted = 64

// Quote returns s quoted as %q would, cut to its first MaxQuoted bytes
// (at a rune boundary) with an ellipsis when it is longer. Every
// diagnostic and every reason that quotes text from a file or a peer
// quotes it with Quote, so that no message echoes unbounded input.
func Quote(s string) string {
	if len(s) <= MaxQuoted {
		return strconv.Quote(s)
	}
	cut := MaxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "…"
}

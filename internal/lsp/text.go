package lsp

import (
	"unicode/utf16"
	"unicode/utf8"

	protocol "github.com/tliron/glsp/protocol_3_16"

	"github.com/parleyhq/parley/policy"
)

// text is a document's content with its line starts, converting between
// byte offsets, policy positions (1-based lines, byte columns) and LSP
// positions (0-based lines, UTF-16 columns).
type text struct {
	src    []byte
	starts []int // byte offset of each line's start
}

func newText(src []byte) *text {
	t := &text{src: src, starts: []int{0}}
	for i, c := range src {
		if c == '\n' {
			t.starts = append(t.starts, i+1)
		}
	}
	return t
}

// line returns line i (0-based) without its line ending.
func (t *text) line(i int) string {
	if i < 0 || i >= len(t.starts) {
		return ""
	}
	end := len(t.src)
	if i+1 < len(t.starts) {
		end = t.starts[i+1] - 1
	}
	if end > t.starts[i] && t.src[end-1] == '\r' {
		end--
	}
	if end < t.starts[i] {
		end = t.starts[i]
	}
	return string(t.src[t.starts[i]:end])
}

// lineOf returns the 0-based line holding byte offset off.
func (t *text) lineOf(off int) int {
	lo, hi := 0, len(t.starts)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if t.starts[mid] <= off {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// offsetOfPos returns the byte offset of a policy position, clamped to
// the text; ok is false for a position with no line.
func (t *text) offsetOfPos(p policy.Pos) (int, bool) {
	if !p.IsValid() || p.Line > len(t.starts) {
		return 0, false
	}
	off := t.starts[p.Line-1] + max(p.Col, 1) - 1
	return min(off, t.lineEnd(p.Line-1)), true
}

// lineEnd is the offset just past line i's content (before its newline).
func (t *text) lineEnd(i int) int {
	return t.starts[i] + len(t.line(i))
}

// offset converts an LSP position to a byte offset, clamped to its line.
func (t *text) offset(p protocol.Position) int {
	line := int(p.Line)
	if line >= len(t.starts) {
		return len(t.src)
	}
	s := t.line(line)
	units, i := 0, 0
	for i < len(s) && units < int(p.Character) {
		r, n := utf8.DecodeRuneInString(s[i:])
		units += utf16Len(r, n)
		i += n
	}
	return t.starts[line] + i
}

// position converts a byte offset to an LSP position.
func (t *text) position(off int) protocol.Position {
	off = max(0, min(off, len(t.src)))
	line := t.lineOf(off)
	s := t.src[t.starts[line]:off]
	units := 0
	for len(s) > 0 {
		r, n := utf8.DecodeRune(s)
		units += utf16Len(r, n)
		s = s[n:]
	}
	return protocol.Position{Line: protocol.UInteger(line), Character: protocol.UInteger(units)}
}

// utf16Len is how many UTF-16 units a decoded rune of n bytes takes; an
// invalid byte counts as one, as editors show it.
func utf16Len(r rune, n int) int {
	if r == utf8.RuneError && n == 1 {
		return 1
	}
	return utf16.RuneLen(r)
}

// rng converts a byte span to an LSP range.
func (t *text) rng(start, end int) protocol.Range {
	return protocol.Range{Start: t.position(start), End: t.position(end)}
}

// wordEnd returns the end of the name (or other word) starting at off:
// letters, digits and _-.: up to the line's end; at least one byte when
// the line has one there.
func (t *text) wordEnd(off int) int {
	end := t.lineEnd(t.lineOf(off))
	i := off
	for i < end && isNameByte(t.src[i]) {
		i++
	}
	if i == off && off < end {
		_, n := utf8.DecodeRune(t.src[off:])
		i = off + n
	}
	return i
}

func isNameByte(c byte) bool {
	return c == '_' || c == '-' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// nameStart returns the offset of the name a policy position points at:
// the position itself, or one past a quote that opens the value. ok is
// false when the text there is not name.
func (t *text) nameStart(p policy.Pos, name string) (int, bool) {
	off, ok := t.offsetOfPos(p)
	if !ok || name == "" {
		return 0, false
	}
	if t.hasAt(off, name) {
		return off, true
	}
	if off < len(t.src) && (t.src[off] == '"' || t.src[off] == '\'') && t.hasAt(off+1, name) {
		return off + 1, true
	}
	return 0, false
}

func (t *text) hasAt(off int, s string) bool {
	return off+len(s) <= len(t.src) && string(t.src[off:off+len(s)]) == s
}

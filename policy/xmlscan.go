package policy

import (
	"bytes"
	"encoding/xml"
	"unicode/utf8"
)

// scan reads the file into the tree of xel that parse makes of it,
// without encoding/xml, for a file of the constructs CP-XML files are
// written with: elements with ASCII names, attributes, character data
// with the five predefined entities, CDATA sections, comments and an
// XML declaration of version 1.0 in UTF-8. It reports nothing: it
// returns false for a file that holds anything else or anything
// encoding/xml or parse would report (a syntax error, a limit, a second
// root), which parse then reads and reports on as before.
func (l *xmlLoader) scan() (*xel, bool) {
	src := l.src
	if bytes.IndexByte(src, '\r') >= 0 {
		return nil, false // encoding/xml rewrites line ends
	}
	var stack []xmlFrame
	var root *xel
	elements := 0
	top := func() *xmlFrame { return &stack[len(stack)-1] }
	for i := 0; i < len(src); {
		off := i
		if src[i] != '<' {
			end := bytes.IndexByte(src[i:], '<')
			if end < 0 {
				end = len(src)
			} else {
				end += i
			}
			data, ok := l.scanText(src[i:end], false)
			if !ok {
				return nil, false
			}
			if len(stack) > 0 {
				l.charData(top(), data, false)
			}
			i = end
			continue
		}
		rest := src[i:]
		switch {
		case bytes.HasPrefix(rest, []byte("</")):
			name, n, ok := l.scanName(rest[2:])
			if !ok || len(stack) == 0 || name != top().name {
				return nil, false
			}
			j := skipXMLSpace(rest, 2+n)
			if j >= len(rest) || rest[j] != '>' {
				return nil, false
			}
			l.endText(top())
			stack = stack[:len(stack)-1]
			i += j + 1
		case bytes.HasPrefix(rest, []byte("<!--")):
			end := bytes.Index(rest[4:], []byte("--"))
			if end < 0 || 4+end+2 >= len(rest) || rest[4+end+2] != '>' {
				return nil, false
			}
			i += 4 + end + 3 // comments are skipped, as parse skips them
		case bytes.HasPrefix(rest, []byte("<![CDATA[")):
			end := bytes.Index(rest[9:], []byte("]]>"))
			if end < 0 {
				return nil, false
			}
			data := rest[9 : 9+end]
			if !validXMLChars(data) {
				return nil, false
			}
			if len(stack) > 0 {
				l.charData(top(), data, true)
			}
			i += 9 + end + 3
		case bytes.HasPrefix(rest, []byte("<?")):
			n := xmlDeclLen(rest)
			if n == 0 {
				return nil, false
			}
			if len(stack) > 0 {
				l.endText(top())
			}
			i += n
		default:
			name, j, empty, ok := l.scanStart(rest)
			if !ok || len(stack) == 0 && root != nil {
				return nil, false
			}
			elements++
			if len(stack)+1 > l.limits.MaxDepth || elements > l.limits.MaxNodes {
				return nil, false
			}
			e := l.xels.new()
			*e = xel{tag: name.Local, attr: l.takeAttrs(), start: off, end: off + j}
			if len(stack) == 0 {
				root = e
			} else {
				parent := top()
				l.endText(parent)
				parent.e.elems = append(parent.e.elems, e)
			}
			stack = append(stack, xmlFrame{e: e, name: name, leading: true})
			if empty {
				l.endText(top())
				stack = stack[:len(stack)-1]
			}
			i += j
		}
	}
	if len(stack) > 0 || root == nil {
		return nil, false
	}
	return root, true
}

// xmlDecls are the XML declarations scan reads; encoding/xml checks the
// version and encoding of any other.
var xmlDecls = [][]byte{
	[]byte(`<?xml version="1.0" encoding="UTF-8"?>`),
	[]byte(`<?xml version="1.0" encoding="utf-8"?>`),
	[]byte(`<?xml version="1.0"?>`),
}

// xmlDeclLen returns the length of the XML declaration src starts with,
// or 0 when it starts with no declaration of xmlDecls.
func xmlDeclLen(src []byte) int {
	for _, d := range xmlDecls {
		if bytes.HasPrefix(src, d) {
			return len(d)
		}
	}
	return 0
}

// scanStart reads the start tag src starts with, its attributes into
// the loader's scratch space (see takeAttrs): its name, its length, and
// whether it closes itself.
func (l *xmlLoader) scanStart(src []byte) (name xml.Name, n int, empty, ok bool) {
	name, n, ok = l.scanName(src[1:])
	if !ok {
		return name, 0, false, false
	}
	l.attrScratch = l.attrScratch[:0]
	for j := 1 + n; ; {
		j = skipXMLSpace(src, j)
		if j >= len(src) {
			return name, 0, false, false
		}
		switch src[j] {
		case '/':
			if j+1 < len(src) && src[j+1] == '>' {
				return name, j + 2, true, true
			}
			return name, 0, false, false
		case '>':
			return name, j + 1, false, true
		}
		aname, an, ok := l.scanName(src[j:])
		if !ok {
			return name, 0, false, false
		}
		j = skipXMLSpace(src, j+an)
		if j >= len(src) || src[j] != '=' {
			return name, 0, false, false
		}
		j = skipXMLSpace(src, j+1)
		if j >= len(src) || src[j] != '"' && src[j] != '\'' {
			return name, 0, false, false
		}
		q := src[j]
		end := bytes.IndexByte(src[j+1:], q)
		if end < 0 {
			return name, 0, false, false
		}
		raw := src[j+1 : j+1+end]
		if bytes.IndexByte(raw, '<') >= 0 {
			return name, 0, false, false
		}
		value, ok := l.scanText(raw, true)
		if !ok {
			return name, 0, false, false
		}
		l.attrScratch = append(l.attrScratch, xml.Attr{Name: aname, Value: string(value)})
		j += 1 + end + 1
	}
}

// takeAttrs returns the attributes scanStart read, from a block of the
// loader's: an element's attributes cost no allocation of their own.
func (l *xmlLoader) takeAttrs() []xml.Attr {
	n := len(l.attrScratch)
	if n == 0 {
		return []xml.Attr{} // as encoding/xml gives them
	}
	if cap(l.attrBlock) < n {
		l.attrBlock = make([]xml.Attr, max(maxSlab, n))
	}
	out := l.attrBlock[:n:n]
	copy(out, l.attrScratch)
	l.attrBlock = l.attrBlock[n:]
	return out
}

// scanName reads the name src starts with as encoding/xml does (a
// prefix before a colon in Space), for an ASCII name: its length, and
// false for no name or one of other characters.
func (l *xmlLoader) scanName(src []byte) (xml.Name, int, bool) {
	n, colons := 0, 0
	for n < len(src) && isXMLNameByte(src[n]) {
		if src[n] == ':' {
			colons++
		}
		n++
	}
	if n == 0 || n < len(src) && src[n] >= utf8.RuneSelf || colons > 1 {
		return xml.Name{}, 0, false
	}
	if c := src[0]; c == '-' || c == '.' || c >= '0' && c <= '9' {
		return xml.Name{}, 0, false
	}
	b := src[:n]
	if i := bytes.IndexByte(b, ':'); i > 0 && i < n-1 {
		return xml.Name{Space: l.intern(b[:i]), Local: l.intern(b[i+1:])}, n, true
	}
	return xml.Name{Local: l.intern(b)}, n, true
}

// intern returns b as a string shared with every name like it, up to
// maxInterned names: tags and attribute names repeat.
func (l *xmlLoader) intern(b []byte) string {
	if s, ok := l.names[string(b)]; ok {
		return s
	}
	s := string(b)
	if l.names == nil {
		l.names = map[string]string{}
	}
	if len(l.names) < maxInterned {
		l.names[s] = s
	}
	return s
}

// maxInterned bounds the distinct names the loader keeps to share.
const maxInterned = 256

func isXMLNameByte(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
		c == '_' || c == ':' || c == '.' || c == '-'
}

func skipXMLSpace(src []byte, i int) int {
	for i < len(src) && isXMLSpace(src[i]) {
		i++
	}
	return i
}

// xmlEntities are the entities encoding/xml knows without a declaration.
var xmlEntities = map[string]byte{"lt": '<', "gt": '>', "amp": '&', "apos": '\'', "quot": '"'}

// scanText returns character data (an attribute value with inAttr) with
// its entities replaced, and false when it holds what scan does not read
// (a character reference) or encoding/xml rejects (another entity, a
// character outside XML's range, "]]>" outside an attribute). Without
// entities it returns data itself, and otherwise the loader's scratch
// space, valid until the next call.
func (l *xmlLoader) scanText(data []byte, inAttr bool) ([]byte, bool) {
	if !validXMLChars(data) || !inAttr && bytes.Contains(data, []byte("]]>")) {
		return nil, false
	}
	amp := bytes.IndexByte(data, '&')
	if amp < 0 {
		return data, true
	}
	out := append(l.textBuf[:0], data[:amp]...)
	for rest := data[amp:]; len(rest) > 0; {
		if rest[0] != '&' {
			next := bytes.IndexByte(rest, '&')
			if next < 0 {
				next = len(rest)
			}
			out = append(out, rest[:next]...)
			rest = rest[next:]
			continue
		}
		semi := bytes.IndexByte(rest, ';')
		if semi < 0 {
			return nil, false
		}
		c, ok := xmlEntities[string(rest[1:semi])]
		if !ok {
			return nil, false
		}
		out = append(out, c)
		rest = rest[semi+1:]
	}
	l.textBuf = out
	return out, true
}

// validXMLChars reports whether data is UTF-8 of characters in XML's
// range, as encoding/xml requires of character data.
func validXMLChars(data []byte) bool {
	for i := 0; i < len(data); {
		c := data[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && c != '\n' {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size == 1 || !isInXMLRange(r) {
			return false
		}
		i += size
	}
	return true
}

func isInXMLRange(r rune) bool {
	return r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}

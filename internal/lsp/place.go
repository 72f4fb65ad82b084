package lsp

import (
	"strings"
)

// place is where the cursor is, as completion and hover need it: typing
// a key (or a CP-XML element or attribute name) of a context, or the
// value of a key that names something of a kind.
type place struct {
	// ctx is the key context (a YAML context such as ctxState, or the
	// CP-XML element whose attributes are expected); valid when atKey.
	ctx string
	// atKey is set when the cursor is on a key or attribute name;
	// atElem when it is on a CP-XML element name.
	atKey, atElem bool
	// ref is the kind of name expected at the cursor, 0 for none.
	ref Kind
	// start is where the partial word before the cursor starts.
	start int
}

// yamlRefs says which keys of which contexts name what.
var yamlRefs = map[string]map[string]Kind{
	ctxRoot:       {"initial": KindState},
	ctxState:      {"arm": KindTimer},
	ctxTransition: {"send": KindMessage, "timeout": KindTimer, "next": KindState, "from": KindRole, "to": KindRole},
	ctxCommitment: {"debtor": KindRole, "creditor": KindRole, "create": KindMessage, "detach": KindMessage,
		"discharge": KindMessage, "cancel": KindMessage, "release": KindMessage, "expires": KindTimer, "deadline": KindTimer},
	ctxTimer: {"deadline": KindMessage},
}

// xmlRefs says which attributes of which CP-XML elements name what.
var xmlRefs = map[string]map[string]Kind{
	"policy":       {"initial": KindState},
	"send-message": {"message": KindMessage, "from": KindRole, "to": KindRole, "next": KindState},
	"on-timeout":   {"timer": KindTimer, "next": KindState},
	"child-return": {"next": KindState},
	"arm":          {"timer": KindTimer},
	"commitment":   {"debtor": KindRole, "creditor": KindRole, "expires": KindTimer, "deadline": KindTimer},
	"create":       {"message": KindMessage},
	"detach":       {"message": KindMessage},
	"discharge":    {"message": KindMessage},
	"cancel":       {"message": KindMessage},
	"release":      {"message": KindMessage},
	"timer":        {"deadline": KindMessage},
	"bind":         {"to": KindRole},
}

// ctxChildRoles is the mapping of a child's role bindings, whose values
// are roles of this policy.
const ctxChildRoles = "child roles"

func isIdentByte(c byte) bool { return c != '.' && isNameByte(c) }

// yamlContext names the context of the mapping at path, a list of keys
// with "-" for a list item; ok is false for a mapping of names (fields)
// or anything unknown.
func yamlContext(path []string) (string, bool) {
	n := len(path)
	switch {
	case n == 0:
		return ctxRoot, true
	case n == 2 && path[0] == "roles":
		return ctxRole, true
	case n == 2 && path[0] == "messages":
		return ctxMessage, true
	case n == 2 && path[0] == "timers":
		return ctxTimer, true
	case n == 2 && path[0] == "commitments":
		return ctxCommitment, true
	case n == 2 && path[0] == "states":
		return ctxState, true
	case n == 3 && path[0] == "states" && path[2] == "-",
		n == 4 && path[0] == "states" && path[2] == "on" && path[3] == "-":
		return ctxTransition, true
	case n == 3 && path[0] == "states" && path[2] == "child":
		return ctxChild, true
	case n == 4 && path[0] == "states" && path[2] == "child" && path[3] == "roles":
		return ctxChildRoles, true
	}
	return "", false
}

// refOf returns the kind a value of key in ctx names.
func refOf(ctx, key string) Kind {
	if ctx == ctxChildRoles {
		return KindRole
	}
	return yamlRefs[ctx][key]
}

// yamlPlaceAt finds the place of byte offset off in a YAML policy. It
// reads the lines above the cursor by their indentation rather than
// parsing, so it works in a file that is half written.
func yamlPlaceAt(t *text, off int) place {
	li := t.lineOf(off)
	line := t.line(li)
	col := min(off-t.starts[li], len(line))
	before := line[:col]
	start := col
	for start > 0 && isIdentByte(before[start-1]) {
		start--
	}
	pl := place{start: t.starts[li] + start}

	indent := leadingSpaces(before)
	rest := before[indent:]
	seq := false
	for strings.HasPrefix(rest, "- ") || rest == "-" {
		seq = true
		rest = strings.TrimLeft(rest[1:], " ")
	}
	if strings.HasPrefix(strings.TrimSpace(rest), "#") {
		return place{}
	}
	// A list item's parents are those of its dash; the other items of
	// the list are its siblings.
	path := yamlParents(t, li, indent)
	if seq {
		path = append(path, "-")
	}
	// The part of the line before the cursor: flow collections and the
	// key whose value the cursor is in.
	type open struct {
		brace byte
		key   string
	}
	var stack []open
	key, tok := "", ""
	inQuote := byte(0)
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		switch {
		case inQuote != 0:
			if c == inQuote {
				inQuote = 0
			}
		case c == '"' || c == '\'':
			inQuote = c
		case c == '#' && (i == 0 || rest[i-1] == ' '):
			return place{} // in a comment
		case c == ':' && (i+1 == len(rest) || rest[i+1] == ' '):
			key, tok = strings.TrimSpace(tok), ""
		case c == '{' || c == '[':
			stack = append(stack, open{brace: c, key: key})
			key, tok = "", ""
		case c == '}' || c == ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			key, tok = "", ""
		case c == ',':
			if len(stack) > 0 && stack[len(stack)-1].brace == '{' {
				key = ""
			}
			tok = ""
		default:
			tok += string(c)
		}
	}
	if inQuote != 0 {
		return place{}
	}
	for _, o := range stack {
		if o.key != "" {
			path = append(path, o.key)
		}
	}
	if n := len(stack); n > 0 && stack[n-1].brace == '[' && key == "" {
		// In a flow list: a value of the key that opened it, if any.
		if key = stack[n-1].key; key == "" {
			return pl
		}
		path = path[:len(path)-1]
	}
	if key != "" {
		if ctx, ok := yamlContext(path); ok {
			pl.ref = refOf(ctx, key)
		}
		return pl
	}
	if seq && len(stack) == 0 && len(path) >= 2 && path[len(path)-2] != "-" {
		// An item of a block list under a key: a value of that key
		// (arm:, create: ...), unless the items are mappings.
		if ctx, ok := yamlContext(path[:len(path)-2]); ok {
			if k := refOf(ctx, path[len(path)-2]); k != 0 {
				pl.ref = k
				return pl
			}
		}
	}
	if ctx, ok := yamlContext(path); ok {
		if ctx == ctxChildRoles {
			return pl
		}
		pl.ctx, pl.atKey = ctx, true
	}
	return pl
}

// yamlParents returns the keys of the block mappings that hold line li,
// whose content starts at column indent, outermost first; a list item
// is "-".
func yamlParents(t *text, li, indent int) []string {
	var rev []string
	for i := li - 1; i >= 0 && indent > 0; i-- {
		l := t.line(i)
		trimmed := strings.TrimSpace(l)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		ind := leadingSpaces(l)
		if ind >= indent {
			continue
		}
		content := l[ind:]
		if strings.HasPrefix(content, "- ") || content == "-" {
			// A list item: the cursor's mapping is the item itself, or
			// nested in it.
			rest := strings.TrimLeft(content[1:], " ")
			itemIndent := len(l) - len(rest)
			if itemIndent < indent && rest != "" {
				if k, ok := blockKey(rest); ok {
					rev = append(rev, k)
				}
			}
			rev = append(rev, "-")
			indent = ind
			continue
		}
		k, ok := blockKey(content)
		if !ok {
			return nil // a continuation line of a scalar, or not YAML
		}
		rev = append(rev, k)
		indent = ind
	}
	out := make([]string, len(rev))
	for i, k := range rev {
		out[len(rev)-1-i] = k
	}
	return out
}

// blockKey returns the key a block mapping line "key:" or "key: value"
// starts with.
func blockKey(content string) (string, bool) {
	k, _, ok := strings.Cut(content, ":")
	k = strings.Trim(strings.TrimSpace(k), `"'`)
	if !ok || k == "" || strings.ContainsAny(k, "{}[],") {
		return "", false
	}
	return k, true
}

func leadingSpaces(s string) int {
	return len(s) - len(strings.TrimLeft(s, " "))
}

// maxTagScan bounds how far back the CP-XML place looks for the start
// of the tag the cursor is in.
const maxTagScan = 64 << 10

// xmlPlaceAt finds the place of byte offset off in a CP-XML policy: in
// an element name, an attribute name or an attribute value.
func xmlPlaceAt(t *text, off int) place {
	lo := max(0, off-maxTagScan)
	lt := strings.LastIndexByte(string(t.src[lo:off]), '<')
	if lt < 0 {
		return place{}
	}
	lt += lo
	tag := string(t.src[lt+1 : off])
	if strings.ContainsRune(tag, '>') || strings.HasPrefix(tag, "/") || strings.HasPrefix(tag, "!") || strings.HasPrefix(tag, "?") {
		return place{}
	}
	start := len(tag)
	for start > 0 && isIdentByte(tag[start-1]) {
		start--
	}
	pl := place{start: lt + 1 + start}
	name := tag
	if i := strings.IndexAny(tag, " \t\r\n"); i >= 0 {
		name = tag[:i]
	} else {
		pl.atElem = true
		return pl
	}
	// Inside the attributes: is a quote open?
	var quote byte
	attr, tok := "", ""
	for i := len(name); i < len(tag); i++ {
		c := tag[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
				attr = ""
			}
		case c == '"' || c == '\'':
			quote = c
			attr = strings.TrimSpace(tok)
			tok = ""
		case c == '=':
			tok = strings.TrimSpace(tok)
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			if tok != "" && !strings.HasSuffix(strings.TrimSpace(tag[:i]), "=") {
				tok = ""
			}
		default:
			tok += string(c)
		}
	}
	if quote != 0 {
		pl.ref = xmlRefs[name][attr]
		return pl
	}
	pl.ctx, pl.atKey = name, true
	return pl
}

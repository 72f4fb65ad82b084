package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// LoadYAML loads a policy from YAML. It returns the policy it could build
// (nil only when the file is not YAML at all) and every problem found,
// each at its position in filename. Static checks are not run: see Check.
func LoadYAML(filename string, src []byte, opts ...LoadOption) (*Policy, Diagnostics) {
	return (&yamlLoader{file: filename, src: src, limits: newLoadOptions(opts).limits}).load()
}

// load is LoadYAML with l made.
func (l *yamlLoader) load() (*Policy, Diagnostics) {
	filename, src := l.file, l.src
	if len(src) > l.limits.MaxBytes {
		l.d.errorf(CodeLimit, Pos{File: filename, Line: 1, Col: 1}, "file is %d bytes, more than the limit of %d", len(src), l.limits.MaxBytes)
		return nil, l.d.list
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(src))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			// An empty file, or one of only comments: no document at all.
			l.d.errorf(CodeSyntax, Pos{File: filename, Line: 1, Col: 1}, "empty document: a policy file starts with \"policy: <name>\"")
			return nil, l.d.list
		}
		l.syntaxError(err)
		return nil, l.d.list
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		l.d.errorf(CodeSyntax, l.pos(&extra), "a policy file holds one YAML document; found a second one")
	}
	if len(doc.Content) == 0 {
		l.d.errorf(CodeSyntax, Pos{File: filename, Line: 1, Col: 1}, "empty document: a policy file starts with \"policy: <name>\"")
		return nil, l.d.list
	}
	p := l.policy(doc.Content[0])
	l.d.list.Sort()
	if p != nil {
		p.loaded = l.d.list
	}
	return p, l.d.list
}

var (
	yamlLineRE   = regexp.MustCompile(`^yaml: line (\d+): `)
	yamlAnchorRE = regexp.MustCompile(`^unknown anchor '(.*)' referenced$`)
)

// yamlParserProblems are the problems yaml.v3's parser (as opposed to its
// scanner) reports. For these it prints the 0-based line of the construct
// being parsed, so the loader adds one.
var yamlParserProblems = []string{
	"did not find expected <stream-start>",
	"did not find expected <document start>",
	"found duplicate %YAML directive",
	"found incompatible YAML document",
	"found duplicate %TAG directive",
	"found undefined tag handle",
	"did not find expected node content",
	"did not find expected '-' indicator",
	"did not find expected key",
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
}

func (l *yamlLoader) syntaxError(err error) {
	msg := err.Error()
	pos := Pos{File: l.file, Line: 1, Col: 1}
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		pos.Line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
		if contains(yamlParserProblems, msg) {
			pos.Line++
		}
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
		if m := yamlAnchorRE.FindStringSubmatch(msg); m != nil {
			// yaml.v3 gives no line for an unknown alias: find it.
			if i := bytes.Index(l.src, []byte("*"+m[1])); i >= 0 {
				pos = l.posAt(i)
			}
		}
	}
	l.d.errorf(CodeSyntax, pos, "%s", clipMessage(msg))
}

// posAt returns the position of byte offset off in the source.
func (l *yamlLoader) posAt(off int) Pos {
	if l.lines == nil {
		l.lines = lineStarts(l.src)
	}
	line := 0
	for line+1 < len(l.lines) && l.lines[line+1] <= off {
		line++
	}
	return Pos{File: l.file, Line: line + 1, Col: off - l.lines[line] + 1}
}

type yamlLoader struct {
	file   string
	src    []byte
	lines  []int // byte offset of each line start, built on demand
	limits Limits
	nodes  int
	limit  bool // a node or depth limit was reported; stop descending
	d      diags
	// cursor is the line (1-based) whose first byte is at cursorOff:
	// lineStart reads on from it while the lines it is asked for come
	// in order, as they do in a walk without aliases.
	cursor, cursorOff int
	lastLine          int // the number of lines, once the cursor has met the end
	// general reads every mapping through pairs, passing by the
	// loader's readings of plain mappings (yaml_plain.go): for tests
	// that compare the two.
	general bool
	// pairBuf is the scratch space of tempPairs.
	pairBuf []yamlPair
	// The policy's states, transitions, expressions and assignments,
	// and the lists of them, from blocks.
	stateSlab      slab[State]
	transitionSlab slab[Transition]
	transitionPtrs ptrSlab[Transition]
	assignPtrs     ptrSlab[Assign]
	exprSlab       slab[Expr]
	assignSlab     slab[Assign]
	refSlices      sliceSlab[Ref]
}

func (l *yamlLoader) pos(n *yaml.Node) Pos { return Pos{File: l.file, Line: n.Line, Col: n.Column} }

// node resolves aliases and counts visited nodes against the limits. It
// returns nil when a limit is hit (after reporting it once).
func (l *yamlLoader) node(n *yaml.Node, depth int) *yaml.Node {
	if l.limit {
		return nil
	}
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	l.nodes += subtreeSize(n)
	switch {
	case l.nodes > l.limits.MaxNodes:
		l.limit = true
		l.d.errorf(CodeLimit, l.pos(n), "more than %d YAML nodes (counting alias expansions); the file is too large or expands aliases too often", l.limits.MaxNodes)
		return nil
	case depth > l.limits.MaxDepth:
		l.limit = true
		l.d.errorf(CodeLimit, l.pos(n), "nesting deeper than %d levels", l.limits.MaxDepth)
		return nil
	}
	return n
}

// subtreeSize counts n and the nodes directly below it; each alias is
// counted again whenever it is resolved.
func subtreeSize(n *yaml.Node) int {
	if n.Kind == yaml.ScalarNode || n.Kind == yaml.AliasNode {
		return 1
	}
	return 1 + len(n.Content)
}

type yamlPair struct {
	key  string
	k, v *yaml.Node
}

// pairs returns the key/value pairs of a mapping, with YAML merge keys
// ("<<: *anchor") expanded. With structural set, a repeated key is
// reported; user-named mappings (states, messages) leave duplicates to the
// declarations check so both file formats report them the same way.
func (l *yamlLoader) pairs(n *yaml.Node, depth int, structural bool) []yamlPair {
	return l.pairsInto(make([]yamlPair, 0, len(n.Content)/2), n, depth, structural)
}

// tempPairs is pairs of a structural mapping for a caller done with them
// before it returns, in the loader's scratch space; the caller gives
// them back with dropPairs(mark). A transition and the mappings in it
// cost no allocation of their own.
func (l *yamlLoader) tempPairs(n *yaml.Node, depth int) (pairs []yamlPair, mark int) {
	mark, need := len(l.pairBuf), len(n.Content)/2
	if cap(l.pairBuf)-mark < need {
		// A new block: the callers' pairs stay in the old one.
		l.pairBuf = make([]yamlPair, mark, max(2*cap(l.pairBuf), mark+need, 64))
	}
	l.pairBuf = l.pairBuf[:mark+need]
	return l.pairsInto(l.pairBuf[mark:mark:mark+need], n, depth, true), mark
}

// dropPairs gives back the scratch space of tempPairs from mark on. Its
// references to the nodes stay until the next pairs are written over
// them: they hold at most the mappings of the last transition read, and
// clearing them at every transition costs more than that holds.
func (l *yamlLoader) dropPairs(mark int) { l.pairBuf = l.pairBuf[:mark] }

// pairsInto is pairs, appending to out (empty).
func (l *yamlLoader) pairsInto(out []yamlPair, n *yaml.Node, depth int, structural bool) []yamlPair {
	// seen indexes out by key once the mapping is too large to search;
	// a structural mapping has a handful of keys.
	var seen map[string]*yaml.Node
	first := func(key string) *yaml.Node {
		if seen != nil {
			return seen[key]
		}
		for _, p := range out {
			if p.key == key {
				return p.k
			}
		}
		return nil
	}
	var merged []yamlPair
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			l.d.errorf(CodeInvalidValue, l.pos(k), "a mapping key must be a plain name")
			continue
		}
		if k.Tag == "!!merge" {
			merged = append(merged, l.mergePairs(v, depth)...)
			continue
		}
		if structural {
			if f := first(k.Value); f != nil {
				l.d.errorf(CodeDuplicate, l.pos(k), "duplicate key %s", Quote(k.Value)).related(l.pos(f), "first given here")
				continue
			}
		}
		out = append(out, yamlPair{key: k.Value, k: k, v: v})
		if structural && seen == nil && len(out) > maxSearchedKeys {
			seen = make(map[string]*yaml.Node, len(n.Content)/2)
			for _, p := range out {
				seen[p.key] = p.k
			}
		} else if seen != nil {
			seen[k.Value] = k
		}
	}
	if len(merged) > 0 {
		// A merged key is kept only when the mapping does not give it.
		have := make(map[string]bool, len(out)+len(merged))
		for _, p := range out {
			have[p.key] = true
		}
		for _, p := range merged {
			if !have[p.key] {
				have[p.key] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// maxSearchedKeys is the size up to which pairs finds a repeated key by
// searching the keys so far rather than through a map.
const maxSearchedKeys = 16

func (l *yamlLoader) mergePairs(v *yaml.Node, depth int) []yamlPair {
	v = l.node(v, depth+1)
	if v == nil {
		return nil
	}
	switch v.Kind {
	case yaml.MappingNode:
		return l.pairs(v, depth+1, false)
	case yaml.SequenceNode:
		var out []yamlPair
		for _, item := range v.Content {
			if item = l.node(item, depth+2); item != nil && item.Kind == yaml.MappingNode {
				out = append(out, l.pairs(item, depth+2, false)...)
			}
		}
		return out
	}
	l.d.errorf(CodeInvalidValue, l.pos(v), "a merge key (<<) takes a mapping or a list of mappings")
	return nil
}

// fields walks a structural mapping whose keys must be among allowed,
// calling fn for each; unknown keys get a "did you mean" diagnostic.
func (l *yamlLoader) fields(n *yaml.Node, depth int, what place, allowed []string, fn func(key string, k, v *yaml.Node)) bool {
	if n = l.node(n, depth); n == nil {
		return false
	}
	if n.Kind != yaml.MappingNode {
		l.d.errorf(CodeInvalidValue, l.pos(n), "%s must be a mapping, not %s", what, kindName(n))
		return false
	}
	if l.plainKeys(n, true) {
		for i := 0; i < len(n.Content); i += 2 {
			l.field(n.Content[i], n.Content[i+1], what, allowed, fn)
		}
		return true
	}
	pairs, mark := l.tempPairs(n, depth)
	defer l.dropPairs(mark)
	for _, p := range pairs {
		l.field(p.k, p.v, what, allowed, fn)
	}
	return true
}

// field is fields for the pair k: v.
func (l *yamlLoader) field(k, v *yaml.Node, what place, allowed []string, fn func(key string, k, v *yaml.Node)) {
	if !contains(allowed, k.Value) {
		l.d.errorf(CodeUnknownField, l.pos(k), "unknown key %s in %s%s", Quote(k.Value), what, didYouMean(k.Value, allowed))
		return
	}
	fn(k.Value, k, v)
}

// place names a place for a diagnostic: a text ("the policy"), or a
// declaration, kind then quoted name ("state \"s1\""), the name quoted
// only when a diagnostic is made. A place is passed by value, and made
// an interface only for a diagnostic: naming the place of each of many
// states allocates nothing.
type place struct {
	kind, name string
	decl       bool
}

// plain is the place text.
func plain(text string) place { return place{kind: text} }

// named is the place of declaration name of kind.
func named(kind, name string) place { return place{kind: kind, name: name, decl: true} }

func (p place) String() string {
	if !p.decl {
		return p.kind
	}
	return p.kind + " " + Quote(p.name)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "empty"
		}
		return Quote(n.Value)
	}
	return "an alias"
}

// str reads a non-empty scalar.
func (l *yamlLoader) str(n *yaml.Node, depth int, what string) (string, bool) {
	if n = l.node(n, depth); n == nil {
		return "", false
	}
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" || n.Value == "" {
		l.d.errorf(CodeInvalidValue, l.pos(n), "%s must be a non-empty string, not %s", what, kindName(n))
		return "", false
	}
	return n.Value, true
}

func (l *yamlLoader) ref(n *yaml.Node, depth int, what string) Ref {
	s, _ := l.str(n, depth, what)
	return Ref{Name: s, Pos: l.pos(n)}
}

// refs reads one name or a list of names.
func (l *yamlLoader) refs(n *yaml.Node, depth int, what string) []Ref {
	if n = l.node(n, depth); n == nil {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		return append(l.refSlices.make(1), l.ref(n, depth, what))
	}
	out := make([]Ref, 0, len(n.Content))
	for _, item := range n.Content {
		out = append(out, l.ref(item, depth+1, what))
	}
	return out
}

func (l *yamlLoader) boolean(n *yaml.Node, depth int, what string) bool {
	if n = l.node(n, depth); n == nil {
		return false
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!bool" {
		b, err := strconv.ParseBool(n.Value)
		if err == nil {
			return b
		}
	}
	l.d.errorf(CodeInvalidValue, l.pos(n), "%s must be true or false, not %s", what, kindName(n))
	return false
}

func (l *yamlLoader) duration(n *yaml.Node, depth int, what string) time.Duration {
	s, ok := l.str(n, depth, what)
	if !ok {
		return 0
	}
	d, err := ParseDuration(s)
	if err != nil {
		l.d.errorf(CodeInvalidValue, l.pos(n), "%s: %v", what, err)
	}
	return d
}

// ParseDuration parses a positive Go duration such as "30s" or "1m30s".
func ParseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%s is not a duration (write it like 30s, 500ms or 1m30s)", Quote(s))
	}
	if d <= 0 {
		return 0, fmt.Errorf("duration %s must be positive", Quote(s))
	}
	return d, nil
}

// expr reads an embedded expression and records where its text starts in
// the file, so expression diagnostics point into the policy.
func (l *yamlLoader) expr(n *yaml.Node, depth int, what string) *Expr {
	s, ok := l.str(n, depth, what)
	if !ok {
		return nil
	}
	if n = l.node(n, depth); n == nil {
		return nil
	}
	// A literal block (guard: |) ends with a newline that is not part of
	// the expression; the XML loader trims it too, so both formats give
	// the same model.
	if c := s[len(s)-1]; c == ' ' || c == '\t' || c == '\r' || c == '\n' {
		s = strings.TrimRight(s, " \t\r\n")
	}
	if len(s) > l.limits.MaxExprBytes {
		l.d.errorf(CodeLimit, l.pos(n), "%s is %d bytes, more than the limit of %d", what, len(s), l.limits.MaxExprBytes)
		return nil
	}
	e := l.exprSlab.new()
	*e = Expr{Src: s, Pos: l.pos(n)}
	switch n.Style {
	case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		e.Pos.Col++
		e.Indent = l.indentOf(n.Line + 1)
	case yaml.LiteralStyle, yaml.FoldedStyle:
		e.Pos.Line++
		e.Pos.Col = l.indentOf(e.Pos.Line)
		e.Indent = e.Pos.Col
	default:
		e.Indent = l.indentOf(n.Line + 1)
	}
	return e
}

// indentOf returns the 1-based column of the first non-blank byte of
// line, or 1 for a line the source does not have.
func (l *yamlLoader) indentOf(line int) int {
	i, ok := l.lineStart(line)
	if !ok {
		return 1
	}
	src := l.src
	col := 1
	for ; i < len(src) && (src[i] == ' ' || src[i] == '\t'); i++ {
		col++
	}
	return col
}

// lineStart returns the offset of the first byte of line (1-based), and
// false for a line the source does not have. While the lines asked for
// come in order it reads on from the last one; the first line asked for
// before the last one makes the table of every line's start, which it
// reads from then on, so that no order of lines costs more than a pass
// over the source and the table.
func (l *yamlLoader) lineStart(line int) (int, bool) {
	if line < 1 || (l.lastLine > 0 && line > l.lastLine) {
		return 0, false
	}
	if l.lines == nil && line >= l.cursor {
		if l.cursor == 0 {
			l.cursor = 1
		}
		at, off := l.cursor, l.cursorOff
		for ; at < line; at++ {
			j := bytes.IndexByte(l.src[off:], '\n')
			if j < 0 {
				l.cursor, l.cursorOff, l.lastLine = at, off, at
				return 0, false
			}
			off += j + 1
		}
		l.cursor, l.cursorOff = at, off
		return off, true
	}
	if l.lines == nil {
		l.lines = lineStarts(l.src)
	}
	if line < 1 || line > len(l.lines) {
		return 0, false
	}
	return l.lines[line-1], true
}

// lineStarts returns the offset of each line's first byte in src.
func lineStarts(src []byte) []int {
	starts := make([]int, 1, 1+bytes.Count(src, []byte{'\n'}))
	for i := 0; ; {
		j := bytes.IndexByte(src[i:], '\n')
		if j < 0 {
			return starts
		}
		i += j + 1
		starts = append(starts, i)
	}
}

func (l *yamlLoader) doc(n *yaml.Node, depth int) string {
	s, _ := l.str(n, depth, "doc")
	return strings.TrimRight(s, "\n")
}

var policyKeys = []string{"policy", "version", "doc", "roles", "performatives", "messages", "timers", "vars", "commitments", "budget", "initial", "states"}

func (l *yamlLoader) policy(root *yaml.Node) *Policy {
	p := &Policy{}
	var statesNode *yaml.Node
	seen := map[string]bool{}
	ok := l.fields(root, 0, plain("the policy"), policyKeys, func(key string, k, v *yaml.Node) {
		seen[key] = true
		switch key {
		case "policy":
			p.Name, _ = l.str(v, 1, "policy")
			p.Pos = l.pos(v)
		case "version":
			p.Version, _ = l.str(v, 1, "version")
		case "doc":
			p.Doc = l.doc(v, 1)
		case "roles":
			l.roles(p, v)
		case "performatives":
			p.Performatives = l.refs(v, 1, "a performative")
		case "messages":
			l.messages(p, v)
		case "timers":
			l.timers(p, v)
		case "vars":
			p.Vars = l.fieldMap(v, 1, "vars")
		case "commitments":
			l.commitments(p, v)
		case "budget":
			p.Budget = l.budget(v)
		case "initial":
			p.Initial = l.ref(v, 1, "initial")
		case "states":
			statesNode = v
			l.states(p, v)
		}
	})
	if !ok {
		return nil
	}
	start := l.pos(root)
	for _, key := range []string{"policy", "version", "roles", "states"} {
		if !seen[key] {
			l.d.errorf(CodeMissingField, start, "the policy has no %s key", Quote(key))
		}
	}

	if p.Pos == (Pos{}) {
		p.Pos = start
	}
	if p.Initial.IsZero() && len(p.States) > 0 {
		p.Initial = Ref{Name: p.States[0].Name, Pos: p.States[0].Pos}
	}
	if statesNode != nil && p.Initial.IsZero() {
		p.Initial.Pos = l.pos(statesNode)
	}
	return p
}

func (l *yamlLoader) roles(p *Policy, n *yaml.Node) {
	if n = l.node(n, 1); n == nil {
		return
	}
	if (n.Kind == yaml.SequenceNode || n.Kind == yaml.MappingNode) && len(n.Content) == 0 {
		l.d.errorf(CodeMissingField, l.pos(n), "the policy declares no roles")
		return
	}
	switch n.Kind {
	case yaml.SequenceNode:
		for _, item := range n.Content {
			name, _ := l.str(item, 2, "a role name")
			p.Roles = append(p.Roles, &Role{Name: name, Pos: l.pos(item)})
		}
	case yaml.MappingNode:
		for _, pr := range l.pairs(n, 1, false) {
			r := &Role{Name: pr.key, Pos: l.pos(pr.k)}
			if v := l.node(pr.v, 2); v != nil && !(v.Kind == yaml.ScalarNode && v.Tag == "!!null") {
				l.fields(v, 2, named("role", pr.key), []string{"many", "doc"}, func(key string, _, v *yaml.Node) {
					switch key {
					case "many":
						r.Many = l.boolean(v, 3, "many")
					case "doc":
						r.Doc = l.doc(v, 3)
					}
				})
			}
			p.Roles = append(p.Roles, r)
		}
	default:
		l.d.errorf(CodeInvalidValue, l.pos(n), "roles must be a list of names or a mapping of role names, not %s", kindName(n))
	}
}

func (l *yamlLoader) messages(p *Policy, n *yaml.Node) {
	if n = l.node(n, 1); n == nil {
		return
	}
	if n.Kind != yaml.MappingNode {
		l.d.errorf(CodeInvalidValue, l.pos(n), "messages must be a mapping of message type names, not %s", kindName(n))
		return
	}
	for _, pr := range l.pairs(n, 1, false) {
		m := &MessageType{Name: pr.key, Pos: l.pos(pr.k)}
		p.Messages = append(p.Messages, m)
		v := l.node(pr.v, 2)
		if v == nil {
			continue
		}
		if v.Kind == yaml.ScalarNode {
			m.Performative, _ = l.str(v, 2, "a performative")
			continue
		}
		what := fmt.Sprintf("message type %s", Quote(pr.key))
		hasPerf := false
		l.fields(v, 2, plain(what), []string{"performative", "fields", "match", "doc"}, func(key string, _, v *yaml.Node) {
			switch key {
			case "performative":
				hasPerf = true
				m.Performative, _ = l.str(v, 3, "performative")
			case "fields":
				m.Fields = l.fieldMap(v, 3, "fields")
			case "match":
				m.Match = l.expr(v, 3, "match")
			case "doc":
				m.Doc = l.doc(v, 3)
			}
		})
		if !hasPerf && v.Kind == yaml.MappingNode {
			l.d.errorf(CodeMissingField, l.pos(pr.k), "%s has no performative", what)
		}
	}
}

// fieldMap reads "name: type" pairs (message fields, variables).
func (l *yamlLoader) fieldMap(n *yaml.Node, depth int, what string) []*Field {
	if n = l.node(n, depth); n == nil {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		l.d.errorf(CodeInvalidValue, l.pos(n), "%s must be a mapping of names to types, not %s", what, kindName(n))
		return nil
	}
	var out []*Field
	for _, pr := range l.pairs(n, depth, false) {
		f := &Field{Name: pr.key, Pos: l.pos(pr.k)}
		out = append(out, f)
		s, ok := l.str(pr.v, depth+1, "a type")
		if !ok {
			continue
		}
		t, opt, valid := ParseFieldType(s)
		if !valid {
			names := make([]string, len(FieldTypes))
			for i, ft := range FieldTypes {
				names[i] = string(ft)
			}
			l.d.errorf(CodeInvalidValue, l.pos(pr.v), "unknown type %s (types: %s, each may be preceded by optional)%s", Quote(s), strings.Join(names, ", "), didYouMean(strings.TrimPrefix(strings.TrimSuffix(s, "?"), "optional "), names))
			continue
		}
		f.Type, f.Optional = t, opt
	}
	return out
}

func (l *yamlLoader) timers(p *Policy, n *yaml.Node) {
	if n = l.node(n, 1); n == nil {
		return
	}
	if n.Kind != yaml.MappingNode {
		l.d.errorf(CodeInvalidValue, l.pos(n), "timers must be a mapping of timer names, not %s", kindName(n))
		return
	}
	for _, pr := range l.pairs(n, 1, false) {
		t := &Timer{Name: pr.key, Pos: l.pos(pr.k)}
		p.Timers = append(p.Timers, t)
		v := l.node(pr.v, 2)
		if v == nil {
			continue
		}
		if v.Kind == yaml.ScalarNode {
			t.After = l.duration(v, 2, "timer "+Quote(pr.key))
			continue
		}
		what := fmt.Sprintf("timer %s", Quote(pr.key))
		before := len(l.d.list)
		l.fields(v, 2, plain(what), []string{"after", "deadline", "default", "doc"}, func(key string, _, v *yaml.Node) {
			switch key {
			case "after":
				t.After = l.duration(v, 3, "after")
			case "deadline":
				if s, ok := l.str(v, 3, "deadline"); ok {
					t.Deadline = l.fieldRef(s, l.pos(v))
				}
			case "default":
				t.Default = l.duration(v, 3, "default")
			case "doc":
				t.Doc = l.doc(v, 3)
			}
		})
		if len(l.d.list) == before {
			// A bad after or deadline is reported already; saying the
			// timer lacks one would only repeat it.
			l.d.checkTimerShape(t, what)
		}
	}
}

func (l *yamlLoader) fieldRef(s string, pos Pos) *FieldRef {
	r, err := ParseFieldRef(s)
	if err != nil {
		l.d.errorf(CodeInvalidValue, pos, "deadline: %v", err)
		return nil
	}
	r.Pos = pos
	return r
}

// ParseFieldRef parses "message.field".
func ParseFieldRef(s string) (*FieldRef, error) {
	msg, field, ok := strings.Cut(s, ".")
	if !ok || msg == "" || field == "" || strings.Contains(field, ".") {
		return nil, fmt.Errorf("%s must name a message field as <message>.<field>, such as request.reply_by", Quote(s))
	}
	return &FieldRef{Message: msg, Field: field}, nil
}

// checkTimerShape reports a timer that is neither a duration nor a
// deadline, or both; shared by both loaders.
func (d *diags) checkTimerShape(t *Timer, what string) {
	switch {
	case t.After > 0 && t.Deadline != nil:
		d.errorf(CodeInvalidValue, t.Pos, "%s has both after and deadline; a timer fires after a duration or at a deadline", what)
	case t.After == 0 && t.Deadline == nil:
		d.errorf(CodeMissingField, t.Pos, "%s needs after (a duration) or deadline (a message field)", what)
	case t.After > 0 && t.Default > 0:
		d.errorf(CodeInvalidValue, t.Pos, "%s: default applies only to a deadline timer", what)
	}
}

var commitmentKeys = []string{"debtor", "creditor", "create", "detach", "discharge", "cancel", "release", "expires", "deadline", "doc"}

func (l *yamlLoader) commitments(p *Policy, n *yaml.Node) {
	if n = l.node(n, 1); n == nil {
		return
	}
	if n.Kind != yaml.MappingNode {
		l.d.errorf(CodeInvalidValue, l.pos(n), "commitments must be a mapping of commitment names, not %s", kindName(n))
		return
	}
	for _, pr := range l.pairs(n, 1, false) {
		c := &Commitment{Name: pr.key, Pos: l.pos(pr.k)}
		p.Commitments = append(p.Commitments, c)
		what := fmt.Sprintf("commitment %s", Quote(pr.key))
		ok := l.fields(pr.v, 2, plain(what), commitmentKeys, func(key string, _, v *yaml.Node) {
			switch key {
			case "debtor":
				c.Debtor = l.ref(v, 3, "debtor")
			case "creditor":
				c.Creditor = l.ref(v, 3, "creditor")
			case "create":
				c.Create = l.refs(v, 3, "a message type")
			case "detach":
				c.Detach = l.refs(v, 3, "a message type")
			case "discharge":
				c.Discharge = l.refs(v, 3, "a message type")
			case "cancel":
				c.Cancel = l.refs(v, 3, "a message type")
			case "release":
				c.Release = l.refs(v, 3, "a message type")
			case "expires":
				c.Expires = l.ref(v, 3, "expires")
			case "deadline":
				c.Deadline = l.ref(v, 3, "deadline")
			case "doc":
				c.Doc = l.doc(v, 3)
			}
		})
		if ok {
			l.d.checkCommitmentShape(c, what)
		}
	}
}

// checkCommitmentShape reports missing parts of a commitment; shared by
// both loaders.
func (d *diags) checkCommitmentShape(c *Commitment, what string) {
	if c.Debtor.IsZero() {
		d.errorf(CodeMissingField, c.Pos, "%s has no debtor", what)
	}
	if c.Creditor.IsZero() {
		d.errorf(CodeMissingField, c.Pos, "%s has no creditor", what)
	}
	if len(c.Create) == 0 {
		d.errorf(CodeMissingField, c.Pos, "%s has no create message", what)
	}
	if len(c.Discharge) == 0 {
		d.errorf(CodeMissingField, c.Pos, "%s has no discharge message", what)
	}
}

var stateKeys = []string{"doc", "arm", "join", "decide", "child", "terminal", "on"}

func (l *yamlLoader) states(p *Policy, n *yaml.Node) {
	if n = l.node(n, 1); n == nil {
		return
	}
	if n.Kind != yaml.MappingNode {
		l.d.errorf(CodeInvalidValue, l.pos(n), "states must be a mapping of state names, not %s", kindName(n))
		return
	}
	// A plain mapping is read as it stands, without pairs.
	c, plain := n.Content, l.plainKeys(n, false)
	var pairs []yamlPair
	count := len(c) / 2
	if !plain {
		pairs = l.pairs(n, 1, false)
		count = len(pairs)
	}
	if count == 0 {
		l.d.errorf(CodeMissingField, l.pos(n), "the policy declares no states")
		return
	}
	if count > l.limits.MaxStates {
		l.d.errorf(CodeLimit, l.pos(n), "%d states, more than the limit of %d", count, l.limits.MaxStates)
		return
	}
	// With no anchor, no alias can name this mapping, so nothing reads
	// it again: each state's nodes are dropped once read, so that the
	// collector can free them while later states load and the node tree
	// and the model are not both whole at once. (An alias keeps its own
	// reference to an anchored node.)
	drop := n.Anchor == ""
	if drop && !plain {
		// From here on pairs holds the only references to the states'
		// nodes.
		clear(c)
	}
	p.States = make([]*State, 0, count)
	for i := range count {
		var k, v *yaml.Node
		if plain {
			k, v = c[2*i], c[2*i+1]
			if drop {
				c[2*i], c[2*i+1] = nil, nil
			}
		} else {
			k, v = pairs[i].k, pairs[i].v
			pairs[i] = yamlPair{}
		}
		s := l.stateSlab.new()
		*s = State{Name: k.Value, Pos: l.pos(k), Kind: KindNormal}
		p.States = append(p.States, s)
		l.state(s, v)
	}
}

func (l *yamlLoader) state(s *State, n *yaml.Node) {
	if n = l.node(n, 2); n == nil {
		return
	}
	what := named("state", s.Name)
	if n.Kind == yaml.SequenceNode {
		s.Transitions = l.transitions(n, 2)
		return
	}
	if n.Kind != yaml.MappingNode {
		l.d.errorf(CodeInvalidValue, l.pos(n), "%s must be a list of transitions or a mapping, not %s", what, kindName(n))
		return
	}
	var terminalKey, onKey *yaml.Node
	var extraKeys [8]*yaml.Node // room for every key of stateKeys
	extras := extraKeys[:0]
	l.fields(n, 2, what, stateKeys, func(key string, k, v *yaml.Node) {
		switch key {
		case "doc":
			s.Doc = l.doc(v, 3)
			return
		case "terminal":
			terminalKey = k
			s.Kind = KindTerminal
			s.Outcome, _ = l.str(v, 3, "terminal (the outcome)")
			return
		case "arm":
			s.Arm = l.refs(v, 3, "a timer name")
		case "join":
			s.Join = l.boolean(v, 3, "join")
		case "decide":
			s.Decide = l.expr(v, 3, "decide")
		case "child":
			s.Child = l.child(v)
		case "on":
			onKey = k
			if v = l.node(v, 3); v != nil {
				if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
					// "on:" with no items: no transitions, which the
					// dead-ends check reports (WriteYAML writes an empty
					// state so).
					s.Transitions = []*Transition{}
				} else if v.Kind != yaml.SequenceNode {
					l.d.errorf(CodeInvalidValue, l.pos(v), "on must be a list of transitions, not %s", kindName(v))
				} else {
					s.Transitions = l.transitions(v, 3)
				}
			}
		}
		extras = append(extras, k)
	})
	switch {
	case terminalKey != nil:
		for _, k := range extras {
			l.d.errorf(CodeInvalidValue, l.pos(k), "terminal %s cannot have %s: a terminal state ends the conversation", what, Quote(k.Value))
		}
	case s.Child != nil:
		s.Kind = KindInChild
	case onKey == nil:
		l.d.errorf(CodeMissingField, l.pos(n), "%s has neither transitions (on) nor terminal", what)
	}
}

func (l *yamlLoader) child(n *yaml.Node) *ChildRef {
	c := &ChildRef{}
	if n = l.node(n, 3); n == nil {
		return c
	}
	c.Pos = l.pos(n)
	hasPolicy := false
	l.fields(n, 3, plain("child"), []string{"policy", "roles"}, func(key string, _, v *yaml.Node) {
		switch key {
		case "policy":
			hasPolicy = true
			c.Policy = l.ref(v, 4, "policy")
		case "roles":
			v = l.node(v, 4)
			if v == nil {
				return
			}
			if v.Kind != yaml.MappingNode {
				l.d.errorf(CodeInvalidValue, l.pos(v), "child roles must map each child role to a role of this policy, not %s", kindName(v))
				return
			}
			for _, pr := range l.pairs(v, 4, true) {
				c.Bindings = append(c.Bindings, &RoleBinding{Child: pr.key, Parent: l.ref(pr.v, 5, "a role"), Pos: l.pos(pr.k)})
			}
		}
	})
	if !hasPolicy {
		l.d.errorf(CodeMissingField, c.Pos, "child has no policy")
	}
	return c
}

var (
	sendKeys    = []string{"send", "from", "to", "next", "key", "guard", "set", "doc"}
	timeoutKeys = []string{"timeout", "next", "guard", "set", "doc"}
	returnKeys  = []string{"return", "next", "guard", "set", "doc"}
)

// keyApplies reports whether a transition of kind takes key: whether
// key is among transitionKeys(kind).
func keyApplies(kind TransitionKind, key string) bool {
	switch key {
	case "next", "guard", "set", "doc":
		return true
	case "send", "from", "to", "key":
		return kind == SendMessage
	case "timeout":
		return kind == OnTimeout
	case "return":
		return kind == ChildReturn
	}
	return false
}

// transitionKeys returns the keys a transition of kind takes.
func transitionKeys(kind TransitionKind) []string {
	switch kind {
	case SendMessage:
		return sendKeys
	case OnTimeout:
		return timeoutKeys
	}
	return returnKeys
}

var allTransitionKeys = []string{"send", "timeout", "return", "from", "to", "next", "key", "guard", "set", "doc"}

func (l *yamlLoader) transitions(n *yaml.Node, depth int) []*Transition {
	out := l.transitionPtrs.make(len(n.Content))
	for _, item := range n.Content {
		if t := l.transition(item, depth+1); t != nil {
			out = append(out, t)
		}
	}
	return out
}

func (l *yamlLoader) transition(n *yaml.Node, depth int) *Transition {
	if n = l.node(n, depth); n == nil {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		l.d.errorf(CodeInvalidValue, l.pos(n), "a transition must be a mapping such as {send: m, from: A, to: B, next: s}, not %s", kindName(n))
		return nil
	}
	t := l.transitionSlab.new()
	t.Pos = l.pos(n)
	if l.plainTransition(t, n, depth) {
		return t
	}
	pairs, mark := l.tempPairs(n, depth)
	defer l.dropPairs(mark)
	kinds := 0
	for _, pr := range pairs {
		switch pr.key {
		case "send":
			t.Kind = SendMessage
			kinds++
		case "timeout":
			t.Kind = OnTimeout
			kinds++
		case "return":
			t.Kind = ChildReturn
			kinds++
		}
	}
	switch kinds {
	case 0:
		l.d.errorf(CodeMissingField, t.Pos, "a transition needs one of send, timeout or return")
		return nil
	case 1:
	default:
		var given []string
		for _, pr := range pairs {
			if pr.key == "send" || pr.key == "timeout" || pr.key == "return" {
				given = append(given, pr.key)
			}
		}
		l.d.errorf(CodeInvalidValue, t.Pos, "a transition takes one of send, timeout or return, not %s", strings.Join(given, " and "))
		return nil
	}
	var read transitionKey
	for _, pr := range pairs {
		if !keyApplies(t.Kind, pr.key) {
			allowed := transitionKeys(t.Kind)
			if contains(allTransitionKeys, pr.key) {
				an := "a"
				if t.Kind == OnTimeout {
					an = "an"
				}
				l.d.errorf(CodeUnknownField, l.pos(pr.k), "%s does not apply to %s %s transition", Quote(pr.key), an, t.Kind)
			} else {
				l.d.errorf(CodeUnknownField, l.pos(pr.k), "unknown key %s in a transition%s", Quote(pr.key), didYouMean(pr.key, allowed))
			}
			continue
		}
		key := transitionKeyOf(pr.key)
		read |= key
		l.transitionValue(t, key, pr.v, depth+1)
	}
	l.transitionRead(t, read)
	return t
}

// transitionValue reads v, the value of key, into t.
func (l *yamlLoader) transitionValue(t *Transition, key transitionKey, v *yaml.Node, depth int) {
	switch key {
	case tkSend:
		t.Message = l.ref(v, depth, "send (a message type)")
	case tkTimeout:
		t.Timer = l.ref(v, depth, "timeout (a timer)")
	case tkReturn:
		t.Outcome, _ = l.str(v, depth, "return (a child outcome)")
	case tkFrom:
		t.From = l.ref(v, depth, "from (a role)")
	case tkTo:
		t.To = l.ref(v, depth, "to (a role)")
	case tkNext:
		t.Next = l.ref(v, depth, "next (a state)")
	case tkKey:
		t.Key, _ = l.str(v, depth, "key")
	case tkGuard:
		t.Guard = l.expr(v, depth, "guard")
	case tkSet:
		t.Set = l.assigns(v, depth)
	case tkDoc:
		t.Doc = l.doc(v, depth)
	}
}

// transitionRead reports what transition t lacks, given the keys read.
func (l *yamlLoader) transitionRead(t *Transition, read transitionKey) {
	if read&tkNext == 0 {
		l.d.errorf(CodeMissingField, t.Pos, "the %s transition has no next state", t.Kind)
	}
	if t.Kind == SendMessage {
		// Present but empty is reported as an invalid value already.
		if read&tkFrom == 0 {
			l.d.errorf(CodeMissingField, t.Pos, "the send-message transition for %s has no from (the sending role)", Quote(t.Message.Name))
		}
		if read&tkTo == 0 {
			l.d.errorf(CodeMissingField, t.Pos, "the send-message transition for %s has no to (the receiving role)", Quote(t.Message.Name))
		}
	}
}

func (l *yamlLoader) assigns(n *yaml.Node, depth int) []*Assign {
	if n = l.node(n, depth); n == nil {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		l.d.errorf(CodeInvalidValue, l.pos(n), "set must map variable names to expressions, not %s", kindName(n))
		return nil
	}
	if l.plainKeys(n, true) {
		var out []*Assign
		if len(n.Content) > 0 {
			out = l.assignPtrs.make(len(n.Content) / 2)
		}
		for i := 0; i < len(n.Content); i += 2 {
			out = append(out, l.assign(n.Content[i], n.Content[i+1], depth))
		}
		return out
	}
	pairs, mark := l.tempPairs(n, depth)
	defer l.dropPairs(mark)
	var out []*Assign
	if len(pairs) > 0 {
		out = l.assignPtrs.make(len(pairs))
	}
	for _, pr := range pairs {
		out = append(out, l.assign(pr.k, pr.v, depth))
	}
	return out
}

// assign is assigns for the pair k: v.
func (l *yamlLoader) assign(k, v *yaml.Node, depth int) *Assign {
	a := l.assignSlab.new()
	*a = Assign{Var: Ref{Name: k.Value, Pos: l.pos(k)}, Expr: l.expr(v, depth+1, "an expression")}
	return a
}

package forms

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Limits bound what a message's content may hold. Content comes from
// peers, so without limits a peer could make an agent spend unbounded
// stack, memory and time on one message, or hold a value that no
// snapshot can write down. A zero or negative field means that field of
// DefaultLimits.
type Limits struct {
	// MaxDepth is how deeply maps and lists may nest: the content object
	// is at depth 1, a map or list held by one of its fields at depth 2,
	// and so on.
	MaxDepth int
	// MaxNodes is how many values the content may hold in all: the value
	// of every field and every list element, at any depth.
	MaxNodes int
	// MaxBytes is how many bytes the content's keys, strings and
	// json.Numbers may hold in all.
	MaxBytes int
}

// DefaultLimits are the limits the engine applies to every message it
// receives or sends and to every decision's content: 32 levels of
// nesting, 10,000 values and 1 MiB of keys and strings. Treat it as a
// constant.
var DefaultLimits = Limits{MaxDepth: 32, MaxNodes: 10_000, MaxBytes: 1 << 20}

func (l Limits) orDefault() Limits {
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultLimits.MaxDepth
	}
	if l.MaxNodes <= 0 {
		l.MaxNodes = DefaultLimits.MaxNodes
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultLimits.MaxBytes
	}
	return l
}

// CheckContent reports whether content stays within l and holds only
// values JSON can carry: maps with string keys ([]any and map[string]any),
// strings, bools, nil, finite numbers of Go's number types or
// json.Number, time.Time (in the years 0 to 9999) and time.Duration. It
// refuses NaN and the infinities, nesting deeper than l.MaxDepth, more
// than l.MaxNodes values and more than l.MaxBytes bytes of keys and
// strings, and values of any other type.
//
// It walks the content without recursion, stops after l.MaxNodes values
// and does not allocate unless it returns an error. When content breaks
// several limits, the error names the same one whatever the order Go
// iterates maps in: too many values, then too many bytes, too deep, a
// number that is not finite, a time out of range, another type.
func CheckContent(content map[string]any, l Limits) error {
	if len(content) == 0 {
		return nil
	}
	return checkContent(content, l)
}

// container is a map or list CheckContent has still to walk, and its
// depth.
type container struct {
	v     any
	depth int
}

// contentCheck is what CheckContent has found so far.
type contentCheck struct {
	l         Limits
	subject   string // what errors say breaks the limit
	nodes     int
	bytes     int
	tooDeep   bool
	notFinite bool
	badTime   bool
	badType   any // a value of the first type, by name, JSON cannot carry
}

// CheckValue is CheckContent for one value, as if it were a field's: a
// map or list value is at depth 2 and counts as one value besides its
// own. The engine checks what a policy's assignments store with it.
func CheckValue(v any, l Limits) error {
	c := contentCheck{l: l.orDefault(), subject: "the value"}
	if !c.value(v) {
		return c.err()
	}
	if isContainer(v) {
		var buf [16]container
		c.walk(append(buf[:0], container{v, 2}))
	}
	return c.err()
}

func checkContent(content map[string]any, l Limits) error {
	c := contentCheck{l: l.orDefault(), subject: "content"}
	// The fields first, without a stack: most content nests nothing.
	nested := false
	left := len(content)
	for k, v := range content {
		c.bytes += len(k)
		if !c.value(v) {
			return c.err()
		}
		nested = nested || isContainer(v)
		if left--; left == 0 {
			break // that was the last: the iterator need not look for another
		}
	}
	if nested {
		c.walkFields(content)
	}
	return c.err()
}

// Fields is a set of field names: those the message types a state may
// receive or send declare, say. Its CheckContent looks content's fields up
// by name instead of iterating over the map, which is cheaper for content
// that holds only fields of the set. The zero Fields is empty.
type Fields struct {
	names []string
	// none holds the kinds of content without fields: every name's
	// absent.
	none Kinds
	// other holds a name that is none of names, which content checked
	// before held besides them (nil in the zero Fields): see check.
	other *otherName
}

// otherName is the one name a Fields learns besides its own, the first
// it saw alone (see Fields.check), and the position of the name it found
// the last content of one field under (see checkOne); Fields of one
// compiled policy are shared by goroutines, hence the atomics.
type otherName struct {
	p    atomic.Pointer[string]
	last atomic.Int32
}

// MaxOtherName is the longest name a Fields learns besides its own: a
// longer one is checked by iterating every time.
const MaxOtherName = 64

// FieldsOf returns the fields the message types of forms declare, each
// name once.
func FieldsOf(forms ...*Form) Fields {
	var fs Fields
	seen := map[string]bool{}
	for _, f := range forms {
		for _, fd := range f.Type.Fields {
			if !seen[fd.Name] {
				seen[fd.Name] = true
				fs.names = append(fs.names, fd.Name)
			}
		}
	}
	fs.none = fs.absent()
	fs.other = new(otherName)
	return fs
}

// Len returns how many names fs holds.
func (fs *Fields) Len() int { return len(fs.names) }

// CheckContent is CheckContent(content, l): the same answer, with the
// same error. When every field of content is one of fs, it finds that
// out by looking up fs's names and checks the fields it finds, without
// iterating over content; otherwise it checks content as CheckContent
// does. It looks up no more than fs.Len() names, only when content holds
// no more fields than that, and walks what the fields hold within l, as
// CheckContent does.
func (fs *Fields) CheckContent(content map[string]any, l Limits) error {
	if len(content) == 0 {
		return nil
	}
	_, _, err := fs.check(content, l, -1)
	return err
}

// CheckContentKinds is CheckContent, which also returns the kinds of
// the values it found under fs's first MaxKinds names when it decided
// content by looking them up (zero, every kind unknown, otherwise), for
// Form.ValidateKinds.
//
// It is small enough to be inlined: content without fields, which
// an agree carries, say, costs no call.
func (fs *Fields) CheckContentKinds(content map[string]any, l Limits) (k Kinds, err error) {
	if k = fs.none; len(content) != 0 {
		k, _, err = fs.check(content, l, -1)
	}
	return
}

// CheckContentField is CheckContentKinds, which also returns the value
// content holds under fs's j-th name when the kinds say it was found
// (Kinds.Found): a caller that reads that field next, a guard, has it
// without looking it up again. Otherwise the value is nil.
func (fs *Fields) CheckContentField(content map[string]any, l Limits, j int) (k Kinds, v any, err error) {
	if k = fs.none; len(content) != 0 {
		k, v, err = fs.check(content, l, j)
	}
	return
}

// absent returns the kinds of content without fields.
func (fs *Fields) absent() Kinds {
	var k Kinds
	for j := range min(len(fs.names), MaxKinds) {
		k = k.with(j, kindAbsent)
	}
	return k
}

// check looks up fs's names in content. Fields that are all scalars
// (strings, bools, nil, integers, finite float64s) within the limits are
// decided there, with their kinds, and the value of the want-th name;
// anything else is checked with a contentCheck (and the kinds are
// unknown).
//
// Content that holds one field besides fs's names is the common case
// fs cannot decide by looking up its names: a message type that
// declares none of the fields its senders put in. So fs learns the first
// such name it sees (at most MaxOtherName bytes) and looks that up too:
// content whose fields are then all found and all scalars within the
// limits passes without iterating, which is exactly what checkContent
// would decide of it. Anything else is checked by checkContent, as
// before; the kinds are unknown either way, as checkContent leaves them.
func (fs *Fields) check(content map[string]any, l Limits, want int) (Kinds, any, error) {
	if len(content) == 1 && fs.other != nil {
		if len(fs.names) == 0 { // then its one field is none of them
			return 0, nil, fs.checkOther(content, l, 0, 0)
		}
		return fs.checkOne(content, l, want)
	}
	if len(content) > len(fs.names) && (len(content) > len(fs.names)+1 || fs.learned() == nil) {
		return 0, nil, fs.checkLearning(content, l)
	}
	found, bytes := 0, 0
	var kinds Kinds
	var wanted any
	n := len(content)
	for j, k := range fs.names {
		v, ok := content[k]
		if !ok {
			kinds = kinds.with(j, kindAbsent)
			continue
		}
		kind, size := scalarKind(v)
		if kind == kindUnknown {
			return 0, nil, fs.checkFrom(j, found, bytes, content, l)
		}
		bytes += size
		if j == want {
			wanted = v
		}
		kinds = kinds.with(j, kind)
		found++
		bytes += len(k)
		if found == n && j+1 < len(fs.names) {
			// Every field is found: content holds none of the other
			// names, which need no looking up.
			kinds |= fs.none & (^Kinds(0) << (4 * uint(j+1)))
			break
		}
	}
	if found < n { // content holds a field fs does not name
		return 0, nil, fs.checkOther(content, l, found, bytes)
	}
	if l = l.orDefault(); found > l.MaxNodes || bytes > l.MaxBytes {
		return 0, nil, fs.checkFrom(len(fs.names), found, bytes, content, l)
	}
	return kinds, wanted, nil
}

// scalarKind returns the kind of a scalar value v (strings, bools, nil,
// integers, finite float64s, durations) and the bytes a string holds;
// kindUnknown for anything else, which a contentCheck is to walk. It is
// small enough to be inlined for the commonest kinds, and asks
// otherKind about the rest.
func scalarKind(v any) (kind, int) {
	switch x := v.(type) {
	case string:
		return kindString, len(x)
	case int:
		return kindInt, 0
	}
	return otherKind(v), 0
}

// otherKind is scalarKind of a value that is neither a string nor an
// int.
func otherKind(v any) kind {
	switch x := v.(type) {
	case nil:
		return kindNil
	case bool:
		return kindBool
	case int64, int32, int16, int8, uint, uint64, uint32, uint16, uint8:
		return kindInt
	case time.Duration:
		return kindDuration
	case float64:
		switch {
		case math.IsNaN(x) || math.IsInf(x, 0):
			return kindUnknown
		case x == math.Trunc(x):
			return kindWhole
		}
		return kindFraction
	}
	return kindUnknown // a map, a list, a value of another type
}

// checkOne is check for content of one field: what check decides of it,
// with the same kinds, value and error, looking up fs's names in
// another order. The name the last such content held, of every content
// fs checked, is looked up first, then the others in order: once it is
// found, the others are absent and need no looking up (check, in order,
// looks up those before it too). Messages of one type, the common case,
// hold the same field each time.
func (fs *Fields) checkOne(content map[string]any, l Limits, want int) (Kinds, any, error) {
	names := fs.names
	j, last := -1, int(fs.other.last.Load())
	var v any
	if last < len(names) {
		if x, ok := content[names[last]]; ok {
			j, v = last, x
		}
	}
	for i := 0; j < 0 && i < len(names); i++ {
		if i == last {
			continue
		}
		if x, ok := content[names[i]]; ok {
			j, v = i, x
			fs.other.last.Store(int32(i))
		}
	}
	if j < 0 { // the field is none of fs's names
		return 0, nil, fs.checkOther(content, l, 0, 0)
	}
	kind, bytes := scalarKind(v)
	if kind == kindUnknown {
		return 0, nil, fs.checkFrom(j, 0, 0, content, l)
	}
	bytes += len(names[j])
	if l = l.orDefault(); l.MaxNodes < 1 || bytes > l.MaxBytes {
		return 0, nil, fs.checkFrom(len(names), 1, bytes, content, l)
	}
	kinds := fs.none
	if j < MaxKinds {
		kinds = kinds&^(15<<(4*j)) | Kinds(kind)<<(4*j)
	}
	if j != want {
		v = nil
	}
	return kinds, v, nil
}

// checkOther is the end of check for content that holds one field fs
// does not name besides the found it found under fs's names, which held
// bytes bytes of names and strings: content passes, without iterating
// over it, when that field is the one fs learned and is a scalar within
// the limits; otherwise checkLearning or checkContent decides it.
func (fs *Fields) checkOther(content map[string]any, l Limits, found, bytes int) error {
	other := fs.learned()
	if other == nil || found+1 < len(content) {
		return fs.checkLearning(content, l)
	}
	v, ok := content[*other]
	if !ok {
		return checkContent(content, l)
	}
	kind, size := scalarKind(v)
	if kind == kindUnknown {
		return checkContent(content, l)
	}
	found++
	bytes += size + len(*other)
	if l = l.orDefault(); found > l.MaxNodes || bytes > l.MaxBytes {
		return checkContent(content, l)
	}
	return nil
}

// learned returns the name fs has learned besides its own, or nil.
func (fs *Fields) learned() *string {
	if fs.other == nil {
		return nil
	}
	return fs.other.p.Load()
}

// checkLearning is checkContent, which, while fs has learned no name
// besides its own, learns the one content holds if it holds just one.
func (fs *Fields) checkLearning(content map[string]any, l Limits) error {
	err := checkContent(content, l)
	if fs.other == nil || fs.learned() != nil || len(content) > len(fs.names)+1 {
		return err
	}
	var other string
	n := 0
	for k := range content {
		if !slices.Contains(fs.names, k) {
			other = k
			if n++; n > 1 {
				return err
			}
		}
	}
	if n == 1 && len(other) <= MaxOtherName {
		other = strings.Clone(other) // not to keep the content's memory
		fs.other.p.CompareAndSwap(nil, &other)
	}
	return err
}

// Position returns the index of name among fs's names, or -1.
func (fs *Fields) Position(name string) int {
	return slices.Index(fs.names, name)
}

// MaxKinds is how many fields' kinds a Kinds holds.
const MaxKinds = 16

// Kinds holds the kind of value content held under each of the first
// MaxKinds names of a Fields, four bits each; the zero kind is unknown.
type Kinds uint64

type kind uint8

const (
	kindUnknown  kind = iota
	kindAbsent        // no such field
	kindNil           // the field holds nil
	kindBool          // a bool
	kindString        // a string
	kindInt           // an integer of a Go integer type
	kindWhole         // a finite float64 with no fraction
	kindFraction      // a finite float64 with one
	kindDuration      // a time.Duration
)

// with returns k with the j-th field's kind set (none beyond MaxKinds).
func (k Kinds) with(j int, v kind) Kinds {
	if j >= MaxKinds {
		return k
	}
	return k | Kinds(v)<<(4*j)
}

// Found reports whether the j-th field was found, with a known kind: a
// value, nil included, that the limit check looked up.
func (k Kinds) Found(j int) bool {
	v := k.of(j)
	return v != kindUnknown && v != kindAbsent
}

// Absent reports whether the j-th field was looked up and not found:
// content does not hold it.
func (k Kinds) Absent(j int) bool { return k.of(j) == kindAbsent }

// of returns the j-th field's kind (unknown for a j that is out of range).
func (k Kinds) of(j int) kind {
	if j < 0 || j >= MaxKinds {
		return kindUnknown
	}
	return kind(k >> (4 * j) & 15)
}

// checkFrom goes on with check from fs's j-th name with a contentCheck:
// the found fields before it were scalars, holding bytes bytes of keys
// and strings, which is all a contentCheck would have noted of them.
func (fs *Fields) checkFrom(j, found, bytes int, content map[string]any, l Limits) error {
	c := contentCheck{l: l.orDefault(), subject: "content", nodes: found, bytes: bytes}
	if c.nodes > c.l.MaxNodes {
		return c.err()
	}
	var buf [16]container
	stack := buf[:0]
	for _, k := range fs.names[j:] {
		v, ok := content[k]
		if !ok {
			continue
		}
		found++
		c.bytes += len(k)
		if !c.value(v) {
			return c.err() // too many values, whatever the other fields hold
		}
		if isContainer(v) {
			stack = append(stack, container{v, 2})
		}
	}
	if found < len(content) {
		return checkContent(content, l) // content holds a field fs does not name
	}
	// What c has found does not depend on the order it looked at the
	// fields in (see CheckContent), so this is checkContent's answer.
	if len(stack) > 0 {
		c.walk(stack)
	}
	return c.err()
}

// walkFields walks the maps and lists content's fields hold (the fields
// themselves are counted and checked).
func (c *contentCheck) walkFields(content map[string]any) {
	var buf [16]container
	stack := buf[:0]
	for _, v := range content {
		if isContainer(v) {
			stack = append(stack, container{v, 2})
		}
	}
	c.walk(stack)
}

// walk checks the containers on stack and everything in them, until it
// has seen more than MaxNodes values.
func (c *contentCheck) walk(stack []container) {
	l := c.l
	for len(stack) > 0 {
		top := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if top.depth > l.MaxDepth {
			c.tooDeep = true
			continue
		}
		switch x := top.v.(type) {
		case map[string]any:
			for k, v := range x {
				c.bytes += len(k)
				if !c.value(v) {
					return
				}
				if isContainer(v) {
					stack = append(stack, container{v, top.depth + 1})
				}
			}
		case []any:
			for _, v := range x {
				if !c.value(v) {
					return
				}
				if isContainer(v) {
					stack = append(stack, container{v, top.depth + 1})
				}
			}
		}
	}
}

func isContainer(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return true
	}
	return false
}

// value counts v and checks it unless it is a container; it reports
// whether the walk may go on.
func (c *contentCheck) value(v any) bool {
	c.nodes++
	if c.nodes > c.l.MaxNodes {
		return false
	}
	switch x := v.(type) {
	case nil, bool, map[string]any, []any, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, time.Duration:
	case string:
		c.bytes += len(x)
	case float64:
		c.notFinite = c.notFinite || math.IsNaN(x) || math.IsInf(x, 0)
	case float32:
		c.notFinite = c.notFinite || math.IsNaN(float64(x)) || math.IsInf(float64(x), 0)
	case json.Number:
		c.bytes += len(x)
		if c.bytes <= c.l.MaxBytes {
			f, err := strconv.ParseFloat(string(x), 64)
			c.notFinite = c.notFinite || err != nil || math.IsNaN(f) || math.IsInf(f, 0)
		}
	case time.Time:
		c.badTime = c.badTime || x.Year() < 0 || x.Year() > 9999
	default:
		if c.badType == nil || fmt.Sprintf("%T", v) < fmt.Sprintf("%T", c.badType) {
			c.badType = v
		}
	}
	return true
}

func (c *contentCheck) err() error {
	switch {
	case c.nodes > c.l.MaxNodes:
		return fmt.Errorf("%s holds more than %d values", c.subject, c.l.MaxNodes)
	case c.bytes > c.l.MaxBytes:
		return fmt.Errorf("%s holds more than %d bytes of keys and strings", c.subject, c.l.MaxBytes)
	case c.tooDeep:
		return fmt.Errorf("%s nests maps and lists more than %d deep", c.subject, c.l.MaxDepth)
	case c.notFinite:
		return fmt.Errorf("%s holds a number that is not finite (NaN, an infinity or out of range), which JSON cannot carry", c.subject)
	case c.badTime:
		return fmt.Errorf("%s holds a time outside the years 0 to 9999, which JSON cannot carry", c.subject)
	case c.badType != nil:
		return fmt.Errorf("%s holds a %T, which is not a JSON value", c.subject, c.badType)
	}
	return nil
}

// SameContent reports whether two contents are equal as JSON: numbers of
// any Go type are equal when their values are, a time.Time equals its
// RFC 3339 string (as a snapshot keeps it), a time.Duration its number of
// nanoseconds, and no content equals one that holds a value CheckContent
// refuses. It recurses at most DefaultLimits.MaxDepth deep; deeper
// content is equal to nothing.
func SameContent(a, b map[string]any) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return sameMap(a, b, 1)
}

func sameMap(a, b map[string]any, depth int) bool {
	if depth > DefaultLimits.MaxDepth || len(a) != len(b) {
		return false
	}
	for k, x := range a {
		y, ok := b[k]
		if !ok || !sameValue(x, y, depth) {
			return false
		}
	}
	return true
}

func sameValue(x, y any, depth int) bool {
	switch a := x.(type) {
	case nil:
		return y == nil
	case string:
		switch b := y.(type) {
		case string:
			return a == b
		case time.Time:
			return sameTime(b, a)
		}
		return false
	case bool:
		b, ok := y.(bool)
		return ok && a == b
	case time.Time:
		switch b := y.(type) {
		case time.Time:
			return a.Format(time.RFC3339Nano) == b.Format(time.RFC3339Nano)
		case string:
			return sameTime(a, b)
		}
		return false
	case map[string]any:
		b, ok := y.(map[string]any)
		return ok && sameMap(a, b, depth+1)
	case []any:
		b, ok := y.([]any)
		if !ok || len(a) != len(b) || depth+1 > DefaultLimits.MaxDepth {
			return false
		}
		for i := range a {
			if !sameValue(a[i], b[i], depth+1) {
				return false
			}
		}
		return true
	}
	n, ok := jsonNumber(x)
	m, ok2 := jsonNumber(y)
	return ok && ok2 && n == m
}

func sameTime(t time.Time, s string) bool { return t.Format(time.RFC3339Nano) == s }

// jsonNumber is number, and a time.Duration as JSON writes it.
func jsonNumber(v any) (float64, bool) {
	if d, ok := v.(time.Duration); ok {
		return float64(d), true
	}
	return number(v)
}

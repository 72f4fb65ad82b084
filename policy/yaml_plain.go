package policy

import "gopkg.in/yaml.v3"

// The loader reads most mappings of a policy file without making their
// pairs (pairs): when every key of a mapping is a scalar, none is a
// merge key (<<) and none is repeated, its pairs are its content as it
// stands, and reading the content gives what reading the pairs would,
// diagnostics included. Any other mapping is read through pairs.

// plainKeys reports whether the pairs of mapping n are its content as
// it stands: its keys are scalars and none a merge key, and, read as a
// structural mapping, none is repeated and there are at most
// maxSearchedKeys of them. With the loader's general set it reports
// false, so that tests can read every mapping through pairs.
func (l *yamlLoader) plainKeys(n *yaml.Node, structural bool) bool {
	c := n.Content
	if l.general || len(c)%2 != 0 || (structural && len(c) > 2*maxSearchedKeys) {
		return false
	}
	for i := 0; i < len(c); i += 2 {
		k := c[i]
		if k.Kind != yaml.ScalarNode || k.Tag == mergeTag {
			return false
		}
		for j := 0; structural && j < i; j += 2 {
			if c[j].Value == k.Value {
				return false
			}
		}
	}
	return true
}

// mergeTag is the tag of a merge key.
const mergeTag = "!!merge"

// transitionKey is a key of a transition, as a bit of a set of them.
type transitionKey uint16

// The keys of a transition.
const (
	tkSend transitionKey = 1 << iota
	tkTimeout
	tkReturn
	tkFrom
	tkTo
	tkNext
	tkKey
	tkGuard
	tkSet
	tkDoc

	// tkKinds are the keys that give a transition's kind.
	tkKinds = tkSend | tkTimeout | tkReturn
	// tkAny are the keys of every kind of transition.
	tkAny = tkNext | tkGuard | tkSet | tkDoc
)

// transitionKeyOf returns the bit of key, or 0 for a key no transition
// takes.
func transitionKeyOf(key string) transitionKey {
	switch key {
	case "send":
		return tkSend
	case "timeout":
		return tkTimeout
	case "return":
		return tkReturn
	case "from":
		return tkFrom
	case "to":
		return tkTo
	case "next":
		return tkNext
	case "key":
		return tkKey
	case "guard":
		return tkGuard
	case "set":
		return tkSet
	case "doc":
		return tkDoc
	}
	return 0
}

// plainTransition reads mapping n into t when its keys are plain (see
// plainKeys), each a key of a transition, exactly one of them send,
// timeout or return, and every one a key that kind takes: then the
// transition has no diagnostic about its keys, and reading its content
// in order is what transition does through pairs. Otherwise it reads
// nothing and reports false.
func (l *yamlLoader) plainTransition(t *Transition, n *yaml.Node, depth int) bool {
	c := n.Content
	var keys [10]transitionKey // one for each key a transition takes
	if l.general || len(c)%2 != 0 || len(c) > 2*len(keys) {
		return false
	}
	var given transitionKey
	for i := 0; i < len(c); i += 2 {
		k := c[i]
		if k.Kind != yaml.ScalarNode || k.Tag == mergeTag {
			return false
		}
		key := transitionKeyOf(k.Value)
		if key == 0 || given&key != 0 {
			return false
		}
		given |= key
		keys[i/2] = key
	}
	var kind TransitionKind
	var takes transitionKey
	switch given & tkKinds {
	case tkSend:
		kind, takes = SendMessage, tkSend|tkFrom|tkTo|tkKey|tkAny
	case tkTimeout:
		kind, takes = OnTimeout, tkTimeout|tkAny
	case tkReturn:
		kind, takes = ChildReturn, tkReturn|tkAny
	default:
		return false
	}
	if given&^takes != 0 {
		return false
	}
	t.Kind = kind
	for i := 0; i < len(c); i += 2 {
		key, v := keys[i/2], c[i+1]
		if r := t.ref(key); r != nil && l.plainRef(v, depth+1) {
			*r = Ref{Name: v.Value, Pos: l.pos(v)}
			continue
		}
		l.transitionValue(t, key, v, depth+1)
	}
	l.transitionRead(t, given)
	return true
}

// ref returns the field of t that key names a Ref for, or nil.
func (t *Transition) ref(key transitionKey) *Ref {
	switch key {
	case tkSend:
		return &t.Message
	case tkTimeout:
		return &t.Timer
	case tkFrom:
		return &t.From
	case tkTo:
		return &t.To
	case tkNext:
		return &t.Next
	}
	return nil
}

// plainRef reports whether ref would read scalar v at depth without a
// diagnostic, as its name and position: whether v is a scalar (no
// alias), neither null nor empty, within the depth limit and with room
// for one more node. Then it counts v as node would.
func (l *yamlLoader) plainRef(v *yaml.Node, depth int) bool {
	if v.Kind != yaml.ScalarNode || v.Value == "" || v.Tag == "!!null" || l.limit ||
		depth > l.limits.MaxDepth || l.nodes >= l.limits.MaxNodes {
		return false
	}
	l.nodes++
	return true
}

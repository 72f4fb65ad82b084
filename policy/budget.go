package policy

import (
	"strconv"

	"gopkg.in/yaml.v3"
)

// MaxBudget is the largest count a run budget may give: far beyond any
// conversation, and within what a handler's counters hold.
const MaxBudget = 1 << 30

// budgetCount parses one count of a run budget: a whole number from 1
// to MaxBudget. It reports a bad one as CP003 at pos and returns 0.
func budgetCount(d *diags, s, what string, pos Pos) int {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > MaxBudget {
		d.errorf(CodeInvalidValue, pos, "budget %s is %s, not a whole number from 1 to %d", what, Quote(s), MaxBudget)
		return 0
	}
	return n
}

// budget reads budget: {messages: N, visits: N}.
func (l *yamlLoader) budget(n *yaml.Node) *Budget {
	b := &Budget{Pos: l.pos(n)}
	if n.Kind == yaml.MappingNode && len(n.Content) == 0 {
		l.d.errorf(CodeMissingField, b.Pos, "budget gives no count: give messages, visits or both")
	}
	l.fields(n, 1, plain("budget"), []string{"messages", "visits"}, func(key string, k, v *yaml.Node) {
		s, ok := l.str(v, 2, "budget "+key)
		if !ok {
			return
		}
		switch key {
		case "messages":
			b.Messages = budgetCount(&l.d, s, key, l.pos(v))
		case "visits":
			b.Visits = budgetCount(&l.d, s, key, l.pos(v))
		}
	})
	return b
}

// budget reads <budget messages="N" visits="N"/>.
func (l *xmlLoader) budget(e *xel) *Budget {
	l.children(e, nil, nil)
	a := l.attrs(e, []string{"messages", "visits"}, nil)
	b := &Budget{Pos: l.pos(e)}
	_, m := a.get("messages")
	_, v := a.get("visits")
	if !m && !v {
		l.d.errorf(CodeMissingField, b.Pos, "<budget> gives no count: give messages, visits or both")
	}
	if s, ok := a.get("messages"); ok {
		b.Messages = budgetCount(&l.d, s, "messages", l.attrPos(e, a, "messages"))
	}
	if s, ok := a.get("visits"); ok {
		b.Visits = budgetCount(&l.d, s, "visits", l.attrPos(e, a, "visits"))
	}
	return b
}

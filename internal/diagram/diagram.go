// Package diagram draws a policy, or one role's projection, as a state
// diagram: Mermaid (stateDiagram-v2) or Graphviz dot. cpvalidate graph
// and the playground draw with it.
package diagram

import (
	"fmt"
	"io"
	"strings"

	"github.com/parleyhq/parley/policy"
)

// Graph is what both diagram formats draw: a policy's states or a
// projection's local states, with labelled edges.
type Graph struct {
	title   string // "fipa-request v1" or "fipa-request v1, as Initiator"
	comment string // the fingerprint
	id      string // a name for the whole graph
	nodes   []node
	edges   []edge
	initial int // index into nodes; -1 when there is none
}

// Mermaid returns g as Mermaid text.
func (g *Graph) Mermaid() string {
	var b strings.Builder
	g.WriteMermaid(&b)
	return b.String()
}

type node struct {
	name     string
	terminal bool
	outcome  string // for a terminal node
	join     bool
	child    string // the child policy an in-child node runs
}

type edge struct {
	from, to int
	label    string
}

// Global draws policy p under title (its name and version).
func Global(p *policy.Policy, title string) *Graph {
	g := &Graph{title: title, comment: p.Fingerprint(), id: p.Name, initial: -1}
	index := map[string]int{}
	for i, s := range p.States {
		index[s.Name] = i
		n := node{name: s.Name, terminal: s.Kind == policy.KindTerminal, outcome: s.Outcome, join: s.Join}
		if s.Child != nil {
			n.child = s.Child.Policy.Name
		}
		g.nodes = append(g.nodes, n)
	}
	if i, ok := index[p.Initial.Name]; ok {
		g.initial = i
	}
	for i, s := range p.States {
		for _, t := range s.Transitions {
			j, ok := index[t.Next.Name]
			if !ok {
				continue // the checks have reported it
			}
			g.edges = append(g.edges, edge{from: i, to: j, label: globalLabel(t)})
		}
	}
	return g
}

// Local draws a projection under title (the policy's name and
// version); the role is added to it.
func Local(proj *policy.Projection, title string) *Graph {
	p := proj.Policy
	g := &Graph{
		title:   title + ", as " + proj.Role,
		comment: p.Fingerprint(),
		id:      p.Name + "/" + proj.Role,
		initial: -1,
	}
	if len(proj.States) > 0 {
		g.initial = 0
	}
	for i, ls := range proj.States {
		n := node{name: ls.Name, terminal: ls.Kind == policy.KindTerminal, outcome: ls.Outcome, join: ls.Join}
		if ls.Kind == policy.KindInChild {
			for _, s := range ls.Global {
				if s.Child != nil {
					n.child = s.Child.Policy.Name
					break
				}
			}
		}
		g.nodes = append(g.nodes, n)
		for _, lt := range ls.Transitions {
			g.edges = append(g.edges, edge{from: i, to: lt.Next, label: localLabel(lt)})
		}
	}
	return g
}

// globalLabel describes a transition of the policy:
// "Initiator→Participant: request", "timeout reply", "child done".
func globalLabel(t *policy.Transition) string {
	var s string
	switch t.Kind {
	case policy.SendMessage:
		s = t.From.Name + "→" + t.To.Name + ": " + messageLabel(t)
	case policy.OnTimeout:
		s = "timeout " + t.Timer.Name
	case policy.ChildReturn:
		s = "child " + t.Outcome
	}
	return s + guardLabel(t)
}

// localLabel describes a transition of a projection:
// "!request to Participant", "?agree from Participant", "timeout reply".
func localLabel(lt *policy.LocalTransition) string {
	t := lt.Transition()
	var s string
	switch lt.Action {
	case policy.ActionSend:
		s = "!" + messageLabel(t) + " to " + lt.Peer
	case policy.ActionReceive:
		s = "?" + messageLabel(t) + " from " + lt.Peer
	case policy.ActionTimeout:
		s = "timeout " + t.Timer.Name
	default:
		s = "child " + t.Outcome
	}
	return s + guardLabel(t)
}

// messageLabel names a transition's message type, and its decision key
// when that differs.
func messageLabel(t *policy.Transition) string {
	if t.Key != "" && t.Key != t.Message.Name {
		return t.Message.Name + " (key " + t.Key + ")"
	}
	return t.Message.Name
}

func guardLabel(t *policy.Transition) string {
	if t.Guard == nil {
		return ""
	}
	return " [" + strings.Join(strings.Fields(t.Guard.Src), " ") + "]"
}

// WriteMermaid draws g as a Mermaid stateDiagram-v2. State names become
// safe identifiers (s_ and the name, with anything but letters, digits
// and underscores replaced), each declared with its name as its label.
// Text that Mermaid would read as syntax is written as entity codes
// (#58; for a colon).
func (g *Graph) WriteMermaid(w io.Writer) {
	ids := mermaidIDs(g.nodes)
	fmt.Fprintln(w, "stateDiagram-v2")
	fmt.Fprintf(w, "    %%%% %s (%s)\n", mermaidComment(g.title), g.comment)
	for i, n := range g.nodes {
		fmt.Fprintf(w, "    state \"%s\" as %s\n", mermaidText(n.name), ids[i])
	}
	if g.initial >= 0 {
		fmt.Fprintf(w, "    [*] --> %s\n", ids[g.initial])
	}
	for _, e := range g.edges {
		fmt.Fprintf(w, "    %s --> %s : %s\n", ids[e.from], ids[e.to], mermaidText(e.label))
	}
	for i, n := range g.nodes {
		if !n.terminal {
			continue
		}
		if n.outcome != "" && n.outcome != n.name {
			fmt.Fprintf(w, "    %s --> [*] : %s\n", ids[i], mermaidText(n.outcome))
		} else {
			fmt.Fprintf(w, "    %s --> [*]\n", ids[i])
		}
	}
	for i, n := range g.nodes {
		switch {
		case n.join:
			fmt.Fprintf(w, "    note right of %s : join (waits for every session)\n", ids[i])
		case n.child != "":
			fmt.Fprintf(w, "    note right of %s : runs child policy %s\n", ids[i], mermaidText(n.child))
		}
	}
}

// mermaidIDs gives each node a distinct identifier Mermaid's lexer reads
// as a plain ID: the s_ prefix keeps names such as "default", "state" or
// "note" from being read as keywords.
func mermaidIDs(nodes []node) []string {
	ids := make([]string, len(nodes))
	used := map[string]bool{}
	for i, n := range nodes {
		var b strings.Builder
		b.WriteString("s_")
		for _, r := range n.name {
			if r < 0x80 && (r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				b.WriteRune(r)
			} else {
				b.WriteByte('_')
			}
		}
		id := b.String()
		for k := 2; used[id]; k++ {
			id = fmt.Sprintf("%s_%d", b.String(), k)
		}
		used[id] = true
		ids[i] = id
	}
	return ids
}

// mermaidText escapes label text: Mermaid ends a label at a colon,
// semicolon or newline, starts comments with # and %%, and reads quotes
// and angle brackets; entity codes (#58;) render as the character.
func mermaidText(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case ':', ';', '#', '%', '"', '<', '>', '&', '{', '}':
			fmt.Fprintf(&b, "#%d;", r)
		case '\n', '\r', '\t':
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// mermaidComment keeps a comment on one line.
func mermaidComment(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// WriteDot draws g as a Graphviz digraph with quoted state names.
func (g *Graph) WriteDot(w io.Writer) {
	fmt.Fprintf(w, "digraph %s {\n", dotQuote(g.id))
	fmt.Fprintf(w, "  // %s (%s)\n", mermaidComment(g.title), g.comment)
	fmt.Fprintf(w, "  label=%s;\n  labelloc=t;\n", dotQuote(g.title))
	fmt.Fprintln(w, "  node [shape=ellipse];")
	if g.initial >= 0 {
		// "[*]" cannot be a state name, so it cannot clash with one.
		fmt.Fprintln(w, `  "[*]" [shape=point, label=""];`)
	}
	for _, n := range g.nodes {
		var attrs []string
		label := n.name
		switch {
		case n.terminal:
			attrs = append(attrs, "shape=doublecircle")
			if n.outcome != "" && n.outcome != n.name {
				label += "\n(" + n.outcome + ")"
			}
		case n.join:
			attrs = append(attrs, "style=bold")
			label += "\n(join)"
		case n.child != "":
			attrs = append(attrs, "shape=box", "style=rounded")
			label += "\n(child " + n.child + ")"
		}
		if label != n.name {
			attrs = append(attrs, "label="+dotQuote(label))
		}
		if len(attrs) == 0 {
			fmt.Fprintf(w, "  %s;\n", dotQuote(n.name))
		} else {
			fmt.Fprintf(w, "  %s [%s];\n", dotQuote(n.name), strings.Join(attrs, ", "))
		}
	}
	if g.initial >= 0 {
		fmt.Fprintf(w, "  \"[*]\" -> %s;\n", dotQuote(g.nodes[g.initial].name))
	}
	for _, e := range g.edges {
		fmt.Fprintf(w, "  %s -> %s [label=%s];\n", dotQuote(g.nodes[e.from].name), dotQuote(g.nodes[e.to].name), dotQuote(e.label))
	}
	fmt.Fprintln(w, "}")
}

// dotQuote quotes s as a dot string: backslashes and quotes escaped,
// newlines as \n.
func dotQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

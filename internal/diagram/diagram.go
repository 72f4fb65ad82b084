// Package diagram draws a policy, or one role's projection, as a state
// diagram: Mermaid (stateDiagram-v2) or Graphviz dot. cpvalidate graph
// and the playground draw with it.
package diagram

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

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
	// commitments describe the policy's commitments, each in lines.
	commitments [][]string
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
	child    string   // the child policy an in-child node runs
	timers   []string // the timers the state arms, each with when it fires
}

// lines are what a node says below its name: how it ends, that it is a
// join, the child it runs, the timers it arms.
func (n node) lines() []string {
	var out []string
	switch {
	case n.terminal && n.outcome != n.name:
		out = append(out, "ends: "+n.outcome)
	case n.terminal:
		out = append(out, "end")
	}
	if n.join {
		out = append(out, "join: waits for every session")
	}
	if n.child != "" {
		out = append(out, "runs child policy "+n.child)
	}
	for _, t := range n.timers {
		out = append(out, "timer "+t)
	}
	return out
}

// edge is every transition from one state to another: parallel
// transitions share an edge, one label a line, so that their labels are
// not drawn on top of each other.
type edge struct {
	from, to int
	labels   []string
}

// addEdge adds a transition's label to the edge from from to to.
func (g *Graph) addEdge(from, to int, label string) {
	for i := range g.edges {
		if e := &g.edges[i]; e.from == from && e.to == to {
			e.labels = append(e.labels, label)
			return
		}
	}
	g.edges = append(g.edges, edge{from: from, to: to, labels: []string{label}})
}

// Global draws policy p under title (its name and version).
func Global(p *policy.Policy, title string) *Graph {
	g := &Graph{title: title, comment: p.Fingerprint(), id: p.Name, initial: -1, commitments: commitments(p)}
	index := map[string]int{}
	for i, s := range p.States {
		index[s.Name] = i
		g.nodes = append(g.nodes, stateNode(p, s.Name, []*policy.State{s}, s.Kind, s.Outcome, s.Join))
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
			g.addEdge(i, j, globalLabel(t, len(p.Roles) == 2))
		}
	}
	return g
}

// Local draws a projection under title (the policy's name and
// version); the role is added to it.
func Local(proj *policy.Projection, title string) *Graph {
	p := proj.Policy
	g := &Graph{
		title:       title + ", as " + proj.Role,
		comment:     p.Fingerprint(),
		id:          p.Name + "/" + proj.Role,
		initial:     -1,
		commitments: commitments(p),
	}
	if len(proj.States) > 0 {
		g.initial = 0
	}
	for i, ls := range proj.States {
		g.nodes = append(g.nodes, stateNode(p, ls.Name, ls.Global, ls.Kind, ls.Outcome, ls.Join))
		for _, lt := range ls.Transitions {
			g.addEdge(i, lt.Next, localLabel(lt, len(p.Roles) == 2))
		}
	}
	return g
}

// stateNode draws a state, or a local state standing for the global
// states states: the child one of them runs and the timers they arm.
func stateNode(p *policy.Policy, name string, states []*policy.State, kind policy.StateKind, outcome string, join bool) node {
	n := node{name: name, terminal: kind == policy.KindTerminal, outcome: outcome, join: join}
	seen := map[string]bool{}
	for _, s := range states {
		if s.Child != nil && n.child == "" {
			n.child = s.Child.Policy.Name
		}
		for _, a := range s.Arm {
			if !seen[a.Name] {
				seen[a.Name] = true
				n.timers = append(n.timers, a.Name+" "+timerText(p.Timer(a.Name)))
			}
		}
	}
	return n
}

// timerText says when a timer fires: "5m", "request.reply_by or 30s".
func timerText(t *policy.Timer) string {
	switch {
	case t == nil:
		return "(not declared)"
	case t.Deadline != nil && t.Default > 0:
		return "at " + t.Deadline.String() + " or after " + duration(t.Default)
	case t.Deadline != nil:
		return "at " + t.Deadline.String()
	}
	return "after " + duration(t.After)
}

// duration renders d as policies write it: 5m, not 5m0s.
func duration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// commitments describes each commitment of p in lines: who owes whom,
// the messages that drive it and its timers.
func commitments(p *policy.Policy) [][]string {
	var out [][]string
	for _, c := range p.Commitments {
		parts := []string{fmt.Sprintf("commitment %s: %s owes %s", c.Name, c.Debtor.Name, c.Creditor.Name)}
		for _, op := range []struct {
			verb string
			refs []policy.Ref
		}{{"created by", c.Create}, {"detached by", c.Detach}, {"discharged by", c.Discharge}, {"cancelled by", c.Cancel}, {"released by", c.Release}} {
			if len(op.refs) > 0 {
				names := make([]string, len(op.refs))
				for i, r := range op.refs {
					names[i] = r.Name
				}
				parts = append(parts, op.verb+" "+strings.Join(names, ", "))
			}
		}
		if !c.Expires.IsZero() {
			parts = append(parts, "expires on "+c.Expires.Name+" ("+timerText(p.Timer(c.Expires.Name))+")")
		}
		if !c.Deadline.IsZero() {
			parts = append(parts, "deadline "+c.Deadline.Name+" ("+timerText(p.Timer(c.Deadline.Name))+")")
		}
		out = append(out, parts)
	}
	return out
}

// globalLabel describes a transition of the policy:
// "Initiator→Participant: request", "timeout reply", "child done". In a
// policy of two roles the receiver goes without saying, and a shorter
// label collides less: "Initiator: request".
func globalLabel(t *policy.Transition, twoRoles bool) string {
	var s string
	switch {
	case t.Kind == policy.SendMessage && twoRoles:
		s = t.From.Name + ": " + messageLabel(t)
	case t.Kind == policy.SendMessage:
		s = t.From.Name + "→" + t.To.Name + ": " + messageLabel(t)
	case t.Kind == policy.OnTimeout:
		s = "timeout " + t.Timer.Name
	case t.Kind == policy.ChildReturn:
		s = "child " + t.Outcome
	}
	return s + guardLabel(t)
}

// localLabel describes a transition of a projection:
// "!request to Participant", "?agree from Participant", "timeout reply";
// in a policy of two roles the peer goes without saying: "!request".
func localLabel(lt *policy.LocalTransition, twoRoles bool) string {
	t := lt.Transition()
	var s string
	switch {
	case lt.Action == policy.ActionSend && twoRoles:
		s = "!" + messageLabel(t)
	case lt.Action == policy.ActionReceive && twoRoles:
		s = "?" + messageLabel(t)
	case lt.Action == policy.ActionSend:
		s = "!" + messageLabel(t) + " to " + lt.Peer
	case lt.Action == policy.ActionReceive:
		s = "?" + messageLabel(t) + " from " + lt.Peer
	case lt.Action == policy.ActionTimeout:
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

// Spacing of a Mermaid diagram, in pixels: between states side by side
// and between ranks.
const (
	nodeSpacing = 120
	rankSpacing = 90
)

// WriteMermaid draws g as a Mermaid stateDiagram-v2, left to right. State names become
// safe identifiers (s_ and the name, with anything but letters, digits
// and underscores replaced), each declared with its name as its label
// and what else it says (how it ends, join, child, timers) as
// description lines. Terminal states are drawn with a heavy border and
// joins with a dashed one, rather than each with an edge to an end
// marker: those edges would all meet at one point. The commitments are
// a note beside the initial state. Text that Mermaid would read as
// syntax is written as entity codes (#58; for a colon).
func (g *Graph) WriteMermaid(w io.Writer) {
	ids := mermaidIDs(g.nodes)
	// The front matter titles the diagram and spaces it out: Mermaid's
	// state diagrams read the flowchart spacing (the state one is
	// overridden by it), and with the defaults their labels overlap.
	title, _ := json.Marshal(g.title) // a string: YAML's double-quoted form
	fmt.Fprintf(w, "---\ntitle: %s\nconfig:\n  flowchart:\n    nodeSpacing: %d\n    rankSpacing: %d\n---\n", title, nodeSpacing, rankSpacing)
	fmt.Fprintln(w, "stateDiagram-v2")
	fmt.Fprintf(w, "    %%%% %s (%s)\n", mermaidComment(g.title), g.comment)
	fmt.Fprintln(w, "    direction LR")
	for i, n := range g.nodes {
		fmt.Fprintf(w, "    state \"%s\" as %s\n", mermaidText(n.name), ids[i])
		for _, l := range n.lines() {
			fmt.Fprintf(w, "    %s : %s\n", ids[i], mermaidText(l))
		}
	}
	if g.initial >= 0 {
		fmt.Fprintf(w, "    [*] --> %s\n", ids[g.initial])
	}
	for _, e := range g.edges {
		labels := make([]string, len(e.labels))
		for i, l := range e.labels {
			labels[i] = mermaidText(l)
		}
		fmt.Fprintf(w, "    %s --> %s : %s\n", ids[e.from], ids[e.to], strings.Join(labels, "<br/>"))
	}
	if len(g.commitments) > 0 && g.initial >= 0 {
		fmt.Fprintf(w, "    note left of %s\n", ids[g.initial])
		for _, c := range g.commitments {
			for _, l := range c {
				fmt.Fprintf(w, "        %s\n", mermaidText(l))
			}
		}
		fmt.Fprintln(w, "    end note")
	}
	var terminal, join []string
	for i, n := range g.nodes {
		if n.terminal {
			terminal = append(terminal, ids[i])
		}
		if n.join {
			join = append(join, ids[i])
		}
	}
	if len(terminal) > 0 {
		fmt.Fprintln(w, "    classDef terminal stroke-width:3px")
		fmt.Fprintf(w, "    class %s terminal\n", strings.Join(terminal, ", "))
	}
	if len(join) > 0 {
		fmt.Fprintln(w, "    classDef join stroke-dasharray:6 3")
		fmt.Fprintf(w, "    class %s join\n", strings.Join(join, ", "))
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

// WriteDot draws g as a Graphviz digraph with quoted state names. A
// state's label has its name and what else it says; terminal states
// have a double border, joins a bold one, states that run a child are
// rounded boxes. The graph's label is its title and its commitments.
func (g *Graph) WriteDot(w io.Writer) {
	fmt.Fprintf(w, "digraph %s {\n", dotQuote(g.id))
	fmt.Fprintf(w, "  // %s (%s)\n", mermaidComment(g.title), g.comment)
	label := []string{g.title}
	for _, c := range g.commitments {
		label = append(label, c[0], strings.Join(c[1:], "; "))
	}
	fmt.Fprintf(w, "  label=%s;\n  labelloc=t;\n", dotQuote(strings.Join(label, "\n")))
	fmt.Fprintln(w, "  node [shape=ellipse];")
	if g.initial >= 0 {
		// "[*]" cannot be a state name, so it cannot clash with one.
		fmt.Fprintln(w, `  "[*]" [shape=point, label=""];`)
	}
	for _, n := range g.nodes {
		var attrs []string
		switch {
		case n.terminal:
			attrs = append(attrs, "shape=box", "style=rounded", "peripheries=2")
		case n.join:
			attrs = append(attrs, "style=bold")
		case n.child != "":
			attrs = append(attrs, "shape=box", "style=rounded")
		}
		if lines := n.lines(); len(lines) > 0 {
			attrs = append(attrs, "label="+dotQuote(n.name+"\n"+strings.Join(lines, "\n")))
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
		fmt.Fprintf(w, "  %s -> %s [label=%s];\n", dotQuote(g.nodes[e.from].name), dotQuote(g.nodes[e.to].name), dotQuote(strings.Join(e.labels, "\n")))
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

package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/parleyhq/parley/internal/diagram"
	"github.com/parleyhq/parley/policy"
)

var graphCommand = &command{
	name: "graph",
	usage: `cpvalidate graph draws a policy as a state diagram: Mermaid
(stateDiagram-v2, which GitHub renders in Markdown) or Graphviz dot.

Usage:
  cpvalidate graph [-format mermaid|dot] [-role ROLE] FILE

Edges are labelled with what moves the conversation on:
  Initiator→Participant: request   a send-message transition ("Initiator:
                                   request" when the policy has two roles)
  timeout reply                    an on-timeout transition
  child done                       a child-return transition
Transitions between the same two states share an edge, one label a line.
Each state says how it ends ("end", or "ends: OUTCOME" when the outcome
is not its name), that it is a join, the child policy it runs and the
timers it arms, with when they fire. Terminal states have a heavy (dot:
double) border and joins a dashed (dot: bold) one. The commitments, who
owes whom and the messages and timers that drive them, are a note beside
the initial state (dot: lines of the title). Mermaid diagrams run left to
right, with the title and spacing in their front matter, so that their
labels do not overlap.

With -role, the diagram is the policy as that role sees it (its
projection): "!request to Participant" is a message it sends,
"?agree from Participant" one it receives (just "!request" and "?agree"
when the policy has two roles). The policy must pass the static checks
first (child policies are not resolved).
`,
	exitCodes: `  0  the diagram was written
  1  the policy has errors (printed to stderr)
  2  usage error (such as an unknown role), or a file that cannot be read
`,
	examples: `  cpvalidate graph policies/fipa-request.yaml
  cpvalidate graph -format dot policies/fipa-request.yaml | dot -Tsvg > fipa-request.svg
  cpvalidate graph -role Initiator policies/fipa-request.yaml
`,
	flags: graphFlags,
	run:   runGraph,
}

type graphOptions struct {
	format *enumFlag
	role   string
}

func graphFlags(fs *flag.FlagSet) any {
	o := &graphOptions{format: newEnum("mermaid", "mermaid", "dot")}
	fs.Var(o.format, "format", "diagram format, `mermaid|dot`")
	fs.StringVar(&o.role, "role", "", "draw the projection onto `ROLE` instead of the whole policy")
	return o
}

func runGraph(c *command, opts any, args []string, stdout, stderr io.Writer) int {
	o := opts.(*graphOptions)
	switch {
	case len(args) == 0:
		return c.usageError(stderr, "no policy file given")
	case len(args) > 1:
		return c.usageError(stderr, "draws one file at a time; got %d (%s)", len(args), strings.Join(args, " "))
	}
	p, code := loadForCommand(c, args[0], stderr, true)
	if p == nil {
		return code
	}
	g := diagram.Global(p, nameVersion(p))
	if o.role != "" {
		if p.Role(o.role) == nil {
			roles := make([]string, len(p.Roles))
			for i, r := range p.Roles {
				roles[i] = r.Name
			}
			hint := ""
			if s := policy.Suggest(o.role, roles); s != "" {
				hint = fmt.Sprintf("did you mean %s? ", policy.Quote(s))
			}
			return c.usageError(stderr, "policy %s has no role %s; %sits roles are %s", policy.Quote(p.Name), policy.Quote(o.role), hint, policy.QuoteList(roles, 10))
		}
		proj, ds := policy.Project(p, o.role)
		if ds.HasErrors() {
			for _, d := range ds {
				writeDiagnostic(stderr, d)
			}
			return exitErrors
		}
		g = diagram.Local(proj, nameVersion(p))
	}
	bw := bufio.NewWriter(stdout)
	if o.format.value == "dot" {
		g.WriteDot(bw)
	} else {
		g.WriteMermaid(bw)
	}
	if err := bw.Flush(); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", c.fullName(), err)
		return exitUsage
	}
	return exitOK
}

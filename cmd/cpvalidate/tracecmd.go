package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/parleyhq/parley/policies"
	"github.com/parleyhq/parley/policy"
	"github.com/parleyhq/parley/trace"
)

var traceCommand = &command{
	name: "trace",
	usage: `cpvalidate trace checks a recorded conversation against a policy.

Usage:
  cpvalidate trace [-bind ROLE=agent[,agent...]]... [-format text|json] POLICY TRACE

POLICY is a policy file, or the name of a shipped policy (fipa-request).
TRACE is JSON Lines, one observed message per line: at, performative,
sender, receiver (a name or a list), conversation_id, reply_with,
in_reply_to, reply_by, protocol, language, ontology, content. Times are
RFC 3339, or Go durations ("1.5s") after the trace's start; a line without
at happens when the line before it did.

Every agent gets a handler per conversation in its bound role, in observe
mode, and every line is checked as a send by its sender and a receipt by
each receiver; the policy's timers fire from the lines' times. A trace may
interleave conversations, told apart by conversation_id.

Without -bind, the first line's sender plays the policy's initiating role
(when that line opens a conversation) and the other agents the remaining
role, when that is unambiguous; otherwise cpvalidate says which -bind is
needed. A role that is not many is played by one agent in each
conversation, even when -bind gives it several. Once every role is bound,
any other agent plays no part, and what it sends is an error.

Text output prints each finding as
  TRACE:LINE: severity: agent (role): message [CODE]
then a summary line. JSON output prints one object per finding,
{"line", "severity", "code", "message", "agent", "role"}, then
{"summary": {"conforms", "complete", "outcomes"}}.
`,
	exitCodes: `  0  the trace conforms to the policy
  1  the trace has an error finding
  2  usage error, a file that cannot be read, a policy with errors, or
     agents that cannot be bound to roles without -bind
`,
	examples: `  cpvalidate trace fipa-request journal.jsonl
  cpvalidate trace -bind Initiator=buyer -bind Participant=s1,s2,s3 policies/fipa-contract-net.yaml cnet.jsonl
  cpvalidate trace -format json my-policy.yaml run.jsonl
`,
	flags: traceFlags,
	run:   runTrace,
}

type traceOptions struct {
	format *enumFlag
	bind   bindFlag
}

// bindFlag collects -bind ROLE=agent[,agent...] flags.
type bindFlag map[string][]string

func (b bindFlag) String() string { return "" }

func (b bindFlag) Set(s string) error {
	role, agents, ok := strings.Cut(s, "=")
	if !ok || role == "" || agents == "" {
		return errors.New("must be ROLE=agent[,agent...]")
	}
	for _, a := range strings.Split(agents, ",") {
		if a = strings.TrimSpace(a); a == "" {
			return errors.New("empty agent name")
		}
		if !slices.Contains(b[role], a) {
			b[role] = append(b[role], a)
		}
	}
	return nil
}

func traceFlags(fs *flag.FlagSet) any {
	o := &traceOptions{format: newEnum("text", "text", "json"), bind: bindFlag{}}
	fs.Var(o.format, "format", "output format, `text|json`")
	fs.Var(o.bind, "bind", "bind agents to a role, `ROLE=agent[,agent...]` (repeatable)")
	return o
}

func runTrace(c *command, opts any, args []string, stdout, stderr io.Writer) int {
	o := opts.(*traceOptions)
	if len(args) != 2 {
		return c.usageError(stderr, "needs a policy and a trace, got %d argument(s)", len(args))
	}
	p, code := tracePolicy(c, args[0], stderr)
	if p == nil {
		return code
	}
	f, err := os.Open(args[1])
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", c.fullName(), pathError(args[1], err))
		return exitUsage
	}
	defer f.Close()
	entries, problems, err := trace.Read(f)
	if err != nil {
		fmt.Fprintf(stderr, "%s: reading %s: %v\n", c.fullName(), args[1], err)
		return exitUsage
	}
	res, err := trace.Check(p, entries, problems, trace.Options{Bind: o.bind, Resolve: policies.Resolve})
	var be *trace.BindingError
	switch {
	case errors.As(err, &be):
		return c.usageError(stderr, "%v", be)
	case err != nil:
		fmt.Fprintf(stderr, "%s: %v\n", c.fullName(), err)
		return exitUsage
	}
	if o.format.value == "json" {
		writeTraceJSON(stdout, res)
	} else {
		writeTraceText(stdout, args[1], res)
	}
	if !res.Summary.Conforms {
		return exitErrors
	}
	return exitOK
}

// tracePolicy loads the policy a trace is checked against: a file, or
// else a shipped policy of that name.
func tracePolicy(c *command, arg string, stderr io.Writer) (*policy.Policy, int) {
	if _, err := os.Stat(arg); err != nil && !strings.ContainsAny(arg, `/\.`) {
		if p, err := policies.Load(arg); err == nil {
			return p, exitOK
		}
		fmt.Fprintf(stderr, "%s: %s is neither a file nor a shipped policy (%s)\n", c.fullName(), arg, strings.Join(policies.Names(), ", "))
		return nil, exitUsage
	}
	p, code := loadForCommand(c, arg, stderr, false)
	if p == nil {
		if code == exitErrors {
			code = exitUsage
		}
		return nil, code
	}
	if ds := policy.CheckPolicy(p, policy.WithPolicies(policies.Resolve)); ds.HasErrors() {
		for _, d := range ds {
			if d.Severity == policy.SeverityError {
				writeDiagnostic(stderr, d)
			}
		}
		fmt.Fprintf(stderr, "%s: %s has errors; fix them before checking traces against it\n", c.fullName(), arg)
		return nil, exitUsage
	}
	return p, exitOK
}

func writeTraceText(w io.Writer, name string, res *trace.Result) {
	for _, f := range res.Findings {
		who := ""
		if f.Agent != "" {
			who = f.Agent
			if f.Role != "" {
				who += " (" + f.Role + ")"
			}
			who += ": "
		}
		fmt.Fprintf(w, "%s:%d: %s: %s%s [%s]\n", name, f.Line, f.Severity, who, f.Message, f.Code)
	}
	verdict := "conforms"
	if !res.Summary.Conforms {
		verdict = "does not conform"
	}
	completeness := "complete"
	if !res.Summary.Complete {
		completeness = "incomplete"
	}
	agents := make([]string, 0, len(res.Summary.Outcomes))
	for a := range res.Summary.Outcomes {
		agents = append(agents, a)
	}
	slices.Sort(agents)
	var outs []string
	for _, a := range agents {
		o := res.Summary.Outcomes[a]
		if o == "" {
			o = "unfinished"
		}
		outs = append(outs, a+": "+o)
	}
	if len(outs) == 0 {
		outs = []string{"no conversation was opened"}
	}
	fmt.Fprintf(w, "%s: %s, %s (%s)\n", name, verdict, completeness, strings.Join(outs, "; "))
}

func writeTraceJSON(w io.Writer, res *trace.Result) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, f := range res.Findings {
		_ = enc.Encode(f) // writes to stdout; failures show as truncated output
	}
	_ = enc.Encode(struct {
		Summary trace.Summary `json:"summary"`
	}{res.Summary})
}

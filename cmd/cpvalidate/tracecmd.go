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
  cpvalidate trace [-bind ROLE=agent[,agent...]]... [-format text|json] [-max N] POLICY TRACE

POLICY is a policy file, or the name of a shipped policy (fipa-request).
TRACE is JSON Lines, one observed message per line: at, performative,
sender, receiver (a name or a list), conversation_id, reply_with,
in_reply_to, reply_by, protocol, language, ontology, content. Times are
RFC 3339, or Go durations ("1.5s") after the trace's start; a line without
at happens when the line before it did. A line must be one JSON object
that repeats no key, at any depth; its times must fall in the years 0001
to 9999 (UTC) and not go back before the line before it.
A journal's timer lines (at, timer, agent, conversation_id) say that an
agent's timer fired; a line is a message or a timer line, never both.
` + limitsText() + `

Every agent gets a handler per conversation in its bound role, in observe
mode, and every message line is checked as a send by its sender and a
receipt by each receiver; the policy's timers fire from the lines'
times, and a timer line must name a timer that fired then (TR012). A
trace may interleave conversations, told apart by conversation_id.

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
{"summary": {"conforms", "complete", "outcomes"}}. Codes are the
engine's PE001... and the trace's TR001-TR012 (see
docs/protocol-errors.md). After -max findings, one TR011 finding says how
many more there are; the summary lists the outcomes of at most
` + fmt.Sprint(trace.MaxOutcomes) + ` agents (a TR011 finding counts the others), and at most
` + fmt.Sprint(trace.MaxConversationOutcomes) + ` conversations of each.
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
	max    int
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
	fs.IntVar(&o.max, "max", 200, "print at most `N` findings, then a TR011 finding saying how many more; 0 means no limit")
	return o
}

// limitsText says what trace.DefaultLimits allow, for the usage.
func limitsText() string {
	l := trace.DefaultLimits
	return fmt.Sprintf("At most %d bytes (%d MiB) of a trace and %d bytes of a\n"+
		"line are read; an envelope value (any field but content) has at most\n"+
		"%d bytes, and a line nests objects and arrays at most %d deep (TR007).",
		l.MaxBytes, l.MaxBytes>>20, l.MaxLineBytes, l.MaxFieldBytes, l.MaxDepth)
}

func runTrace(c *command, opts any, args []string, stdout, stderr io.Writer) int {
	o := opts.(*traceOptions)
	if len(args) != 2 {
		return c.usageError(stderr, "needs a policy and a trace, got %d argument(s)", len(args))
	}
	if o.max < 0 {
		return c.usageError(stderr, "-max must be 0 (no limit) or more, not %d", o.max)
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
	findings := cappedFindings(res.Findings, o.max)
	if o.format.value == "json" {
		writeTraceJSON(stdout, findings, res.Summary)
	} else {
		writeTraceText(stdout, args[1], findings, res.Summary)
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

// cappedFindings returns the first max findings (all when max is 0) and,
// when it leaves some out, a TR011 info finding that says how many, at
// the line of the first one left out.
func cappedFindings(fs []trace.Finding, max int) []trace.Finding {
	if max == 0 || len(fs) <= max {
		return fs
	}
	more := len(fs) - max
	return append(fs[:max:max], trace.Finding{Line: fs[max].Line, Severity: policy.SeverityInfo, Code: trace.CodeOmitted,
		Message: fmt.Sprintf("... and %s (raise -max, or use -max 0, to print them)", plural(more, "more finding", "more findings"))})
}

// writeTraceText prints each finding as TRACE:LINE: severity: agent
// (role): message [CODE], then the summary line. Agent and role names are
// cut by policy.Clip: a peer chooses its name.
func writeTraceText(w io.Writer, name string, findings []trace.Finding, sum trace.Summary) {
	for _, f := range findings {
		who := ""
		if f.Agent != "" {
			who = policy.Clip(f.Agent)
			if f.Role != "" {
				who += " (" + policy.Clip(f.Role) + ")"
			}
			who += ": "
		}
		fmt.Fprintf(w, "%s:%d: %s: %s%s [%s]\n", name, f.Line, f.Severity, who, f.Message, f.Code)
	}
	verdict := "conforms"
	if !sum.Conforms {
		verdict = "does not conform"
	}
	completeness := "complete"
	if !sum.Complete {
		completeness = "incomplete"
	}
	agents := make([]string, 0, len(sum.Outcomes))
	for a := range sum.Outcomes {
		agents = append(agents, a)
	}
	slices.Sort(agents)
	var outs []string
	for _, a := range agents {
		o := sum.Outcomes[a]
		if o == "" {
			o = "unfinished"
		}
		outs = append(outs, policy.Clip(a)+": "+o)
	}
	if len(outs) == 0 {
		outs = []string{"no conversation was opened"}
	}
	fmt.Fprintf(w, "%s: %s, %s (%s)\n", name, verdict, completeness, strings.Join(outs, "; "))
}

// writeTraceJSON prints one JSON object per finding, then the summary.
func writeTraceJSON(w io.Writer, findings []trace.Finding, sum trace.Summary) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, f := range findings {
		_ = enc.Encode(f) // writes to stdout; failures show as truncated output
	}
	_ = enc.Encode(struct {
		Summary trace.Summary `json:"summary"`
	}{sum})
}

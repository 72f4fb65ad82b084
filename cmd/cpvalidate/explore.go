package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/explore"
	"github.com/parleyhq/parley/policy"
)

// exploreThreshold is the most states a policy may have for plain
// cpvalidate to explore it (-explore-all explores every policy).
const exploreThreshold = 8

// validateExploreStates is how many global states plain cpvalidate's
// exploration visits at most, unless -explore-states says otherwise.
const validateExploreStates = 5_000

var exploreCommand = &command{
	name: "explore",
	usage: `cpvalidate explore runs every role of each policy together, as the
engine's own handlers over asynchronous channels, and visits every global
state they can reach: every order the messages can arrive in, every choice
of every decision, every order of timers due together and every outcome of
a child policy. It reports what no single role's check sees, each with its
code, positions and a witness (the steps that lead to it):

  CP101 deadlock          every role still running waits for something that cannot come
  CP102 orphan-message    a message reaches a role that has ended or cannot accept it
  CP103 unfinished-role   a role still waits when the others have ended
  CP104 timeout-race      a reply sent in time arrives after the waiting role's timer fired
  CP105 open-commitment   a role ends with a commitment still detached before its deadline
  CP106 unbounded-wait    a role only waits for a message, with no timer armed
  CP107 run-budget        a run reaches the policy's run budget, and a message is refused
  CP109 exploration-bound the bound stopped the exploration before it saw every behaviour

Usage:
  cpvalidate explore [-format text|json|mermaid] [-max-states N] [-buffer N] [-instances N] PATH...

A channel (one sender to one receiver) holds at most -buffer messages; a
many role is played by -instances agents ("Participant1", "Participant2").
Time is virtual and moves only when a timer fires; a message may arrive
any time after it was sent. A decision's message content is made up (one
value per required field), so a choice whose guard needs other content is
not explored. The policies must pass the static checks first; those that
do not are reported as plain cpvalidate reports them.

The cost grows as the states visited times the steps each allows, and the
states with the buffer bound: raise -max-states and -buffer with care.
Plain cpvalidate explores each policy of at most ` + fmt.Sprint(exploreThreshold) + ` states the same way,
with at most ` + fmt.Sprint(validateExploreStates) + ` states visited.

-format json prints, for each policy, the states visited, whether a bound
cut the exploration short, and each finding with its witness as steps and
as a Mermaid sequence diagram; -format mermaid prints the diagrams alone.
`,
	exitCodes: `  0  no errors were found (warnings are allowed)
  1  some policy has an error, or the exploration found one
  2  usage error, or a path that cannot be read
`,
	examples: `  cpvalidate explore policies/fipa-request.yaml
  cpvalidate explore -max-states 100000 -buffer 3 my-policy.yaml
  cpvalidate explore -format mermaid my-policy.yaml > witness.mmd
`,
	flags: exploreFlags,
	run:   runExplore,
}

type exploreOptions struct {
	format    *enumFlag
	maxStates int
	buffer    int
	instances int
	max       int
	severity  severityOptions
}

func exploreFlags(fs *flag.FlagSet) any {
	o := &exploreOptions{format: newEnum("text", "text", "json", "mermaid")}
	fs.Var(o.format, "format", "output format, `text|json|mermaid`")
	fs.IntVar(&o.maxStates, "max-states", explore.DefaultMaxStates, fmt.Sprintf("visit at most `N` global states (at most %d)", explore.MaxStatesLimit))
	fs.IntVar(&o.buffer, "buffer", explore.DefaultBuffer, fmt.Sprintf("a channel holds at most `N` messages (1 to %d)", explore.MaxBuffer))
	fs.IntVar(&o.instances, "instances", explore.DefaultInstances, fmt.Sprintf("`N` agents play a many role (1 to %d)", explore.MaxInstances))
	fs.IntVar(&o.max, "max", 200, "print at most `N` diagnostics (text); 0 means no limit")
	o.severity.register(fs)
	return o
}

// explored is what exploring one policy file found.
type explored struct {
	file   *fileResult
	report *explore.Report // nil when the policy was not explored
}

func runExplore(c *command, opts any, args []string, stdout, stderr io.Writer) int {
	o := opts.(*exploreOptions)
	switch {
	case len(args) == 0:
		return c.usageError(stderr, "no policy files or directories given")
	case o.maxStates < 1 || o.maxStates > explore.MaxStatesLimit:
		return c.usageError(stderr, "-max-states must be 1 to %d, not %d", explore.MaxStatesLimit, o.maxStates)
	case o.buffer < 1 || o.buffer > explore.MaxBuffer:
		return c.usageError(stderr, "-buffer must be 1 to %d, not %d", explore.MaxBuffer, o.buffer)
	case o.instances < 1 || o.instances > explore.MaxInstances:
		return c.usageError(stderr, "-instances must be 1 to %d, not %d", explore.MaxInstances, o.instances)
	case o.max < 0:
		return c.usageError(stderr, "-max must be 0 (no limit) or more, not %d", o.max)
	}
	rep, ok := loadAndCheck(c, args, stderr)
	if !ok {
		return exitUsage
	}
	xopts := []explore.Option{explore.WithMaxStates(o.maxStates), explore.WithBuffer(o.buffer), explore.WithInstances(o.instances)}
	var results []explored
	for _, f := range rep.files {
		x := explored{file: f}
		if f.ok() {
			r, err := exploreFile(rep, f, xopts)
			if err != nil {
				fmt.Fprintf(stderr, "cpvalidate explore: %s: %v\n", f.path, err)
				return exitUsage
			}
			x.report = r
		}
		results = append(results, x)
	}
	o.severity.apply(rep)
	var err error
	switch o.format.value {
	case "json":
		err = writeExploreJSON(stdout, rep, results)
	case "mermaid":
		err = writeExploreMermaid(stdout, rep, results)
	default:
		err = writeExploreText(stdout, rep, results, o.max)
	}
	if err != nil {
		fmt.Fprintf(stderr, "cpvalidate explore: writing the report: %v\n", err)
		return exitUsage
	}
	return rep.exitCode()
}

// exploreFile explores the policy of f, which checked clean of errors,
// and adds what it found to f's diagnostics.
func exploreFile(rep *report, f *fileResult, opts []explore.Option) (*explore.Report, error) {
	c, _ := engine.Check(f.policy, engine.WithPolicies(rep.resolve))
	if c == nil {
		return nil, fmt.Errorf("the policy no longer compiles")
	}
	r, err := explore.Explore(c, opts...)
	if err != nil {
		return nil, err
	}
	ds := r.Diagnostics(f.policy)
	for i := range ds {
		if ds[i].Pos.File == "" {
			ds[i].Pos.File = f.path
		}
		for k := range ds[i].Related {
			if ds[i].Related[k].Pos.File == "" {
				ds[i].Related[k].Pos.File = f.path
			}
		}
	}
	f.diags = append(f.diags, ds...)
	f.diags.Sort()
	return r, nil
}

// exploreSmall explores, for plain cpvalidate, each policy that checked
// clean and has at most exploreThreshold states (any, with all). A
// policy the exploration cannot run is left as the static checks found
// it, with a note saying why.
func exploreSmall(rep *report, states int, all bool) (notes []string) {
	for _, f := range rep.files {
		if !f.ok() || !all && len(f.policy.States) > exploreThreshold {
			continue
		}
		if _, err := exploreFile(rep, f, []explore.Option{explore.WithMaxStates(states)}); err != nil {
			notes = append(notes, fmt.Sprintf("%s: not explored: %v", f.path, err))
		}
	}
	rep.recount()
	return notes
}

// recount counts each file's errors and warnings again, and collects
// every diagnostic, sorted.
func (r *report) recount() {
	r.diags = nil
	for _, f := range r.files {
		f.errors = f.diags.Count(policy.SeverityError)
		f.warns = f.diags.Count(policy.SeverityWarning)
		r.diags = append(r.diags, f.diags...)
	}
	r.diags.Sort()
}

// leveled returns a finding's diagnostic as the report shows it: with
// its file, at the level -profile and -severity give its code, and false
// when they switch it off.
func (r *report) leveled(d policy.Diagnostic, file string) (policy.Diagnostic, bool) {
	if d.Pos.File == "" {
		d.Pos.File = file
	}
	switch r.levels[d.Code] {
	case levelOff:
		return d, false
	case "error":
		d.Severity = policy.SeverityError
	case "warning":
		d.Severity = policy.SeverityWarning
	case "info":
		d.Severity = policy.SeverityInfo
	}
	return d, true
}

// exitCode returns the exit status a run with this report ends with.
func (r *report) exitCode() int {
	switch {
	case len(r.ioErrors) > 0:
		return exitUsage
	case r.diags.HasErrors():
		return exitErrors
	}
	for _, f := range r.files {
		if !f.ok() {
			return exitErrors
		}
	}
	return exitOK
}

// writeExploreText prints the diagnostics, then one line per policy with
// what the exploration visited.
func writeExploreText(w io.Writer, rep *report, results []explored, max int) error {
	bw := bufio.NewWriter(w)
	shown, more := capped(rep.diags, max)
	for _, d := range shown {
		writeDiagnostic(bw, d)
	}
	if more > 0 {
		fmt.Fprintf(bw, "... and %s\n", plural(more, "more diagnostic", "more diagnostics"))
	}
	if len(shown) > 0 {
		bw.WriteByte('\n')
	}
	for _, x := range results {
		status := "ok  "
		if !x.file.ok() {
			status = "FAIL"
		}
		switch r := x.report; {
		case r == nil:
			fmt.Fprintf(bw, "%s  %s: not explored: it does not pass the static checks\n", status, x.file.path)
		default:
			cut := "every reachable state"
			if r.Truncated {
				cut = "stopped at the " + r.Bound + " bound"
			}
			fmt.Fprintf(bw, "%s  %s: %s, %s visited (%s), %s\n", status, x.file.path, plural(r.States, "state", "states"), plural(r.Steps, "step", "steps"), cut, plural(len(r.Findings)+r.Omitted, "finding", "findings"))
		}
	}
	return bw.Flush()
}

// The JSON report of cpvalidate explore.
type jsonExplore struct {
	Policies []jsonExplored `json:"policies"`
}

type jsonExplored struct {
	File      string           `json:"file"`
	Explored  bool             `json:"explored"`
	States    int              `json:"states"`
	Steps     int              `json:"steps"`
	Truncated bool             `json:"truncated"`
	Bound     string           `json:"bound,omitempty"`
	Instances int              `json:"instances,omitempty"`
	Buffer    int              `json:"buffer,omitempty"`
	MaxStates int              `json:"max_states,omitempty"`
	Omitted   int              `json:"omitted,omitempty"`
	Findings  []jsonFinding    `json:"findings"`
	Static    []jsonDiagnostic `json:"diagnostics"`
}

type jsonFinding struct {
	jsonDiagnostic
	Witness []explore.Step `json:"witness"`
	Mermaid string         `json:"mermaid"`
}

func writeExploreJSON(w io.Writer, rep *report, results []explored) error {
	out := jsonExplore{Policies: []jsonExplored{}}
	for _, x := range results {
		jp := jsonExplored{File: x.file.path, Findings: []jsonFinding{}, Static: []jsonDiagnostic{}}
		found := map[string]bool{}
		if r := x.report; r != nil {
			jp.Explored, jp.States, jp.Steps, jp.Truncated, jp.Bound = true, r.States, r.Steps, r.Truncated, r.Bound
			jp.Instances, jp.Buffer, jp.MaxStates, jp.Omitted = r.Instances, r.Buffer, r.MaxStates, r.Omitted
			for _, f := range r.Findings {
				d, ok := rep.leveled(f.Diagnostic, x.file.path)
				if !ok {
					continue
				}
				found[d.Error()] = true
				jp.Findings = append(jp.Findings, jsonFinding{jsonDiagnostic: jsonDiag(d), Witness: f.Witness, Mermaid: f.Mermaid()})
			}
		}
		for _, d := range x.file.diags {
			if !found[d.Error()] {
				jp.Static = append(jp.Static, jsonDiag(d))
			}
		}
		out.Policies = append(out.Policies, jp)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}

// writeExploreMermaid prints each finding's witness as a Mermaid
// sequence diagram, after a comment line saying what it shows.
func writeExploreMermaid(w io.Writer, rep *report, results []explored) error {
	bw := bufio.NewWriter(w)
	for _, x := range results {
		if x.report == nil {
			continue
		}
		for _, f := range x.report.Findings {
			d, ok := rep.leveled(f.Diagnostic, x.file.path)
			if !ok {
				continue
			}
			fmt.Fprintf(bw, "%%%% %s\n%s\n", mermaidComment(d.Error()), f.Mermaid())
		}
	}
	return bw.Flush()
}

// mermaidComment keeps s on one comment line.
func mermaidComment(s string) string {
	out := []rune(s)
	for i, r := range out {
		if r == '\n' || r == '\r' {
			out[i] = ' '
		}
	}
	return string(out)
}

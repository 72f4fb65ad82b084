package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/parleyhq/parley/policy"
)

var convertCommand = &command{
	name: "convert",
	usage: `cpvalidate convert converts a policy file between YAML and CP-XML.

Usage:
  cpvalidate convert -to yaml|xml [-o FILE] FILE

The conversion is lossless: the output is loaded back and must have the
same fingerprint (and the same documentation) as the input, or the
command fails without writing anything. The input is loaded but not
checked: run cpvalidate on it for that. Comments are not carried over.
`,
	exitCodes: `  0  the policy was converted
  1  the input has errors (printed to stderr), or the conversion would lose
     something (an internal error; please report it)
  2  usage error, or a file that cannot be read or written
`,
	examples: `  cpvalidate convert -to xml policies/fipa-request.yaml > fipa-request.xml
  cpvalidate convert -to yaml -o my-policy.yaml my-policy.xml
`,
	flags: convertFlags,
	run:   runConvert,
}

type convertOptions struct {
	to  *enumFlag
	out string
}

func convertFlags(fs *flag.FlagSet) any {
	o := &convertOptions{to: newEnum("", "yaml", "xml")}
	fs.Var(o.to, "to", "the format to write, `yaml|xml` (required)")
	fs.StringVar(&o.out, "o", "", "write to `FILE` instead of standard output")
	return o
}

func runConvert(c *command, opts any, args []string, stdout, stderr io.Writer) int {
	o := opts.(*convertOptions)
	switch {
	case o.to.value == "":
		return c.usageError(stderr, "-to is required: -to yaml or -to xml")
	case len(args) == 0:
		return c.usageError(stderr, "no policy file given")
	case len(args) > 1:
		return c.usageError(stderr, "converts one file at a time; got %d (%s)", len(args), strings.Join(args, " "))
	}
	in := args[0]
	p, code := loadForCommand(c, in, stderr, false)
	if p == nil {
		return code
	}
	to := policy.Format(o.to.value)
	out := policy.Write(p, to)
	if err := verifyConversion(p, to, out); err != nil {
		fmt.Fprintf(stderr, "%s: internal error: converting %s to %s %v; the output was not written (please report this)\n", c.fullName(), in, to, err)
		return exitErrors
	}
	if o.out == "" {
		if _, err := stdout.Write(out); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", c.fullName(), err)
			return exitUsage
		}
		return exitOK
	}
	if err := os.WriteFile(o.out, out, 0o644); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", c.fullName(), err)
		return exitUsage
	}
	return exitOK
}

// loadForCommand loads the single policy file a command works on. It
// prints the file's errors (and, with check, those of the static checks)
// to stderr and returns nil and the exit code when there are any.
func loadForCommand(c *command, path string, stderr io.Writer, check bool) (*policy.Policy, int) {
	info, err := os.Stat(path)
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "%s: %v\n", c.fullName(), pathError(path, err))
		return nil, exitUsage
	case info.IsDir():
		return nil, c.usageError(stderr, "%s is a directory; give one policy file", path)
	}
	p, ds, err := policy.LoadFile(path)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", c.fullName(), err)
		return nil, exitUsage
	}
	if check && p != nil {
		// Child policies are not resolved: drawing a policy does not
		// depend on them, and cpvalidate checks them.
		ds = append(ds, policy.CheckPolicy(p)...)
	}
	if ds.HasErrors() || p == nil {
		ds.Sort()
		for _, d := range ds {
			if d.Severity == policy.SeverityError {
				writeDiagnostic(stderr, d)
			}
		}
		fmt.Fprintf(stderr, "%s: %s has %s\n", c.fullName(), path, plural(max(1, ds.Count(policy.SeverityError)), "error", "errors"))
		return nil, exitErrors
	}
	return p, exitOK
}

// verifyConversion loads out back and reports what it lost: a different
// fingerprint means the policy changed, different documentation means
// its doc strings did.
func verifyConversion(p *policy.Policy, to policy.Format, out []byte) error {
	q, ds := policy.Load("converted."+string(to), out)
	if q == nil || ds.HasErrors() {
		return fmt.Errorf("produced a file that does not load:\n%v", ds)
	}
	if a, b := p.Fingerprint(), q.Fingerprint(); a != b {
		return fmt.Errorf("changed the policy (fingerprint %s became %s)", a, b)
	}
	if a, b := docsOf(p), docsOf(q); !slices.Equal(a, b) {
		for i := range min(len(a), len(b)) {
			if a[i] != b[i] {
				return fmt.Errorf("changed documentation: %s became %s", policy.Quote(a[i]), policy.Quote(b[i]))
			}
		}
		return fmt.Errorf("changed the number of doc strings from %d to %d", len(a), len(b))
	}
	return nil
}

// docsOf lists every doc string of p, in model order, with whitespace
// normalised (the formats lay out multi-line text differently). The
// fingerprint leaves docs out by design, so conversion checks them here.
func docsOf(p *policy.Policy) []string {
	var out []string
	add := func(what, name, doc string) {
		if doc != "" {
			out = append(out, what+" "+name+": "+strings.Join(strings.Fields(doc), " "))
		}
	}
	add("policy", p.Name, p.Doc)
	for _, r := range p.Roles {
		add("role", r.Name, r.Doc)
	}
	for _, m := range p.Messages {
		add("message", m.Name, m.Doc)
	}
	for _, t := range p.Timers {
		add("timer", t.Name, t.Doc)
	}
	for _, cm := range p.Commitments {
		add("commitment", cm.Name, cm.Doc)
	}
	for _, s := range p.States {
		add("state", s.Name, s.Doc)
		for i, t := range s.Transitions {
			add("transition", fmt.Sprintf("%s#%d", s.Name, i+1), t.Doc)
		}
	}
	return out
}

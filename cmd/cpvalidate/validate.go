package main

import (
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/explore"
	"github.com/parleyhq/parley/policies"
	"github.com/parleyhq/parley/policy"
)

var validateCommand = &command{
	name: "",
	usage: `cpvalidate checks conversation policy files (YAML or CP-XML) with the
same load and check steps the engine uses, and reports every problem at
once, each at its position with a stable code (see docs/diagnostics.md).

Usage:
  cpvalidate [flags] PATH...
  cpvalidate convert -to yaml|xml [-o FILE] FILE
  cpvalidate graph [-format mermaid|dot] [-role ROLE] FILE
  cpvalidate explore [-format text|json|mermaid] [-max-states N] [-buffer N] [-instances N] PATH...
  cpvalidate trace [-bind ROLE=agent[,agent...]]... [-format text|json] [-max N] POLICY TRACE
  cpvalidate replay [-agent NAME] [-conversation ID] POLICY... JOURNAL STORE
  cpvalidate lsp [-log FILE]
  cpvalidate help [COMMAND]

Commands:
  (none)   validate the policy files at PATH...
  convert  convert a policy between YAML and CP-XML, losslessly
  graph    draw a policy, or one role's projection, as a diagram
  explore  run every role together and look for deadlocks, orphan messages and races
  trace    check a recorded conversation (JSON Lines) against a policy
  replay   rebuild an agent's conversations from its journal, against its store
  lsp      serve editors over the Language Server Protocol (stdin/stdout)
  help     print this help, or a command's ("cpvalidate help graph")

A PATH that is a directory stands for every .yaml, .yml and .xml file
under it, recursively; hidden files and directories are skipped, and so
are symbolic links and other files that are not regular files (each with
a note on stderr): a walk never follows a link out of the directory. A
PATH named on the command line may be a link. A policy of at most ` + fmt.Sprint(exploreThreshold) + `
states that passes the static checks is also explored as "cpvalidate
explore" does, visiting at most -explore-states global states; -explore=false
turns that off and -explore-all explores every policy. At most ` + fmt.Sprint(policy.DefaultLimits.MaxBytes) + ` bytes
(` + fmt.Sprint(policy.DefaultLimits.MaxBytes>>20) + ` MiB) of a file are read; a larger one is a CP006 error. Child
policies are looked up by name among the policies given, then among the
policies Parley ships.

Each code has a severity (docs/diagnostics.md); -profile strict makes every
warning an error and every information a warning, and -severity CODE=LEVEL
sets one code's (error, warning, info, or off to drop it; an error the
engine refuses a policy for stays an error). SARIF output lists the rules
they change as ruleConfigurationOverrides.

Text output prints each diagnostic as
  file:line:col: severity: message [CODE]
followed by its related positions and witness trace (indented), then one
line per policy file and the totals. Diagnostics are sorted by position.
`,
	exitCodes: `  0  no errors were found (warnings are allowed)
  1  some policy has an error
  2  usage error, or a path that cannot be read
`,
	examples: `  cpvalidate policies/
  cpvalidate -format sarif -max 0 policies/ > cpvalidate.sarif
  cpvalidate -q my-policy.yaml other-policy.xml
`,
	flags: validateFlags,
	run:   runValidate,
}

type validateOptions struct {
	format        *enumFlag
	max           int
	quiet         bool
	explore       bool
	exploreAll    bool
	exploreStates int
	severity      severityOptions
}

func validateFlags(fs *flag.FlagSet) any {
	o := &validateOptions{format: newEnum("text", "text", "json", "sarif")}
	fs.Var(o.format, "format", "output format, `text|json|sarif` (sarif is SARIF 2.1.0, for GitHub code scanning)")
	fs.IntVar(&o.max, "max", 200, "print at most `N` diagnostics, then \"... and N more diagnostics\"; 0 means no limit")
	fs.BoolVar(&o.quiet, "q", false, "quiet: print only the diagnostics, without the per-policy lines and totals (text format)")
	fs.BoolVar(&o.explore, "explore", true, fmt.Sprintf("explore each policy of at most %d states that checks clean (see cpvalidate explore)", exploreThreshold))
	fs.BoolVar(&o.exploreAll, "explore-all", false, "explore every policy that checks clean, whatever its size")
	fs.IntVar(&o.exploreStates, "explore-states", validateExploreStates, fmt.Sprintf("an exploration visits at most `N` global states (at most %d)", explore.MaxStatesLimit))
	o.severity.register(fs)
	return o
}

// fileResult is what validating one policy file found.
type fileResult struct {
	path string
	// src is the file as read, kept for SARIF's columns so that the file
	// is read once (a pipe cannot be read again); nil when it was not.
	src    []byte
	policy *policy.Policy // nil when the file could not be loaded at all
	diags  policy.Diagnostics
	errors int
	warns  int
}

func (r *fileResult) ok() bool { return r.policy != nil && r.errors == 0 }

// report is the outcome of a validation run.
type report struct {
	files []*fileResult
	// diags holds every diagnostic of every file, sorted.
	diags policy.Diagnostics
	// ioErrors are the files that could not be read.
	ioErrors []error
	// notes are what the directory walks skipped, and why.
	notes []string
	// resolve finds child policies: among the files, then the shipped.
	resolve policy.Resolver
	// levels is the level of each code under -profile and -severity
	// (nil: every code's own).
	levels map[policy.Code]string
}

func (r *report) totals() (ok, errs, warns int) {
	for _, f := range r.files {
		if f.ok() {
			ok++
		}
		errs += f.errors
		warns += f.warns
	}
	return ok, errs, warns
}

func runValidate(c *command, opts any, args []string, stdout, stderr io.Writer) int {
	o := opts.(*validateOptions)
	if len(args) == 0 {
		fmt.Fprintln(stderr, "cpvalidate: no policy files or directories given")
		printUsage(c, stderr)
		return exitUsage
	}
	if o.max < 0 {
		return c.usageError(stderr, "-max must be 0 (no limit) or more, not %d", o.max)
	}
	if o.exploreStates < 1 || o.exploreStates > explore.MaxStatesLimit {
		return c.usageError(stderr, "-explore-states must be 1 to %d, not %d", explore.MaxStatesLimit, o.exploreStates)
	}
	rep, ok := loadAndCheck(c, args, stderr)
	if !ok {
		return exitUsage
	}
	if o.explore || o.exploreAll {
		for _, n := range exploreSmall(rep, o.exploreStates, o.exploreAll) {
			fmt.Fprintf(stderr, "cpvalidate: note: %s\n", n)
			rep.notes = append(rep.notes, n)
		}
	}
	o.severity.apply(rep)
	var err error
	switch o.format.value {
	case "json":
		err = writeJSON(stdout, rep, o.max)
	case "sarif":
		err = writeSARIF(stdout, rep, o.max)
	default:
		err = writeText(stdout, rep, o.max, o.quiet)
	}
	if err != nil {
		fmt.Fprintf(stderr, "cpvalidate: writing the report: %v\n", err)
		return exitUsage
	}
	return rep.exitCode()
}

// loadAndCheck expands the command line's paths, then loads and checks
// every policy file (validateFiles), saying on stderr what the walks
// skipped and what could not be read. It reports false when a path
// cannot be used at all.
func loadAndCheck(c *command, args []string, stderr io.Writer) (*report, bool) {
	files, notes, errs := expandPaths(args)
	for _, n := range notes {
		fmt.Fprintf(stderr, "%s: note: %s\n", c.fullName(), n)
	}
	if len(errs) > 0 {
		for _, err := range errs {
			fmt.Fprintf(stderr, "%s: %v\n", c.fullName(), err)
		}
		return nil, false
	}
	rep := validateFiles(files)
	rep.notes = notes
	for _, err := range rep.ioErrors {
		fmt.Fprintf(stderr, "%s: %v\n", c.fullName(), err)
	}
	return rep, true
}

// expandPaths turns the command line's paths into policy files, in order,
// each once. A directory stands for the regular policy files under it; a
// walk skips symbolic links and other files that are not regular (a
// device or a pipe would block or never end) and says so in a note that
// names the file, never what a link points to. A path on the command
// line is used as it is, link or not.
func expandPaths(args []string) (files, notes []string, errs []error) {
	seen := map[string]bool{}
	add := func(path string) {
		key := filepath.Clean(path)
		if abs, err := filepath.Abs(path); err == nil {
			key = abs
		}
		if !seen[key] {
			seen[key] = true
			files = append(files, path)
		}
	}
	for _, arg := range args {
		info, err := os.Stat(arg)
		if err != nil {
			errs = append(errs, pathError(arg, err))
			continue
		}
		if !info.IsDir() {
			add(arg)
			continue
		}
		root := arg
		if li, err := os.Lstat(arg); err == nil && li.Mode()&fs.ModeSymlink != 0 {
			// A directory named by a link: walk the directory it names
			// (WalkDir does not follow a root that is a link, but does
			// follow one that ends in a separator).
			root = arg + string(filepath.Separator)
		}
		found := 0
		err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if path != root && strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.IsDir() {
				return nil
			}
			if _, ok := policy.FormatOf(path); !ok {
				return nil
			}
			switch t := d.Type(); {
			case t&fs.ModeSymlink != 0:
				notes = append(notes, fmt.Sprintf("%s: skipped: a symbolic link (a directory walk follows no links; name the file to check it)", path))
			case !t.IsRegular():
				notes = append(notes, fmt.Sprintf("%s: skipped: not a regular file (a directory walk reads regular files only; name the file to check it)", path))
			default:
				found++
				add(path)
			}
			return nil
		})
		switch {
		case err != nil:
			errs = append(errs, err)
		case found == 0:
			errs = append(errs, fmt.Errorf("%s: no policy files (.yaml, .yml or .xml) in this directory", arg))
		}
	}
	return files, notes, errs
}

// pathError explains a path that cannot be used. A missing path that
// looks like a mistyped command says so.
func pathError(arg string, err error) error {
	if os.IsNotExist(err) && !strings.ContainsAny(arg, `/\.`) {
		hint := fmt.Sprintf("commands are %s", strings.Join(subcommands(), ", "))
		if s := policy.Suggest(arg, subcommands()); s != "" {
			hint = fmt.Sprintf("did you mean the command %q?", s)
		}
		return fmt.Errorf("%s: no such file or directory (%s)", arg, hint)
	}
	if os.IsNotExist(err) {
		return fmt.Errorf("%s: no such file or directory", arg)
	}
	return err
}

// validateFiles loads every file, then checks each policy, resolving
// child policies among the ones loaded and then among the shipped ones.
func validateFiles(paths []string) *report {
	rep := &report{}
	byName := map[string]*policy.Policy{}
	for _, path := range paths {
		src, ds, err := policy.ReadFile(path)
		if err != nil {
			rep.ioErrors = append(rep.ioErrors, err)
			continue
		}
		var p *policy.Policy
		if ds == nil {
			p, ds = policy.Load(path, src)
		}
		rep.files = append(rep.files, &fileResult{path: path, src: src, policy: p, diags: ds})
		if p != nil && p.Name != "" {
			if _, dup := byName[p.Name]; !dup {
				byName[p.Name] = p
			}
		}
	}
	resolve := func(name string) *policy.Policy {
		if p, ok := byName[name]; ok {
			return p
		}
		return policies.Resolve(name)
	}
	rep.resolve = resolve
	for _, f := range rep.files {
		if f.policy != nil {
			// The engine's own check-then-compile step: what validates
			// clean here is what a manager registers. Its diagnostics
			// include the load diagnostics.
			_, f.diags = engine.Check(f.policy, engine.WithPolicies(resolve))
		}
		for i := range f.diags {
			if f.diags[i].Pos.File == "" {
				f.diags[i].Pos.File = f.path // every diagnostic names its file
			}
		}
		if f.policy == nil && !f.diags.HasErrors() {
			// Cannot happen with today's loaders; never report such a file as ok.
			f.diags = append(f.diags, policy.Diagnostic{Severity: policy.SeverityError, Code: policy.CodeSyntax,
				Pos: policy.Pos{File: f.path, Line: 1, Col: 1}, Message: "the file holds no policy"})
		}
		f.errors = f.diags.Count(policy.SeverityError)
		f.warns = f.diags.Count(policy.SeverityWarning)
		rep.diags = append(rep.diags, f.diags...)
	}
	rep.diags.Sort()
	return rep
}

// capped returns the first max diagnostics (all when max is 0) and how
// many were left out.
func capped(ds policy.Diagnostics, max int) (policy.Diagnostics, int) {
	if max == 0 || len(ds) <= max {
		return ds, 0
	}
	return ds[:max], len(ds) - max
}

// shortFingerprint keeps the algorithm and 12 hex digits, enough to tell
// policies apart by eye.
func shortFingerprint(fp string) string {
	algo, hex, ok := strings.Cut(fp, ":")
	if !ok || len(hex) <= 12 {
		return fp
	}
	return algo + ":" + hex[:12]
}

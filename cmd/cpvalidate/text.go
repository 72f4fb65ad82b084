package main

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/parleyhq/parley/policy"
)

// writeText prints the diagnostics, one per line with their related
// positions and witness trace indented below, then (unless quiet) one
// line per policy file and the totals.
func writeText(w io.Writer, rep *report, max int, quiet bool) error {
	bw := bufio.NewWriter(w)
	shown, more := capped(rep.diags, max)
	for _, d := range shown {
		writeDiagnostic(bw, d)
	}
	if more > 0 {
		fmt.Fprintf(bw, "... and %s\n", plural(more, "more diagnostic", "more diagnostics"))
	}
	if !quiet {
		if len(shown) > 0 {
			bw.WriteByte('\n')
		}
		writeSummary(bw, rep)
	}
	return bw.Flush()
}

// writeDiagnostic prints d as "file:line:col: severity: message [CODE]",
// then each related position and the witness trace, indented by a tab.
func writeDiagnostic(w io.Writer, d policy.Diagnostic) {
	fmt.Fprintln(w, d.Error())
	for _, r := range d.Related {
		fmt.Fprintf(w, "\t%s: %s\n", r.Pos, r.Message)
	}
	if len(d.Trace) > 0 {
		fmt.Fprintln(w, "\twitness:")
		for i, step := range d.Trace {
			fmt.Fprintf(w, "\t  %d. %s\n", i+1, step)
		}
	}
}

// writeSummary prints one aligned line per policy file, then the totals:
//
//	ok    fipa-request v1  sha256:1a51306e7dcb  12 states, 2 roles  policies/fipa-request.yaml
//	2 policies checked: 2 ok
func writeSummary(w io.Writer, rep *report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	anyProblems := false
	for _, f := range rep.files {
		anyProblems = anyProblems || f.errors+f.warns > 0
	}
	for _, f := range rep.files {
		status, name, fp, size := "ok  ", "-", "-", "-" // "ok" as wide as "FAIL"
		if !f.ok() {
			status = "FAIL"
		}
		if p := f.policy; p != nil {
			name = nameVersion(p)
			fp = shortFingerprint(p.Fingerprint())
			size = plural(len(p.States), "state", "states") + ", " + plural(len(p.Roles), "role", "roles")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t", status, name, fp, size)
		if anyProblems {
			fmt.Fprintf(tw, "%s\t", problems(f.errors, f.warns))
		}
		fmt.Fprintf(tw, "%s\n", f.path)
	}
	tw.Flush()
	ok, errs, warns := rep.totals()
	n := len(rep.files)
	line := fmt.Sprintf("%s checked: %d ok", plural(n, "policy", "policies"), ok)
	if n > ok {
		line += fmt.Sprintf(", %d failed", n-ok)
	}
	if p := problems(errs, warns); p != "" {
		line += " (" + p + ")"
	}
	fmt.Fprintln(w, line)
}

// nameVersion renders "name v1", with "-" for what the file lacks; a
// name or version longer than policy.MaxQuoted bytes is cut (policy.Clip).
func nameVersion(p *policy.Policy) string {
	name := policy.Clip(p.Name)
	if name == "" {
		name = "-"
	}
	if p.Version == "" {
		return name
	}
	return name + " v" + policy.Clip(strings.TrimPrefix(p.Version, "v"))
}

// problems renders "3 errors, 1 warning", leaving out zero counts.
func problems(errs, warns int) string {
	var parts []string
	if errs > 0 {
		parts = append(parts, plural(errs, "error", "errors"))
	}
	if warns > 0 {
		parts = append(parts, plural(warns, "warning", "warnings"))
	}
	return strings.Join(parts, ", ")
}

package main

import (
	"encoding/json"
	"io"

	"github.com/parleyhq/parley/policy"
)

// The JSON report: one indented document.
type jsonReport struct {
	Policies    []jsonPolicy     `json:"policies"`
	Diagnostics []jsonDiagnostic `json:"diagnostics"`
	Summary     jsonSummary      `json:"summary"`
}

type jsonPolicy struct {
	File string `json:"file"`
	// Name and Version are cut to policy.MaxQuoted bytes, with an
	// ellipsis, when longer (policy.Clip): output never repeats unbounded
	// text from a file.
	Name        string `json:"name"`
	Version     string `json:"version"`
	Fingerprint string `json:"fingerprint"`
	States      int    `json:"states"`
	Roles       int    `json:"roles"`
	Errors      int    `json:"errors"`
	Warnings    int    `json:"warnings"`
	OK          bool   `json:"ok"`
}

type jsonDiagnostic struct {
	File     string        `json:"file"`
	Line     int           `json:"line"`
	Col      int           `json:"col"`
	Severity string        `json:"severity"`
	Code     string        `json:"code"`
	Message  string        `json:"message"`
	Related  []jsonRelated `json:"related,omitempty"`
	Trace    []string      `json:"trace,omitempty"`
}

type jsonRelated struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Col     int    `json:"col"`
	Message string `json:"message"`
}

type jsonSummary struct {
	Policies int `json:"policies"`
	OK       int `json:"ok"`
	Errors   int `json:"errors"`
	Warnings int `json:"warnings"`
	// Omitted counts the diagnostics -max left out.
	Omitted int `json:"omitted,omitempty"`
}

func writeJSON(w io.Writer, rep *report, max int) error {
	shown, more := capped(rep.diags, max)
	out := jsonReport{
		Policies:    make([]jsonPolicy, 0, len(rep.files)),
		Diagnostics: make([]jsonDiagnostic, 0, len(shown)),
	}
	for _, f := range rep.files {
		jp := jsonPolicy{File: f.path, Errors: f.errors, Warnings: f.warns, OK: f.ok()}
		if p := f.policy; p != nil {
			jp.Name, jp.Version, jp.Fingerprint = policy.Clip(p.Name), policy.Clip(p.Version), p.Fingerprint()
			jp.States, jp.Roles = len(p.States), len(p.Roles)
		}
		out.Policies = append(out.Policies, jp)
	}
	for _, d := range shown {
		out.Diagnostics = append(out.Diagnostics, jsonDiag(d))
	}
	ok, errs, warns := rep.totals()
	out.Summary = jsonSummary{Policies: len(rep.files), OK: ok, Errors: errs, Warnings: warns, Omitted: more}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}

func jsonDiag(d policy.Diagnostic) jsonDiagnostic {
	jd := jsonDiagnostic{
		File: d.Pos.File, Line: d.Pos.Line, Col: d.Pos.Col,
		Severity: d.Severity.String(), Code: string(d.Code), Message: d.Message,
		Trace: d.Trace,
	}
	for _, r := range d.Related {
		jd.Related = append(jd.Related, jsonRelated{File: r.Pos.File, Line: r.Pos.Line, Col: r.Pos.Col, Message: r.Message})
	}
	return jd
}

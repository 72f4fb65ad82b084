// Package api is what the playground page calls in its WebAssembly
// module: cpvalidate's checks, its diagrams, a role's projection and the
// findings for a trace, each returning a value that encodes to the JSON
// the page reads. It runs under GOOS=js in the browser and natively in
// tests alike.
package api

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/internal/diagram"
	"github.com/parleyhq/parley/policies"
	"github.com/parleyhq/parley/policy"
	"github.com/parleyhq/parley/trace"
)

// MaxReported is the most diagnostics, and the most trace findings, a
// result lists; a last info entry says how many more there were.
const MaxReported = 200

// Diagnostic is a policy.Diagnostic with its position spelt out.
type Diagnostic struct {
	Severity string    `json:"severity"`
	Code     string    `json:"code"`
	Line     int       `json:"line"`
	Col      int       `json:"col"`
	Message  string    `json:"message"`
	Related  []Related `json:"related"`
	Trace    []string  `json:"trace"`
}

// Related is a related position; File is empty for the edited file.
type Related struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Col     int    `json:"col"`
	Message string `json:"message"`
}

// Summary describes a policy that loaded.
type Summary struct {
	Name        string   `json:"name"`
	Version     string   `json:"version"`
	Fingerprint string   `json:"fingerprint"`
	States      int      `json:"states"`
	Roles       []string `json:"roles"`
}

// CheckResult is what Check found.
type CheckResult struct {
	Diagnostics []Diagnostic `json:"diagnostics"`
	Errors      int          `json:"errors"`
	Warnings    int          `json:"warnings"`
	// Policy is nil when the text holds no policy.
	Policy *Summary `json:"policy"`
	// Mermaid is the policy's diagram, as cpvalidate graph draws it,
	// when the policy has no errors.
	Mermaid string `json:"mermaid"`
}

// filename is the name a policy text is checked under: its format says
// which loader reads it.
func filename(format string) string {
	if format == "xml" {
		return "policy.xml"
	}
	return "policy.yaml"
}

// load loads and checks src as cpvalidate does, with engine.Check and
// the shipped policies as children.
func load(format, src string) (*policy.Policy, policy.Diagnostics) {
	name := filename(format)
	p, ds := policy.Load(name, []byte(src))
	if p != nil {
		_, ds = engine.Check(p, engine.WithPolicies(policies.Resolve))
	}
	if p == nil && !ds.HasErrors() {
		ds = append(ds, policy.Diagnostic{Severity: policy.SeverityError, Code: policy.CodeSyntax, Pos: policy.Pos{Line: 1, Col: 1}, Message: "the text holds no policy"})
	}
	return p, ds
}

// Check checks a policy text in format "yaml" or "xml".
func Check(format, src string) CheckResult {
	p, ds := load(format, src)
	res := CheckResult{Diagnostics: diagnostics(ds, filename(format)), Errors: ds.Count(policy.SeverityError), Warnings: ds.Count(policy.SeverityWarning)}
	if p != nil {
		s := &Summary{Name: p.Name, Version: p.Version, Fingerprint: p.Fingerprint(), States: len(p.States), Roles: []string{}}
		for _, r := range p.Roles {
			s.Roles = append(s.Roles, r.Name)
		}
		res.Policy = s
		if !ds.HasErrors() {
			res.Mermaid = diagram.Global(p, title(p)).Mermaid()
		}
	}
	return res
}

func title(p *policy.Policy) string {
	return policy.Clip(p.Name) + " v" + policy.Clip(strings.TrimPrefix(p.Version, "v"))
}

// diagnostics converts at most MaxReported diagnostics; positions in
// file are the edited text's.
func diagnostics(ds policy.Diagnostics, file string) []Diagnostic {
	out := []Diagnostic{}
	for i, d := range ds {
		if i == MaxReported {
			out = append(out, Diagnostic{Severity: "info", Code: "", Line: d.Pos.Line, Col: d.Pos.Col,
				Message: fmt.Sprintf("... and %d more diagnostics", len(ds)-MaxReported), Related: []Related{}, Trace: []string{}})
			break
		}
		dg := Diagnostic{Severity: d.Severity.String(), Code: string(d.Code), Line: d.Pos.Line, Col: d.Pos.Col, Message: d.Message,
			Related: []Related{}, Trace: slices.Clone(d.Trace)}
		if dg.Trace == nil {
			dg.Trace = []string{}
		}
		for _, r := range d.Related {
			rf := r.Pos.File
			if rf == file {
				rf = ""
			}
			dg.Related = append(dg.Related, Related{File: rf, Line: r.Pos.Line, Col: r.Pos.Col, Message: r.Message})
		}
		out = append(out, dg)
	}
	return out
}

// ProjectResult is a role's projection, or why there is none.
type ProjectResult struct {
	Mermaid     string       `json:"mermaid"`
	Diagnostics []Diagnostic `json:"diagnostics"`
	Error       string       `json:"error"`
}

// Project draws the policy as role sees it. The policy must have no
// errors.
func Project(format, src, role string) ProjectResult {
	res := ProjectResult{Diagnostics: []Diagnostic{}}
	p, ds := load(format, src)
	if ds.HasErrors() {
		res.Error = "the policy has errors; fix them to see a projection"
		return res
	}
	if p.Role(role) == nil {
		res.Error = fmt.Sprintf("the policy has no role %s", policy.Quote(role))
		return res
	}
	proj, pds := policy.Project(p, role)
	if pds.HasErrors() {
		res.Diagnostics = diagnostics(pds, filename(format))
		res.Error = fmt.Sprintf("role %s cannot follow the policy", policy.Quote(role))
		return res
	}
	res.Mermaid = diagram.Local(proj, title(p)).Mermaid()
	return res
}

// TraceResult is what checking a trace found.
type TraceResult struct {
	Findings []trace.Finding `json:"findings"`
	Summary  *trace.Summary  `json:"summary"`
	Error    string          `json:"error"`
}

// Trace checks a trace (JSON Lines, as cpvalidate trace reads it)
// against the policy. bind is "Role=agent,agent; Role=agent", or empty.
func Trace(format, src, traceText, bind string) TraceResult {
	res := TraceResult{Findings: []trace.Finding{}}
	p, ds := load(format, src)
	if ds.HasErrors() {
		res.Error = "the policy has errors; fix them to check a trace"
		return res
	}
	b, err := parseBind(bind)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	entries, problems, err := trace.Read(strings.NewReader(traceText))
	if err != nil {
		res.Error = err.Error()
		return res
	}
	r, err := trace.Check(p, entries, problems, trace.Options{Bind: b, Resolve: policies.Resolve})
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.Findings = r.Findings
	if len(r.Findings) > MaxReported {
		res.Findings = append(r.Findings[:MaxReported:MaxReported], trace.Finding{Line: r.Findings[MaxReported].Line,
			Severity: policy.SeverityInfo, Code: trace.CodeOmitted, Message: fmt.Sprintf("... and %d more findings", len(r.Findings)-MaxReported)})
	}
	res.Summary = &r.Summary
	return res
}

// parseBind reads "Role=agent,agent; Role=agent".
func parseBind(s string) (map[string][]string, error) {
	out := map[string][]string{}
	for part := range strings.SplitSeq(s, ";") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		role, agents, ok := strings.Cut(part, "=")
		role = strings.TrimSpace(role)
		if !ok || role == "" {
			return nil, fmt.Errorf("binding %s must be ROLE=agent[,agent...]", policy.Quote(part))
		}
		for a := range strings.SplitSeq(agents, ",") {
			if a = strings.TrimSpace(a); a == "" {
				return nil, errors.New("empty agent name in " + policy.Quote(part))
			}
			if !slices.Contains(out[role], a) {
				out[role] = append(out[role], a)
			}
		}
	}
	return out, nil
}

// Example is a shipped policy, in both formats.
type Example struct {
	Name string `json:"name"`
	YAML string `json:"yaml"`
	XML  string `json:"xml"`
}

// Examples returns the policies Parley ships, for the page to start from.
func Examples() []Example {
	var out []Example
	for _, name := range policies.Names() {
		y, _ := fs.ReadFile(policies.FS(), name+".yaml") // embedded: listed by Names
		x, _ := fs.ReadFile(policies.FS(), name+".xml")
		out = append(out, Example{Name: name, YAML: string(y), XML: string(x)})
	}
	return out
}

package policy

// LoadDiagnostics returns what loading p from its file found: empty for
// a policy built in Go, and errors for a file the loader could only
// partly read (such as a misspelt key, whose content it left out). A
// host refuses to run a policy whose LoadDiagnostics has errors.
func (p *Policy) LoadDiagnostics() Diagnostics { return p.loaded }

// Analysis is what Analyze found: the diagnostics of loading and of every
// static check, and the projection onto each role that sends or receives
// a message, made once by the projection check, but for a role that sees
// every step (as the roles of a two-party policy do): the check need
// not project onto it, and Project makes its projection, a copy of the
// policy's graph, when a compiler needs it.
type Analysis struct {
	Diagnostics Diagnostics
	Projections map[string]*Projection
}

// Analyze runs every static check on p, as CheckPolicy does, and keeps
// the projections the checks made, so that a compiler need not project
// again. Its diagnostics include p's LoadDiagnostics. The projections are
// missing when the checks found errors before projecting.
func Analyze(p *Policy, opts ...CheckOption) *Analysis {
	if p == nil {
		return &Analysis{}
	}
	c := runChecks(p, opts)
	ds := append(append(Diagnostics(nil), p.loaded...), c.d.list...)
	ds.Sort()
	return &Analysis{Diagnostics: ds, Projections: c.projections}
}

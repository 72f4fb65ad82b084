package policy_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/parleyhq/parley/policy"
)

// seeds returns every policy file under policies/ and testdata/ with the
// given extension.
func seeds(f *testing.F, ext string) {
	for _, pattern := range []string{"../policies/*" + ext, "../testdata/*/*" + ext, "../testdata/*/*/*" + ext} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			src, err := os.ReadFile(file)
			if err == nil {
				f.Add(src)
			}
		}
	}
}

// fuzzLoaded checks what holds for any input: loading and checking never
// panic, and a policy that loads without errors survives a trip through
// both writers with its fingerprint.
func fuzzLoaded(t *testing.T, p *policy.Policy, ds policy.Diagnostics) {
	for _, d := range ds {
		if d.Severity == 0 || d.Code == "" || !d.Pos.IsValid() {
			t.Fatalf("diagnostic without severity, code or position: %+v", d)
		}
	}
	if p == nil {
		return
	}
	for _, d := range policy.CheckPolicy(p) {
		if d.Severity == 0 || d.Code == "" {
			t.Fatalf("check diagnostic without severity or code: %+v", d)
		}
	}
	for _, r := range p.Roles {
		policy.Project(p, r.Name)
	}
	if ds.HasErrors() {
		return
	}
	fp := p.Fingerprint()
	py, dy := policy.LoadYAML("w.yaml", policy.WriteYAML(p))
	if dy.HasErrors() || py.Fingerprint() != fp {
		t.Fatalf("YAML writer output does not load back to the same policy: %v\n%s", dy, policy.WriteYAML(p))
	}
	px, dx := policy.LoadXML("w.xml", policy.WriteXML(p))
	if dx.HasErrors() || px.Fingerprint() != fp {
		t.Fatalf("XML writer output does not load back to the same policy: %v\n%s", dx, policy.WriteXML(p))
	}
}

func FuzzLoadYAML(f *testing.F) {
	seeds(f, ".yaml")
	f.Fuzz(func(t *testing.T, src []byte) {
		p, ds := policy.LoadYAML("fuzz.yaml", src)
		fuzzLoaded(t, p, ds)
	})
}

func FuzzLoadXML(f *testing.F) {
	seeds(f, ".xml")
	f.Fuzz(func(t *testing.T, src []byte) {
		p, ds := policy.LoadXML("fuzz.xml", src)
		fuzzLoaded(t, p, ds)
	})
}

package policy_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/parleyhq/parley/policy"
)

func BenchmarkValidate(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		src := policy.Ladder(n, false)
		b.Run(fmt.Sprintf("states=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				p, ds := policy.LoadYAML("generated.yaml", src)
				if ds.HasErrors() {
					b.Fatal(ds)
				}
				if ds := policy.CheckPolicy(p); ds.HasErrors() {
					b.Fatal(ds)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/state")
		})
	}
}

func TestGeneratedPolicyIsClean(t *testing.T) {
	p, ds := policy.LoadYAML("generated.yaml", policy.Ladder(50, false))
	if len(ds) > 0 {
		t.Fatal(ds)
	}
	if ds := policy.CheckPolicy(p); len(ds) > 0 {
		t.Fatal(ds)
	}
}

// repeatedAttributes writes a CP-XML policy whose one state repeats its
// name attribute n times: the shape that made the XML loader's position
// search quadratic (each repeat searched the tag from its start), so
// that a fuzzer's mutations of it ran at a few executions a second.
func repeatedAttributes(n int) []byte {
	return []byte(`<policy name="p" version="1"><role name="A"/><state name="s"` +
		strings.Repeat(` name="s"`, n) + `/></policy>`)
}

func BenchmarkLoadXMLRepeatedAttributes(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		src := repeatedAttributes(n)
		b.Run(fmt.Sprintf("attrs=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				if _, ds := policy.LoadXML("repeated.xml", src); len(ds) != n {
					b.Fatalf("%d diagnostics, want %d", len(ds), n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/attr")
		})
	}
}

// BenchmarkLoad measures the loaders alone on the generated policy, in
// both formats (the XML written by WriteXML from the YAML).
func BenchmarkLoad(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		ysrc := policy.Ladder(n, false)
		p, ds := policy.LoadYAML("generated.yaml", ysrc)
		if ds.HasErrors() {
			b.Fatal(ds)
		}
		for _, f := range []struct {
			name string
			src  []byte
		}{{"yaml", ysrc}, {"xml", policy.WriteXML(p)}} {
			b.Run(fmt.Sprintf("format=%s/states=%d", f.name, n), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(f.src)))
				for b.Loop() {
					if _, ds := policy.Load("generated."+f.name, f.src); ds.HasErrors() {
						b.Fatal(ds)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/state")
			})
		}
	}
}

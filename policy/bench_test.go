package policy_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/parleyhq/parley/policy"
)

// generated writes a two-party policy of n states: a ladder where each
// state offers a request and a refusal onward, bounded by a timer, with a
// guard, a commitment and expressions so that every check has work.
func generated(n int) []byte {
	var b strings.Builder
	b.WriteString(`policy: generated
version: 1
roles: [A, B]
messages:
  ask: {performative: request, fields: {n: int}}
  yes: agree
  no: {performative: refuse, fields: {reason: optional string}}
  ok:
    performative: inform
    fields: {result: any}
    match: '"result" in content'
vars: {last: int}
timers: {t: 30s}
commitments:
  reply: {debtor: B, creditor: A, create: yes, discharge: ok}
states:
`)
	for i := 0; i < n-2; i++ {
		next := i + 1
		if next == n-2 {
			next = 0
		}
		if i%2 == 0 {
			fmt.Fprintf(&b, "  s%d:\n    arm: t\n    on:\n", i)
			fmt.Fprintf(&b, "      - {send: ask, from: A, to: B, next: s%d, guard: 'vars.last < 100', set: {last: content.n}}\n", i+1)
			b.WriteString("      - {timeout: t, next: end}\n")
		} else {
			fmt.Fprintf(&b, "  s%d:\n", i)
			fmt.Fprintf(&b, "    - {send: yes, from: B, to: A, next: s%d}\n", next)
			b.WriteString("    - {send: ok, from: B, to: A, next: end}\n")
			b.WriteString("    - {send: no, from: B, to: A, next: refused}\n")
		}
	}
	b.WriteString("  end: {terminal: done}\n  refused: {terminal: refused}\n")
	return []byte(b.String())
}

func BenchmarkValidate(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		src := generated(n)
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
	p, ds := policy.LoadYAML("generated.yaml", generated(50))
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
		ysrc := generated(n)
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

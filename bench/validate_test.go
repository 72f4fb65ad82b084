package bench

import (
	"bytes"
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beevik/etree"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/policy"
)

// Validating a large policy, against parsing it. The peer of each format
// is its parser alone: yaml.v3 decoding the file into its node tree, and
// etree reading it into its element tree with the settings a CP-XML
// loader needs (repeated attributes and CDATA kept). Parley's side is
// what cpvalidate does with each file: policy.Load, then engine.Check
// (every static check, the projections and the compile of every role).
// The difference is Parley's own work.
//
// Besides time and allocation, each reports peak-B: the most memory the
// op holds live at once (see peakLive), for a parser its tree.
const (
	libYAML  = "yaml.v3"
	libEtree = "etree"
)

var validateSizes = []int{1_000, 10_000, 100_000}

// ladder writes a two-party YAML policy of n states: each state offers a
// request and a refusal onward, bounded by a timer, with a guard, a
// commitment and expressions, so that every check has work. The literals
// of each state's guard and set differ (they follow the state's index),
// as in a real policy whose expressions differ from state to state: no
// expression is the same text as another's, so nothing compiled for one
// state can be reused for the next by its text.
func ladder(n int) []byte {
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
			fmt.Fprintf(&b, "      - {send: ask, from: A, to: B, next: s%d, guard: 'vars.last < %d', set: {last: content.n + %d}}\n", i+1, 100+i, i)
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

// ladderFiles returns the ladder of n states as YAML and, written by
// policy.WriteXML from it, as CP-XML.
func ladderFiles(tb testing.TB, n int) (yamlSrc, xmlSrc []byte) {
	yamlSrc = ladder(n)
	p, ds := policy.LoadYAML("generated.yaml", yamlSrc)
	require.False(tb, ds.HasErrors(), "%v", ds)
	return yamlSrc, policy.WriteXML(p)
}

func parseYAML(src []byte) (*yaml.Node, error) {
	var doc yaml.Node
	err := yaml.NewDecoder(bytes.NewReader(src)).Decode(&doc)
	return &doc, err
}

func parseEtree(src []byte) (*etree.Document, error) {
	doc := etree.NewDocument()
	doc.ReadSettings.PreserveDuplicateAttrs = true
	doc.ReadSettings.PreserveCData = true
	return doc, doc.ReadFromBytes(src)
}

// validate is cpvalidate's work on one file.
func validate(name string, src []byte) (*engine.Compiled, policy.Diagnostics) {
	p, ds := policy.Load(name, src)
	if ds.HasErrors() {
		return nil, ds
	}
	return engine.Check(p)
}

func BenchmarkValidateYAML(b *testing.B) {
	for _, n := range validateSizes {
		src := ladderOnce(n, false)
		b.Run(fmt.Sprintf("states=%d/%s", n, libYAML), func(b *testing.B) {
			src := src(b)
			benchValidate(b, n, func() (any, error) { return parseYAML(src) })
		})
		b.Run(fmt.Sprintf("states=%d/%s", n, libParley), func(b *testing.B) {
			src := src(b)
			benchValidate(b, n, func() (any, error) { return validated("generated.yaml", src) })
		})
	}
}

func BenchmarkValidateXML(b *testing.B) {
	for _, n := range validateSizes {
		src := ladderOnce(n, true)
		b.Run(fmt.Sprintf("states=%d/%s", n, libEtree), func(b *testing.B) {
			src := src(b)
			benchValidate(b, n, func() (any, error) { return parseEtree(src) })
		})
		b.Run(fmt.Sprintf("states=%d/%s", n, libParley), func(b *testing.B) {
			src := src(b)
			benchValidate(b, n, func() (any, error) { return validated("generated.xml", src) })
		})
	}
}

// ladderOnce returns a function giving the ladder of n states (as
// CP-XML with asXML), made on its first call: a run that selects none
// of a size's benchmarks does not make its ladder. The benchmark loop
// resets the timer and the allocation counts after it.
func ladderOnce(n int, asXML bool) func(testing.TB) []byte {
	var src []byte
	return func(tb testing.TB) []byte {
		if src == nil {
			ysrc, xsrc := ladderFiles(tb, n)
			src = ysrc
			if asXML {
				src = xsrc
			}
		}
		return src
	}
}

// validated is validate for a benchmark: the compiled policy, or the
// diagnostics as an error.
func validated(name string, src []byte) (any, error) {
	c, ds := validate(name, src)
	if c == nil || ds.HasErrors() {
		return nil, ds
	}
	return c, nil
}

// benchValidate times op, and reports beside ns/op its time per state
// (ns/state), the largest live heap it makes (peak-B, from one more
// untimed run) and, where the process's CPU time can be read, the CPU
// time the process spent per op while timing it (cpu-ns/op: user and
// system time of every thread, the collector's included), which on a
// loaded machine varies far less than the wall time.
func benchValidate(b *testing.B, n int, op func() (any, error)) {
	b.ReportAllocs()
	cpu0, cpuOK := processCPU()
	for b.Loop() {
		if _, err := op(); err != nil {
			b.Fatal(err)
		}
	}
	cpu1, _ := processCPU()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/state")
	peak, err := peakLive(op)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(peak, "peak-B")
	if cpuOK {
		b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// peakLive runs op once more, untimed, with the collector started at
// every 10% of heap growth, and returns the largest live heap it saw
// (the heap marked live by a collection, sampled every 100µs and once
// more after op returns with its result still held) less the live heap
// before. It can miss a peak by at most the 10% growth between two
// collections.
func peakLive(op func() (any, error)) (float64, error) {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	live := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	runtime.GC()
	base := live()
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	var peak atomic.Uint64
	observe := func() {
		if v := live(); v > peak.Load() {
			peak.Store(v)
		}
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(100 * time.Microsecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				observe()
			}
		}
	}()
	result, err := op()
	close(done)
	<-stopped
	runtime.GC()
	observe()
	runtime.KeepAlive(result)
	if peak.Load() < base {
		return 0, err
	}
	return float64(peak.Load() - base), err
}

// TestValidateLadder checks what the validation benchmarks measure: both
// files hold the same clean policy of n states, each parser reads every
// state, and validation compiles it.
func TestValidateLadder(t *testing.T) {
	const n = 50
	ysrc, xsrc := ladderFiles(t, n)
	py, ds := policy.LoadYAML("generated.yaml", ysrc)
	require.Empty(t, ds)
	px, ds := policy.LoadXML("generated.xml", xsrc)
	require.Empty(t, ds)
	require.Equal(t, py.Fingerprint(), px.Fingerprint())
	require.Len(t, px.States, n)
	srcs := map[string]bool{}
	distinct := func(e *policy.Expr) {
		assert.False(t, srcs[e.Src], "expression %s repeats an earlier one", e.Src)
		srcs[e.Src] = true
	}
	for _, s := range px.States {
		for _, tr := range s.Transitions {
			if tr.Guard != nil {
				distinct(tr.Guard)
			}
			for _, a := range tr.Set {
				distinct(a.Expr)
			}
		}
	}
	assert.Len(t, srcs, n-2, "a guard and a set in every other state of the ladder")

	node, err := parseYAML(ysrc)
	require.NoError(t, err)
	states := node.Content[0].Content[len(node.Content[0].Content)-1]
	require.Len(t, states.Content, 2*n, "the states mapping holds a key and a value per state")
	doc, err := parseEtree(xsrc)
	require.NoError(t, err)
	require.Len(t, doc.Root().SelectElements("state"), n)

	for name, src := range map[string][]byte{"generated.yaml": ysrc, "generated.xml": xsrc} {
		c, ds := validate(name, src)
		require.Empty(t, ds, name)
		require.NotNil(t, c, name)
	}
}

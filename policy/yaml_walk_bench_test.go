package policy

import (
	"bytes"
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// processCPU returns the process's CPU time so far, and the part of it
// spent in the kernel (page faults on the heap's new memory).
func processCPU() (cpu, sys time.Duration) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), time.Duration(ru.Stime.Nano())
}

// BenchmarkYAMLWalk times the YAML loader's walk of yaml.v3's node tree
// into the model, without the parse: each round parses the ladder
// untimed, then times the walk, right after the parse as in LoadYAML
// (collected=false: the collector may be marking the tree the parse
// made) or after a collection (collected=true, the steadier). It reports
// the process's CPU time of the walk (the collector's included) as
// cpu-ns/op, and the kernel's part of it as sys-ns/op.
func BenchmarkYAMLWalk(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		src := Ladder(n, true)
		for _, collected := range []bool{false, true} {
			b.Run(fmt.Sprintf("states=%d/collected=%v", n, collected), func(b *testing.B) {
				b.ReportAllocs()
				var cpu, sys time.Duration
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					var doc yaml.Node
					if err := yaml.NewDecoder(bytes.NewReader(src)).Decode(&doc); err != nil {
						b.Fatal(err)
					}
					if collected {
						runtime.GC()
					}
					l := &yamlLoader{file: "generated.yaml", src: src, limits: DefaultLimits}
					c, k := processCPU()
					b.StartTimer()
					p := l.policy(doc.Content[0])
					b.StopTimer()
					c1, k1 := processCPU()
					cpu, sys = cpu+c1-c, sys+k1-k
					if p == nil || len(l.d.list) > 0 || len(p.States) != n {
						b.Fatal(l.d.list)
					}
				}
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
				b.ReportMetric(float64(sys.Nanoseconds())/float64(b.N), "sys-ns/op")
			})
		}
	}
}

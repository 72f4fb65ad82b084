package explore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/explore"
	"github.com/parleyhq/parley/policies"
)

// BenchmarkExplore explores a policy whose sender may send without
// waiting (pinger) and FIPA Request at several buffer bounds: the states
// visited grow with the bound, and the time with the states (ns/state
// stays about the same).
func BenchmarkExplore(b *testing.B) {
	pinger := compile(b, "CP109-exploration-bound.yaml")
	p := policies.Resolve("fipa-request")
	require.NotNil(b, p)
	request, ds := engine.Check(p)
	require.NotNil(b, request, "%v", ds)
	for _, tc := range []struct {
		name string
		c    *engine.Compiled
	}{{"pinger", pinger}, {"fipa-request", request}} {
		for _, buffer := range []int{1, 2, 4} {
			b.Run(fmt.Sprintf("%s/buffer=%d", tc.name, buffer), func(b *testing.B) {
				var states int
				start := time.Now()
				for b.Loop() {
					r, err := explore.Explore(tc.c, explore.WithBuffer(buffer))
					require.NoError(b, err)
					states = r.States
				}
				b.ReportMetric(float64(states), "states")
				b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N)/float64(states), "ns/state")
			})
		}
	}
}

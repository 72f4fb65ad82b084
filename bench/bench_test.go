package bench

import (
	"fmt"
	"runtime"
	"testing"
)

// Every scenario is a benchmark named Benchmark<Scenario>/<library>, so
// cmd/benchtable can group the libraries of a scenario into one row.
const (
	libParley             = "parley"
	libStatelessImmediate = "stateless-immediate"
	libStatelessQueued    = "stateless-queued"
	libLooplab            = "looplab"
)

// impl is one library's implementation of the scenarios every library
// runs: a benchmark and a correctness test for each, so a benchmark can
// never silently measure nothing.
type impl struct {
	name string

	pingPong, guard, request, rejected, live func(*testing.B)

	testPingPong, testGuard, testRequest, testRejected, testLive func(*testing.T)
}

// impls lists the implementations in the order the table shows them.
var impls = []impl{parleyImpl, statelessImpl(libStatelessImmediate), statelessImpl(libStatelessQueued), looplabImpl}

// The ping-pong machine, in every library: in s0 ping goes to s1 and stop
// to end; in s1 pong goes back to s0.
const (
	stS0   = "s0"
	stS1   = "s1"
	stEnd  = "end"
	trPing = "ping"
	trPong = "pong"
	trStop = "stop"
)

// The happy path of policies/fipa-request.yaml, with its state and
// message names: request, agree, inform-result.
const (
	stStart        = "start"
	stRequested    = "requested"
	stAgreed       = "agreed"
	stResult       = "result"
	trRequest      = "request"
	trAgree        = "agree"
	trInformResult = "inform-result"
)

// guardOK and guardBlocked are the arguments of a guarded ping or pong:
// the guard lets n > 0 through. They are boxed once, as Parley's input
// events are built once.
var (
	guardOK      any = 1
	guardBlocked any = 0
)

// BenchmarkPingPong: one transition of a two-state machine, no guard.
func BenchmarkPingPong(b *testing.B) {
	for _, im := range impls {
		b.Run(im.name, im.pingPong)
	}
}

// BenchmarkGuard: one transition whose guard reads a field of the event.
func BenchmarkGuard(b *testing.B) {
	for _, im := range impls {
		b.Run(im.name, im.guard)
	}
}

// BenchmarkRequestConversation: a whole FIPA Request conversation
// (request, agree, inform-result) for both roles, from creating the two
// machines to both reaching "result".
func BenchmarkRequestConversation(b *testing.B) {
	for _, im := range impls {
		b.Run(im.name, im.request)
	}
}

// BenchmarkRejected: an event the current state does not allow.
func BenchmarkRejected(b *testing.B) {
	for _, im := range impls {
		b.Run(im.name, im.rejected)
	}
}

// BenchmarkLiveInitiators reports the memory one FIPA Request initiator
// waiting in "requested" holds (B/instance, with liveInstances of them
// alive); ns/op is the time to create one and send the request.
func BenchmarkLiveInitiators(b *testing.B) {
	for _, im := range impls {
		b.Run(im.name, im.live)
	}
}

func TestPingPong(t *testing.T) {
	for _, im := range impls {
		t.Run(im.name, im.testPingPong)
	}
}

func TestGuard(t *testing.T) {
	for _, im := range impls {
		t.Run(im.name, im.testGuard)
	}
}

func TestRequestConversation(t *testing.T) {
	for _, im := range impls {
		t.Run(im.name, im.testRequest)
	}
}

func TestRejected(t *testing.T) {
	for _, im := range impls {
		t.Run(im.name, im.testRejected)
	}
}

func TestLiveInitiators(t *testing.T) {
	for _, im := range impls {
		t.Run(im.name, im.testLive)
	}
}

// liveInstances is how many initiators BenchmarkLiveInitiators keeps
// alive: 100,000, or 10,000 with -short.
func liveInstances() int {
	if testing.Short() {
		return 10_000
	}
	return 100_000
}

// benchLive builds liveInstances() instances with build (conversation ids
// are made beforehand: they belong to the application, not to the state
// machine), checks each is in "requested" and reports the heap they hold
// per instance as B/instance. The timed loop then builds one more
// instance per op and drops it.
func benchLive[T any](b *testing.B, build func(id string) (T, error), state func(T) string) {
	n := liveInstances()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("c%d", i)
	}
	live := make([]T, n)
	// Warm up: shared queues and caches grow once, outside the count.
	if _, err := build("warm-up"); err != nil {
		b.Fatal(err)
	}
	before := heapAlloc()
	for i := range live {
		x, err := build(ids[i])
		if err != nil {
			b.Fatal(err)
		}
		live[i] = x
	}
	after := heapAlloc()
	for i, x := range live {
		if got := state(x); got != stRequested {
			b.Fatalf("instance %d is in %q, not %q", i, got, stRequested)
		}
	}
	runtime.KeepAlive(live)
	perInstance := float64(after-before) / float64(n)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := build("c"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(perInstance, "B/instance")
}

// heapAlloc returns the bytes of live heap objects after a full
// collection.
func heapAlloc() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// testLive builds a few instances the way benchLive does and checks their
// state.
func testLive[T any](t *testing.T, build func(id string) (T, error), state func(T) string) {
	for i := range 3 {
		x, err := build(fmt.Sprintf("c%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if got := state(x); got != stRequested {
			t.Fatalf("instance %d is in %q, not %q", i, got, stRequested)
		}
	}
}

//go:build race

package agent_test

// raceEnabled reports whether the race detector is on; the load test
// scales itself down under it.
const raceEnabled = true

// Package bench measures Parley side by side with two general-purpose Go
// state-machine libraries, github.com/qmuntal/stateless (in its immediate
// and its queued firing mode) and github.com/looplab/fsm, on the same
// scenarios: a two-state ping-pong with and without a guard, a whole FIPA
// Request conversation for both roles, a rejected event, and the memory of
// a live conversation; and Parley alone on Contract Net, and on a Request
// conversation through two agent.Managers over the in-process bus against
// the same conversation through the bare handlers driven by hand, to
// measure the manager's cost per message.
//
// It is a module of its own, so the main module never depends on the
// peers. The package holds only benchmarks and the tests that keep them
// honest; README.md says how to run them and cmd/benchtable turns their
// output into a Markdown table.
package bench

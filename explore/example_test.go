package explore_test

import (
	"fmt"

	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/explore"
	"github.com/parleyhq/parley/policy"
)

// A reply sent in time can still arrive after the waiting role's timer:
// Explore finds the race and the run that shows it.
func ExampleExplore() {
	src := `policy: timed-ask
version: 1
roles: [Client, Server]
messages:
  ask: query-ref
  answer: inform
timers:
  reply: {after: 10s}
states:
  start:
    - {send: ask, from: Client, to: Server, next: asked}
  asked:
    arm: reply
    on:
      - {send: answer, from: Server, to: Client, next: answered}
      - {timeout: reply, next: expired}
  answered: {terminal: done}
  expired: {terminal: timeout}
`
	p, ds := policy.Load("timed-ask.yaml", []byte(src))
	if ds.HasErrors() {
		fmt.Println(ds)
		return
	}
	c, ds := engine.Check(p)
	if c == nil {
		fmt.Println(ds)
		return
	}
	r, err := explore.Explore(c)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d states, complete: %v\n", r.States, !r.Truncated)
	for _, f := range r.Findings {
		fmt.Println(f.Diagnostic.Code, f.Diagnostic.Pos)
		for i, step := range f.Witness {
			fmt.Printf("  %d. %s\n", i+1, step)
		}
	}
	// Output:
	// 12 states, complete: true
	// CP104 timed-ask.yaml:15:9
	//   1. "Client" sends "ask" #1 to "Server"
	//   2. "Server" receives "ask" #1 from "Client", now in "asked"
	//   3. "Server" sends "answer" #2 to "Client"
	//   4. at 10s timer "reply" fires at "Client" in "asked", now in "expired"
	//   5. "Client" rejects "answer" #2 from "Server" in state "expired" (PE004)
}

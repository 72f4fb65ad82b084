package diagram_test

import (
	"fmt"
	"strings"

	"github.com/parleyhq/parley/internal/diagram"
	"github.com/parleyhq/parley/policy"
)

func ExampleGraph_WriteDot() {
	p, ds := policy.LoadYAML("ping.yaml", []byte(`policy: ping
version: 1
roles: [A, B]
messages: {ping: request, pong: inform}
timers: {reply: 10s}
states:
  start:
    - {send: ping, from: A, to: B, next: waiting}
  waiting:
    arm: reply
    on:
      - {send: pong, from: B, to: A, next: done}
      - {timeout: reply, next: done}
  done: {terminal: answered}
`))
	if ds.HasErrors() {
		fmt.Println(ds)
		return
	}
	var b strings.Builder
	diagram.Global(p, "ping v1").WriteDot(&b)
	for line := range strings.Lines(b.String()) {
		if !strings.HasPrefix(line, "  // ") { // the fingerprint
			fmt.Print(line)
		}
	}
	// Output:
	// digraph "ping" {
	//   label="ping v1";
	//   labelloc=t;
	//   node [shape=ellipse];
	//   "[*]" [shape=point, label=""];
	//   "start";
	//   "waiting" [label="waiting\ntimer reply after 10s"];
	//   "done" [shape=box, style=rounded, peripheries=2, label="done\nends: answered"];
	//   "[*]" -> "start";
	//   "start" -> "waiting" [label="A: ping"];
	//   "waiting" -> "done" [label="B: pong\ntimeout reply"];
	// }
}

package policy

import (
	"fmt"
	"strings"
)

// Ladder writes a two-party policy of n states for the benchmarks, a
// ladder where each state offers a request and a refusal onward, bounded
// by a timer, with a guard, a commitment and expressions, so that every
// check has work. With distinct, the literals of each state's guard and
// set follow the state's index, as in bench/'s ladder and a real policy,
// where no two expressions are the same text; without, every state's
// are the same. It is exported for the external tests of this package.
func Ladder(n int, distinct bool) []byte {
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
			guard, set := "vars.last < 100", "content.n"
			if distinct {
				guard, set = fmt.Sprintf("vars.last < %d", 100+i), fmt.Sprintf("content.n + %d", i)
			}
			fmt.Fprintf(&b, "  s%d:\n    arm: t\n    on:\n", i)
			fmt.Fprintf(&b, "      - {send: ask, from: A, to: B, next: s%d, guard: '%s', set: {last: %s}}\n", i+1, guard, set)
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

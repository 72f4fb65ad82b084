package policy_test

import (
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/parleyhq/parley/policies"
	"github.com/parleyhq/parley/policy"
)

// Load a policy from bytes. The loader returns the policy it could build
// and every problem it found; the static checks are a separate step
// (CheckPolicy).
func ExampleLoadYAML() {
	src := []byte(`policy: ask
version: 1
roles: [Initiator, Participant]
messages:
  request: request
  agree: agree
  refuse: {performative: refuse, fields: {reason: optional string}}
timers:
  reply: {deadline: request.reply_by, default: 30s}
states:
  start:
    - {send: request, from: Initiator, to: Participant, next: asked}
  asked:
    arm: reply
    on:
      - {send: agree, from: Participant, to: Initiator, next: agreed}
      - {send: refuse, from: Participant, to: Initiator, next: refused}
      - {timeout: reply, next: timed-out}
  agreed: {terminal: agreed}
  refused: {terminal: refused}
  timed-out: {terminal: timeout}
`)
	p, ds := policy.LoadYAML("ask.yaml", src)
	if err := ds.Err(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s version %s, initial state %s\n", p.Name, p.Version, p.Initial.Name)
	for _, s := range p.States {
		if s.Kind == policy.KindTerminal {
			fmt.Printf("%s: terminal, outcome %s\n", s.Name, s.Outcome)
			continue
		}
		fmt.Printf("%s: %d transitions\n", s.Name, len(s.Transitions))
	}
	t := p.Timer("reply")
	fmt.Printf("timer %s: deadline %s, default %s\n", t.Name, t.Deadline, t.Default)
	fmt.Println("problems:", len(policy.CheckPolicy(p)))
	// Output:
	// ask version 1, initial state start
	// start: 1 transitions
	// asked: 3 transitions
	// agreed: terminal, outcome agreed
	// refused: terminal, outcome refused
	// timed-out: terminal, outcome timeout
	// timer reply: deadline request.reply_by, default 30s
	// problems: 0
}

// CheckPolicy reports every problem at once, sorted by position, each with
// its stable code.
func ExampleCheckPolicy() {
	src := []byte(`policy: ask
version: 1
roles: [Initiator, Participant]
messages:
  request: request
  agree: agree
timers:
  reply: 30s
states:
  start:
    - {send: request, from: Initiator, to: Participant, next: asked}
  asked:
    - {send: agree, from: Participnt, to: Initiator, next: don}
    - {timeout: reply, next: done}
  done: {terminal: done}
`)
	p, ds := policy.LoadYAML("ask.yaml", src)
	ds = append(ds, policy.CheckPolicy(p)...)
	for _, d := range ds {
		fmt.Println(d.Error())
	}
	fmt.Printf("errors: %d, warnings: %d\n", ds.Count(policy.SeverityError), ds.Count(policy.SeverityWarning))
	// Output:
	// ask.yaml:8:3: warning: timer "reply" is never armed [CP022]
	// ask.yaml:13:27: error: sender "Participnt" is not a declared role; did you mean "Participant"? [CP019]
	// ask.yaml:13:60: error: state "don" is not declared; did you mean "done"? [CP010]
	// ask.yaml:14:17: error: state "asked" handles timer "reply" but does not arm it, so this transition can never be taken; add arm: reply to the state [CP021]
	// errors: 3, warnings: 1
}

// Project shows a policy as one role sees it. The Shipper does not see
// the order or the rejection, so its first local state stands for every
// global state it cannot tell apart.
func ExampleProject() {
	src := []byte(`policy: order
version: 1
roles: [Buyer, Seller, Shipper]
messages:
  order: {performative: request, fields: {item: string}}
  reject: refuse
  ship: request
  no-ship: cancel
  deliver: inform
states:
  start:
    - {send: order, from: Buyer, to: Seller, next: ordered}
  ordered:
    - {send: ship, from: Seller, to: Shipper, next: shipping}
    - {send: reject, from: Seller, to: Buyer, next: rejecting}
  rejecting:
    - {send: no-ship, from: Seller, to: Shipper, next: rejected}
  shipping:
    - {send: deliver, from: Shipper, to: Buyer, next: delivered}
  delivered: {terminal: delivered}
  rejected: {terminal: rejected}
`)
	p, ds := policy.LoadYAML("order.yaml", src)
	if err := ds.Err(); err != nil {
		fmt.Println(err)
		return
	}
	proj, ds := policy.Project(p, "Shipper")
	if err := ds.Err(); err != nil {
		fmt.Println(err)
		return
	}
	for _, ls := range proj.States {
		if ls.Kind == policy.KindTerminal {
			fmt.Printf("%s: ends with %s\n", ls.Name, ls.Outcome)
			continue
		}
		fmt.Printf("%s:\n", ls.Name)
		for _, lt := range ls.Transitions {
			fmt.Printf("  %s %s (%s) -> %s\n", lt.Action, lt.Transition().Message.Name, lt.Peer, proj.States[lt.Next].Name)
		}
	}
	// Output:
	// start|ordered|rejecting:
	//   receive ship (Seller) -> shipping
	//   receive no-ship (Seller) -> rejected
	// shipping:
	//   send deliver (Buyer) -> delivered
	// rejected: ends with rejected
	// delivered: ends with delivered
}

// The fingerprint identifies what a policy allows, whatever its format:
// the shipped FIPA Request policy has the same fingerprint in YAML and in
// CP-XML. Docs do not count; a changed timer does.
func ExamplePolicy_Fingerprint() {
	load := func(file string) (*policy.Policy, error) {
		src, err := fs.ReadFile(policies.FS(), file)
		if err != nil {
			return nil, err
		}
		p, ds := policy.Load(file, src)
		return p, ds.Err()
	}
	fromYAML, err := load("fipa-request.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	fromXML, err := load("fipa-request.xml")
	if err != nil {
		fmt.Println(err)
		return
	}
	same := func(a, b *policy.Policy) string {
		if a.Fingerprint() == b.Fingerprint() {
			return "same fingerprint"
		}
		return "different fingerprints"
	}
	fmt.Println("YAML and XML:", same(fromYAML, fromXML))
	fmt.Println("prefix:", strings.HasPrefix(fromYAML.Fingerprint(), "sha256:"))

	fromXML.Doc = "another description"
	fmt.Println("doc changed:", same(fromYAML, fromXML))

	fromXML.Timer("reply").Default = time.Minute
	fmt.Println("timer changed:", same(fromYAML, fromXML))
	// Output:
	// YAML and XML: same fingerprint
	// prefix: true
	// doc changed: same fingerprint
	// timer changed: different fingerprints
}

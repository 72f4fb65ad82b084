package engine_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/policy"
)

// pricedSrc is a policy with guards and assignments, for the errors
// expressions meet at run time (PE012): the Buyer asks for items under a
// limit, and takes an offer only when its price is within the limit.
const pricedSrc = `policy: priced
version: 1
roles: [Buyer, Seller]
vars: {limit: number, first: any}
messages:
  ask: {performative: request, fields: {limit: number, items: list}}
  offer: {performative: propose, fields: {price: number}}
  accept: accept-proposal
  reject: reject-proposal
timers:
  wait: 30s
states:
  start:
    - {send: ask, from: Buyer, to: Seller, next: asked, set: {limit: content.limit, first: 'content.items[0]'}}
  asked:
    arm: wait
    on:
      - {send: offer, from: Seller, to: Buyer, guard: 'content.price <= vars.limit', next: offered}
      - {timeout: wait, next: gone}
  offered:
    arm: wait
    on:
      - {send: accept, from: Buyer, to: Seller, guard: 'vars.first != nil', next: deal}
      - {send: reject, from: Buyer, to: Seller, next: gone}
      - {timeout: wait, next: gone}
  deal: {terminal: deal}
  gone: {terminal: gone}
`

func pricedProgram(t *testing.T, role string) *engine.Program {
	t.Helper()
	p, ds := policy.LoadYAML("priced.yaml", []byte(pricedSrc))
	require.False(t, ds.HasErrors(), "%v", ds)
	pr, ds := engine.Compile(p, role)
	require.NotNil(t, pr, "%v", ds)
	return pr
}

func TestExpressionErrors(t *testing.T) {
	tests := []struct {
		name  string
		mode  engine.Mode
		steps []step
	}{
		{name: "guard and assignment hold", steps: []step{
			{do: start(), want: `
				alice: decide start [ask]`},
			{do: say("alice", "ask", content{"limit": 10, "items": []any{"tea"}}), want: `
				alice: send request alice->bob rw=c1/alice#1 {"items":["tea"],"limit":10}
				alice: timer set wait +30s
				bob: timer set wait +30s
				bob: decide asked [offer] {"items":["tea"],"limit":10}`},
			{at: time.Second, do: say("bob", "offer", content{"price": 8}), want: `
				bob: send propose bob->alice rw=c1/bob#1 irt=c1/alice#1 {"price":8}
				bob: timer cancel wait
				bob: timer set wait +31s
				alice: timer cancel wait
				alice: timer set wait +31s
				alice: decide offered [accept reject] {"price":8}`},
			{at: 2 * time.Second, do: say("alice", "accept", nil), want: `
				alice: send accept-proposal alice->bob rw=c1/alice#2 irt=c1/bob#1
				alice: timer cancel wait
				alice: done deal
				bob: timer cancel wait
				bob: done deal`},
		}},
		{name: "offer above the limit", steps: []step{
			{do: start(), want: `
				alice: decide start [ask]`},
			{do: say("alice", "ask", content{"limit": 10, "items": []any{"tea"}}), want: `
				alice: send request alice->bob rw=c1/alice#1 {"items":["tea"],"limit":10}
				alice: timer set wait +30s
				bob: timer set wait +30s
				bob: decide asked [offer] {"items":["tea"],"limit":10}`},
			{at: time.Second, do: recv("alice", msg("propose", "bob", "alice", content{"price": 12})), want: `
				alice: error PE001 [asked]: unexpected propose from "bob": state "asked" allows offer from Seller`},
		}},
		{name: "guard fails to evaluate", steps: []step{
			{do: start(), want: `
				alice: decide start [ask]`},
			{do: say("alice", "ask", content{"limit": 10, "items": []any{"tea"}}), want: `
				alice: send request alice->bob rw=c1/alice#1 {"items":["tea"],"limit":10}
				alice: timer set wait +30s
				bob: timer set wait +30s
				bob: decide asked [offer] {"items":["tea"],"limit":10}`},
			{at: time.Second, do: recv("alice", msg("propose", "bob", "alice", content{"price": "cheap"})), want: `
				alice: error PE012 [asked]: priced.yaml:18:70: expression "content.price <= vars.limit": invalid operation: string <= int`},
		}},
		{name: "assignment fails to evaluate on a send", steps: []step{
			{do: start(), want: `
				alice: decide start [ask]`},
			{do: say("alice", "ask", content{"limit": 10, "items": []any{}}), want: `
				alice: error PE012 [start]: setting "first": priced.yaml:14:106: expression "content.items[0]": index out of range: 0 (array length is 0); ask was not sent`},
			{at: time.Second, do: say("alice", "ask", content{"limit": 10, "items": []any{"tea"}}), want: `
				alice: send request alice->bob rw=c1/alice#1 {"items":["tea"],"limit":10}
				alice: timer set wait +31s
				bob: timer set wait +31s
				bob: decide asked [offer] {"items":["tea"],"limit":10}`},
		}},
		{name: "deciding an offer above the limit", steps: []step{
			{do: start(), want: `
				alice: decide start [ask]`},
			{do: say("alice", "ask", content{"limit": 10, "items": []any{"tea"}}), want: `
				alice: send request alice->bob rw=c1/alice#1 {"items":["tea"],"limit":10}
				alice: timer set wait +30s
				bob: timer set wait +30s
				bob: decide asked [offer] {"items":["tea"],"limit":10}`},
			{at: time.Second, do: say("bob", "offer", content{"price": 12}), want: `
				bob: error PE009 [asked]: choice "offer" is not allowed in state "asked": its guard "content.price <= vars.limit" does not hold for the decision's content`},
		}},
		{name: "assignment fails to evaluate on a receipt", steps: []step{
			{do: start(), want: `
				alice: decide start [ask]`},
			{do: recv("bob", msg("request", "alice", "bob", content{"limit": 10, "items": []any{}})), want: `
				bob: error PE012 [start]: setting "first": priced.yaml:14:106: expression "content.items[0]": index out of range: 0 (array length is 0)`},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			buyer, seller := pricedProgram(t, "Buyer"), pricedProgram(t, "Seller")
			c := newConvOf(t, map[string]*engine.Program{"alice": buyer, "bob": seller},
				agent{"alice", "Buyer", []engine.HandlerOption{engine.WithPeers("Seller", "bob"), engine.WithMode(tt.mode)}},
				agent{"bob", "Seller", []engine.HandlerOption{engine.WithMode(tt.mode)}})
			c.run(t, tt.steps)
		})
	}
}

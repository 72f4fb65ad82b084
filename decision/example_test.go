package decision_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/policy"
)

// Decision logic written in Go: a Func sees the request (the decision
// point, the choices the guards allow, the content that led there) and
// answers with a choice and the content of the message it sends.
func ExampleFunc() {
	d := decision.Func(func(_ context.Context, req *decision.Request) (decision.Answer, error) {
		if req.Content["action"] == "paint" {
			return decision.Answer{Choice: "agree"}, nil
		}
		return decision.Answer{Choice: "refuse", Content: map[string]any{"reason": "not my trade"}}, nil
	})
	for _, action := range []string{"paint", "dance"} {
		a, err := d.Decide(context.Background(), &decision.Request{
			Policy: "fipa-request", Point: "requested", Choices: []string{"agree", "refuse"},
			Content: map[string]any{"action": action},
		})
		fmt.Println(action, a.Choice, a.Content, err)
	}
	// Output:
	// paint agree map[] <nil>
	// dance refuse map[reason:not my trade] <nil>
}

// Decision logic written in the policy file: each decide expression
// picks a choice, with content, for its decision point.
func ExampleFromPolicy() {
	p, ds := policy.LoadYAML("quote.yaml", []byte(`policy: quote
version: 1
roles: [Buyer, Seller]
messages:
  ask: {performative: cfp, fields: {item: string}}
  offer: {performative: propose, fields: {price: number}}
  pass: refuse
states:
  start:
    - {send: ask, from: Buyer, to: Seller, next: asked}
  asked:
    decide: 'content.item == "tea" ? {"choice": "offer", "content": {"price": 3}} : "pass"'
    on:
      - {send: offer, from: Seller, to: Buyer, next: offered}
      - {send: pass, from: Seller, to: Buyer, next: passed}
  offered: {terminal: offered}
  passed: {terminal: passed}
`))
	if err := ds.Err(); err != nil {
		fmt.Println(err)
		return
	}
	d, err := decision.FromPolicy(p)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, item := range []string{"tea", "coffee"} {
		a, err := d.Decide(context.Background(), &decision.Request{
			Policy: "quote", Point: "asked", Choices: []string{"offer", "pass"},
			Content: map[string]any{"item": item},
		})
		fmt.Println(item, a.Choice, a.Content, err)
	}
	_, err = d.Decide(context.Background(), &decision.Request{Policy: "quote", Point: "start"})
	fmt.Println(errors.Is(err, decision.ErrNoDecision))
	// Output:
	// tea offer map[price:3] <nil>
	// coffee pass map[] <nil>
	// true
}

// A Chain asks its deciders in turn, until one has something to say: here
// one that knows a single decision point, then a fallback for the others.
func ExampleChain() {
	fromFile := decision.Func(func(_ context.Context, req *decision.Request) (decision.Answer, error) {
		if req.Point != "asked" {
			return decision.Answer{}, decision.ErrNoDecision
		}
		return decision.Answer{Choice: "pass"}, nil
	})
	fallback := decision.Func(func(_ context.Context, req *decision.Request) (decision.Answer, error) {
		return decision.Answer{Choice: req.Choices[0]}, nil
	})
	d := decision.Chain(fromFile, fallback)
	for _, point := range []string{"asked", "offered"} {
		a, err := d.Decide(context.Background(), &decision.Request{Policy: "quote", Point: point, Choices: []string{"accept", "reject"}})
		fmt.Println(point, a.Choice, err)
	}
	// Output:
	// asked pass <nil>
	// offered accept <nil>
}

// ABLE-style decision logic: a function of the conversation, the decision
// point and the decision data [content, vars, choices] returns the
// decision and the form data, here as alternating names and values.
func ExampleABLE() {
	d := decision.ABLE(func(conversationID, decisionPoint string, data []any) (string, []any) {
		content := data[0].(map[string]any)
		if strings.HasPrefix(content["action"].(string), "paint") {
			return "agree", nil
		}
		return "refuse", []any{"reason", "busy in " + conversationID}
	})
	for _, action := range []string{"paint the fence", "mow the lawn"} {
		a, err := d.Decide(context.Background(), &decision.Request{
			ConversationID: "c7", Policy: "fipa-request", Point: "requested",
			Choices: []string{"agree", "refuse"}, Content: map[string]any{"action": action},
		})
		fmt.Println(a.Choice, a.Content, err)
	}
	// Output:
	// agree map[] <nil>
	// refuse map[reason:busy in c7] <nil>
}

// An embedded expression runs within the expression limits: here a guard
// that would double a megabyte of the peer's content stops at once, at
// the +, rather than build the string.
func ExampleExpression_Eval() {
	guard, err := decision.Compile(&policy.Expr{Src: `len(content.note + content.note) > 0`, Pos: policy.Pos{File: "p.yaml", Line: 7, Col: 14}})
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = guard.Eval(&decision.Env{Content: map[string]any{"note": strings.Repeat("x", 1_000_000)}})
	fmt.Println(err)
	fmt.Println(errors.Is(err, policy.ErrExprLimit))
	// Output:
	// p.yaml:7:31: expression "len(content.note + content.note) > 0": over the expression limits: a string of 2000000 bytes (at most 1048576)
	// true
}

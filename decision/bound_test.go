package decision_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/policy"
)

// shopSrc binds decide expressions to two decision points: a seller
// offers tea and passes on anything else; the buyer, at the join,
// accepts the cheapest offer and rejects the others.
const shopSrc = `policy: shop
version: 1
roles:
  Buyer: {}
  Seller: {many: true}
messages:
  ask: {performative: cfp, fields: {item: string}}
  offer: {performative: propose, fields: {price: number}}
  pass: refuse
  accept: accept-proposal
  reject: {performative: reject-proposal, fields: {reason: optional string}}
timers:
  wait: 30s
states:
  start:
    - {send: ask, from: Buyer, to: Seller, next: asked}
  asked:
    arm: wait
    decide: 'content.item == "tea" ? {"choice": "offer", "content": {"price": len(peer)}} : "pass"'
    on:
      - {send: offer, from: Seller, to: Buyer, next: offered}
      - {send: pass, from: Seller, to: Buyer, next: passed}
      - {timeout: wait, next: passed}
  offered:
    join: true
    arm: wait
    decide: |
      content.price == min(map(sessions, .content.price))
        ? "accept"
        : {"choice": "reject", "content": {"reason": "too dear"}}
    on:
      - {send: accept, from: Buyer, to: Seller, next: sold}
      - {send: reject, from: Buyer, to: Seller, next: passed}
      - {timeout: wait, next: passed}
  sold: {terminal: sold}
  passed: {terminal: passed}
`

func loadShop(t *testing.T, edits ...string) *policy.Policy {
	t.Helper()
	src := shopSrc
	for i := 0; i+1 < len(edits); i += 2 {
		require.Contains(t, src, edits[i])
		src = strings.Replace(src, edits[i], edits[i+1], 1)
	}
	p, ds := policy.LoadYAML("shop.yaml", []byte(src))
	require.False(t, ds.HasErrors(), "%v", ds)
	return p
}

func TestFromPolicy(t *testing.T) {
	d, err := decision.FromPolicy(loadShop(t))
	require.NoError(t, err)
	ctx := context.Background()
	tests := []struct {
		name    string
		req     decision.Request
		want    decision.Answer
		wantErr error
	}{
		{name: "a choice with content", req: decision.Request{Policy: "shop", Point: "asked", Peer: "bob", Choices: []string{"offer", "pass"}, Content: map[string]any{"item": "tea"}},
			want: decision.Answer{Choice: "offer", Content: map[string]any{"price": 3}}},
		{name: "a plain choice", req: decision.Request{Policy: "shop", Point: "asked", Peer: "bob", Content: map[string]any{"item": "coffee"}},
			want: decision.Answer{Choice: "pass"}},
		{name: "a join", req: decision.Request{Policy: "shop", Point: "offered", Sessions: []decision.Session{
			{Peer: "bob", Choices: []string{"accept", "reject"}, Content: map[string]any{"price": 3}},
			{Peer: "carol", Choices: []string{"accept", "reject"}, Content: map[string]any{"price": 5}},
			{Peer: "dave", Choices: []string{"accept", "reject"}, Content: map[string]any{"price": 4}},
		}}, want: decision.Answer{Sessions: map[string]decision.SessionAnswer{
			"bob":   {Choice: "accept"},
			"carol": {Choice: "reject", Content: map[string]any{"reason": "too dear"}},
			"dave":  {Choice: "reject", Content: map[string]any{"reason": "too dear"}},
		}}},
		{name: "a point without decide", req: decision.Request{Policy: "shop", Point: "start"}, wantErr: decision.ErrNoDecision},
		{name: "an unknown point", req: decision.Request{Policy: "shop", Point: "nowhere"}, wantErr: decision.ErrNoDecision},
		{name: "another policy", req: decision.Request{Policy: "fipa-request", Point: "asked"}, wantErr: decision.ErrNoDecision},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := d.Decide(ctx, &tt.req)
			if tt.wantErr != nil {
				assert.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, a)
		})
	}
}

func TestFromPolicyErrors(t *testing.T) {
	ctx := context.Background()
	asked := `'content.item == "tea" ? {"choice": "offer", "content": {"price": len(peer)}} : "pass"'`
	tests := []struct {
		name    string
		decide  string // replaces the decide of asked
		req     decision.Request
		wantErr string
	}{
		{name: "not a choice", decide: `'len(peer)'`, req: decision.Request{Policy: "shop", Point: "asked", Peer: "bob"},
			wantErr: "decision: a decide expression must return a choice or {choice, content}, not int"},
		{name: "a map without a choice", decide: `'{"content": {}}'`, req: decision.Request{Policy: "shop", Point: "asked"},
			wantErr: `decision: a decide expression returning a map must set "choice" to a string`},
		{name: "content that is not a map", decide: `'{"choice": "offer", "content": 3}'`, req: decision.Request{Policy: "shop", Point: "asked"},
			wantErr: `decision: "content" must be a map, not int`},
		{name: "an evaluation error", decide: `'content.item[5]'`, req: decision.Request{Policy: "shop", Point: "asked", Content: map[string]any{"item": "tea"}},
			wantErr: `shop.yaml:19:26: expression "content.item[5]": index out of range: 5 (array length is 3)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := decision.FromPolicy(loadShop(t, asked, tt.decide))
			require.NoError(t, err)
			_, err = d.Decide(ctx, &tt.req)
			assert.EqualError(t, err, tt.wantErr)
		})
	}

	t.Run("a join expression failing for one session", func(t *testing.T) {
		d, err := decision.FromPolicy(loadShop(t, `? "accept"`, `? ({"choice": 1})`))
		require.NoError(t, err)
		_, err = d.Decide(ctx, &decision.Request{Policy: "shop", Point: "offered", Sessions: []decision.Session{
			{Peer: "bob", Content: map[string]any{"price": 3}},
			{Peer: "carol", Content: map[string]any{"price": 5}},
		}})
		assert.EqualError(t, err, `session "bob": decision: a decide expression returning a map must set "choice" to a string`)
	})

	t.Run("a decide that does not compile", func(t *testing.T) {
		p := loadShop(t)
		p.State("asked").Decide = &policy.Expr{Src: "choices[", Pos: policy.Pos{File: "shop.yaml", Line: 19, Col: 14}}
		_, err := decision.FromPolicy(p)
		require.Error(t, err)
		var ee *decision.EvalError
		assert.True(t, errors.As(err, &ee))
		assert.Contains(t, err.Error(), "shop.yaml:19:")
	})
}

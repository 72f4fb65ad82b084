package decision_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/decision"
)

// fixed returns a decider that always answers choice.
func fixed(choice string) decision.Decider {
	return decision.Func(func(context.Context, *decision.Request) (decision.Answer, error) {
		return decision.Answer{Choice: choice}, nil
	})
}

// none is a decider with nothing to say.
var none = decision.Func(func(context.Context, *decision.Request) (decision.Answer, error) {
	return decision.Answer{}, decision.ErrNoDecision
})

func TestFunc(t *testing.T) {
	var got *decision.Request
	d := decision.Func(func(_ context.Context, req *decision.Request) (decision.Answer, error) {
		got = req
		return decision.Answer{Choice: req.Choices[0], Content: map[string]any{"done": true}}, nil
	})
	req := &decision.Request{Policy: "fipa-request", Point: "agreed", Choices: []string{"inform-done", "failure"}}
	a, err := d.Decide(context.Background(), req)
	require.NoError(t, err)
	assert.Same(t, req, got)
	assert.Equal(t, decision.Answer{Choice: "inform-done", Content: map[string]any{"done": true}}, a)
}

func TestChain(t *testing.T) {
	broken := decision.Func(func(context.Context, *decision.Request) (decision.Answer, error) {
		return decision.Answer{}, errors.New("decider down")
	})
	req := &decision.Request{Policy: "fipa-request", Point: "requested"}
	tests := []struct {
		name     string
		deciders []decision.Decider
		want     string
		wantErr  string
		noDecide bool
	}{
		{name: "first that decides", deciders: []decision.Decider{fixed("agree"), fixed("refuse")}, want: "agree"},
		{name: "skips ErrNoDecision", deciders: []decision.Decider{none, none, fixed("refuse")}, want: "refuse"},
		{name: "an error stops the chain", deciders: []decision.Decider{none, broken, fixed("refuse")}, wantErr: "decider down"},
		{name: "nobody decides", deciders: []decision.Decider{none, none}, wantErr: `decision: no decider for this decision point "requested" of policy "fipa-request"`, noDecide: true},
		{name: "empty chain", wantErr: `decision: no decider for this decision point "requested" of policy "fipa-request"`, noDecide: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := decision.Chain(tt.deciders...).Decide(context.Background(), req)
			if tt.wantErr != "" {
				assert.EqualError(t, err, tt.wantErr)
				assert.Equal(t, tt.noDecide, errors.Is(err, decision.ErrNoDecision))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, a.Choice)
		})
	}
}

func TestRegistry(t *testing.T) {
	var r decision.Registry // the zero Registry is ready to use
	assert.Nil(t, r.Lookup("fipa-request", "requested"))
	_, err := r.Decide(context.Background(), &decision.Request{Policy: "fipa-request", Point: "requested"})
	assert.ErrorIs(t, err, decision.ErrNoDecision)

	r.Register("fipa-request", "", fixed("policy-wide"))
	r.Register("fipa-request", "requested", fixed("agree"))
	r.Register("fipa-query", "if-queried", fixed("inform-tf"))
	tests := []struct {
		name   string
		policy string
		point  string
		want   string // "" for no decider
	}{
		{"the point's own decider first", "fipa-request", "requested", "agree"},
		{"then the policy's", "fipa-request", "agreed", "policy-wide"},
		{"another policy's point", "fipa-query", "if-queried", "inform-tf"},
		{"nothing for the policy's other points", "fipa-query", "ref-queried", ""},
		{"nothing for other policies", "fipa-contract-net", "requested", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := r.Lookup(tt.policy, tt.point)
			a, err := r.Decide(context.Background(), &decision.Request{Policy: tt.policy, Point: tt.point})
			if tt.want == "" {
				assert.Nil(t, d)
				assert.ErrorIs(t, err, decision.ErrNoDecision)
				return
			}
			require.NotNil(t, d)
			require.NoError(t, err)
			assert.Equal(t, tt.want, a.Choice)
		})
	}

	t.Run("register replaces", func(t *testing.T) {
		r.Register("fipa-request", "requested", fixed("refuse"))
		a, err := r.Decide(context.Background(), &decision.Request{Policy: "fipa-request", Point: "requested"})
		require.NoError(t, err)
		assert.Equal(t, "refuse", a.Choice)
	})

	t.Run("in a chain", func(t *testing.T) {
		var empty decision.Registry
		a, err := decision.Chain(&empty, &r).Decide(context.Background(), &decision.Request{Policy: "fipa-query", Point: "if-queried"})
		require.NoError(t, err)
		assert.Equal(t, "inform-tf", a.Choice)
	})

	t.Run("concurrent use", func(t *testing.T) {
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				point := fmt.Sprintf("p%d", i)
				r.Register("concurrent", point, fixed(point))
				a, err := r.Decide(context.Background(), &decision.Request{Policy: "concurrent", Point: point})
				assert.NoError(t, err)
				assert.Equal(t, point, a.Choice)
			}()
		}
		wg.Wait()
	})
}

func TestABLE(t *testing.T) {
	content := map[string]any{"action": "paint"}
	vars := map[string]any{"n": 1}
	req := &decision.Request{
		ConversationID: "c1", Policy: "fipa-request", Point: "requested",
		Choices: []string{"agree", "refuse"}, Content: content, Vars: vars,
	}
	type call struct {
		conv, point string
		data        []any
	}
	tests := []struct {
		name      string
		decision  string
		form      []any
		want      decision.Answer
		wantErr   string
		wantCalls []call
	}{
		{name: "no form data", decision: "agree", want: decision.Answer{Choice: "agree"}},
		{name: "one map", decision: "refuse", form: []any{map[string]any{"reason": "busy"}},
			want: decision.Answer{Choice: "refuse", Content: map[string]any{"reason": "busy"}}},
		{name: "names and values", decision: "refuse", form: []any{"reason", "busy", "retry", true},
			want: decision.Answer{Choice: "refuse", Content: map[string]any{"reason": "busy", "retry": true}}},
		{name: "one value that is not a map", decision: "refuse", form: []any{"busy"},
			wantErr: "decision: form data must be one map or alternating names and values, not 1 items"},
		{name: "an odd number of items", decision: "refuse", form: []any{"reason", "busy", "retry"},
			wantErr: "decision: form data must be one map or alternating names and values, not 3 items"},
		{name: "a name that is not a string", decision: "refuse", form: []any{"reason", "busy", 7, true},
			wantErr: "decision: form data item 2 (int) is not a field name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls []call
			d := decision.ABLE(func(conv, point string, data []any) (string, []any) {
				calls = append(calls, call{conv, point, data})
				return tt.decision, tt.form
			})
			a, err := d.Decide(context.Background(), req)
			require.Len(t, calls, 1)
			assert.Equal(t, call{"c1", "requested", []any{content, vars, []string{"agree", "refuse"}}}, calls[0],
				"data is [content, vars, choices]")
			if tt.wantErr != "" {
				assert.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, a)
		})
	}

	t.Run("join", func(t *testing.T) {
		join := &decision.Request{ConversationID: "c1", Policy: "fipa-contract-net", Point: "proposed", Sessions: []decision.Session{
			{Peer: "bob", Choices: []string{"accept-proposal", "reject-proposal"}, Content: map[string]any{"price": 10}},
			{Peer: "carol", Choices: []string{"accept-proposal", "reject-proposal"}, Content: map[string]any{"price": 12}},
		}}
		var calls []call
		d := decision.ABLE(func(conv, point string, data []any) (string, []any) {
			calls = append(calls, call{conv, point, data})
			if data[0].(map[string]any)["price"] == 10 {
				return "accept-proposal", nil
			}
			return "reject-proposal", []any{"reason", "too dear"}
		})
		a, err := d.Decide(context.Background(), join)
		require.NoError(t, err)
		assert.Equal(t, decision.Answer{Sessions: map[string]decision.SessionAnswer{
			"bob":   {Choice: "accept-proposal"},
			"carol": {Choice: "reject-proposal", Content: map[string]any{"reason": "too dear"}},
		}}, a)
		assert.Equal(t, []call{
			{"c1", "proposed/bob", []any{map[string]any{"price": 10}, map[string]any(nil), []string{"accept-proposal", "reject-proposal"}}},
			{"c1", "proposed/carol", []any{map[string]any{"price": 12}, map[string]any(nil), []string{"accept-proposal", "reject-proposal"}}},
		}, calls)
	})

	t.Run("join with bad form data", func(t *testing.T) {
		join := &decision.Request{Point: "proposed", Sessions: []decision.Session{{Peer: "bob"}}}
		d := decision.ABLE(func(string, string, []any) (string, []any) { return "reject-proposal", []any{1} })
		_, err := d.Decide(context.Background(), join)
		assert.EqualError(t, err, "decision: form data must be one map or alternating names and values, not 1 items")
	})
}

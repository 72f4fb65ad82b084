package forms_test

import (
	"fmt"
	"time"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policies"
	"github.com/parleyhq/parley/policy"
)

// matchRule evaluates a message type's match expression against a
// message, as the engine does: with the message's content and envelope.
type matchRule struct{ expr *decision.Expression }

func (r matchRule) Match(m *forms.Message) (bool, error) {
	return r.expr.Bool(&decision.Env{Content: m.Content, Msg: m.Envelope()})
}

// formsOf compiles the forms of the named message types of p.
func formsOf(p *policy.Policy, names ...string) ([]*forms.Form, error) {
	var out []*forms.Form
	for _, name := range names {
		mt := p.Message(name)
		if mt == nil {
			return nil, fmt.Errorf("policy %s has no message type %s", p.Name, name)
		}
		var match forms.Predicate
		if mt.Match != nil {
			expr, err := decision.Compile(mt.Match)
			if err != nil {
				return nil, err
			}
			match = matchRule{expr}
		}
		f, err := forms.New(mt, match)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// A form for a message type written in Go. A type with a match rule needs
// a Predicate that evaluates it; forms does not evaluate expressions.
func ExampleNew() {
	offer := &policy.MessageType{Name: "offer", Performative: "propose", Fields: []*policy.Field{
		{Name: "price", Type: policy.TypeNumber},
		{Name: "note", Type: policy.TypeString, Optional: true},
	}}
	f, err := forms.New(offer, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(f.Type.Name, f.Type.Performative, "match rule:", f.HasMatch())
	fmt.Println(f.Matches(&forms.Message{Performative: "propose"}), f.Matches(&forms.Message{Performative: "inform"}))

	offer.Match = &policy.Expr{Src: `"price" in content`}
	_, err = forms.New(offer, nil)
	fmt.Println(err)
	// Output:
	// offer propose match rule: false
	// true false
	// forms: message type "offer": match rule and predicate must be given together
}

// Classify tells apart the message types that share a performative by
// their match rules: FIPA Query's three kinds of inform.
func ExampleClassify() {
	p, err := policies.Load("fipa-query")
	if err != nil {
		fmt.Println(err)
		return
	}
	candidates, err := formsOf(p, "inform-tf", "inform-result", "inform-done", "refuse")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range []*forms.Message{
		{Performative: "inform", Content: map[string]any{"holds": true}},
		{Performative: "inform", Content: map[string]any{"result": []any{"sku 4711"}}},
		{Performative: "inform", Content: map[string]any{"done": true}},
		{Performative: "refuse", Content: map[string]any{"reason": "busy"}},
		{Performative: "agree"},
	} {
		name := "no message type"
		if f := forms.Classify(m, candidates); f != nil {
			name = f.Type.Name
		}
		fmt.Printf("%s %v: %s\n", m.Performative, m.Content, name)
	}
	// Output:
	// inform map[holds:true]: inform-tf
	// inform map[result:[sku 4711]]: inform-result
	// inform map[done:true]: inform-done
	// refuse map[reason:busy]: refuse
	// agree map[]: no message type
}

// Validate checks content against a message type's fields: required
// fields are present, declared fields have their types, and anything else
// the content carries is allowed.
func ExampleForm_Validate() {
	p, err := policies.Load("fipa-query")
	if err != nil {
		fmt.Println(err)
		return
	}
	fs, err := formsOf(p, "inform-tf", "refuse")
	if err != nil {
		fmt.Println(err)
		return
	}
	informTF, refuse := fs[0], fs[1]
	for _, c := range []struct {
		form    *forms.Form
		content map[string]any
	}{
		{informTF, map[string]any{"holds": false, "source": "stock list"}},
		{informTF, map[string]any{"holds": "yes"}},
		{informTF, map[string]any{}},
		{refuse, nil},
		{refuse, map[string]any{"reason": 42.0}},
	} {
		fmt.Printf("%s %v: %v\n", c.form.Type.Name, c.content, c.form.Validate(c.content))
	}
	// Output:
	// inform-tf map[holds:false source:stock list]: <nil>
	// inform-tf map[holds:yes]: field "holds" of "inform-tf" is a string, not a bool
	// inform-tf map[]: field "holds" of "inform-tf" is required but missing
	// refuse map[]: <nil>
	// refuse map[reason:42]: field "reason" of "refuse" is a number, not a string
}

// Build makes an outbound message of a form's type from decision data and
// the conversation's parameters; it validates the content first.
func ExampleForm_Build() {
	p, err := policies.Load("fipa-request")
	if err != nil {
		fmt.Println(err)
		return
	}
	fs, err := formsOf(p, "inform-result")
	if err != nil {
		fmt.Println(err)
		return
	}
	params := forms.Params{
		Sender: "bob", Receivers: []string{"alice"}, ConversationID: "c1",
		ReplyWith: "c1/bob#2", InReplyTo: "c1/alice#1", Protocol: "fipa-request",
		ReplyBy: time.Date(2026, 3, 1, 9, 5, 0, 0, time.UTC),
	}
	var m forms.Message
	if err := fs[0].Build(&m, map[string]any{"result": "the fence is green"}, params); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.Performative, m.Sender, m.Receivers, m.ConversationID, m.InReplyTo, m.Language, m.Content)
	t, ok := forms.Time(&m, "reply_by")
	fmt.Println("reply_by:", t.Format(time.RFC3339), ok)

	fmt.Println(fs[0].Build(&m, map[string]any{"done": true}, params))
	// Output:
	// inform bob [alice] c1 c1/alice#1 json map[result:the fence is green]
	// reply_by: 2026-03-01T09:05:00Z true
	// field "result" of "inform-result" is required but missing
}

package forms_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policy"
)

// predicate is a match rule written in Go.
type predicate func(m *forms.Message) (bool, error)

func (p predicate) Match(m *forms.Message) (bool, error) { return p(m) }

func has(key string) predicate {
	return func(m *forms.Message) (bool, error) { _, ok := m.Content[key]; return ok, nil }
}

func hasNot(key string) predicate {
	return func(m *forms.Message) (bool, error) { _, ok := m.Content[key]; return !ok, nil }
}

func failing(*forms.Message) (bool, error) { return false, errors.New("boom") }

// form compiles a message type with an optional match rule.
func form(t *testing.T, name, perf string, match forms.Predicate, fields ...*policy.Field) *forms.Form {
	t.Helper()
	mt := &policy.MessageType{Name: name, Performative: perf, Fields: fields}
	if match != nil {
		mt.Match = &policy.Expr{Src: "match of " + name}
	}
	f, err := forms.New(mt, match)
	require.NoError(t, err)
	return f
}

func field(name string, typ policy.FieldType, optional bool) *policy.Field {
	return &policy.Field{Name: name, Type: typ, Optional: optional}
}

func TestNewNeedsMatchRuleAndPredicateTogether(t *testing.T) {
	_, err := forms.New(&policy.MessageType{Name: "inform-done", Performative: "inform", Match: &policy.Expr{Src: "true"}}, nil)
	assert.EqualError(t, err, `forms: message type "inform-done": match rule and predicate must be given together`)
	_, err = forms.New(&policy.MessageType{Name: "agree", Performative: "agree"}, has("x"))
	assert.EqualError(t, err, `forms: message type "agree": match rule and predicate must be given together`)
}

func TestClassify(t *testing.T) {
	plain := form(t, "inform", "inform", nil)
	plain2 := form(t, "inform-too", "inform", nil)
	done := form(t, "inform-done", "inform", hasNot("result"))
	result := form(t, "inform-result", "inform", has("result"))
	broken := form(t, "inform-broken", "inform", predicate(failing))
	agree := form(t, "agree", "agree", nil)
	tests := []struct {
		name       string
		msg        forms.Message
		candidates []*forms.Form
		want       *forms.Form
	}{
		{"match rules decide", forms.Message{Performative: "inform", Content: map[string]any{"result": 1}}, []*forms.Form{done, result}, result},
		{"match rules decide the other way", forms.Message{Performative: "inform", Content: map[string]any{"done": true}}, []*forms.Form{done, result}, done},
		{"no content has no result", forms.Message{Performative: "inform"}, []*forms.Form{result, done}, done},
		{"a match rule beats no rule listed first", forms.Message{Performative: "inform", Content: map[string]any{"result": 1}}, []*forms.Form{plain, result}, result},
		{"no rule is the fallback", forms.Message{Performative: "inform", Content: map[string]any{"x": 1}}, []*forms.Form{result, plain}, plain},
		{"the first fallback wins", forms.Message{Performative: "inform"}, []*forms.Form{plain2, plain}, plain2},
		{"a failing rule does not match", forms.Message{Performative: "inform"}, []*forms.Form{broken, plain}, plain},
		{"a failing rule alone matches nothing", forms.Message{Performative: "inform"}, []*forms.Form{broken}, nil},
		{"performative first", forms.Message{Performative: "agree"}, []*forms.Form{done, result, agree}, agree},
		{"no performative matches", forms.Message{Performative: "refuse"}, []*forms.Form{done, result, agree}, nil},
		{"no candidates", forms.Message{Performative: "inform"}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := forms.Classify(&tt.msg, tt.candidates)
			if tt.want == nil {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.Equal(t, tt.want.Type.Name, got.Type.Name)
		})
	}
}

func TestMatches(t *testing.T) {
	result := form(t, "inform-result", "inform", has("result"))
	agree := form(t, "agree", "agree", nil)
	assert.True(t, result.Matches(&forms.Message{Performative: "inform", Content: map[string]any{"result": nil}}))
	assert.False(t, result.Matches(&forms.Message{Performative: "inform"}))
	assert.False(t, result.Matches(&forms.Message{Performative: "agree", Content: map[string]any{"result": 1}}))
	assert.True(t, agree.Matches(&forms.Message{Performative: "agree"}))
	assert.True(t, result.HasMatch())
	assert.False(t, agree.HasMatch())
}

func TestValidate(t *testing.T) {
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		field   *policy.Field
		content map[string]any
		want    string // the error, "" for none
	}{
		{"string", field("reason", policy.TypeString, false), map[string]any{"reason": "busy"}, ""},
		{"string is a number", field("reason", policy.TypeString, false), map[string]any{"reason": 42}, `field "reason" of "m" is a number, not a string`},
		{"string is a bool", field("reason", policy.TypeString, false), map[string]any{"reason": true}, `field "reason" of "m" is a bool, not a string`},
		{"required missing", field("reason", policy.TypeString, false), map[string]any{}, `field "reason" of "m" is required but missing`},
		{"required null", field("reason", policy.TypeString, false), map[string]any{"reason": nil}, `field "reason" of "m" is required but missing`},
		{"required with no content", field("reason", policy.TypeString, false), nil, `field "reason" of "m" is required but missing`},
		{"optional missing", field("reason", policy.TypeString, true), nil, ""},
		{"optional null", field("reason", policy.TypeString, true), map[string]any{"reason": nil}, ""},
		{"optional present is checked", field("reason", policy.TypeString, true), map[string]any{"reason": 1.5}, `field "reason" of "m" is a number, not a string`},
		{"bool", field("holds", policy.TypeBool, false), map[string]any{"holds": false}, ""},
		{"bool is a string", field("holds", policy.TypeBool, false), map[string]any{"holds": "yes"}, `field "holds" of "m" is a string, not a bool`},
		{"number float64", field("price", policy.TypeNumber, false), map[string]any{"price": 9.5}, ""},
		{"number int", field("price", policy.TypeNumber, false), map[string]any{"price": 9}, ""},
		{"number int64", field("price", policy.TypeNumber, false), map[string]any{"price": int64(9)}, ""},
		{"number uint32", field("price", policy.TypeNumber, false), map[string]any{"price": uint32(9)}, ""},
		{"number float32", field("price", policy.TypeNumber, false), map[string]any{"price": float32(9)}, ""},
		{"number json.Number", field("price", policy.TypeNumber, false), map[string]any{"price": json.Number("9.5")}, ""},
		{"number bad json.Number", field("price", policy.TypeNumber, false), map[string]any{"price": json.Number("nine")}, `field "price" of "m" is a json.Number, not a number`},
		{"number is a string", field("price", policy.TypeNumber, false), map[string]any{"price": "9"}, `field "price" of "m" is a string, not a number`},
		{"int", field("count", policy.TypeInt, false), map[string]any{"count": 3}, ""},
		{"int as a whole float64", field("count", policy.TypeInt, false), map[string]any{"count": 3.0}, ""},
		{"int is a fraction", field("count", policy.TypeInt, false), map[string]any{"count": 3.5}, `field "count" of "m" is a number, not an int`},
		{"time", field("at", policy.TypeTime, false), map[string]any{"at": at}, ""},
		{"time as RFC 3339", field("at", policy.TypeTime, false), map[string]any{"at": "2026-03-01T09:00:00Z"}, ""},
		{"time as RFC 3339 with fraction and zone", field("at", policy.TypeTime, false), map[string]any{"at": "2026-03-01T09:00:00.5+01:00"}, ""},
		{"time is not RFC 3339", field("at", policy.TypeTime, false), map[string]any{"at": "tomorrow"}, `field "at" of "m" is "tomorrow", not an RFC 3339 time`},
		{"time is a number", field("at", policy.TypeTime, false), map[string]any{"at": 1}, `field "at" of "m" is a number, not a time`},
		{"duration", field("wait", policy.TypeDuration, false), map[string]any{"wait": time.Second}, ""},
		{"duration as a string", field("wait", policy.TypeDuration, false), map[string]any{"wait": "1m30s"}, ""},
		{"duration is not one", field("wait", policy.TypeDuration, false), map[string]any{"wait": "soon"}, `field "wait" of "m" is "soon", not a duration`},
		{"duration is a number", field("wait", policy.TypeDuration, false), map[string]any{"wait": 30}, `field "wait" of "m" is a number, not a duration`},
		{"a megabyte time is quoted bounded", field("at", policy.TypeTime, false), map[string]any{"at": strings.Repeat("t", 1<<20)}, `field "at" of "m" is ` + policy.Quote(strings.Repeat("t", 1<<20)) + `, not an RFC 3339 time`},
		{"a megabyte duration is quoted bounded", field("wait", policy.TypeDuration, false), map[string]any{"wait": strings.Repeat("d", 1<<20)}, `field "wait" of "m" is ` + policy.Quote(strings.Repeat("d", 1<<20)) + `, not a duration`},
		{"list", field("items", policy.TypeList, false), map[string]any{"items": []any{1, "x"}}, ""},
		{"list is a map", field("items", policy.TypeList, false), map[string]any{"items": map[string]any{}}, `field "items" of "m" is a map, not a list`},
		{"list of strings is not a JSON list", field("items", policy.TypeList, false), map[string]any{"items": []string{"x"}}, `field "items" of "m" is a []string, not a list`},
		{"map", field("terms", policy.TypeMap, false), map[string]any{"terms": map[string]any{"a": 1}}, ""},
		{"map is a list", field("terms", policy.TypeMap, false), map[string]any{"terms": []any{}}, `field "terms" of "m" is a list, not a map`},
		{"any", field("result", policy.TypeAny, false), map[string]any{"result": []any{}}, ""},
		{"any still required", field("result", policy.TypeAny, false), map[string]any{}, `field "result" of "m" is required but missing`},
		{"undeclared fields are allowed", field("reason", policy.TypeString, true), map[string]any{"extra": 1}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := form(t, "m", "inform", nil, tt.field).Validate(tt.content)
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tt.want, err.Error())
			var ce *forms.ContentError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, "m", ce.Type)
			assert.Equal(t, tt.field.Name, ce.Field)
		})
	}
}

func TestContentErrorWithoutField(t *testing.T) {
	err := &forms.ContentError{Type: "inform", Reason: "is not a JSON object"}
	assert.Equal(t, `content of "inform" is not a JSON object`, err.Error())
}

func TestBuild(t *testing.T) {
	replyBy := time.Date(2026, 3, 1, 9, 0, 30, 0, time.UTC)
	params := forms.Params{
		Sender: "bob", Receivers: []string{"alice"}, ConversationID: "c1",
		ReplyWith: "c1#2", InReplyTo: "c1#1", ReplyBy: replyBy, Protocol: "fipa-request",
	}
	t.Run("sets every parameter", func(t *testing.T) {
		f := form(t, "refuse", "refuse", nil, field("reason", policy.TypeString, true))
		content := map[string]any{"reason": "busy"}
		m := forms.Message{Ontology: "left over", Performative: "junk"}
		require.NoError(t, f.Build(&m, content, params))
		assert.Equal(t, forms.Message{
			Performative: "refuse", Sender: "bob", Receivers: []string{"alice"}, Content: content, Language: "json",
			Protocol: "fipa-request", ConversationID: "c1", ReplyWith: "c1#2", InReplyTo: "c1#1", ReplyBy: replyBy,
		}, m)
		content["reason"] = "changed"
		assert.Equal(t, "changed", m.Content["reason"], "Build does not copy the content")
	})
	t.Run("no content and no fields has no language", func(t *testing.T) {
		f := form(t, "agree", "agree", nil)
		var m forms.Message
		require.NoError(t, f.Build(&m, nil, params))
		assert.Equal(t, "", m.Language)
		assert.Nil(t, m.Content)
		assert.Equal(t, "agree", m.Performative)
	})
	t.Run("declared fields mean json even without content", func(t *testing.T) {
		f := form(t, "refuse", "refuse", nil, field("reason", policy.TypeString, true))
		var m forms.Message
		require.NoError(t, f.Build(&m, nil, params))
		assert.Equal(t, "json", m.Language)
	})
	t.Run("content that does not fit", func(t *testing.T) {
		f := form(t, "refuse", "refuse", nil, field("reason", policy.TypeString, true))
		m := forms.Message{Performative: "untouched"}
		err := f.Build(&m, map[string]any{"reason": 42}, params)
		assert.EqualError(t, err, `field "reason" of "refuse" is a number, not a string`)
		assert.Equal(t, "untouched", m.Performative, "a failed Build leaves the message alone")
	})
	t.Run("Fill overwrites every field", func(t *testing.T) {
		f := form(t, "agree", "agree", nil)
		var m forms.Message
		fillEveryField(t, &m, replyBy)
		f.Fill(&m, nil, forms.Params{Sender: "bob"})
		assert.Equal(t, forms.Message{Performative: "agree", Sender: "bob"}, m)
	})
	t.Run("Fill over the message it filled", func(t *testing.T) {
		f := form(t, "inform", "inform", nil, field("n", policy.TypeInt, false))
		p := forms.Params{Sender: "alice", Receivers: []string{"bob"}, Protocol: "p", ConversationID: "c", ReplyWith: "c/alice#2", InReplyTo: "c/bob#1", ReplyBy: replyBy}
		var want forms.Message
		require.NoError(t, f.Build(&want, map[string]any{"n": 1}, p))
		m := want
		f.Fill(&m, map[string]any{"n": 1}, p)
		assert.Equal(t, want, m)
		p.ReplyWith, p.ReplyBy = "c/alice#3", time.Time{}
		f.Fill(&m, map[string]any{"n": 2}, p)
		require.NoError(t, f.Build(&want, map[string]any{"n": 2}, p))
		assert.Equal(t, want, m)
	})
	t.Run("FillWith is Fill", func(t *testing.T) {
		f := form(t, "inform", "inform", nil, field("n", policy.TypeInt, false))
		content := map[string]any{"n": 1}
		for _, p := range []forms.Params{params, {Sender: "alice"}} {
			var want, got forms.Message
			fillEveryField(t, &want, replyBy)
			fillEveryField(t, &got, replyBy)
			f.Fill(&want, content, p)
			before := p
			f.FillWith(&got, content, &p)
			assert.Equal(t, want, got)
			assert.Equal(t, before, p, "FillWith only reads the parameters")
		}
	})
}

func TestTime(t *testing.T) {
	at := time.Date(2026, 3, 1, 9, 0, 30, 0, time.UTC)
	tests := []struct {
		name   string
		msg    forms.Message
		field  string
		want   time.Time
		wantOK bool
	}{
		{"reply_by", forms.Message{ReplyBy: at}, "reply_by", at, true},
		{"no reply_by", forms.Message{}, "reply_by", time.Time{}, false},
		{"reply_by is not content", forms.Message{Content: map[string]any{"reply_by": "2026-03-01T09:00:30Z"}}, "reply_by", time.Time{}, false},
		{"content time", forms.Message{Content: map[string]any{"due": at}}, "due", at, true},
		{"content RFC 3339", forms.Message{Content: map[string]any{"due": "2026-03-01T09:00:30Z"}}, "due", at, true},
		{"content not a time", forms.Message{Content: map[string]any{"due": "soon"}}, "due", time.Time{}, false},
		{"content a number", forms.Message{Content: map[string]any{"due": 5}}, "due", time.Time{}, false},
		{"content missing", forms.Message{}, "due", time.Time{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := forms.Time(&tt.msg, tt.field)
			assert.Equal(t, tt.wantOK, ok)
			assert.True(t, tt.want.Equal(got), "got %v, want %v", got, tt.want)
		})
	}
}

func TestMessage(t *testing.T) {
	at := time.Date(2026, 3, 1, 9, 0, 30, 0, time.UTC)
	m := &forms.Message{
		Performative: "inform", Sender: "bob", Receivers: []string{"alice", "carol"}, ReplyTo: "dave",
		Content: map[string]any{"done": true}, Language: "json", Encoding: "utf-8", Ontology: "paint",
		Protocol: "fipa-request", ConversationID: "c1", ReplyWith: "c1#2", InReplyTo: "c1#1", ReplyBy: at,
	}
	assert.Equal(t, policy.Envelope{
		Performative: "inform", Sender: "bob", Receivers: []string{"alice", "carol"}, ReplyTo: "dave",
		ConversationID: "c1", ReplyWith: "c1#2", InReplyTo: "c1#1", ReplyBy: at, Protocol: "fipa-request",
		Language: "json", Encoding: "utf-8", Ontology: "paint",
	}, m.Envelope())
	assert.True(t, m.HasReceiver("carol"))
	assert.False(t, m.HasReceiver("bob"))
	assert.False(t, (&forms.Message{}).HasReceiver(""))
}

// fillEveryField sets every field of m to a value that is not its zero,
// failing on a field of a kind it does not know: a field added to Message
// is then one Fill's test covers.
func fillEveryField(t *testing.T, m *forms.Message, at time.Time) {
	t.Helper()
	v := reflect.ValueOf(m).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch {
		case f.Kind() == reflect.String:
			f.SetString("x")
		case f.Type() == reflect.TypeOf([]string(nil)):
			f.Set(reflect.ValueOf([]string{"x"}))
		case f.Type() == reflect.TypeOf(map[string]any(nil)):
			f.Set(reflect.ValueOf(map[string]any{"x": 1}))
		case f.Type() == reflect.TypeOf(time.Time{}):
			f.Set(reflect.ValueOf(at))
		default:
			t.Fatalf("field %s of a kind the test does not fill", v.Type().Field(i).Name)
		}
	}
}

// ValidateKinds gives Validate's answer and error on every content the
// kinds of Fields.CheckContentKinds describe: fields of every type,
// optional or not, holding values of every kind or missing, looked up
// through Fields that name them first, after others, or not at all.
func TestValidateKindsAgreesWithValidate(t *testing.T) {
	values := []any{nil, "x", "2026-03-01T09:00:30Z", "5s", true, 0, 3, int64(-2), uint8(7), 1.0, 1.5, -0.0,
		float32(2), time.Second, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), []any{1}, map[string]any{}, json.Number("4")}
	other := form(t, "other", "inform", nil, field("z", policy.TypeString, false), field("a", policy.TypeInt, true))
	for _, typ := range policy.FieldTypes {
		for _, optional := range []bool{false, true} {
			f := form(t, "m", "inform", nil, field("a", typ, optional), field("b", policy.TypeNumber, true))
			fieldsTests := []struct {
				name   string
				fields forms.Fields
			}{
				{"the form's fields", forms.FieldsOf(f)},
				{"after another form's", forms.FieldsOf(other, f)},
				{"none", forms.FieldsOf()},
			}
			for _, ft := range fieldsTests {
				t.Run(string(typ)+"/"+strconv.FormatBool(optional)+"/"+ft.name, func(t *testing.T) {
					fs := ft.fields
					at := []int{fs.Position("a"), fs.Position("b")}
					contents := []map[string]any{nil, {}}
					for _, v := range values {
						contents = append(contents, map[string]any{"a": v}, map[string]any{"a": v, "b": 2}, map[string]any{"a": v, "b": "no"})
					}
					for _, c := range contents {
						kinds, err := fs.CheckContentKinds(c, forms.DefaultLimits)
						require.Equal(t, forms.CheckContent(c, forms.DefaultLimits), err, "content %v", c)
						if err != nil {
							continue
						}
						want := f.Validate(c)
						assert.Equal(t, want, f.ValidateKinds(c, kinds, at), "content %v", c)
						assert.Equal(t, want, f.ValidateKinds(c, 0, at), "content %v, no kinds", c)
						assert.Equal(t, want, f.ValidateKinds(c, kinds, at[:1]), "content %v, positions of another form", c)
					}
				})
			}
		}
	}
}

// A type without fields passes every content, as Validate does, whatever
// kinds and positions ValidateKinds is given.
func TestValidateKindsOfATypeWithoutFields(t *testing.T) {
	f := form(t, "m", "request", nil)
	other := form(t, "other", "inform", nil, field("a", policy.TypeInt, false))
	fs := forms.FieldsOf(other, f)
	tests := []struct {
		name    string
		content map[string]any
		at      []int
	}{
		{name: "nil content", content: nil},
		{name: "empty content", content: map[string]any{}},
		{name: "a field of another type", content: map[string]any{"a": "not an int"}},
		{name: "a field no type declares", content: map[string]any{"action": "x"}},
		{name: "positions of another form", content: map[string]any{"a": 1}, at: []int{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, f.Validate(tt.content))
			kinds, err := fs.CheckContentKinds(tt.content, forms.DefaultLimits)
			require.NoError(t, err)
			assert.NoError(t, f.ValidateKinds(tt.content, kinds, tt.at))
			assert.NoError(t, f.ValidateKinds(tt.content, 0, tt.at))
		})
	}
}

package forms

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/parleyhq/parley/internal/reuse"
	"github.com/parleyhq/parley/policy"
)

// Predicate evaluates a message type's match rule against a message.
type Predicate interface {
	Match(m *Message) (bool, error)
}

// Form is a compiled message type: it recognises, validates and builds
// messages of that type.
type Form struct {
	Type  *policy.MessageType
	match Predicate
	// fit holds, for each field of Type, a bit for each kind of value
	// that fits it (see fits), for ValidateKinds.
	fit []uint16
}

// New compiles the form of message type mt. match evaluates mt's match
// rule; it must be non-nil exactly when mt has one.
func New(mt *policy.MessageType, match Predicate) (*Form, error) {
	if (mt.Match != nil) != (match != nil) {
		return nil, fmt.Errorf("forms: message type %s: match rule and predicate must be given together", policy.Quote(mt.Name))
	}
	f := &Form{Type: mt, match: match, fit: make([]uint16, len(mt.Fields))}
	for i, fd := range mt.Fields {
		for k := range kindDuration + 1 {
			if fits(fd, k) {
				f.fit[i] |= 1 << k
			}
		}
	}
	return f, nil
}

// HasMatch reports whether the form has a match rule, which makes it more
// specific than a form of the same performative without one.
func (f *Form) HasMatch() bool { return f.match != nil }

// Matches reports whether m is of this form's type: the performative is
// the type's and the match rule, if any, holds. A match rule that fails to
// evaluate does not match.
func (f *Form) Matches(m *Message) bool {
	if m.Performative != f.Type.Performative {
		return false
	}
	if f.match == nil {
		return true
	}
	ok, err := f.match.Match(m)
	return err == nil && ok
}

// Classify returns the first of candidates that m matches, trying forms
// with a match rule before those without, or nil.
func Classify(m *Message, candidates []*Form) *Form {
	var fallback *Form
	for _, f := range candidates {
		if m.Performative != f.Type.Performative {
			continue
		}
		if f.match == nil {
			if fallback == nil {
				fallback = f
			}
			continue
		}
		if f.Matches(m) {
			return f
		}
	}
	return fallback
}

// ContentError describes content that does not fit a message type.
type ContentError struct {
	Type   string
	Field  string
	Reason string
}

func (e *ContentError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("content of %s %s", policy.Quote(e.Type), e.Reason)
	}
	return fmt.Sprintf("field %s of %s %s", policy.Quote(e.Field), policy.Quote(e.Type), e.Reason)
}

// Validate checks content against the type's fields: every required field
// is present and every declared field has its type. Fields the type does
// not declare are allowed (content may carry more than a policy names).
func (f *Form) Validate(content map[string]any) error {
	for _, fd := range f.Type.Fields {
		v, ok := content[fd.Name]
		if !ok || v == nil {
			if fd.Optional {
				continue
			}
			return &ContentError{Type: f.Type.Name, Field: fd.Name, Reason: "is required but missing"}
		}
		if reason := checkType(fd.Type, v); reason != "" {
			return &ContentError{Type: f.Type.Name, Field: fd.Name, Reason: reason}
		}
	}
	return nil
}

// ValidateKinds is Validate(content), with the same answer and error,
// for content whose kinds (from Fields.CheckContentKinds of fields)
// already tell that every field of the type has a value of its type or
// is optional and missing: then it looks up none. at holds, for each
// field of the type in order, its Position in fields. Any other content
// (a kind unknown, or that does not fit) is validated by Validate.
//
// It reads the type's fields as New found them. For a type without
// fields, which Validate passes whatever the content, it is small enough
// to be inlined and returns nil at once.
func (f *Form) ValidateKinds(content map[string]any, kinds Kinds, at []int) error {
	if len(f.fit) == 0 {
		return nil
	}
	return f.validateKinds(content, kinds, at)
}

// validateKinds is ValidateKinds for a type with fields.
func (f *Form) validateKinds(content map[string]any, kinds Kinds, at []int) error {
	if len(at) != len(f.fit) {
		return f.Validate(content)
	}
	for i, fit := range f.fit {
		if fit&(1<<kinds.of(at[i])) == 0 {
			return f.Validate(content)
		}
	}
	return nil
}

// fits says whether a value of kind k is one Validate accepts for field
// fd; false when it cannot tell from the kind.
func fits(fd *policy.Field, k kind) bool {
	switch k {
	case kindUnknown:
		return false
	case kindAbsent, kindNil:
		return fd.Optional
	}
	switch fd.Type {
	case policy.TypeString:
		return k == kindString
	case policy.TypeBool:
		return k == kindBool
	case policy.TypeNumber:
		return k == kindInt || k == kindWhole || k == kindFraction
	case policy.TypeInt:
		return k == kindInt || k == kindWhole
	case policy.TypeDuration:
		return k == kindDuration
	case policy.TypeTime, policy.TypeList, policy.TypeMap:
		return false // a string to parse, or a value check does not decide
	}
	return true // any
}

// checkType returns why v is not a value of type t, or "".
func checkType(t policy.FieldType, v any) string {
	switch t {
	case policy.TypeString:
		if _, ok := v.(string); ok {
			return ""
		}
	case policy.TypeBool:
		if _, ok := v.(bool); ok {
			return ""
		}
	case policy.TypeNumber:
		if _, ok := number(v); ok {
			return ""
		}
	case policy.TypeInt:
		if n, ok := number(v); ok && n == math.Trunc(n) {
			return ""
		}
	case policy.TypeTime:
		switch x := v.(type) {
		case time.Time:
			return ""
		case string:
			if _, err := time.Parse(time.RFC3339Nano, x); err == nil {
				return ""
			}
			return fmt.Sprintf("is %s, not an RFC 3339 time", policy.Quote(x))
		}
	case policy.TypeDuration:
		switch x := v.(type) {
		case time.Duration:
			return ""
		case string:
			if _, err := time.ParseDuration(x); err == nil {
				return ""
			}
			return fmt.Sprintf("is %s, not a duration", policy.Quote(x))
		}
	case policy.TypeList:
		if _, ok := v.([]any); ok {
			return ""
		}
	case policy.TypeMap:
		if _, ok := v.(map[string]any); ok {
			return ""
		}
	default:
		return ""
	}
	article := "a"
	if t == policy.TypeInt {
		article = "an"
	}
	return fmt.Sprintf("is %s, not %s %s", describe(v), article, t)
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case int16:
		return float64(x), true
	case int8:
		return float64(x), true
	case uint:
		return float64(x), true
	case uint64:
		return float64(x), true
	case uint32:
		return float64(x), true
	case uint16:
		return float64(x), true
	case uint8:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

func describe(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a bool"
	case []any:
		return "a list"
	case map[string]any:
		return "a map"
	}
	if _, ok := number(v); ok {
		return "a number"
	}
	return fmt.Sprintf("a %T", v)
}

// Params are the conversation parameters the engine fills in when it
// builds an outbound message.
type Params struct {
	Sender         string
	Receivers      []string
	ConversationID string
	ReplyWith      string
	InReplyTo      string
	ReplyBy        time.Time
	Protocol       string
}

// Build fills m with a message of this form's type carrying content (which
// it does not copy) and p. It validates content first.
func (f *Form) Build(m *Message, content map[string]any, p Params) error {
	if err := f.Validate(content); err != nil {
		return err
	}
	f.Fill(m, content, p)
	return nil
}

// Fill is Build for content the caller has validated: it overwrites every
// field of m, whatever m held.
//
// A field already holding its value is not written again (see package
// reuse): a message reused for the next one keeps most of it.
func (f *Form) Fill(m *Message, content map[string]any, p Params) {
	f.FillWith(m, content, &p)
}

// FillWith is Fill with the parameters passed by pointer, which it only
// reads: a caller that builds them for each message it sends passes a
// word, where a Params is sixteen, copied to the call's arguments.
func (f *Form) FillWith(m *Message, content map[string]any, p *Params) {
	reuse.String(&m.Performative, f.Type.Performative)
	reuse.String(&m.Sender, p.Sender)
	reuse.Slice(&m.Receivers, p.Receivers)
	reuse.String(&m.ReplyTo, "")
	reuse.Map(&m.Content, content)
	language := ""
	if content != nil || len(f.Type.Fields) > 0 {
		language = "json"
	}
	reuse.String(&m.Language, language)
	reuse.String(&m.Encoding, "")
	reuse.String(&m.Ontology, "")
	reuse.String(&m.Protocol, p.Protocol)
	reuse.String(&m.ConversationID, p.ConversationID)
	reuse.String(&m.ReplyWith, p.ReplyWith)
	reuse.String(&m.InReplyTo, p.InReplyTo)
	reuse.Set(&m.ReplyBy, p.ReplyBy)
}

// Time reads field name of m as a time: the reply_by parameter or a
// content field holding a time or an RFC 3339 string.
func Time(m *Message, name string) (time.Time, bool) {
	if name == "reply_by" {
		return m.ReplyBy, !m.ReplyBy.IsZero()
	}
	switch v := m.Content[name].(type) {
	case time.Time:
		return v, true
	case string:
		t, err := time.Parse(time.RFC3339Nano, v)
		return t, err == nil
	}
	return time.Time{}, false
}

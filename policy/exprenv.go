package policy

import (
	"reflect"
	"strconv"
	"time"
)

// The names an embedded expression can read. Which ones exist depends on
// where the expression sits:
//
//	match (message type)        content, msg
//	guard, set (send-message)   content, msg, vars
//	guard, set (other kinds)    vars
//	decide (state)              content, msg, vars, choices, peer, sessions
//
// content is the message's content, typed by the message type's fields
// (any content for decide, where the message that led to the state may be
// of several types); msg is the ACL envelope; vars are the conversation
// variables; choices are the message keys the decision may take; peer is
// the session's peer agent and sessions lists every session waiting at a
// join, each with its peer and content.
const (
	EnvContent  = "content"
	EnvMsg      = "msg"
	EnvVars     = "vars"
	EnvChoices  = "choices"
	EnvPeer     = "peer"
	EnvSessions = "sessions"
)

// Envelope is the ACL envelope as expressions see it under msg, with
// FIPA's parameter names in snake_case.
type Envelope struct {
	Performative   string    `expr:"performative"`
	Sender         string    `expr:"sender"`
	Receivers      []string  `expr:"receivers"`
	ReplyTo        string    `expr:"reply_to"`
	ConversationID string    `expr:"conversation_id"`
	ReplyWith      string    `expr:"reply_with"`
	InReplyTo      string    `expr:"in_reply_to"`
	ReplyBy        time.Time `expr:"reply_by"`
	Protocol       string    `expr:"protocol"`
	Language       string    `expr:"language"`
	Encoding       string    `expr:"encoding"`
	Ontology       string    `expr:"ontology"`
}

// GoType returns the Go type an expression sees for a value of type t.
// Optional values are pointers, so they may be compared with nil.
func (t FieldType) GoType(optional bool) reflect.Type {
	var rt reflect.Type
	switch t {
	case TypeString:
		rt = reflect.TypeFor[string]()
	case TypeNumber:
		rt = reflect.TypeFor[float64]()
	case TypeInt:
		rt = reflect.TypeFor[int]()
	case TypeBool:
		rt = reflect.TypeFor[bool]()
	case TypeTime:
		rt = reflect.TypeFor[time.Time]()
	case TypeDuration:
		rt = reflect.TypeFor[time.Duration]()
	case TypeList:
		rt = reflect.TypeFor[[]any]()
	case TypeMap:
		rt = reflect.TypeFor[map[string]any]()
	default:
		return reflect.TypeFor[any]()
	}
	if optional {
		return reflect.PointerTo(rt)
	}
	return rt
}

// fieldsStruct builds a struct type whose fields expressions can read by
// the names of fs, so that type-checking catches unknown fields and
// mismatched types.
func fieldsStruct(fs []*Field) reflect.Type {
	sf := make([]reflect.StructField, 0, len(fs))
	seen := map[string]bool{}
	for _, f := range fs {
		if f.Name == "" || seen[f.Name] || f.Type == "" {
			continue
		}
		seen[f.Name] = true
		sf = append(sf, reflect.StructField{
			Name: "F" + strconv.Itoa(len(sf)),
			Type: f.Type.GoType(f.Optional),
			Tag:  reflect.StructTag(`expr:"` + f.Name + `"`),
		})
	}
	return reflect.StructOf(sf)
}

func zero(t reflect.Type) any { return reflect.New(t).Elem().Interface() }

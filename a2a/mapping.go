package a2a

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	sdk "github.com/a2aproject/a2a-go/a2a"

	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policy"
)

// ExtensionURI names Parley's A2A extension. It is the key, in the
// metadata of an A2A Message or Task, of the Parley part of it (Meta for
// a message, the task's policy, roles, state and allowed messages for a
// task), and the URI of the extension the agent card declares.
const ExtensionURI = "https://github.com/parleyhq/parley/a2a/v1"

// maxIDBytes bounds the ids and metadata strings a peer sends: message
// ids, context ids, reply-with and in-reply-to.
const maxIDBytes = 256

// Meta is the Parley part of an A2A Message's metadata, under
// ExtensionURI: the policy message it carries. Every field is optional
// on a message a client sends; the server fills in what it sends.
type Meta struct {
	// Type is the policy's message type (inform-result).
	Type string `json:"type,omitempty"`
	// Performative is the FIPA performative (inform).
	Performative string `json:"performative,omitempty"`
	// Protocol names the policy.
	Protocol  string `json:"protocol,omitempty"`
	ReplyWith string `json:"replyWith,omitempty"`
	InReplyTo string `json:"inReplyTo,omitempty"`
	// ReplyBy is an RFC 3339 time.
	ReplyBy string `json:"replyBy,omitempty"`
	// Sender names the agent that sent the message.
	Sender string `json:"sender,omitempty"`
}

// TaskMeta is the Parley part of an A2A Task's metadata, under
// ExtensionURI.
type TaskMeta struct {
	Policy string `json:"policy"`
	// Role is the role the agent plays, ClientRole the client's.
	Role       string `json:"role"`
	ClientRole string `json:"clientRole"`
	// State is the agent's state in the policy.
	State string `json:"state,omitempty"`
	// Allowed lists the message types the client may send now.
	Allowed []string `json:"allowed"`
	// Outcome is the policy's outcome, once the conversation ended.
	Outcome string `json:"outcome,omitempty"`
	// Reason says why the conversation was aborted.
	Reason string `json:"reason,omitempty"`
}

// metaOf reads the Parley metadata of an A2A message; ok is false when
// it has none.
func metaOf(md map[string]any) (m Meta, ok bool, err error) {
	raw, found := md[ExtensionURI]
	if !found {
		return Meta{}, false, nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return Meta{}, true, fmt.Errorf("metadata %s: %w", policy.Quote(ExtensionURI), err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return Meta{}, true, fmt.Errorf("metadata %s is not an object of strings: %v", policy.Quote(ExtensionURI), err)
	}
	for _, s := range []string{m.Type, m.Performative, m.Protocol, m.ReplyWith, m.InReplyTo, m.ReplyBy, m.Sender} {
		if len(s) > maxIDBytes {
			return Meta{}, true, fmt.Errorf("metadata %s holds a value longer than %d bytes", policy.Quote(ExtensionURI), maxIDBytes)
		}
	}
	return m, true, nil
}

// toMap turns a value of the metadata into plain JSON values.
func toMap(v any) map[string]any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out map[string]any
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	return out
}

// contentOf merges the data parts of an A2A message into one content
// object. A message must hold at least one data part; text parts are
// ignored beside them, and file parts are refused.
func contentOf(parts sdk.ContentParts) (map[string]any, error) {
	var content map[string]any
	data := false
	for _, p := range parts {
		switch p := p.(type) {
		case sdk.DataPart:
			data = true
			if content == nil {
				content = map[string]any{}
			}
			maps.Copy(content, p.Data)
		case *sdk.DataPart:
			data = true
			if content == nil {
				content = map[string]any{}
			}
			maps.Copy(content, p.Data)
		case sdk.FilePart, *sdk.FilePart:
			return nil, fmt.Errorf("%w: file parts are not supported: send the content as a data part", sdk.ErrUnsupportedContentType)
		}
	}
	if !data {
		return nil, fmt.Errorf("%w: the message holds no data part: send the policy message's content as a data part", sdk.ErrInvalidParams)
	}
	return content, nil
}

// textOf joins the text parts of an A2A message.
func textOf(parts sdk.ContentParts) string {
	s := ""
	for _, p := range parts {
		var t string
		switch p := p.(type) {
		case sdk.TextPart:
			t = p.Text
		case *sdk.TextPart:
			t = p.Text
		default:
			continue
		}
		if s != "" {
			s += "\n"
		}
		s += t
	}
	return s
}

// toA2A returns the A2A message that carries policy message m of type
// typ: its content as a data part (and its reason, if any, as a text
// part too, for clients that read text) and its parameters under
// ExtensionURI.
func toA2A(m *forms.Message, typ string, role sdk.MessageRole) *sdk.Message {
	meta := Meta{Type: typ, Performative: m.Performative, Protocol: m.Protocol, ReplyWith: m.ReplyWith, InReplyTo: m.InReplyTo, Sender: m.Sender}
	if !m.ReplyBy.IsZero() {
		meta.ReplyBy = m.ReplyBy.UTC().Format(time.RFC3339Nano)
	}
	content := plain(m.Content)
	if content == nil {
		content = map[string]any{}
	}
	parts := sdk.ContentParts{sdk.DataPart{Data: content}}
	if reason, ok := m.Content["reason"].(string); ok && reason != "" {
		parts = append(parts, sdk.TextPart{Text: reason})
	}
	return &sdk.Message{
		ID: newID("msg"), Role: role, ContextID: m.ConversationID, Parts: parts,
		Metadata: map[string]any{ExtensionURI: toMap(meta)},
	}
}

// plain returns content with the values JSON does not spell as Parley
// reads them back written out: times as RFC 3339 strings and durations
// as Go duration strings. Content is bounded by the content limits, so
// the recursion is too.
func plain(content map[string]any) map[string]any {
	if content == nil {
		return nil
	}
	out := make(map[string]any, len(content))
	for k, v := range content {
		out[k] = plainValue(v)
	}
	return out
}

func plainValue(v any) any {
	switch x := v.(type) {
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case time.Duration:
		return x.String()
	case map[string]any:
		return plain(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plainValue(e)
		}
		return out
	}
	return v
}

// fromMeta fills the parameters of m from meta.
func fromMeta(m *forms.Message, meta Meta) error {
	m.ReplyWith, m.InReplyTo = meta.ReplyWith, meta.InReplyTo
	if meta.ReplyBy != "" {
		t, err := time.Parse(time.RFC3339Nano, meta.ReplyBy)
		if err != nil {
			return fmt.Errorf("%w: metadata replyBy %s is not an RFC 3339 time", sdk.ErrInvalidParams, policy.Quote(meta.ReplyBy))
		}
		m.ReplyBy = t
	}
	return nil
}

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// newID returns prefix and 128 random bits: ids a peer cannot guess.
func newID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return prefix + "-" + idEncoding.EncodeToString(b[:])
}

// errTooLong reports a peer's id beyond maxIDBytes.
var errTooLong = fmt.Errorf("%w: an id is longer than %d bytes", sdk.ErrInvalidParams, maxIDBytes)

func checkID(s string) error {
	if len(s) > maxIDBytes {
		return errTooLong
	}
	return nil
}

// isA2AError reports whether err already carries an A2A error code.
func isA2AError(err error) bool {
	for _, e := range []error{sdk.ErrParseError, sdk.ErrInvalidRequest, sdk.ErrMethodNotFound, sdk.ErrInvalidParams, sdk.ErrInternalError, sdk.ErrServerError, sdk.ErrTaskNotFound, sdk.ErrTaskNotCancelable, sdk.ErrUnsupportedOperation, sdk.ErrUnsupportedContentType} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

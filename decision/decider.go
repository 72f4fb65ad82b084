package decision

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Request is one decision to make: at decision point Point (a state of
// the policy) of conversation ConversationID, pick one of Choices (the
// message keys of the send-message transitions whose guards hold).
//
// Content is the content of the message that led to this point (nil at
// the start), Vars the conversation variables. At a join state Sessions
// lists every session waiting there and the answer assigns a choice to
// each of them (Answer.Sessions).
type Request struct {
	ConversationID string
	Policy         string
	Role           string
	Point          string
	Ticket         uint64
	Choices        []string
	Peer           string
	Content        map[string]any
	Vars           map[string]any
	Sessions       []Session
}

// Session is one peer's thread of a conversation waiting at a join.
type Session struct {
	Peer    string
	Choices []string
	Content map[string]any
	Vars    map[string]any
}

// Answer is a decision: the choice to take and the content of the message
// it sends, with an optional reply-by for that message. An empty Choice
// means "not now": the decision stays open and may be answered later with
// the same ticket (a state where this role may send but need not, such as
// cancel while waiting for a reply). At a join, Sessions maps each waiting
// session's peer to its own answer instead.
type Answer struct {
	Choice   string
	Content  map[string]any
	ReplyBy  time.Time
	Sessions map[string]SessionAnswer
}

// SessionAnswer is the answer for one session at a join.
type SessionAnswer struct {
	Choice  string
	Content map[string]any
	ReplyBy time.Time
}

// Decider is decision logic. Decide may be called from many goroutines at
// once, for different conversations. req is valid only during the call:
// the manager reuses it, so copy what you keep. An error means no decision
// was made; ErrNoDecision lets a Chain try the next decider.
type Decider interface {
	Decide(ctx context.Context, req *Request) (Answer, error)
}

// ErrNoDecision is returned by a decider that has nothing to say about a
// request (no binding for its decision point).
var ErrNoDecision = errors.New("decision: no decider for this decision point")

// Func adapts a Go function to Decider.
type Func func(ctx context.Context, req *Request) (Answer, error)

// Decide calls f.
func (f Func) Decide(ctx context.Context, req *Request) (Answer, error) { return f(ctx, req) }

// Chain returns a Decider that asks each decider in turn until one
// returns something other than ErrNoDecision.
func Chain(deciders ...Decider) Decider {
	return Func(func(ctx context.Context, req *Request) (Answer, error) {
		for _, d := range deciders {
			a, err := d.Decide(ctx, req)
			if !errors.Is(err, ErrNoDecision) {
				return a, err
			}
		}
		return Answer{}, fmt.Errorf("%w %q of policy %q", ErrNoDecision, req.Point, req.Policy)
	})
}

// ABLEFunc is the shape of decision logic in IBM's ABLE conversation
// support: given the conversation, the decision point and the decision
// data, return the decision (a message key) and the form data for the
// message.
type ABLEFunc func(conversationID, decisionPoint string, data []any) (decision string, formData []any)

// ABLE adapts an ABLE-style function to Decider. data is
// [content, vars, choices] ([]any{map[string]any, map[string]any,
// []string}); at a join, the function is called once per session with
// that session's content and the decision point suffixed "/" + peer. The
// form data is either empty, a single map[string]any (the content), or
// alternating field names and values.
func ABLE(f ABLEFunc) Decider {
	return Func(func(_ context.Context, req *Request) (Answer, error) {
		if len(req.Sessions) == 0 {
			choice, form := f(req.ConversationID, req.Point, []any{req.Content, req.Vars, req.Choices})
			content, err := formContent(form)
			return Answer{Choice: choice, Content: content}, err
		}
		a := Answer{Sessions: make(map[string]SessionAnswer, len(req.Sessions))}
		for _, s := range req.Sessions {
			choice, form := f(req.ConversationID, req.Point+"/"+s.Peer, []any{s.Content, s.Vars, s.Choices})
			content, err := formContent(form)
			if err != nil {
				return Answer{}, err
			}
			a.Sessions[s.Peer] = SessionAnswer{Choice: choice, Content: content}
		}
		return a, nil
	})
}

func formContent(form []any) (map[string]any, error) {
	switch {
	case len(form) == 0:
		return nil, nil
	case len(form) == 1:
		if m, ok := form[0].(map[string]any); ok {
			return m, nil
		}
	case len(form)%2 == 0:
		m := make(map[string]any, len(form)/2)
		for i := 0; i < len(form); i += 2 {
			k, ok := form[i].(string)
			if !ok {
				return nil, fmt.Errorf("decision: form data item %d (%T) is not a field name", i, form[i])
			}
			m[k] = form[i+1]
		}
		return m, nil
	}
	return nil, fmt.Errorf("decision: form data must be one map or alternating names and values, not %d items", len(form))
}

// Registry picks a decider by policy and decision point. It is safe for
// concurrent use, and is itself a Decider: it returns ErrNoDecision when
// nothing is registered for a request.
type Registry struct {
	mu       sync.RWMutex
	byPoint  map[[2]string]Decider
	byPolicy map[string]Decider
}

// Register makes d decide point of policy; an empty point means every
// decision point of the policy that has no decider of its own.
func (r *Registry) Register(policy, point string, d Decider) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if point == "" {
		if r.byPolicy == nil {
			r.byPolicy = map[string]Decider{}
		}
		r.byPolicy[policy] = d
		return
	}
	if r.byPoint == nil {
		r.byPoint = map[[2]string]Decider{}
	}
	r.byPoint[[2]string{policy, point}] = d
}

// Lookup returns the decider for point of policy, or nil.
func (r *Registry) Lookup(policy, point string) Decider {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if d, ok := r.byPoint[[2]string{policy, point}]; ok {
		return d
	}
	return r.byPolicy[policy]
}

// Decide dispatches req to the registered decider.
func (r *Registry) Decide(ctx context.Context, req *Request) (Answer, error) {
	d := r.Lookup(req.Policy, req.Point)
	if d == nil {
		return Answer{}, ErrNoDecision
	}
	return d.Decide(ctx, req)
}

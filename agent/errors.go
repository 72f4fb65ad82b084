package agent

import "errors"

// Errors the manager returns. Test for them with errors.Is.
var (
	// ErrClosed is returned by every call on a closed manager.
	ErrClosed = errors.New("agent: manager closed")
	// ErrNoConversation is returned for a conversation the manager does
	// not hold (never had, or swept after its retention).
	ErrNoConversation = errors.New("agent: no such conversation")
	// ErrConversationExists is returned by Start for an id already in use.
	ErrConversationExists = errors.New("agent: conversation id already in use")
	// ErrBusy is returned by Deliver and Start when the worker's queue
	// holds Limits.MaxQueue inputs: the caller may retry later.
	ErrBusy = errors.New("agent: queue full")
	// ErrLimit is returned by Start when the manager holds
	// Limits.MaxConversations conversations.
	ErrLimit = errors.New("agent: conversation limit reached")
	// ErrSender is returned by Deliver for a message whose Sender is not
	// the agent the transport says sent it.
	ErrSender = errors.New("agent: message sender is not the agent that sent it")
	// ErrContent is returned by Deliver for a message whose content breaks
	// Limits.Content or holds a non-finite number (reported as PE015).
	ErrContent = errors.New("agent: message content refused")
	// ErrEnvelope is returned by Deliver for a message with an envelope
	// string longer than Limits.MaxField, or an envelope longer than
	// Limits.MaxEnvelope in all (reported as PE015).
	ErrEnvelope = errors.New("agent: message envelope refused")
	// ErrNoSuchAgent is returned by a Bus asked to deliver to an agent
	// that is not connected.
	ErrNoSuchAgent = errors.New("agent: no such agent")
	// ErrAborted is wrapped by the error Wait returns for a conversation
	// the manager aborted (see AbortError).
	ErrAborted = errors.New("agent: conversation aborted")
	// ErrNotResumed is returned by Deliver and Start on a manager whose
	// store holds conversations or unacknowledged messages, until Resume.
	ErrNotResumed = errors.New("agent: manager not resumed from its store yet")
)

// AbortError is what Wait returns for a conversation the manager ended
// with engine.OutcomeAborted because it could not carry the conversation
// on: a message failed to send, or decision logic panicked, failed to
// answer in time or returned an error for a point that needs an answer.
type AbortError struct {
	Conversation string
	// Reason says what happened, such as "send failed: ...".
	Reason string
}

func (e *AbortError) Error() string {
	return "agent: conversation " + e.Conversation + " aborted: " + e.Reason
}

// Is makes errors.Is(err, ErrAborted) true.
func (e *AbortError) Is(target error) bool { return target == ErrAborted }

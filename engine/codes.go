package engine

// ErrorCode is the stable code of a protocol error. Codes never change
// meaning; docs/protocol-errors.md documents each.
type ErrorCode string

// Protocol error codes.
const (
	// ErrUnexpected: no transition of the current state accepts the
	// message. The reason names what the state allows.
	ErrUnexpected ErrorCode = "PE001"
	// ErrWrongRole: the message is one the policy lets another role send
	// in this state (for example a peer sending what only this role sends).
	ErrWrongRole ErrorCode = "PE002"
	// ErrUnknownAgent: the sender is not an agent of this conversation.
	ErrUnknownAgent ErrorCode = "PE003"
	// ErrLate: the message arrived after the deadline of the wait it
	// answers.
	ErrLate ErrorCode = "PE004"
	// ErrEnded: the conversation (or this peer's session) has ended.
	ErrEnded ErrorCode = "PE005"
	// ErrDuplicate: the message repeats one already received.
	ErrDuplicate ErrorCode = "PE006"
	// ErrInvalidContent: the content does not fit the message type's
	// fields.
	ErrInvalidContent ErrorCode = "PE007"
	// ErrStaleDecision: a decision answered a ticket that is no longer
	// current (a message or timer moved the state first).
	ErrStaleDecision ErrorCode = "PE008"
	// ErrChoiceNotAllowed: a decision named a choice the decision point
	// does not offer (or whose guard does not hold).
	ErrChoiceNotAllowed ErrorCode = "PE009"
	// ErrWrongReply: in-reply-to names a message this conversation never
	// sent to that peer.
	ErrWrongReply ErrorCode = "PE010"
	// ErrWrongConversation: the message carries another conversation id.
	ErrWrongConversation ErrorCode = "PE011"
	// ErrExpression: a guard or assignment failed to evaluate; the
	// transition was not taken.
	ErrExpression ErrorCode = "PE012"
	// ErrUnknownConversation: a message for a conversation the agent does
	// not know, whose protocol names no policy the agent accepts new
	// conversations of (produced by the manager, not a handler).
	ErrUnknownConversation ErrorCode = "PE013"
)

// ErrorCodeInfo describes a protocol error code.
type ErrorCodeInfo struct {
	Code    ErrorCode
	Name    string
	Summary string
}

// ErrorCodes lists every protocol error code in order.
var ErrorCodes = []ErrorCodeInfo{
	{ErrUnexpected, "unexpected-message", "no transition of the current state accepts the message"},
	{ErrWrongRole, "wrong-role", "the message is one another role sends in this state"},
	{ErrUnknownAgent, "unknown-agent", "the sender is not an agent of this conversation"},
	{ErrLate, "late", "the message arrived after its deadline"},
	{ErrEnded, "conversation-ended", "the conversation or the peer's session has ended"},
	{ErrDuplicate, "duplicate", "the message repeats one already received"},
	{ErrInvalidContent, "invalid-content", "the content does not fit the message type"},
	{ErrStaleDecision, "stale-decision", "a decision answered a ticket that is no longer current"},
	{ErrChoiceNotAllowed, "choice-not-allowed", "a decision named a choice that is not allowed"},
	{ErrWrongReply, "wrong-reply", "in-reply-to names a message that was not sent"},
	{ErrWrongConversation, "wrong-conversation", "the message carries another conversation id"},
	{ErrExpression, "expression-error", "a guard or assignment failed to evaluate"},
	{ErrUnknownConversation, "unknown-conversation", "a message for an unknown conversation that cannot start one"},
}

package engine

// ErrorCode is the stable code of a protocol error. Codes never change
// meaning; docs/protocol-errors.md documents each.
type ErrorCode string

// Protocol error codes.
const (
	// CodeUnexpected: no transition of the current state accepts the
	// message. The reason names what the state allows.
	CodeUnexpected ErrorCode = "PE001"
	// CodeWrongRole: the message is one the policy lets another role send
	// in this state (for example a peer sending what only this role sends).
	CodeWrongRole ErrorCode = "PE002"
	// CodeUnknownAgent: the sender is not an agent of this conversation.
	CodeUnknownAgent ErrorCode = "PE003"
	// CodeLate: the message arrived after the deadline of the wait it
	// answers.
	CodeLate ErrorCode = "PE004"
	// CodeEnded: the conversation (or this peer's session) has ended.
	CodeEnded ErrorCode = "PE005"
	// CodeDuplicate: the message repeats one already received.
	CodeDuplicate ErrorCode = "PE006"
	// CodeInvalidContent: the content does not fit the message type's
	// fields.
	CodeInvalidContent ErrorCode = "PE007"
	// CodeStaleDecision: a decision answered a ticket that is no longer
	// current (a message or timer moved the state first).
	CodeStaleDecision ErrorCode = "PE008"
	// CodeChoiceNotAllowed: a decision named a choice the decision point
	// does not offer (or whose guard does not hold).
	CodeChoiceNotAllowed ErrorCode = "PE009"
	// CodeWrongReply: in-reply-to names a message this conversation never
	// sent to that peer.
	CodeWrongReply ErrorCode = "PE010"
	// CodeWrongConversation: the message carries another conversation id.
	CodeWrongConversation ErrorCode = "PE011"
	// CodeExpression: a guard or assignment failed to evaluate; the
	// transition was not taken.
	CodeExpression ErrorCode = "PE012"
	// CodeUnknownConversation: a message for a conversation the agent does
	// not know, whose protocol names no policy the agent accepts new
	// conversations of (produced by the manager, not a handler).
	CodeUnknownConversation ErrorCode = "PE013"
	// CodeRefused: a message would open a conversation the agent refuses
	// to hold: it holds as many as its limits allow, in total or opened
	// by that peer (produced by the runtime, not a handler).
	CodeRefused ErrorCode = "PE014"
	// CodeContentLimit: a message's or a decision's content breaks the
	// content limits (forms.DefaultLimits: nesting, number of values,
	// bytes) or holds a value JSON cannot carry (NaN, an infinity); it is
	// not applied, in either mode.
	CodeContentLimit ErrorCode = "PE015"
	// CodeJoinPending: this role sent a message from a join state before
	// the join was released, that is before every session of the many
	// role had reached a join or ended and before a timer of the join
	// fired (an accept-proposal before every Participant has answered or
	// the deadline for proposals has passed).
	CodeJoinPending ErrorCode = "PE016"
	// CodeBudget: the message would go over the policy's run budget (the
	// messages one conversation exchanges, or the entries into one
	// state); it is not applied, or not sent, in either mode.
	CodeBudget ErrorCode = "PE017"
)

// ErrorCodeInfo describes a protocol error code.
type ErrorCodeInfo struct {
	Code    ErrorCode
	Name    string
	Summary string
}

// ErrorCodes lists every protocol error code in order.
var ErrorCodes = []ErrorCodeInfo{
	{CodeUnexpected, "unexpected-message", "no transition of the current state accepts the message"},
	{CodeWrongRole, "wrong-role", "the message is one another role sends in this state"},
	{CodeUnknownAgent, "unknown-agent", "the sender is not an agent of this conversation"},
	{CodeLate, "late", "the message arrived after its deadline"},
	{CodeEnded, "conversation-ended", "the conversation or the peer's session has ended"},
	{CodeDuplicate, "duplicate", "the message repeats one already received"},
	{CodeInvalidContent, "invalid-content", "the content does not fit the message type"},
	{CodeStaleDecision, "stale-decision", "a decision answered a ticket that is no longer current"},
	{CodeChoiceNotAllowed, "choice-not-allowed", "a decision named a choice that is not allowed"},
	{CodeWrongReply, "wrong-reply", "in-reply-to names a message that was not sent"},
	{CodeWrongConversation, "wrong-conversation", "the message carries another conversation id"},
	{CodeExpression, "expression-error", "a guard or assignment failed to evaluate"},
	{CodeUnknownConversation, "unknown-conversation", "a message for an unknown conversation that cannot start one"},
	{CodeRefused, "refused", "a message would open a conversation beyond the agent's limits"},
	{CodeContentLimit, "content-limit", "the content breaks the content limits or holds a value JSON cannot carry"},
	{CodeJoinPending, "join-pending", "a message a join decides was sent before the join was released"},
	{CodeBudget, "budget", "the message would go over the policy's run budget"},
}

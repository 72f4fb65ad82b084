package policy

// Code is a stable diagnostic code such as "CP010". Codes never change
// meaning once released; docs/diagnostics.md documents each with an
// example that triggers it.
type Code string

// Diagnostic codes. CP001–CP009 come from loading a file, the rest from the
// static checks (see Checks for their order).
const (
	CodeSyntax            Code = "CP001" // the file is not well-formed YAML or XML
	CodeUnknownField      Code = "CP002" // an unknown key, element or attribute
	CodeInvalidValue      Code = "CP003" // a value of the wrong type or form
	CodeMissingField      Code = "CP004" // a required key, element or attribute is absent
	CodeDuplicate         Code = "CP005" // a name declared twice, or a key repeated
	CodeLimit             Code = "CP006" // a limit against hostile files was exceeded
	CodeUnresolved        Code = "CP010" // a reference to a state, message, timer, variable, commitment or policy that does not exist
	CodeInitialState      Code = "CP011" // no initial state, or one that is terminal
	CodeNoTerminal        Code = "CP012" // the policy has no terminal state
	CodeUnreachable       Code = "CP013" // a state no path from the initial state reaches
	CodeNoPathToEnd       Code = "CP014" // a state from which no terminal state can be reached
	CodeDeadEnd           Code = "CP015" // a non-terminal state with no way out
	CodeNondeterministic  Code = "CP016" // two transitions of one state that cannot be told apart
	CodeShadowed          Code = "CP017" // a transition an earlier one always takes first
	CodeReflexive         Code = "CP018" // a role sending a message to itself
	CodeUndeclaredRole    Code = "CP019" // a transition's sender or receiver is not a declared role
	CodeTimerNotHandled   Code = "CP020" // a state arms a timer it has no on-timeout transition for
	CodeTimerNotArmed     Code = "CP021" // an on-timeout transition for a timer its state never arms
	CodeUnused            Code = "CP022" // a declaration nothing uses
	CodeExprSyntax        Code = "CP023" // an expression that does not parse
	CodeExprType          Code = "CP024" // an expression that does not type-check against the message schemas
	CodeJoinWithoutMany   Code = "CP025" // a join state where no many role takes part
	CodeCommitmentParties Code = "CP026" // a commitment whose debtor is its creditor
	CodeCommitmentAuth    Code = "CP027" // a commitment operation by a message the wrong party sends
	CodeNoDischarge       Code = "CP028" // a commitment that, once created, can never be discharged
	CodeKnowledgeOfChoice Code = "CP029" // a role that cannot tell which branch the conversation took
	CodeChildBinding      Code = "CP030" // a child policy whose roles are not bound exactly once
	CodeTimerDeadline     Code = "CP031" // a timer deadline that does not name a time-valued message field
)

// CodeInfo describes a code for documentation and SARIF rule metadata.
type CodeInfo struct {
	Code     Code
	Name     string
	Severity Severity
	Summary  string
}

// Codes lists every diagnostic code in order.
var Codes = []CodeInfo{
	{CodeSyntax, "syntax", SeverityError, "the file is not well-formed YAML or XML"},
	{CodeUnknownField, "unknown-field", SeverityError, "an unknown key, element or attribute"},
	{CodeInvalidValue, "invalid-value", SeverityError, "a value of the wrong type or form"},
	{CodeMissingField, "missing-field", SeverityError, "a required key, element or attribute is absent"},
	{CodeDuplicate, "duplicate", SeverityError, "a name declared twice, or a key repeated"},
	{CodeLimit, "limit", SeverityError, "a limit against hostile files was exceeded"},
	{CodeUnresolved, "unresolved-reference", SeverityError, "a reference to something that is not declared"},
	{CodeInitialState, "initial-state", SeverityError, "no initial state, or one that is terminal"},
	{CodeNoTerminal, "no-terminal", SeverityError, "the policy has no terminal state"},
	{CodeUnreachable, "unreachable-state", SeverityWarning, "a state no path from the initial state reaches"},
	{CodeNoPathToEnd, "no-path-to-terminal", SeverityError, "a state from which no terminal state can be reached"},
	{CodeDeadEnd, "dead-end", SeverityError, "a non-terminal state with no way out"},
	{CodeNondeterministic, "nondeterministic", SeverityError, "two transitions of one state that cannot be told apart"},
	{CodeShadowed, "shadowed-transition", SeverityWarning, "a transition an earlier one always takes first"},
	{CodeReflexive, "reflexive-message", SeverityError, "a role sending a message to itself"},
	{CodeUndeclaredRole, "undeclared-role", SeverityError, "a sender or receiver that is not a declared role"},
	{CodeTimerNotHandled, "timer-not-handled", SeverityWarning, "a state arms a timer it has no on-timeout transition for"},
	{CodeTimerNotArmed, "timer-not-armed", SeverityError, "an on-timeout transition for a timer its state never arms"},
	{CodeUnused, "unused", SeverityWarning, "a declaration nothing uses"},
	{CodeExprSyntax, "expression-syntax", SeverityError, "an expression that does not parse"},
	{CodeExprType, "expression-type", SeverityError, "an expression that does not type-check"},
	{CodeJoinWithoutMany, "join-without-many", SeverityError, "a join state where no many role takes part"},
	{CodeCommitmentParties, "commitment-parties", SeverityError, "a commitment whose debtor is its creditor"},
	{CodeCommitmentAuth, "commitment-authority", SeverityError, "a commitment operation by a message the wrong party sends"},
	{CodeNoDischarge, "no-discharge", SeverityError, "a commitment that can never be discharged once created"},
	{CodeKnowledgeOfChoice, "knowledge-of-choice", SeverityError, "a role that cannot tell which branch the conversation took"},
	{CodeChildBinding, "child-binding", SeverityError, "a child policy whose roles are not bound exactly once"},
	{CodeTimerDeadline, "timer-deadline", SeverityError, "a timer deadline that does not name a time-valued message field"},
}

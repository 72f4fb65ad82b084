package explore

import "github.com/parleyhq/parley/policy"

// Diagnostic codes of the whole-system exploration: CP101 and up, a range
// of their own next to the static checks' (policy.Codes). Like those they
// never change meaning; docs/diagnostics.md documents each with an
// example that triggers it.
const (
	// CodeDeadlock: every role still running waits, and nothing it
	// waits for can come: no message in flight, no decision open, no
	// timer armed.
	CodeDeadlock policy.Code = "CP101"
	// CodeOrphanMessage: a message reaches a role that has no use for
	// it: the role has ended, or its state accepts no such message.
	CodeOrphanMessage policy.Code = "CP102"
	// CodeUnfinishedRole: some roles have ended and another still waits,
	// for something that can no longer come.
	CodeUnfinishedRole policy.Code = "CP103"
	// CodeTimeoutRace: a reply sent in time reaches the role waiting for
	// it after that role's timer fired.
	CodeTimeoutRace policy.Code = "CP104"
	// CodeOpenCommitment: a role reaches a terminal state with a
	// commitment still detached and its deadline not yet due.
	CodeOpenCommitment policy.Code = "CP105"
	// CodeUnboundedWait: a role waits for a message in a state where it
	// has no timer armed and nothing else to do.
	CodeUnboundedWait policy.Code = "CP106"
	// CodeBudget: a run reaches the policy's run budget: a message would
	// go over it, and the handler refuses it (PE017).
	CodeBudget policy.Code = "CP107"
	// CodeBound: the exploration stopped at its bound (states, or a
	// channel's buffer) before it had seen every behaviour.
	CodeBound policy.Code = "CP109"
)

// Codes lists the exploration's codes in order, for documentation and
// SARIF rule metadata.
var Codes = []policy.CodeInfo{
	{Code: CodeDeadlock, Name: "deadlock", Severity: policy.SeverityError, Summary: "every role still running waits for something that cannot come"},
	{Code: CodeOrphanMessage, Name: "orphan-message", Severity: policy.SeverityWarning, Summary: "a message reaches a role that has ended or cannot accept it"},
	{Code: CodeUnfinishedRole, Name: "unfinished-role", Severity: policy.SeverityError, Summary: "a role still waits when the others have ended"},
	{Code: CodeTimeoutRace, Name: "timeout-race", Severity: policy.SeverityWarning, Summary: "a reply sent in time arrives after the waiting role's timer fired"},
	{Code: CodeOpenCommitment, Name: "open-commitment", Severity: policy.SeverityWarning, Summary: "a role ends with a commitment still detached before its deadline"},
	{Code: CodeUnboundedWait, Name: "unbounded-wait", Severity: policy.SeverityWarning, Summary: "a role only waits for a message, with no timer armed"},
	{Code: CodeBudget, Name: "run-budget", Severity: policy.SeverityWarning, Summary: "a run reaches the policy's run budget, and a message is refused"},
	{Code: CodeBound, Name: "exploration-bound", Severity: policy.SeverityInfo, Summary: "the exploration stopped at its bound before seeing every behaviour"},
}

// severity returns the severity Codes gives code.
func severity(code policy.Code) policy.Severity {
	for _, ci := range Codes {
		if ci.Code == code {
			return ci.Severity
		}
	}
	return policy.SeverityError
}

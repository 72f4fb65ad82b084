package trace

import "github.com/parleyhq/parley/policy"

// CodeInfo describes one of the trace's own codes: the severity of its
// findings and when it is reported.
type CodeInfo struct {
	Code     string
	Severity policy.Severity
	Summary  string
}

// Codes lists the trace's own codes in order; docs/protocol-errors.md
// documents each under "Trace findings". (A finding may also carry one
// of the engine's PE codes, engine.ErrorCodes.)
var Codes = []CodeInfo{
	{CodeMalformed, policy.SeverityError, "a line that is not a JSON object of the trace format"},
	{CodeMissing, policy.SeverityError, "a required field is absent"},
	{CodeBadTime, policy.SeverityError, "at or reply_by is neither an RFC 3339 time nor a duration"},
	{CodeContent, policy.SeverityError, "content is not a JSON object"},
	{CodeCommitment, policy.SeverityWarning, "a commitment was violated"},
	{CodeUnfinished, policy.SeverityInfo, "the trace ends before a conversation does"},
	{CodeLimit, policy.SeverityError, "a line, a field or the trace is larger than its limit, or nests too deep, or checking takes more than Options.MaxSteps inputs"},
	{CodeDuplicate, policy.SeverityError, "a JSON object in the line repeats a key"},
	{CodeTimeRange, policy.SeverityError, "a time outside the years 0001 to 9999, or a duration that overflows"},
	{CodeBackwards, policy.SeverityWarning, "a message line's at is before the previous line's time"},
	{CodeOmitted, policy.SeverityInfo, "output leaves something out to stay bounded"},
	{CodeTimerNotFired, policy.SeverityError, "a timer line names a timer the policy does not fire then"},
}

// severityOf returns the severity of code's findings, error for a code
// that is not the trace's.
func severityOf(code string) policy.Severity {
	for _, c := range Codes {
		if c.Code == code {
			return c.Severity
		}
	}
	return policy.SeverityError
}

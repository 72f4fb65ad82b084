package policy

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Severity says how bad a diagnostic is. The zero value is invalid, so a
// diagnostic built without one is caught in tests.
type Severity int

// Severities, most severe first.
const (
	SeverityError Severity = iota + 1
	SeverityWarning
	SeverityInfo
)

// String returns "error", "warning" or "info".
func (s Severity) String() string {
	switch s {
	case SeverityError:
		return "error"
	case SeverityWarning:
		return "warning"
	case SeverityInfo:
		return "info"
	}
	return fmt.Sprintf("severity(%d)", int(s))
}

// MarshalText renders s as String does, so that JSON and other text
// encodings carry a severity as "error", "warning" or "info". The zero
// Severity, and any other value, is an error.
func (s Severity) MarshalText() ([]byte, error) {
	switch s {
	case SeverityError, SeverityWarning, SeverityInfo:
		return []byte(s.String()), nil
	}
	return nil, fmt.Errorf("invalid severity %d", int(s))
}

// UnmarshalText reads "error", "warning" or "info".
func (s *Severity) UnmarshalText(text []byte) error {
	for _, v := range []Severity{SeverityError, SeverityWarning, SeverityInfo} {
		if string(text) == v.String() {
			*s = v
			return nil
		}
	}
	return fmt.Errorf("unknown severity %s (error, warning or info)", Quote(string(text)))
}

// Related is a secondary position a diagnostic points at, such as the
// first declaration of a duplicate or the other branch of a choice.
type Related struct {
	Pos     Pos
	Message string
}

// Diagnostic is one problem found in a policy file. Code is stable across
// releases and documented in docs/diagnostics.md; Message is for people
// and may change.
type Diagnostic struct {
	Severity Severity
	Code     Code
	Pos      Pos
	Message  string
	Related  []Related
	// Trace is a witness: the messages or steps that lead to the problem,
	// one per line, when the check can produce one.
	Trace []string
}

// Error renders the diagnostic as "file:line:col: severity: message [CODE]".
func (d Diagnostic) Error() string {
	return fmt.Sprintf("%s: %s: %s [%s]", d.Pos, d.Severity, d.Message, d.Code)
}

// Diagnostics is a list of problems. It implements error; use Err to get a
// nil error when the list holds no errors.
type Diagnostics []Diagnostic

// Error joins the diagnostics one per line.
func (ds Diagnostics) Error() string {
	var b strings.Builder
	for i, d := range ds {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(d.Error())
	}
	return b.String()
}

// HasErrors reports whether any diagnostic is an error.
func (ds Diagnostics) HasErrors() bool {
	return slices.ContainsFunc(ds, func(d Diagnostic) bool { return d.Severity == SeverityError })
}

// Err returns ds as an error when it holds at least one error, and nil
// otherwise (warnings alone are not an error).
func (ds Diagnostics) Err() error {
	if ds.HasErrors() {
		return ds
	}
	return nil
}

// Count returns the number of diagnostics of severity s.
func (ds Diagnostics) Count(s Severity) int {
	n := 0
	for _, d := range ds {
		if d.Severity == s {
			n++
		}
	}
	return n
}

// Sort orders ds by position, then severity, code and message, so output
// is stable.
func (ds Diagnostics) Sort() {
	slices.SortStableFunc(ds, func(a, b Diagnostic) int {
		if a.Pos != b.Pos {
			if a.Pos.Before(b.Pos) {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.Severity, b.Severity), cmp.Compare(a.Code, b.Code), cmp.Compare(a.Message, b.Message))
	})
}

// diags is a small builder used by the loaders and the checks.
type diags struct {
	list Diagnostics
}

func (d *diags) add(sev Severity, code Code, pos Pos, format string, args ...any) *Diagnostic {
	d.list = append(d.list, Diagnostic{Severity: sev, Code: code, Pos: pos, Message: fmt.Sprintf(format, args...)})
	return &d.list[len(d.list)-1]
}

func (d *diags) errorf(code Code, pos Pos, format string, args ...any) *Diagnostic {
	return d.add(SeverityError, code, pos, format, args...)
}

func (d *diags) warnf(code Code, pos Pos, format string, args ...any) *Diagnostic {
	return d.add(SeverityWarning, code, pos, format, args...)
}

// related adds a secondary position to the diagnostic and returns it.
func (dg *Diagnostic) related(pos Pos, format string, args ...any) *Diagnostic {
	dg.Related = append(dg.Related, Related{Pos: pos, Message: fmt.Sprintf(format, args...)})
	return dg
}

// maxParserMessage is the most bytes of a YAML or XML parser's own
// message a diagnostic repeats: such a message can quote the file (an
// anchor or element name) without bound.
const maxParserMessage = 256

// Clip returns s, a name or value from a file or a peer that output shows
// without quotes (an XML element name, a performative, a policy's name in
// a summary line), cut to its first MaxQuoted bytes at a rune boundary
// with an ellipsis when it is longer. It is Quote without the quotes.
func Clip(s string) string { return cut(s, MaxQuoted) }

// clip is Clip, for the loaders and checks.
func clip(s string) string { return Clip(s) }

// clipMessage cuts a parser's message to maxParserMessage bytes.
func clipMessage(s string) string { return cut(s, maxParserMessage) }

// QuoteList quotes the first max names with Quote, joined by ", ", and
// says how many more there are: "a", "b" and 3 more. A message that lists
// names from a file or a peer lists them so, since there may be any
// number.
func QuoteList(names []string, max int) string {
	var b strings.Builder
	for i, s := range names {
		if i == max {
			fmt.Fprintf(&b, " and %d more", len(names)-max)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(Quote(s))
	}
	return b.String()
}

// cut returns s when it has at most n bytes, and else its first n bytes
// (fewer, to end at a rune boundary) followed by an ellipsis.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

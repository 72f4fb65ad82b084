package main

import (
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/parleyhq/parley/policy"
)

// Severity profiles, as linters such as bpmnlint have them: recommended
// keeps every code's own severity (policy.Codes, explore.Codes); strict
// makes every warning an error and every information a warning, as the
// linters users know fail a file for an unreachable state or an unused
// declaration.
const (
	profileRecommended = "recommended"
	profileStrict      = "strict"
)

// levelOff is an override that drops a code's diagnostics.
const levelOff = "off"

// maxOverrides bounds the -severity overrides one command line may give
// (there are fewer codes than that).
const maxOverrides = 256

// severityOptions are the -profile and -severity flags of the commands
// that report diagnostics.
type severityOptions struct {
	profile   *enumFlag
	overrides overrideFlag
}

func (o *severityOptions) register(fs *flag.FlagSet) {
	o.profile = newEnum(profileRecommended, profileRecommended, profileStrict)
	fs.Var(o.profile, "profile", "severity profile, `recommended|strict`: strict makes warnings errors and information warnings")
	fs.Var(&o.overrides, "severity", "override a code's severity, `CODE=error|warning|info|off` (repeatable, or comma-separated); off drops the code's diagnostics")
}

// overrideFlag collects CODE=LEVEL pairs, in order; a later one for the
// same code wins.
type overrideFlag struct {
	pairs []override
}

type override struct {
	code  policy.Code
	level string // "error", "warning", "info" or levelOff
}

func (f *overrideFlag) String() string {
	parts := make([]string, len(f.pairs))
	for i, p := range f.pairs {
		parts[i] = string(p.code) + "=" + p.level
	}
	return strings.Join(parts, ",")
}

func (f *overrideFlag) Set(s string) error {
	for _, item := range strings.Split(s, ",") {
		code, level, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			return fmt.Errorf("want CODE=LEVEL, not %s", policy.Quote(item))
		}
		code = strings.ToUpper(strings.TrimSpace(code))
		if !slices.ContainsFunc(allCodes(), func(ci policy.CodeInfo) bool { return string(ci.Code) == code }) {
			return fmt.Errorf("unknown code %s (see docs/diagnostics.md)", policy.Quote(code))
		}
		level = strings.ToLower(strings.TrimSpace(level))
		switch level {
		case "error", "warning", "info", levelOff:
		default:
			return fmt.Errorf("unknown level %s for %s (error, warning, info or off)", policy.Quote(level), code)
		}
		if level != "error" && slices.ContainsFunc(policy.Codes, func(ci policy.CodeInfo) bool {
			return string(ci.Code) == code && ci.Severity == policy.SeverityError
		}) {
			return fmt.Errorf("%s is an error the engine refuses a policy for, so it cannot be made %s", code, level)
		}
		if len(f.pairs) >= maxOverrides {
			return fmt.Errorf("more than %d overrides", maxOverrides)
		}
		f.pairs = append(f.pairs, override{code: policy.Code(code), level: level})
	}
	return nil
}

// levels returns the level of every code under the profile and the
// overrides: "error", "warning", "info" or "off".
func (o *severityOptions) levels() map[policy.Code]string {
	out := map[policy.Code]string{}
	for _, ci := range allCodes() {
		s := ci.Severity
		if o.profile != nil && o.profile.value == profileStrict && s != policy.SeverityError {
			s--
		}
		out[ci.Code] = s.String()
	}
	for _, p := range o.overrides.pairs {
		out[p.code] = p.level
	}
	return out
}

// apply gives every diagnostic of the report the severity its code has
// under the options, drops those switched off, and counts again.
func (o *severityOptions) apply(rep *report) {
	rep.levels = o.levels()
	for _, f := range rep.files {
		kept := f.diags[:0]
		for _, d := range f.diags {
			if d, ok := rep.leveled(d, f.path); ok {
				kept = append(kept, d)
			}
		}
		f.diags = kept
	}
	rep.recount()
}

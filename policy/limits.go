package policy

// Limits bound what a loader accepts, so that a hostile or broken file
// cannot exhaust memory or time. Exceeding one is a CP006 diagnostic.
type Limits struct {
	// MaxBytes is the largest file accepted.
	MaxBytes int
	// MaxDepth is the deepest nesting of YAML collections or XML elements.
	MaxDepth int
	// MaxNodes caps the YAML nodes or XML elements visited, counting each
	// expansion of a YAML alias again (a "billion laughs" file hits it).
	MaxNodes int
	// MaxStates caps the number of states.
	MaxStates int
	// MaxExprBytes caps the length of one embedded expression.
	MaxExprBytes int
}

// DefaultLimits are the limits used unless WithLimits says otherwise.
var DefaultLimits = Limits{
	MaxBytes:     32 << 20,
	MaxDepth:     64,
	MaxNodes:     5_000_000,
	MaxStates:    250_000,
	MaxExprBytes: 4096,
}

// LoadOption configures Load, LoadYAML and LoadXML.
type LoadOption func(*loadOptions)

type loadOptions struct {
	limits Limits
}

// WithLimits replaces DefaultLimits. Zero fields keep their default.
func WithLimits(l Limits) LoadOption {
	return func(o *loadOptions) {
		if l.MaxBytes > 0 {
			o.limits.MaxBytes = l.MaxBytes
		}
		if l.MaxDepth > 0 {
			o.limits.MaxDepth = l.MaxDepth
		}
		if l.MaxNodes > 0 {
			o.limits.MaxNodes = l.MaxNodes
		}
		if l.MaxStates > 0 {
			o.limits.MaxStates = l.MaxStates
		}
		if l.MaxExprBytes > 0 {
			o.limits.MaxExprBytes = l.MaxExprBytes
		}
	}
}

func newLoadOptions(opts []LoadOption) loadOptions {
	o := loadOptions{limits: DefaultLimits}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

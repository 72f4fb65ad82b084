// Package natsname checks the agent names that transport/nats and
// store/natskv put in NATS subjects and key-value keys.
package natsname

import (
	"fmt"

	"github.com/parleyhq/parley/policy"
)

// MaxLen is the longest agent name a NATS subject or key carries.
const MaxLen = 128

// Check reports whether name can be one token of a NATS subject and of a
// key-value key: 1 to MaxLen ASCII letters, digits, '-' and '_'.
func Check(name string) error {
	if name == "" || len(name) > MaxLen {
		return fmt.Errorf("agent name %s: want 1 to %d bytes", policy.Quote(name), MaxLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("agent name %s: only ASCII letters, digits, '-' and '_' can name an agent on NATS", policy.Quote(name))
		}
	}
	return nil
}

package parley_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadmeGoBlocksCompile compiles every Go block of README.md, each as
// the body of a function, against the module as it is: the README's
// examples cannot drift from the API. p, now and msg are declared for the
// blocks that use them without making them.
func TestReadmeGoBlocksCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	src, err := os.ReadFile("README.md")
	require.NoError(t, err)
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllSubmatch(src, -1)
	require.GreaterOrEqual(t, len(blocks), 3, "README.md shows the driver, the runtime and the handler")

	var b strings.Builder
	b.WriteString(`package readme

import (
	"context"
	"fmt"
	"time"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policies"
	"github.com/parleyhq/parley/policy"
)

var (
	p   *policy.Policy
	now time.Time
	msg *forms.Message

	_ = context.Background
	_ = fmt.Println
	_ = agent.NewBus
	_ = decision.Func(nil)
	_ = engine.NewDriver
	_ = policies.Load
)
`)
	for i, m := range blocks {
		fmt.Fprintf(&b, "\nfunc block%d() {\n%s}\n", i+1, m[1])
	}
	dir, err := os.MkdirTemp(".", "readme-check-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	file := filepath.Join(dir, "readme.go")
	require.NoError(t, os.WriteFile(file, []byte(b.String()), 0o644))
	out, err := exec.Command("go", "vet", "./"+dir).CombinedOutput()
	require.NoError(t, err, "a Go block of README.md does not compile (blockN is the Nth block):\n%s\n%s", out, b.String())
}

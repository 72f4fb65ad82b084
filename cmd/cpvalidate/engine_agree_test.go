package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/policy"
)

// TestRejectsWhatTheEngineCompilerRejects: a guard over the expression
// node limit, which the engine's expression compiler refuses, is refused
// by cpvalidate too, at the position the compiler names.
func TestRejectsWhatTheEngineCompilerRejects(t *testing.T) {
	path := filepath.Join("..", "..", "testdata", "diagnostics", "CP006-expression-nodes.yaml")
	src, err := os.ReadFile(path)
	require.NoError(t, err)
	p, ds := policy.LoadYAML(path, src)
	require.False(t, ds.HasErrors(), "%v", ds)
	guard := p.States[0].Transitions[0].Guard
	require.NotNil(t, guard)
	_, err = decision.Compile(guard)
	require.Error(t, err, "the engine's compiler refuses the guard")
	ee, ok := errors.AsType[*decision.EvalError](err)
	require.True(t, ok)

	var out, errOut strings.Builder
	code := run([]string{path}, &out, &errOut)
	assert.Equal(t, 1, code, "errors found")
	assert.Contains(t, out.String(), fmt.Sprintf("%s: error: ", ee.Pos()), "cpvalidate reports it where the compiler does")
	assert.Contains(t, out.String(), "[CP006]")
}

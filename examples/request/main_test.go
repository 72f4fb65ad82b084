package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/policies"
	"github.com/parleyhq/parley/trace"
)

func TestRequestExampleConforms(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out, journal bytes.Buffer
	require.NoError(t, run(ctx, &out, &journal))
	assert.Contains(t, out.String(), "ended: result")

	entries, problems, err := trace.Read(&journal)
	require.NoError(t, err)
	require.Empty(t, problems)
	require.Len(t, entries, 3, journal.String())
	p, err := policies.Load("fipa-request")
	require.NoError(t, err)
	res, err := trace.Check(p, entries, problems, trace.Options{})
	require.NoError(t, err)
	assert.Empty(t, res.Findings)
	assert.True(t, res.Summary.Conforms)
	assert.True(t, res.Summary.Complete)
	assert.Equal(t, map[string]string{"alice": "result", "bob": "result"}, res.Summary.Outcomes)
}

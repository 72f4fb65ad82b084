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

func TestQueryExampleConforms(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out, journal bytes.Buffer
	require.NoError(t, run(ctx, &out, &journal))
	assert.Contains(t, out.String(), "map[holds:false]")
	assert.Contains(t, out.String(), "map[result:2.5]")

	entries, problems, err := trace.Read(&journal)
	require.NoError(t, err)
	require.Empty(t, problems)
	require.Len(t, entries, 4, journal.String())
	p, err := policies.Load("fipa-query")
	require.NoError(t, err)
	res, err := trace.Check(p, entries, problems, trace.Options{})
	require.NoError(t, err)
	assert.Empty(t, res.Findings)
	assert.True(t, res.Summary.Conforms)
	assert.True(t, res.Summary.Complete)
	// Two conversations under fresh ids, both answered, the same for each
	// agent: "alice-<id>=answered,alice-<id>=answered".
	require.Len(t, res.Summary.Outcomes, 2)
	assert.Equal(t, res.Summary.Outcomes["alice"], res.Summary.Outcomes["bob"])
	assert.Regexp(t, `^alice-[a-z2-7]{26}=answered,alice-[a-z2-7]{26}=answered$`, res.Summary.Outcomes["alice"])
}

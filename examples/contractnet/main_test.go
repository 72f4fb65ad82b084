package main

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/policies"
	"github.com/parleyhq/parley/trace"
)

func TestContractNetExampleConforms(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out, journal bytes.Buffer
	cfg := config{deadline: 800 * time.Millisecond, slowBy: 1500 * time.Millisecond, mermaid: true}
	require.NoError(t, run(ctx, &out, &journal, cfg))
	text := out.String()
	assert.Contains(t, text, "ended: ")
	assert.Contains(t, text, "slowpoke no-bid")
	assert.Contains(t, text, "sequenceDiagram")
	assert.Contains(t, text, "buyer->>acme: cfp")

	entries, problems, err := trace.Read(&journal)
	require.NoError(t, err)
	// Carriers answer at once from their own workers, each stamping its
	// line with the time it read: two of them can reach the journal in the
	// other order, a TR010 warning the trace format allows for.
	problems = slices.DeleteFunc(problems, func(p trace.Problem) bool { return p.Code == trace.CodeBackwards })
	require.Empty(t, problems)
	p, err := policies.Load("fipa-contract-net")
	require.NoError(t, err)
	res, err := trace.Check(p, entries, problems, trace.Options{})
	require.NoError(t, err)
	res.Findings = slices.DeleteFunc(res.Findings, func(f trace.Finding) bool { return f.Code == trace.CodeBackwards })
	assert.Empty(t, res.Findings, journal.String())
	assert.True(t, res.Summary.Conforms)
	assert.True(t, res.Summary.Complete)
	assert.Equal(t, "no-bid=1,refused=1,rejected=2,result=2", res.Summary.Outcomes["buyer"])
	assert.Equal(t, "no-bid", res.Summary.Outcomes["slowpoke"])
}

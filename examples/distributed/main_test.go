package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMain runs an agent process when the example starts the test binary
// again as one.
func TestMain(m *testing.M) {
	if os.Getenv(envAgent) != "" {
		os.Exit(child())
	}
	os.Exit(m.Run())
}

var summary = regexp.MustCompile(`^distributed: 7 processes, (\d+) conversations, all ended, failover resumed (\d+)/(\d+)$`)

func TestKilledCarrierIsResumedByItsReplacement(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out, config{conversations: 12}))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	last := summary.FindStringSubmatch(lines[len(lines)-1])
	require.NotNil(t, last, "last line: %s", lines[len(lines)-1])
	assert.Equal(t, "12", last[1])
	assert.Equal(t, last[3], last[2], "every resumed conversation ended")
	resumed, _ := strconv.Atoi(last[3])
	assert.Positive(t, resumed, "carrier-1 had open conversations when it was killed")
	assert.Contains(t, out.String(), "carrier-1 delivered in 12 of 12")
}

func TestRefusesNoConversations(t *testing.T) {
	assert.Error(t, run(context.Background(), &bytes.Buffer{}, config{conversations: 0}))
}

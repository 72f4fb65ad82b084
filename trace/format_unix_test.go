//go:build unix

package trace_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/trace"
)

// readFileWithin reads the trace at path and fails the test when Read has
// not returned within a few seconds, as an unbounded read never would.
func readFileWithin(t *testing.T, path string, opts ...trace.ReadOption) ([]trace.Entry, []trace.Problem) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	type result struct {
		entries  []trace.Entry
		problems []trace.Problem
		err      error
	}
	done := make(chan result, 1)
	go func() {
		entries, problems, err := trace.Read(f, opts...)
		done <- result{entries, problems, err}
	}()
	select {
	case r := <-done:
		require.NoError(t, r.err)
		return r.entries, r.problems
	case <-time.After(10 * time.Second):
		require.FailNow(t, "Read does not stop at its limits", path)
		return nil, nil
	}
}

// TestReadStopsAtTheLimitOfADevice reads /dev/zero, one endless line
// with no newline: Read skips it as too long and stops at the trace's
// byte limit.
func TestReadStopsAtTheLimitOfADevice(t *testing.T) {
	entries, problems := readFileWithin(t, "/dev/zero")
	assert.Empty(t, entries)
	assert.Equal(t, []trace.Problem{{Line: 1, Code: trace.CodeLimit, Message: "the trace is larger than the limit of 67108864 bytes; it is not read from here on"}}, problems)
}

// TestReadStopsAtTheLimitOfAPipe feeds a named pipe good lines without
// end: Read stops at the byte limit, and closing the pipe stops the
// writer.
func TestReadStopsAtTheLimitOfAPipe(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "trace.jsonl")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	line := []byte(`{"performative": "inform", "sender": "a", "receiver": "b"}` + "\n")
	written := make(chan error, 1)
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			written <- err
			return
		}
		defer w.Close()
		for {
			if _, err := w.Write(line); err != nil {
				written <- nil // the reader closed the pipe
				return
			}
		}
	}()
	const limit = 1 << 20
	entries, problems := readFileWithin(t, fifo, trace.WithLimits(trace.Limits{MaxBytes: limit}))
	require.Len(t, problems, 1)
	assert.Equal(t, trace.CodeLimit, problems[0].Code)
	assert.Equal(t, len(entries)+1, problems[0].Line, "the problem is at the line the limit cut")
	assert.Equal(t, limit/len(line), len(entries), "every whole line within the limit is read")
	assert.NoError(t, <-written)
}

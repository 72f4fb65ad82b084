//go:build unix

package policy_test

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/policy"
)

// readWithin runs ReadFile on path and fails the test when it has not
// returned within a few seconds, as an unbounded read never would.
func readWithin(t *testing.T, path string, opts ...policy.LoadOption) ([]byte, policy.Diagnostics, error) {
	t.Helper()
	type result struct {
		src []byte
		ds  policy.Diagnostics
		err error
	}
	done := make(chan result, 1)
	go func() {
		src, ds, err := policy.ReadFile(path, opts...)
		done <- result{src, ds, err}
	}()
	select {
	case r := <-done:
		return r.src, r.ds, r.err
	case <-time.After(10 * time.Second):
		require.FailNow(t, "ReadFile does not stop at the byte limit", path)
		return nil, nil, nil
	}
}

// TestReadFileStopsAtTheLimitOfADevice is the regression test for
// LoadFile reading /dev/zero, whose size is 0, without end.
func TestReadFileStopsAtTheLimitOfADevice(t *testing.T) {
	for _, tt := range []struct {
		name  string
		opts  []policy.LoadOption
		limit int
	}{
		{name: "default limit", limit: policy.DefaultLimits.MaxBytes},
		{name: "small limit", opts: []policy.LoadOption{policy.WithLimits(policy.Limits{MaxBytes: 4096})}, limit: 4096},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src, ds, err := readWithin(t, "/dev/zero", tt.opts...)
			require.NoError(t, err)
			assert.Nil(t, src)
			assert.Equal(t, []string{"/dev/zero:1:1: error: file is larger than the limit of " + strconv.Itoa(tt.limit) + " bytes [CP006]"}, lines(ds))
		})
	}
}

// TestReadFileStopsAtTheLimitOfAPipe feeds a named pipe without end: the
// read stops one byte past the limit, and closing the pipe stops the
// writer.
func TestReadFileStopsAtTheLimitOfAPipe(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	written := make(chan error, 1)
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			written <- err
			return
		}
		defer w.Close()
		chunk := make([]byte, 64<<10)
		for {
			if _, err := w.Write(chunk); err != nil {
				written <- nil // the reader closed the pipe
				return
			}
		}
	}()
	src, ds, err := readWithin(t, fifo, policy.WithLimits(policy.Limits{MaxBytes: 1 << 20}))
	require.NoError(t, err)
	assert.Nil(t, src)
	assert.Equal(t, []string{fifo + ":1:1: error: file is larger than the limit of 1048576 bytes [CP006]"}, lines(ds))
	assert.NoError(t, <-written)
}

// TestReadFileReadsAPipeWithinTheLimit checks a pipe that ends before the
// limit loads like a file.
func TestReadFileReadsAPipeWithinTheLimit(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer w.Close()
		_, _ = w.Write([]byte(minimal))
	}()
	src, ds, err := readWithin(t, fifo)
	require.NoError(t, err)
	assert.Empty(t, ds)
	assert.Equal(t, minimal, string(src))
}

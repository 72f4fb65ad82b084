//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runWithin runs the program and fails the test when it has not returned
// within a few seconds, as an unbounded read never would.
func runWithin(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	type result struct {
		code           int
		stdout, stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, stdout, stderr := runCLI(t, args...)
		done <- result{code, stdout, stderr}
	}()
	select {
	case r := <-done:
		return r.code, r.stdout, r.stderr
	case <-time.After(20 * time.Second):
		require.FailNow(t, "cpvalidate does not stop at its read limits", "%v", args)
		return 0, "", ""
	}
}

// feedPipe makes a named pipe in a temporary directory and writes chunk
// to it again and again until the reader closes it; wait returns once
// the writer has stopped.
func feedPipe(t *testing.T, name string, chunk []byte) (path string, wait func()) {
	t.Helper()
	path = filepath.Join(t.TempDir(), name)
	require.NoError(t, syscall.Mkfifo(path, 0o600))
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		w, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer w.Close()
		for {
			if _, err := w.Write(chunk); err != nil {
				return // the reader closed the pipe
			}
		}
	}()
	return path, func() { <-stopped }
}

// TestReadsStopAtTheLimit is the regression test for "cpvalidate
// /dev/zero" reading without end: a policy is read up to
// policy.DefaultLimits.MaxBytes and a trace up to trace.DefaultLimits,
// from a device or a pipe alike, and what is larger is reported where
// it is.
func TestReadsStopAtTheLimit(t *testing.T) {
	t.Run("a policy from /dev/zero", func(t *testing.T) {
		code, stdout, stderr := runWithin(t, "/dev/zero")
		assert.Equal(t, exitErrors, code, stderr)
		assert.Contains(t, stdout, "/dev/zero:1:1: error: file is larger than the limit of 33554432 bytes [CP006]\n")
	})
	t.Run("a policy from a pipe", func(t *testing.T) {
		fifo, wait := feedPipe(t, "policy.yaml", []byte(strings.Repeat("# a comment that never ends\n", 4096)))
		code, stdout, stderr := runWithin(t, "-format", "json", fifo)
		assert.Equal(t, exitErrors, code, stderr)
		assert.Contains(t, stdout, `"message": "file is larger than the limit of 33554432 bytes"`)
		wait()
	})
	t.Run("a policy for convert from /dev/zero", func(t *testing.T) {
		code, _, stderr := runWithin(t, "convert", "-to", "xml", "/dev/zero")
		assert.Equal(t, exitErrors, code)
		assert.Contains(t, stderr, "[CP006]")
	})
	t.Run("a trace from /dev/zero", func(t *testing.T) {
		code, stdout, stderr := runWithin(t, "trace", "fipa-request", "/dev/zero")
		assert.Equal(t, exitErrors, code, stderr)
		assert.Contains(t, stdout, "/dev/zero:1: error: the trace is larger than the limit of 67108864 bytes; it is not read from here on [TR007]\n")
	})
	t.Run("a trace from a pipe", func(t *testing.T) {
		// Blank lines of 1 MiB: cheap to check, so that the test measures
		// the reading.
		fifo, wait := feedPipe(t, "trace.jsonl", []byte(strings.Repeat(" ", 1<<20-1)+"\n"))
		code, stdout, stderr := runWithin(t, "trace", "fipa-request", fifo)
		assert.Equal(t, exitErrors, code, stderr)
		assert.Equal(t, fifo+":65: error: the trace is larger than the limit of 67108864 bytes; it is not read from here on [TR007]\n"+
			fifo+": does not conform, complete (no conversation was opened)\n", stdout)
		wait()
	})
}

// TestWalksSkipLinks is the regression test for a directory walk that
// followed a link to /etc/passwd and printed its content in a
// diagnostic: a walk skips links and other files that are not regular,
// naming each in a note, and a path named on the command line may be a
// link.
func TestWalksSkipLinks(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.yaml")
	require.NoError(t, os.WriteFile(secret, []byte("SECRET-CONTENT: do not print\n"), 0o644))
	good, err := os.ReadFile(shipped + "/fipa-request.yaml")
	require.NoError(t, err)
	target := filepath.Join(outside, "target.yaml")
	require.NoError(t, os.WriteFile(target, good, 0o644))

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "request.yaml"), good, 0o644))
	link := filepath.Join(dir, "link.yaml")
	require.NoError(t, os.Symlink(secret, link))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(dir, "passwd.yaml")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "pipe.yaml"), 0o600))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "elsewhere")))

	code, stdout, stderr := runWithin(t, dir)
	assert.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "1 policy checked: 1 ok")
	assert.Contains(t, stderr, "cpvalidate: note: "+link+": skipped: a symbolic link (a directory walk follows no links; name the file to check it)\n")
	assert.Contains(t, stderr, "cpvalidate: note: "+filepath.Join(dir, "passwd.yaml")+": skipped: a symbolic link")
	assert.Contains(t, stderr, "cpvalidate: note: "+filepath.Join(dir, "pipe.yaml")+": skipped: not a regular file (a directory walk reads regular files only; name the file to check it)\n")
	for _, out := range []string{stdout, stderr} {
		assert.NotContains(t, out, "SECRET")
		assert.NotContains(t, out, "root:")
		assert.NotContains(t, out, "target.yaml", "a link to a directory is not followed either")
	}

	code, stdout, stderr = runWithin(t, "-format", "sarif", dir)
	assert.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, `"text": "`+link+`: skipped: a symbolic link`, "SARIF carries the notes as notifications")

	t.Run("a link named on the command line is read", func(t *testing.T) {
		named := filepath.Join(t.TempDir(), "named.yaml")
		require.NoError(t, os.Symlink(target, named))
		code, stdout, stderr := runWithin(t, named)
		assert.Equal(t, exitOK, code, stderr)
		assert.Empty(t, stderr)
		assert.Contains(t, stdout, "1 policy checked: 1 ok")
	})
	t.Run("a link to a directory named on the command line is walked", func(t *testing.T) {
		named := filepath.Join(t.TempDir(), "policies")
		require.NoError(t, os.Symlink(dir, named))
		code, stdout, stderr := runWithin(t, named)
		assert.Equal(t, exitOK, code, stderr)
		assert.Contains(t, stdout, filepath.Join(named, "request.yaml"))
		assert.Contains(t, stderr, filepath.Join(named, "link.yaml")+": skipped: a symbolic link")
	})
}

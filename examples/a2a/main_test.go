package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jsDir holds the JS SDK scripts; .ci/run installs @a2a-js/sdk there.
var jsDir = filepath.Join("..", "..", "a2a", "testdata", "js")

// sdkVersion is the @a2a-js/sdk release the interop tests run against:
// a 0.3 release, the A2A protocol version of a2a-go v0.3.3.
const sdkVersion = "0.3.14"

// needJS returns node's path, or skips the test when node or the JS SDK
// is missing; under CI (CI=true) it fails instead.
func needJS(t *testing.T) string {
	t.Helper()
	install := "npm install --prefix a2a/testdata/js --no-save --no-package-lock @a2a-js/sdk@" + sdkVersion
	node, err := exec.LookPath("node")
	var pkg struct{ Version string }
	if err == nil {
		var b []byte
		if b, err = os.ReadFile(filepath.Join(jsDir, "node_modules", "@a2a-js", "sdk", "package.json")); err == nil {
			err = json.Unmarshal(b, &pkg)
		}
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the A2A interop tests need node and @a2a-js/sdk (%v); .ci/run installs them with: %s", err, install)
		}
		t.Skipf("skipping the A2A interop test: node or @a2a-js/sdk is missing (%v); install with: %s", err, install)
	}
	require.True(t, strings.HasPrefix(pkg.Version, "0.3."), "@a2a-js/sdk %s is not a 0.3 release; install with: %s", pkg.Version, install)
	return node
}

// startPainter serves the painter on a free loopback port and returns
// its URL; the server stops when the test ends.
func startPainter(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	urls := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, "127.0.0.1:0", "", func(url string) { urls <- url }) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	select {
	case url := <-urls:
		return url
	case err := <-done:
		t.Fatalf("serve: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the painter did not start")
	}
	return ""
}

// callCase is one call of the Initiator and what it must end with.
type callCase struct {
	name, action, outcome string
	last                  map[string]any
}

// checkCalls plays the Initiator against the agent at url for each case.
func checkCalls(t *testing.T, url string, tests []callCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			outcome, last, err := call(ctx, url, tc.action)
			require.NoError(t, err)
			assert.Equal(t, tc.outcome, outcome)
			assert.Equal(t, tc.last, last)
		})
	}
}

func TestCallPainter(t *testing.T) {
	checkCalls(t, startPainter(t), []callCase{
		{name: "paint", action: "paint the fence", outcome: "result", last: map[string]any{"result": "paint the fence: done"}},
		{name: "other", action: "mow the lawn", outcome: "refused", last: map[string]any{"reason": "the painter only paints"}},
	})
}

// TestJSClientDrivesPainter runs a2a/testdata/js/client.mjs, an A2A
// client written with the official JS SDK that knows nothing of Parley,
// against the painter over HTTP on loopback.
func TestJSClientDrivesPainter(t *testing.T) {
	node := needJS(t)
	url := startPainter(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(jsDir, "client.mjs"), url)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	require.NoError(t, err, "client.mjs: %s", out)
	var got map[string]map[string]any
	require.NoError(t, json.Unmarshal(out, &got), "client.mjs printed %s", out)
	tests := []struct {
		name string
		want map[string]any
	}{
		{name: "card", want: map[string]any{"name": "painter", "skills": []any{"fipa-request/Participant"}}},
		{name: "paint", want: map[string]any{"kind": "task", "state": "completed", "artifact": map[string]any{"result": "paint the fence: done"}, "hasContext": true}},
		{name: "get", want: map[string]any{"state": "completed", "sameTask": true, "sameContext": true}},
		{name: "mow", want: map[string]any{"state": "rejected", "reason": "the painter only paints"}},
		{name: "unknownGet", want: map[string]any{"error": "TaskNotFoundJSONRPCError", "code": float64(-32001), "detail": `task not found: "no-such-task"`}},
		{name: "stream", want: map[string]any{"first": "task", "last": "final:completed", "artifact": map[string]any{"result": "paint the door: done"}}},
		{name: "unknownSend", want: map[string]any{"error": "TaskNotFoundJSONRPCError", "code": float64(-32001), "detail": `task not found: "no-such-task"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, got[tc.name])
		})
	}
	t.Run("terminal", func(t *testing.T) {
		terminal := got["terminal"]
		assert.Equal(t, float64(-32600), terminal["code"])
		assert.Contains(t, terminal["detail"], "is completed and takes no more messages")
	})
}

// TestCallJSServer plays the Initiator against a2a/testdata/js/server.mjs,
// a small A2A server written with the official JS SDK that knows nothing
// of Parley.
func TestCallJSServer(t *testing.T) {
	node := needJS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(jsDir, "server.mjs"))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() {
		require.NoError(t, stdin.Close()) // server.mjs exits when its input closes
		require.NoError(t, cmd.Wait())
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "server.mjs printed no URL")
	url := strings.TrimSpace(line)
	require.True(t, strings.HasPrefix(url, "http://127.0.0.1:"), "server.mjs printed %q", line)
	checkCalls(t, url, []callCase{
		{name: "completed", action: "paint the fence", outcome: "result", last: map[string]any{"result": "paint the fence: done by js"}},
		{name: "rejected", action: "mow the lawn", outcome: "refused", last: map[string]any{"reason": "the js painter only paints"}},
	})
}

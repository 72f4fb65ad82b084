package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMain lets the test binary be the drill's child: the drill runs it
// again with the child's variables set.
func TestMain(m *testing.M) {
	if dir := os.Getenv(childEnv); dir != "" {
		os.Exit(childMain(dir))
	}
	os.Exit(m.Run())
}

// runDrill runs a drill with the test binary as the child and returns
// its output's lines.
func runDrill(t *testing.T, n, kills int) []string {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	var out, log bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = drill(ctx, drillConfig{N: n, Kills: kills, Seed: 1, Exe: exe, Log: &log}, &out)
	require.NoError(t, err, "%s\n%s", out.String(), log.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("drill output:\n%s\nchild's standard error:\n%s", out.String(), log.String())
		}
	})
	return lines
}

func TestCrashDrillLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("the drill starts the child four times")
	}
	start := time.Now()
	lines := runDrill(t, 1000, 4)
	assert.Equal(t, "crash drill: 1000 conversations, 4 kills, lost 0, duplicated 0, wrong outcome 0", lines[len(lines)-1])
	assert.Less(t, time.Since(start), 30*time.Second)
}

func TestDrillWithoutKillsGivesTheCrashFreeRun(t *testing.T) {
	// The drill computes what a run without crashes gives: a run without
	// crashes must agree.
	lines := runDrill(t, 100, 0)
	assert.Equal(t, "crash drill: 100 conversations, 0 kills, lost 0, duplicated 0, wrong outcome 0", lines[len(lines)-1])
}

// crashFree is what the crash-free run gives for conversations 0 to n-1.
func crashFree(n int) []result {
	res := make([]result, n)
	for i := range res {
		k := kinds[i%len(kinds)]
		res[i] = result{ID: convID(i), Alice: &side{Done: true, Outcome: k.outcome, Applied: k.alice},
			Bob: &side{Done: true, Outcome: k.outcome, Applied: []string{"request"}}}
	}
	return res
}

func TestJudgeCountsWhatTheCrashFreeRunWouldNotGive(t *testing.T) {
	request := event{Kind: "applied", Agent: "bob", Conversation: "drill-0", Message: "alice\x00drill-0/alice#1", Performative: "request"}
	again := request
	again.Again = true
	repeat := event{Kind: "protocol-error", Agent: "alice", Conversation: "drill-1", Message: "bob\x00drill-1/bob#1", Performative: "refuse", Code: "PE006"}
	tests := []struct {
		name   string
		change func(res []result)
		events []event
		want   drillResult
	}{
		{name: "the crash-free run", events: []event{request}},
		{name: "alice never ended", change: func(res []result) { res[0].Alice.Done = false }, want: drillResult{Lost: 1}},
		{name: "bob never had it", change: func(res []result) { res[1].Bob = nil }, want: drillResult{Lost: 1}},
		{name: "the agree was lost", change: func(res []result) { res[0].Alice.Applied = []string{"inform"} }, want: drillResult{Wrong: 1}},
		{name: "another outcome", change: func(res []result) { res[2].Alice.Outcome, res[2].Bob.Outcome = "result", "result" }, want: drillResult{Wrong: 1}},
		{name: "a request applied again", events: []event{request, again, again}, want: drillResult{Duplicated: 1}},
		{name: "a repeat the handler reported", events: []event{repeat}, want: drillResult{Duplicated: 1}},
		{name: "a message applied again and reported once", events: []event{request, again, {Kind: "protocol-error", Agent: "bob", Conversation: "drill-0",
			Message: request.Message, Code: "PE001"}}, want: drillResult{Duplicated: 1}},
		{name: "an unexpected message", events: []event{{Kind: "protocol-error", Agent: "alice", Conversation: "drill-3", Code: "PE001"}}, want: drillResult{Wrong: 1}},
		{name: "a failed send", events: []event{{Kind: "error", Agent: "alice", Conversation: "drill-3", Reason: "send: no transport"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			res := crashFree(4)
			if tt.change != nil {
				tt.change(res)
			}
			b, err := json.Marshal(res)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, resultsFile), b, 0o600))
			var evs []byte
			for _, e := range tt.events {
				b, err := json.Marshal(e)
				require.NoError(t, err)
				evs = append(append(evs, b...), '\n')
			}
			require.NoError(t, os.WriteFile(filepath.Join(dir, eventsFile), evs, 0o600))
			got := drillResult{N: 4}
			var out bytes.Buffer
			require.NoError(t, judge(dir, &got, &out))
			tt.want.N = 4
			assert.Equal(t, tt.want, got, out.String())
		})
	}
}

// watch is a writer that calls hit once what it has been written holds
// want.
type watch struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	hit  func()
}

func (w *watch) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(b)
	if w.hit != nil && strings.Contains(w.buf.String(), w.want) {
		w.hit()
		w.hit = nil
	}
	return len(b), nil
}

func TestHandModeResumesWhereItStopped(t *testing.T) {
	dir := t.TempDir()
	// The first run stops as soon as bob agrees to the second job, well
	// before he is done with it.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := &watch{want: "job-2  bob   -> alice agree", hit: cancel}
	err := hand(ctx, first, dir, 2*time.Second)
	require.ErrorIs(t, err, context.Canceled, first.buf.String())
	require.Contains(t, first.buf.String(), "job-1  ended: result")

	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var again bytes.Buffer
	require.NoError(t, hand(ctx, &again, dir, time.Millisecond))
	out := again.String()
	assert.Contains(t, out, "job-1  ended before: result\n")
	assert.Contains(t, out, "job-2  resumed: alice in ")
	assert.Contains(t, out, "job-2  ended: result\n")
	assert.Contains(t, out, "job-3  ended: refused\n")
	assert.NotContains(t, out, "alice -> bob   request {\"action\":\"paint the fence\"}", "job-1 is not asked for again")
	assert.NotContains(t, out, "alice -> bob   request {\"action\":\"mow the lawn\"}", "job-2 is not asked for again")
	assert.Contains(t, out, "every job is done")

	var third bytes.Buffer
	require.NoError(t, hand(ctx, &third, dir, time.Millisecond))
	assert.Equal(t, "job-1  ended before: result\njob-2  ended before: result\njob-3  ended before: refused\nevery job is done; delete "+dir+" to run them again\n", third.String())
}

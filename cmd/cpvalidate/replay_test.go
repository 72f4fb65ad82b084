package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/policies"
	"github.com/parleyhq/parley/policy"
	"github.com/parleyhq/parley/store/bolt"
	"github.com/parleyhq/parley/trace"
)

// replayGolden is where the replay tests' expected output lives, and
// shopPolicy a policy that runs fipa-request as a child policy.
const replayGolden = "testdata/replay"

var shopPolicy = inPackage(filepath.Join(replayGolden, "shop.yaml"))

// courierPolicy runs shop as a child policy: it checks when shop is
// given too.
var courierPolicy = inPackage(filepath.Join(replayGolden, "courier.yaml"))

// decideFunc is decision logic written as a function of the request.
type decideFunc func(req *decision.Request) (decision.Answer, error)

func (f decideFunc) Decide(_ context.Context, req *decision.Request) (decision.Answer, error) {
	return f(req)
}

// The decisions of the agents of the replay runs. Every conversation id
// says what happens in it: alice never decides to send the request of
// req-unsent; bob never answers req-timeout, never reports on req-agreed,
// and his decision logic fails on req-aborted; alice never awards
// cn-joined; in shop-bought alice buys through the child fipa-request.
var (
	replayAlice = decideFunc(func(req *decision.Request) (decision.Answer, error) {
		switch req.Policy + ":" + req.Point {
		case "fipa-request:start":
			if req.ConversationID != "req-unsent" {
				return decision.Answer{Choice: "request", Content: map[string]any{"action": "paint"}}, nil
			}
		case "fipa-contract-net:start":
			return decision.Answer{Choice: "cfp", Content: map[string]any{"task": "paint the fence"}}, nil
		case "fipa-contract-net:proposed":
			if req.ConversationID != "cn-joined" {
				return decision.Answer{Sessions: map[string]decision.SessionAnswer{"bob": {Choice: "accept-proposal"}}}, nil
			}
		case "shop:start":
			return decision.Answer{Choice: "ask"}, nil
		}
		return decision.Answer{}, decision.ErrNoDecision
	})
	replayBob = decideFunc(func(req *decision.Request) (decision.Answer, error) {
		switch req.Policy + ":" + req.Point {
		case "fipa-request:requested":
			switch req.ConversationID {
			case "req-timeout":
			case "req-aborted":
				return decision.Answer{}, errors.New("the paint ran out")
			case "req-refused":
				return decision.Answer{Choice: "refuse", Content: map[string]any{"reason": "busy"}}, nil
			default:
				return decision.Answer{Choice: "agree"}, nil
			}
		case "fipa-request:agreed":
			if req.ConversationID != "req-agreed" {
				return decision.Answer{Choice: "inform-result", Content: map[string]any{"result": "green"}}, nil
			}
		case "fipa-contract-net:solicited":
			return decision.Answer{Choice: "propose", Content: map[string]any{"price": 10}}, nil
		case "fipa-contract-net:awarded":
			return decision.Answer{Choice: "inform-result", Content: map[string]any{"result": "painted"}}, nil
		case "shop:asked":
			return decision.Answer{Choice: "open", Content: map[string]any{"holds": true}}, nil
		}
		return decision.Answer{}, decision.ErrNoDecision
	})
)

// replayRun is a run of alice and bob on a bus with a fake clock, each
// with a store file and a journal of its own in dir.
type replayRun struct {
	t     *testing.T
	dir   string
	clock *agent.FakeClock
	bus   *agent.Bus
	close []func()
}

var replayT0 = time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)

func (r *replayRun) start(name string, d decision.Decider) *agent.Manager {
	st, err := bolt.Open(filepath.Join(r.dir, name+".db"))
	require.NoError(r.t, err)
	f, err := os.Create(filepath.Join(r.dir, name+".jsonl"))
	require.NoError(r.t, err)
	m, err := agent.NewManager(name, agent.WithStore(st), agent.WithClock(r.clock), agent.WithLogger(nil), agent.WithDecider(d),
		agent.WithJournal(trace.NewWriter(f), true), agent.WithResolver(policies.Resolve))
	require.NoError(r.t, err)
	for _, name := range []string{"fipa-request", "fipa-contract-net"} {
		p, err := policies.Load(name)
		require.NoError(r.t, err)
		require.NoError(r.t, m.Register(p))
	}
	shop, ds, err := policy.LoadFile(shopPolicy)
	require.NoError(r.t, err)
	require.False(r.t, ds.HasErrors(), "%v", ds)
	require.NoError(r.t, m.Register(shop))
	require.NoError(r.t, r.bus.Connect(m))
	r.close = append(r.close, func() {
		require.NoError(r.t, m.Close(context.Background()))
		require.NoError(r.t, st.Close())
		require.NoError(r.t, f.Close())
	})
	return m
}

func (r *replayRun) settle() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(r.t, r.bus.Settle(ctx))
}

func (r *replayRun) begin(m *agent.Manager, id, pol, role, peerRole string) {
	_, err := m.Start(context.Background(), agent.StartRequest{ID: id, Policy: pol, Role: role, Peers: map[string][]string{peerRole: {"bob"}}})
	require.NoError(r.t, err)
}

// runReplayAgents runs alice's conversations with bob in dir and closes
// both: in the first minute req-swept ends (and is swept after its
// retention) and req-timeout times out; then req-result, req-refused,
// cn-awarded and shop-bought (with its child) end, bob aborts
// req-aborted, and req-agreed, cn-joined and req-unsent stay open.
func runReplayAgents(t *testing.T, dir string) {
	r := &replayRun{t: t, dir: dir, clock: agent.NewFakeClock(replayT0), bus: agent.NewBus()}
	alice := r.start("alice", replayAlice)
	r.start("bob", replayBob)
	r.begin(alice, "req-swept", "fipa-request", "Initiator", "Participant")
	r.begin(alice, "req-timeout", "fipa-request", "Initiator", "Participant")
	r.settle()
	r.clock.Advance(31 * time.Second) // the reply timers of req-timeout fire
	r.settle()
	r.clock.Advance(44 * time.Second) // a sweep finds req-swept ended a minute ago
	r.settle()
	for _, c := range []struct{ id, policy string }{
		{"req-result", "fipa-request"}, {"req-refused", "fipa-request"}, {"req-agreed", "fipa-request"}, {"req-unsent", "fipa-request"},
		{"req-aborted", "fipa-request"}, {"cn-awarded", "fipa-contract-net"}, {"cn-joined", "fipa-contract-net"},
	} {
		r.begin(alice, c.id, c.policy, "Initiator", "Participant")
		r.settle() // each conversation does what it does at a time of its own
		r.clock.Advance(time.Second)
	}
	r.begin(alice, "shop-bought", "shop", "Buyer", "Seller")
	r.settle()
	for _, c := range r.close {
		c()
	}
}

// replayFixture runs the agents and returns the directory of their
// files.
func replayFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	runReplayAgents(t, dir)
	return dir
}

func TestReplayMatchesTheStore(t *testing.T) {
	dir := replayFixture(t)
	t.Chdir(dir)
	tests := []struct {
		name, agent string
		args        []string
	}{
		{name: "alice", agent: "alice", args: []string{"fipa-request", "fipa-contract-net", shopPolicy, "alice.jsonl", "alice.db"}},
		{name: "bob", agent: "bob", args: []string{shopPolicy, "fipa-contract-net", "fipa-request", "bob.jsonl", "bob.db"}},
		{name: "alice-named", agent: "alice", args: []string{"-agent", "alice", "fipa-request", "fipa-contract-net", shopPolicy, "alice.jsonl", "alice.db"}},
		// Conversations of the policies not given are left out, children
		// of the ones given (fipa-request in shop) replayed.
		{name: "alice-request", agent: "alice-request", args: []string{"fipa-request", "alice.jsonl", "alice.db"}},
		{name: "bob-shop", agent: "bob-shop", args: []string{shopPolicy, "bob.jsonl", "bob.db"}},
		// A child policy given alongside its parent.
		{name: "bob-courier", agent: "bob-shop", args: []string{courierPolicy, shopPolicy, "bob.jsonl", "bob.db"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append([]string{"replay"}, tt.args...)...)
			assert.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			assert.Empty(t, stderr)
			goldenFile(t, filepath.Join(inPackage(replayGolden), tt.agent+".txt"), stdout)
		})
	}
}

// inPackage returns path, relative to the package directory, as an
// absolute path: the tests change into the fixture's directory.
func inPackage(path string) string { return filepath.Join(packageDir, path) }

// packageDir is the package's directory, read before any test changes
// the working directory.
var packageDir = func() string {
	d, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	return d
}()

func TestReplayReportsWhatDiffers(t *testing.T) {
	fixture := replayFixture(t)
	tests := []struct {
		name  string
		agent string
		// change alters the copies of the agent's files in dir.
		change func(t *testing.T, dir string)
		args   []string
		// matches is set when the change is one replay must see through.
		matches bool
	}{
		{name: "state", agent: "alice", change: func(t *testing.T, dir string) {
			editSnapshot(t, filepath.Join(dir, "alice.db"), "req-agreed", func(sn map[string]any) {
				session(sn, 0)["state"] = "requested"
			})
		}},
		{name: "commitment", agent: "bob", change: func(t *testing.T, dir string) {
			editSnapshot(t, filepath.Join(dir, "bob.db"), "cn-joined", func(sn map[string]any) {
				commit := session(sn, 0)["commitments"].([]any)[0].(map[string]any)
				commit["deadline"] = commit["deadline"].(float64) + 1e9
			})
		}},
		{name: "unrestorable", agent: "bob", change: func(t *testing.T, dir string) {
			editSnapshot(t, filepath.Join(dir, "bob.db"), "cn-joined", func(sn map[string]any) {
				session(sn, 0)["commitments"].([]any)[0].(map[string]any)["state"] = "released"
			})
		}},
		{name: "lost", agent: "alice", change: func(t *testing.T, dir string) {
			commitTo(t, filepath.Join(dir, "alice.db"), &agent.Batch{Delete: []string{"req-agreed"}})
		}},
		{name: "child", agent: "bob", change: func(t *testing.T, dir string) {
			editSnapshot(t, filepath.Join(dir, "bob.db"), "shop-bought/fipa-request#1", func(sn map[string]any) {
				session(sn, 0)["state"] = "done"
			})
		}},
		{name: "sent-again", agent: "alice", change: func(t *testing.T, dir string) {
			repeatLine(t, filepath.Join(dir, "alice.jsonl"), func(l trace.Line) bool {
				return l.ConversationID == "req-agreed" && l.Performative == "request"
			}, func(l *trace.Line) { l.Content = json.RawMessage(`{"action":"varnish"}`) })
		}},
		{name: "delivered-again", agent: "bob", matches: true, change: func(t *testing.T, dir string) {
			repeatLine(t, filepath.Join(dir, "bob.jsonl"), func(l trace.Line) bool {
				return l.ConversationID == "req-result" && l.Performative == "request"
			}, func(*trace.Line) {})
		}},
		{name: "dropped-line", agent: "alice", change: func(t *testing.T, dir string) {
			dropLines(t, filepath.Join(dir, "alice.jsonl"), func(l trace.Line) bool {
				return l.ConversationID == "req-result" && l.Performative == "inform"
			})
		}},
		{name: "dropped-timer", agent: "bob", change: func(t *testing.T, dir string) {
			dropLines(t, filepath.Join(dir, "bob.jsonl"), func(l trace.Line) bool { return l.Timer != "" })
		}},
		{name: "dropped-opening", agent: "bob", change: func(t *testing.T, dir string) {
			dropLines(t, filepath.Join(dir, "bob.jsonl"), func(l trace.Line) bool {
				return l.ConversationID == "cn-awarded" && l.Performative == "cfp"
			})
		}},
		{name: "conversation", agent: "alice", args: []string{"-conversation", "req-result"}, change: func(t *testing.T, dir string) {
			dropLines(t, filepath.Join(dir, "alice.jsonl"), func(l trace.Line) bool {
				return l.ConversationID == "req-result" && l.Performative == "inform" || l.ConversationID == "req-refused"
			})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, ext := range []string{".db", ".jsonl"} {
				copyFile(t, filepath.Join(fixture, tt.agent+ext), filepath.Join(dir, tt.agent+ext))
			}
			tt.change(t, dir)
			t.Chdir(dir)
			args := append(append([]string{"replay"}, tt.args...), "fipa-request", "fipa-contract-net", shopPolicy, tt.agent+".jsonl", tt.agent+".db")
			code, stdout, stderr := runCLI(t, args...)
			want := exitErrors
			if tt.matches {
				want = exitOK
			}
			assert.Equal(t, want, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			goldenFile(t, filepath.Join(inPackage(replayGolden), "differs-"+tt.name+".txt"), lineNumbersOut(stdout))
		})
	}
}

// lineNumbersOut replaces the journal's line numbers in out with N: the
// workers of a manager journal the lines of different conversations in
// an order of their own.
func lineNumbersOut(out string) string {
	return lineNumber.ReplaceAllString(out, "${1}N")
}

var lineNumber = regexp.MustCompile(`(\.jsonl:|line )\d+`)

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to, b, 0o600))
}

// commitTo commits b to the store file at path.
func commitTo(t *testing.T, path string, b *agent.Batch) {
	t.Helper()
	st, err := bolt.Open(path)
	require.NoError(t, err)
	require.NoError(t, st.Commit(b))
	require.NoError(t, st.Close())
}

// editSnapshot changes the handler snapshot of conversation id in the
// store file at path.
func editSnapshot(t *testing.T, path, id string, edit func(sn map[string]any)) {
	t.Helper()
	st, err := bolt.Open(path)
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	stored, err := st.Load()
	require.NoError(t, err)
	for _, sc := range stored.Conversations {
		if sc.ID != id {
			continue
		}
		data, err := engine.SnapshotJSON(sc.Handler)
		require.NoError(t, err)
		var sn map[string]any
		require.NoError(t, json.Unmarshal(data, &sn))
		edit(sn)
		sc.Handler, err = json.Marshal(sn)
		require.NoError(t, err)
		require.NoError(t, st.Commit(&agent.Batch{Put: []agent.StoredConversation{sc}}))
		return
	}
	t.Fatalf("no conversation %s in %s", id, path)
}

func session(sn map[string]any, i int) map[string]any {
	return sn["sessions"].([]any)[i].(map[string]any)
}

// dropLines removes the journal lines drop selects, and fails unless it
// removes one.
func dropLines(t *testing.T, path string, drop func(trace.Line) bool) {
	t.Helper()
	editLines(t, path, func(l trace.Line) []trace.Line {
		if drop(l) {
			return nil
		}
		return []trace.Line{l}
	})
}

// repeatLine writes the first journal line pick selects again, changed by
// change, at the end of the journal: the agent journaled it again after
// a restart.
func repeatLine(t *testing.T, path string, pick func(trace.Line) bool, change func(*trace.Line)) {
	t.Helper()
	var again *trace.Line
	editLines(t, path, func(l trace.Line) []trace.Line {
		if again == nil && pick(l) {
			again = &l
		}
		return []trace.Line{l}
	})
	require.NotNil(t, again, "no line of %s picked", path)
	change(again)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	require.NoError(t, json.NewEncoder(f).Encode(again))
	require.NoError(t, f.Close())
}

// editLines rewrites the journal at path, each line as edit returns it
// (none, to drop it), and fails unless edit changes it.
func editLines(t *testing.T, path string, edit func(trace.Line) []trace.Line) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var l trace.Line
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l))
		for _, e := range edit(l) {
			require.NoError(t, enc.Encode(e))
		}
	}
	require.NoError(t, sc.Err())
	require.NoError(t, os.WriteFile(path, out.Bytes(), 0o600))
}

func TestReplayUsageAndFileProblems(t *testing.T) {
	fixture := replayFixture(t)
	t.Chdir(fixture)
	held, err := bolt.Open("bob.db")
	require.NoError(t, err)
	defer held.Close()
	require.NoError(t, os.WriteFile("empty.db", nil, 0o600))
	emptyStore, err := bolt.Open("store.db")
	require.NoError(t, err)
	require.NoError(t, emptyStore.Close())
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{name: "too few arguments", args: []string{"fipa-request", "alice.jsonl"}, stderr: "needs a policy, a journal and a store, got 2 argument(s)"},
		{name: "no store", args: []string{"fipa-request", "alice.jsonl", "missing.db"}, stderr: "missing.db: no such file or directory"},
		{name: "a store held by an agent", args: []string{"fipa-request", "bob.jsonl", "bob.db"}, stderr: "another process holds the file"},
		{name: "not a store", args: []string{"fipa-request", "alice.jsonl", "alice.jsonl"}, stderr: "store alice.jsonl"},
		{name: "a directory", args: []string{"fipa-request", "alice.jsonl", "."}, stderr: ". is not a store file"},
		{name: "no journal", args: []string{"fipa-request", "missing.jsonl", "alice.db"}, stderr: "missing.jsonl: no such file or directory"},
		{name: "no policy", args: []string{"fipa-requets", "alice.jsonl", "alice.db"}, stderr: "neither a file nor a shipped policy"},
		{name: "a child policy not given", args: []string{courierPolicy, "alice.jsonl", "alice.db"}, stderr: "courier.yaml has errors"},
		{name: "no agent to tell", args: []string{"fipa-request", "alice.jsonl", "store.db"}, stderr: "give -agent NAME"},
		{name: "an unknown conversation", args: []string{"-conversation", "nope", "fipa-request", "alice.jsonl", "alice.db"}, stderr: `conversation "nope" of agent "alice"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append([]string{"replay"}, tt.args...)...)
			assert.Equal(t, exitUsage, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			assert.Contains(t, stderr, tt.stderr)
		})
	}
	_, err = os.Stat("missing.db")
	assert.True(t, os.IsNotExist(err), "replay does not create a store")
}

func TestReplayUsage(t *testing.T) {
	code, stdout, _ := runCLI(t, "replay", "-h")
	assert.Equal(t, exitOK, code)
	golden(t, "usage-replay.txt", stdout)
}

// TestReplayOfAnotherAgentsJournal: lines that involve neither the agent
// nor its timers are counted, and said to be another agent's.
func TestReplayOfAnotherAgentsJournal(t *testing.T) {
	fixture := replayFixture(t)
	t.Chdir(fixture)
	code, stdout, stderr := runCLI(t, "replay", "-agent", "carol", "fipa-request", "fipa-contract-net", "alice.jsonl", "alice.db")
	assert.Equal(t, exitErrors, code, "alice's conversations are not carol's: %s", stdout)
	assert.Contains(t, stderr, "involve neither agent \"carol\"")
	assert.Contains(t, stdout, `the store's snapshot is of agent "alice", not "carol"`)
}

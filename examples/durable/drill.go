package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/policy"
	"github.com/parleyhq/parley/store/bolt"
)

// The parent starts the child with these variables: the directory of
// its store files and records, and the number of conversations.
const (
	childEnv  = "PARLEY_DURABLE_DRILL"
	childNEnv = "PARLEY_DURABLE_N"
)

const (
	// The child runs a fiftieth of the conversations at once, at most
	// maxWindow: few enough that the conversations a restart resumes end
	// in a burst much shorter than the time between two kills.
	maxWindow = 1000
	// stall is how long the child waits without any conversation ending
	// before it gives up on the rest and writes what it has.
	stall = 10 * time.Second
	// The child's records in its directory.
	eventsFile  = "events.jsonl"
	resultsFile = "results.json"
	logFile     = "child.log"
)

// kind is how bob answers a request, chosen by the conversation's
// number, and what the crash-free run then gives.
type kind struct {
	name    string
	outcome string
	// alice lists the performatives alice applies; bob applies the
	// request.
	alice []string
}

var kinds = []kind{
	{"result", "result", []string{"agree", "inform"}},
	{"refuse", "refused", []string{"refuse"}},
	{"failure", "failed", []string{"agree", "failure"}},
	{"done", "done", []string{"inform"}},
}

func convID(i int) string { return "drill-" + strconv.Itoa(i) }

// drillAlice requests the job the conversation's data names, with a
// deadline far beyond any drill.
var drillAlice = decision.Func(func(_ context.Context, req *decision.Request) (decision.Answer, error) {
	if req.Point == "start" {
		return decision.Answer{Choice: "request", Content: req.Content, ReplyBy: time.Now().Add(time.Hour)}, nil
	}
	return decision.Answer{}, nil
})

// drillBob answers by the request's kind.
var drillBob = decision.Func(func(_ context.Context, req *decision.Request) (decision.Answer, error) {
	k := req.Content["kind"]
	switch req.Point {
	case "requested":
		switch k {
		case "refuse":
			return decision.Answer{Choice: "refuse", Content: map[string]any{"reason": "not today"}}, nil
		case "done":
			return decision.Answer{Choice: "inform-done", Content: map[string]any{"done": true}}, nil
		}
		return decision.Answer{Choice: "agree"}, nil
	case "agreed":
		if k == "failure" {
			return decision.Answer{Choice: "failure", Content: map[string]any{"reason": "it broke"}}, nil
		}
		return decision.Answer{Choice: "inform-result", Content: map[string]any{"result": req.Content["job"]}}, nil
	}
	return decision.Answer{}, decision.ErrNoDecision
})

// event is one line of the child's events file.
type event struct {
	// Kind is "applied" (a receiver applied a message; Again when it had
	// applied it before), "protocol-error" or "error" (a failed send or
	// decision).
	Kind         string `json:"kind"`
	Agent        string `json:"agent"`
	Conversation string `json:"conversation"`
	Message      string `json:"message,omitempty"`
	Performative string `json:"performative,omitempty"`
	Again        bool   `json:"again,omitempty"`
	Code         string `json:"code,omitempty"`
	Reason       string `json:"reason,omitempty"`
}

// recorder appends the child's events to its file, one write per line,
// so that a killed child leaves whole lines.
type recorder struct {
	mu sync.Mutex
	f  *os.File
	// applied holds agent and MessageID of every message applied: those
	// the stores held at the start, and those applied since.
	applied map[string]bool
	err     error
}

func openRecorder(dir string) (*recorder, error) {
	f, err := os.OpenFile(filepath.Join(dir, eventsFile), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	r := &recorder{f: f, applied: map[string]bool{}}
	for _, name := range []string{"alice", "bob"} {
		st, err := readStore(dir, name)
		if err != nil {
			f.Close()
			return nil, err
		}
		for _, sc := range st.Conversations {
			for _, id := range sc.Applied {
				r.applied[name+"\x00"+id] = true
			}
		}
	}
	return r, nil
}

// readStore loads what agent name's store file in dir holds.
func readStore(dir, name string) (*agent.Stored, error) {
	st, err := bolt.Open(filepath.Join(dir, name+".db"))
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return st.Load()
}

func (r *recorder) write(e event) {
	b, _ := json.Marshal(e) // strings and a bool: it cannot fail
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.f.Write(append(b, '\n')); err != nil && r.err == nil {
		r.err = err
	}
}

// observe records every message a receiver applies, saying whether it
// had applied it before (a duplicate), every protocol error, and every
// failed send or decision.
func (r *recorder) observe(o agent.Observation) {
	e := event{Agent: o.Agent, Conversation: o.Conversation}
	switch ev := o.Event.(type) {
	case *engine.ProtocolErrorEvent:
		e.Kind, e.Code, e.Reason = "protocol-error", string(ev.Code), ev.Reason
		if ev.Message != nil {
			e.Message, e.Performative = agent.MessageID(ev.Message), ev.Message.Performative
		}
	case *engine.MessageEvent:
		e.Message, e.Performative = agent.MessageID(ev.Message), ev.Message.Performative
		switch {
		case o.Err != nil:
			e.Kind, e.Reason = "error", "send: "+o.Err.Error()
		case !o.Input:
			return
		default:
			e.Kind = "applied"
			r.mu.Lock()
			e.Again = r.applied[o.Agent+"\x00"+e.Message]
			r.applied[o.Agent+"\x00"+e.Message] = true
			r.mu.Unlock()
		}
	default:
		if o.Err == nil {
			return
		}
		e.Kind, e.Reason = "error", o.Err.Error()
	}
	r.write(e)
}

// close closes the file; closing again does nothing.
func (r *recorder) close() error {
	if r.f == nil {
		return nil
	}
	err := errors.Join(r.err, r.f.Close())
	r.f = nil
	return err
}

// side is one agent's end of a conversation in the results.
type side struct {
	Done    bool   `json:"done"`
	Outcome string `json:"outcome,omitempty"`
	// Applied lists the performatives the agent applied, in the order
	// they were sent.
	Applied []string `json:"applied"`
}

// result is one conversation in the results; a side is nil when its
// agent's store does not hold the conversation.
type result struct {
	ID    string `json:"id"`
	Alice *side  `json:"alice"`
	Bob   *side  `json:"bob"`
}

func childMain(dir string) int {
	n, err := strconv.Atoi(os.Getenv(childNEnv))
	if err == nil && n <= 0 {
		err = fmt.Errorf("%s is %d", childNEnv, n)
	}
	if err == nil {
		err = child(context.Background(), dir, n, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "durable drill child:", err)
		return 1
	}
	return 0
}

// child runs conversations 0 to n-1 between alice and bob on the stores
// in dir, starting those alice's store does not hold and waiting for the
// others, and tells progress "ready k" once resumed and "ended k" each
// time n/500 more have ended (k counts the ended ones). When all have
// ended, or none ended for stall, it writes the results.
func child(ctx context.Context, dir string, n int, progress io.Writer) error {
	rec, err := openRecorder(dir)
	if err != nil {
		return err
	}
	defer rec.close()
	lf, err := os.OpenFile(filepath.Join(dir, logFile), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer lf.Close()
	logger := slog.New(slog.NewTextHandler(lf, &slog.HandlerOptions{Level: slog.LevelError}))
	p, err := openPair(ctx, dir, pairConfig{alice: drillAlice, bob: drillBob, observer: rec.observe, logger: logger})
	if err != nil {
		return err
	}
	defer p.close()

	var ended atomic.Int64
	var todo []int
	for i := range n {
		switch st, err := p.alice.Status(ctx, convID(i)); {
		case errors.Is(err, agent.ErrNoConversation), err == nil && !st.Done:
			todo = append(todo, i)
		case err != nil:
			return err
		default:
			ended.Add(1)
		}
	}
	var out sync.Mutex
	tell := func(what string, k int64) {
		out.Lock()
		defer out.Unlock()
		fmt.Fprintf(progress, "%s %d\n", what, k)
	}
	tell("ready", ended.Load())
	every := int64(max(1, n/500)) // a few lines, so that the parent keeps up

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	go func() { // give up on conversations that stopped moving
		for ctx.Err() == nil {
			time.Sleep(stall / 10)
			if time.Since(time.Unix(0, last.Load())) > stall {
				cancel()
			}
		}
	}()
	slots := make(chan struct{}, min(maxWindow, n/50+1))
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	for _, i := range todo {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-slots }()
			id := convID(i)
			_, err := p.alice.Start(ctx, agent.StartRequest{Policy: "fipa-request", Role: "Initiator", ID: id,
				Peers: map[string][]string{"Participant": {"bob"}}, Data: map[string]any{"job": id, "kind": kinds[i%len(kinds)].name}})
			if err != nil && !errors.Is(err, agent.ErrConversationExists) {
				failed.CompareAndSwap(nil, &err)
				cancel()
				return
			}
			if _, err := p.alice.Wait(ctx, id); err != nil && ctx.Err() != nil {
				return
			}
			last.Store(time.Now().UnixNano())
			if k := ended.Add(1); k%every == 0 || k == int64(n) {
				tell("ended", k)
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		return *err
	}
	if err := p.close(); err != nil {
		return err
	}
	if err := rec.close(); err != nil {
		return err
	}
	return writeResults(dir, n)
}

// writeResults writes every conversation's ends, as alice's and bob's
// stores hold them, with the performatives each applied (named by the
// events file).
func writeResults(dir string, n int) error {
	evs, err := readEvents(dir)
	if err != nil {
		return err
	}
	perf := map[string]string{}
	for _, e := range evs {
		if e.Kind == "applied" {
			perf[e.Message] = e.Performative
		}
	}
	res := make([]result, n)
	index := map[string]int{}
	for i := range res {
		res[i].ID = convID(i)
		index[res[i].ID] = i
	}
	for _, name := range []string{"alice", "bob"} {
		st, err := readStore(dir, name)
		if err != nil {
			return err
		}
		for _, sc := range st.Conversations {
			i, ok := index[sc.ID]
			if !ok {
				return fmt.Errorf("%s's store holds conversation %s, which the drill did not start", name, policy.Quote(sc.ID))
			}
			s := sideOf(sc, perf)
			if name == "alice" {
				res[i].Alice = s
			} else {
				res[i].Bob = s
			}
		}
	}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, resultsFile), b, 0o600)
}

// sideOf describes a stored conversation: whether it ended, how, and the
// performatives of the messages it applied ("?" for one the events do
// not name), ordered by their number in the sender's reply-with
// (conversation/agent#n).
func sideOf(sc agent.StoredConversation, perf map[string]string) *side {
	ids := slices.Clone(sc.Applied)
	num := func(id string) int {
		n, _ := strconv.Atoi(id[strings.LastIndexByte(id, '#')+1:])
		return n
	}
	slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(num(a), num(b)) })
	s := &side{Done: !sc.Ended.IsZero(), Outcome: sc.Outcome, Applied: []string{}}
	for _, id := range ids {
		p, ok := perf[id]
		if !ok {
			p = "?"
		}
		s.Applied = append(s.Applied, p)
	}
	return s
}

func readEvents(dir string) ([]event, error) {
	f, err := os.Open(filepath.Join(dir, eventsFile))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var evs []event
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", eventsFile, line, err)
		}
		evs = append(evs, e)
	}
	return evs, sc.Err()
}

// drillConfig says how to run a drill.
type drillConfig struct {
	// N conversations, the child killed Kills times at moments Seed
	// chooses.
	N, Kills int
	Seed     int64
	// Exe is the program to run as the child, with Env added to its
	// environment; Log gets its standard error.
	Exe string
	Env []string
	Log io.Writer
}

// drillResult is what a drill found. Failed counts the children that
// died on their own.
type drillResult struct {
	N, Planned, Kills, Failed int
	Lost, Duplicated, Wrong   int
}

func (r drillResult) ok() bool {
	return r.Lost == 0 && r.Duplicated == 0 && r.Wrong == 0 && r.Kills == r.Planned && r.Failed == 0
}

func (r drillResult) String() string {
	return fmt.Sprintf("crash drill: %d conversations, %d kills, lost %d, duplicated %d, wrong outcome %d",
		r.N, r.Kills, r.Lost, r.Duplicated, r.Wrong)
}

// drill runs the crash drill in a fresh temporary directory, printing
// what it does to out and, last, the drill's line. It keeps the
// directory when the drill fails, for a look at the records.
func drill(ctx context.Context, cfg drillConfig, out io.Writer) (drillResult, error) {
	res := drillResult{N: cfg.N, Planned: cfg.Kills}
	dir, err := os.MkdirTemp("", "parley-drill-")
	if err != nil {
		return res, err
	}
	fmt.Fprintf(out, "crash drill: %d conversations, %d kills planned, seed %d, in %s\n", cfg.N, cfg.Kills, cfg.Seed, dir)
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(cfg.N)))
	marks := killMarks(rng, cfg.N, cfg.Kills)
	begin := time.Now()
	for failedInARow := 0; ; {
		mark := -1
		if res.Kills < len(marks) {
			mark = marks[res.Kills]
		}
		killed, ended, err := runChild(ctx, cfg, dir, mark, time.Duration(rng.Int64N(int64(2*time.Millisecond))))
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit):
			// The child died on its own: that is a finding, and the
			// drill carries on from the stores as after a kill.
			res.Failed++
			fmt.Fprintf(out, "the child failed on its own (%v), %s in\n", exit, time.Since(begin).Round(time.Millisecond))
			if failedInARow++; failedInARow < 3 {
				continue
			}
			fmt.Fprintln(out, "it failed 3 times in a row: the drill judges what the stores hold")
			if err := writeResults(dir, cfg.N); err != nil {
				return res, fmt.Errorf("%w (records in %s)", err, dir)
			}
		case err != nil:
			return res, fmt.Errorf("%w (records in %s)", err, dir)
		case killed:
			failedInARow = 0
			res.Kills++
			fmt.Fprintf(out, "kill %d after %d conversations ended, %s in\n", res.Kills, ended, time.Since(begin).Round(time.Millisecond))
			continue
		default:
			fmt.Fprintf(out, "the last child finished %s in\n", time.Since(begin).Round(time.Millisecond))
		}
		break
	}
	if err := judge(dir, &res, out); err != nil {
		return res, fmt.Errorf("%w (records in %s)", err, dir)
	}
	if res.Kills < res.Planned && res.Failed == 0 {
		fmt.Fprintf(out, "the child finished before kill %d\n", res.Kills+1)
	}
	if res.ok() {
		os.RemoveAll(dir)
	} else {
		fmt.Fprintf(out, "records kept in %s\n", dir)
	}
	fmt.Fprintln(out, res)
	return res, nil
}

// killMarks chooses kills moments, as numbers of ended conversations:
// one at random in each of kills equal stretches between 2% and 90% of
// the run.
func killMarks(rng *rand.Rand, n, kills int) []int {
	marks := make([]int, kills)
	lo, hi := float64(n)*0.02, float64(n)*0.9
	step := (hi - lo) / float64(kills)
	for i := range marks {
		marks[i] = int(lo + step*(float64(i)+rng.Float64()))
	}
	return marks
}

// runChild runs the child until it has told that mark conversations
// ended, and at least one since it started, then waits jitter and kills
// it with SIGKILL. With mark -1 it lets the child finish. It reports
// whether it killed the child, and how many conversations it had told
// ended then; a child that fails on its own is an *exec.ExitError.
func runChild(ctx context.Context, cfg drillConfig, dir string, mark int, jitter time.Duration) (killed bool, ended int, err error) {
	cmd := exec.CommandContext(ctx, cfg.Exe)
	cmd.Env = append(os.Environ(), childEnv+"="+dir, childNEnv+"="+strconv.Itoa(cfg.N))
	cmd.Env = append(cmd.Env, cfg.Env...)
	cmd.Stderr = cfg.Log
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return false, 0, err
	}
	if err := cmd.Start(); err != nil {
		return false, 0, err
	}
	sc := bufio.NewScanner(stdout)
	moved := false
	for mark >= 0 && sc.Scan() {
		what, k, _ := strings.Cut(sc.Text(), " ")
		n, _ := strconv.Atoi(k)
		moved = moved || what == "ended"
		if moved && n >= mark {
			time.Sleep(jitter)
			if err := cmd.Process.Kill(); err != nil {
				return false, n, err
			}
			_, _ = io.Copy(io.Discard, stdout)
			_ = cmd.Wait() // killed
			return true, n, nil
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
	return false, 0, cmd.Wait()
}

// judge compares the results and events the children left in dir with
// the crash-free run and counts what was lost, duplicated or wrong,
// describing the first few of each to out.
func judge(dir string, res *drillResult, out io.Writer) error {
	b, err := os.ReadFile(filepath.Join(dir, resultsFile))
	if err != nil {
		return err
	}
	var results []result
	if err := json.Unmarshal(b, &results); err != nil {
		return fmt.Errorf("%s: %w", resultsFile, err)
	}
	if len(results) != res.N {
		return fmt.Errorf("%s holds %d conversations, not %d", resultsFile, len(results), res.N)
	}
	evs, err := readEvents(dir)
	if err != nil {
		return err
	}
	const shown = 5
	tell := func(count *int, format string, args ...any) {
		if *count++; *count <= shown {
			fmt.Fprintf(out, format+"\n", args...)
		}
	}
	// A message applied again is a duplicate, and so is one the handler
	// reports as a repeat; any other protocol error makes its
	// conversation's messages differ from the crash-free run's.
	dups := map[string]bool{}
	spoilt := map[string]string{}
	errs := 0
	for _, e := range evs {
		key := e.Agent + "\x00" + e.Message
		switch {
		case e.Kind == "applied" && e.Again, e.Kind == "protocol-error" && e.Code == string(engine.CodeDuplicate):
			if !dups[key] {
				dups[key] = true
				tell(&res.Duplicated, "duplicated: %s applied %s %s again", e.Agent, e.Performative, policy.Quote(replyWith(e.Message)))
			}
		case e.Kind == "protocol-error" && !dups[key]:
			spoilt[e.Conversation] = fmt.Sprintf("%s reported %s: %s", e.Agent, e.Code, e.Reason)
		case e.Kind == "error":
			tell(&errs, "error (the run goes on): %s in %s: %s", e.Agent, policy.Quote(e.Conversation), e.Reason)
		}
	}
	if errs > shown {
		fmt.Fprintf(out, "%d errors in all\n", errs)
	}
	for i, r := range results {
		k := kinds[i%len(kinds)]
		want := side{Done: true, Outcome: k.outcome, Applied: k.alice}
		wantBob := side{Done: true, Outcome: k.outcome, Applied: []string{"request"}}
		switch {
		case r.Alice == nil || r.Bob == nil || !r.Alice.Done || !r.Bob.Done:
			tell(&res.Lost, "lost: %s never ended: alice %s, bob %s", policy.Quote(r.ID), describe(r.Alice), describe(r.Bob))
		case !sameSide(*r.Alice, want) || !sameSide(*r.Bob, wantBob):
			tell(&res.Wrong, "wrong outcome: %s: alice %s, bob %s; the crash-free run gives alice %s, bob %s",
				policy.Quote(r.ID), describe(r.Alice), describe(r.Bob), describe(&want), describe(&wantBob))
		case spoilt[r.ID] != "":
			tell(&res.Wrong, "wrong outcome: %s: %s", policy.Quote(r.ID), spoilt[r.ID])
		}
	}
	return nil
}

func sameSide(a, b side) bool {
	return a.Done == b.Done && a.Outcome == b.Outcome && slices.Equal(a.Applied, b.Applied)
}

func describe(s *side) string {
	switch {
	case s == nil:
		return "never had it"
	case !s.Done:
		return fmt.Sprintf("still running after applying %v", s.Applied)
	}
	return fmt.Sprintf("ended %s after applying %v", s.Outcome, s.Applied)
}

// replyWith returns the reply-with part of a MessageID.
func replyWith(id string) string {
	_, rw, _ := strings.Cut(id, "\x00")
	return rw
}

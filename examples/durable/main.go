// Command durable runs two agents whose conversations survive a crash:
// alice asks bob for jobs under fipa-request, and each keeps its
// conversations in a bbolt store file (store/bolt) under -dir.
//
//	go run ./examples/durable
//
// plays three jobs one after the other; bob takes a few seconds over
// each. Kill it at any moment (^C, or kill -9) and run it again: every
// conversation carries on where it stood, a message that was on its way
// is sent again and applied once, and jobs already done are not asked
// for again. Delete the directory (durable-data by default) to start
// over.
//
// # The crash drill
//
//	go run ./examples/durable -crash 10000
//
// runs 10,000 conversations between alice and bob in a child process
// (the command runs itself again), with fsync on and decision logic that
// makes every conversation's crash-free end known in advance: bob agrees
// and reports a result, refuses, agrees and fails, or reports done at
// once, by the conversation's number. The parent kills the child with
// SIGKILL at random moments spread over the run (-kills, 12 by
// default), each after more conversations ended, and starts it again on
// its store files each time; the last child runs to the end. The child
// records every protocol error its agents report and every message a
// receiver applies a second time, and at the end every conversation's
// outcome and the performatives alice and bob applied. The parent
// compares each conversation with the crash-free run and ends with
//
//	crash drill: N conversations, K kills, lost L, duplicated D, wrong outcome W
//
// where lost counts conversations that never ended, duplicated the
// messages a receiver applied twice, and wrong outcome the conversations
// whose outcome or applied messages the crash-free run would not give.
// It exits 0 only when L, D and W are 0, every planned kill happened and
// no child died on its own; otherwise it keeps the drill's directory and
// says where. -seed repeats a drill's kill moments.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/policies"
	"github.com/parleyhq/parley/store/bolt"
)

func main() {
	if dir := os.Getenv(childEnv); dir != "" {
		os.Exit(childMain(dir))
	}
	dir := flag.String("dir", "durable-data", "keep the agents' store files in `DIR`")
	crash := flag.Int("crash", 0, "run the crash drill with `N` conversations")
	kills := flag.Int("kills", 12, "kill the drill's child `K` times")
	seed := flag.Int64("seed", 0, "seed the drill's kill moments (0: from the clock)")
	flag.Parse()
	if *kills < 0 {
		fmt.Fprintln(os.Stderr, "durable: -kills must not be negative")
		os.Exit(2)
	}
	if *crash > 0 {
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintln(os.Stderr, "durable:", err)
			os.Exit(1)
		}
		if *seed == 0 {
			*seed = time.Now().UnixNano()
		}
		res, err := drill(context.Background(), drillConfig{N: *crash, Kills: *kills, Seed: *seed, Exe: exe, Log: os.Stderr}, os.Stdout)
		if err != nil {
			fmt.Fprintln(os.Stderr, "durable:", err)
			os.Exit(1)
		}
		if !res.ok() {
			os.Exit(1)
		}
		return
	}
	if err := hand(context.Background(), os.Stdout, *dir, 3*time.Second); err != nil {
		fmt.Fprintln(os.Stderr, "durable:", err)
		os.Exit(1)
	}
}

// pair is alice and bob on one bus, each with a store file.
type pair struct {
	alice, bob *agent.Manager
	mgrs       []*agent.Manager
	stores     []*bolt.Store
}

// pairConfig says how openPair sets up the agents.
type pairConfig struct {
	alice, bob decision.Decider
	observer   func(agent.Observation)
	logger     *slog.Logger
}

// openPair opens alice's and bob's store files in dir, resumes what
// they hold and connects both agents to one bus. Ended conversations are
// kept (no retention), so that a restart finds the jobs already done.
func openPair(ctx context.Context, dir string, cfg pairConfig) (*pair, error) {
	fr, err := policies.Load("fipa-request")
	if err != nil {
		return nil, err
	}
	p := &pair{}
	fail := func(err error) (*pair, error) {
		p.close()
		return nil, err
	}
	bus := agent.NewBus()
	for _, a := range []struct {
		name string
		d    decision.Decider
	}{{"alice", cfg.alice}, {"bob", cfg.bob}} {
		st, err := bolt.Open(filepath.Join(dir, a.name+".db"))
		if err != nil {
			return fail(err)
		}
		p.stores = append(p.stores, st)
		opts := []agent.Option{agent.WithStore(st), agent.WithDecider(a.d), agent.WithRetention(0), agent.WithLogger(cfg.logger)}
		if cfg.observer != nil {
			opts = append(opts, agent.WithObserver(cfg.observer))
		}
		m, err := agent.NewManager(a.name, opts...)
		if err != nil {
			return fail(err)
		}
		p.mgrs = append(p.mgrs, m)
		if err := m.Register(fr); err != nil {
			return fail(err)
		}
		if err := m.Resume(ctx); err != nil {
			return fail(fmt.Errorf("resume %s: %w", m.Name(), err))
		}
	}
	// Only resumed agents take messages: one that got a message before it
	// knew its stored conversations would take it for a new one.
	for _, m := range p.mgrs {
		if err := bus.Connect(m); err != nil {
			return fail(err)
		}
	}
	p.alice, p.bob = p.mgrs[0], p.mgrs[1]
	return p, nil
}

// close stops both agents and closes their store files; closing again
// does nothing.
func (p *pair) close() error {
	var errs []error
	for _, m := range p.mgrs {
		errs = append(errs, m.Close(context.Background()))
	}
	for _, st := range p.stores {
		errs = append(errs, st.Close())
	}
	*p = pair{}
	return errors.Join(errs...)
}

// job is one conversation of the hand-run pair.
type job struct{ id, action string }

var jobs = []job{{"job-1", "paint the fence"}, {"job-2", "mow the lawn"}, {"job-3", "fly to the moon"}}

// hand plays the jobs one after the other, resuming what dir's stores
// hold, and prints what happens to out. bob spends work on each job he
// agrees to.
func hand(ctx context.Context, out io.Writer, dir string, work time.Duration) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	out = &lockedWriter{w: out} // the agents' workers print too
	start := time.Now()
	show := func(o agent.Observation) {
		if me, ok := o.Event.(*engine.MessageEvent); ok && !o.Input && o.Err == nil {
			m := me.Message
			content := ""
			if len(m.Content) > 0 {
				b, _ := json.Marshal(m.Content) // content is JSON already
				content = string(b)
			}
			fmt.Fprintf(out, "%6.2fs  %s  %-5s -> %-5s %-7s %s\n", time.Since(start).Seconds(), m.ConversationID, m.Sender, m.Receivers[0], m.Performative, content)
		}
	}
	alice := decision.Func(func(_ context.Context, req *decision.Request) (decision.Answer, error) {
		if req.Point == "start" {
			return decision.Answer{Choice: "request", Content: req.Content, ReplyBy: time.Now().Add(time.Hour)}, nil
		}
		return decision.Answer{}, nil // nothing to cancel: wait for bob
	})
	bob := decision.Func(func(ctx context.Context, req *decision.Request) (decision.Answer, error) {
		switch req.Point {
		case "requested":
			if req.Content["action"] == "fly to the moon" {
				return decision.Answer{Choice: "refuse", Content: map[string]any{"reason": "I have no rocket"}}, nil
			}
			return decision.Answer{Choice: "agree"}, nil
		case "agreed":
			select { // bob is at work: a good moment to kill the process
			case <-time.After(work):
			case <-ctx.Done():
				return decision.Answer{}, ctx.Err()
			}
			return decision.Answer{Choice: "inform-result", Content: map[string]any{"result": fmt.Sprintf("%v: done", req.Content["action"])}}, nil
		}
		return decision.Answer{}, decision.ErrNoDecision
	})
	p, err := openPair(ctx, dir, pairConfig{alice: alice, bob: bob, observer: show})
	if err != nil {
		return err
	}
	defer p.close()
	for _, j := range jobs {
		st, err := p.alice.Status(ctx, j.id)
		switch {
		case errors.Is(err, agent.ErrNoConversation):
			if _, err := p.alice.Start(ctx, agent.StartRequest{Policy: "fipa-request", Role: "Initiator", ID: j.id,
				Peers: map[string][]string{"Participant": {"bob"}}, Data: map[string]any{"action": j.action}}); err != nil {
				return err
			}
		case err != nil:
			return err
		case st.Done:
			fmt.Fprintf(out, "%s  ended before: %s\n", j.id, st.Outcome)
			continue
		default:
			fmt.Fprintf(out, "%s  resumed: alice in %s, bob in %s\n", j.id, st.States[""], stateOf(ctx, p.bob, j.id))
		}
		outcome, err := p.alice.Wait(ctx, j.id)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s  ended: %s\n", j.id, outcome)
	}
	fmt.Fprintf(out, "every job is done; delete %s to run them again\n", dir)
	return nil
}

// stateOf describes m's side of a conversation.
func stateOf(ctx context.Context, m *agent.Manager, id string) string {
	st, err := m.Status(ctx, id)
	switch {
	case err != nil:
		return "no conversation yet"
	case st.Done:
		return "the end (" + st.Outcome + ")"
	}
	return st.States[""]
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// Command distributed runs a FIPA Contract Net between agents in separate
// OS processes over NATS: a buyer and five carriers, each its own process
// (this program started again with the agent's name in its environment),
// every agent with a transport/nats transport and a store/natskv store.
// The buyer calls for bids on many jobs at once; carrier-1, the cheapest,
// wins them all and takes a while to deliver. Midway through, the program
// kills carrier-1's process with SIGKILL and starts a replacement, which
// waits for the dead process's lease, resumes carrier-1's live
// conversations from the key-value store and delivers.
//
//	go run ./examples/distributed                          # an embedded NATS server
//	go run ./examples/distributed -nats nats://host:4222   # an existing server or cluster
//
// The last line is:
//
//	distributed: P processes, C conversations, all ended, failover resumed R/R
//
// where R is the number of conversations carrier-1 had open when it was
// killed.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	natsio "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/parleyhq/parley/internal/natsembed"
)

// Environment of the agent processes.
const (
	envAgent  = "PARLEY_DISTRIBUTED_AGENT" // the agent a process runs
	envURL    = "PARLEY_DISTRIBUTED_NATS"
	envRun    = "PARLEY_DISTRIBUTED_RUN" // names this run's stream and bucket
	envConvs  = "PARLEY_DISTRIBUTED_CONVERSATIONS"
	buyerName = "buyer"
	victim    = "carrier-1"
)

var carriers = []string{"carrier-1", "carrier-2", "carrier-3", "carrier-4", "carrier-5"}

func main() {
	if os.Getenv(envAgent) != "" {
		os.Exit(child())
	}
	url := flag.String("nats", "", "use the NATS server at `URL` (JetStream enabled) instead of an embedded one")
	convs := flag.Int("conversations", 20, "how many Contract Net conversations the buyer runs")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, config{url: *url, conversations: *convs}); err != nil {
		fmt.Fprintln(os.Stderr, "distributed:", err)
		os.Exit(1)
	}
}

type config struct {
	url           string
	conversations int
}

// proc is one agent process and the lines it reports on its stdout.
type proc struct {
	name  string
	cmd   *exec.Cmd
	lines chan []string
}

func run(ctx context.Context, out io.Writer, cfg config) error {
	if cfg.conversations < 1 {
		return errors.New("-conversations: want at least 1")
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	url := cfg.url
	if url == "" {
		dir, err := os.MkdirTemp("", "parley-distributed-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		srv, err := natsembed.Start(dir, -1)
		if err != nil {
			return err
		}
		defer srv.Shutdown()
		url = srv.ClientURL()
		fmt.Fprintf(out, "nats: embedded server at %s, JetStream in %s\n", url, dir)
	} else {
		fmt.Fprintf(out, "nats: server at %s\n", url)
	}
	var nonce [4]byte
	_, _ = rand.Read(nonce[:])
	runID := strings.ToUpper(hex.EncodeToString(nonce[:]))
	defer cleanup(url, runID)

	var (
		mu    sync.Mutex
		procs []*proc
		wg    sync.WaitGroup
	)
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range procs {
			_ = p.cmd.Process.Kill()
		}
		wg.Wait()
	}()
	start := func(name string) (*proc, error) {
		cmd := exec.CommandContext(ctx, self)
		cmd.Env = append(os.Environ(), envAgent+"="+name, envURL+"="+url, envRun+"="+runID, envConvs+"="+strconv.Itoa(cfg.conversations))
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		p := &proc{name: name, cmd: cmd, lines: make(chan []string, 4*cfg.conversations+16)}
		mu.Lock()
		procs = append(procs, p)
		mu.Unlock()
		wg.Go(func() {
			defer close(p.lines)
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				p.lines <- strings.Fields(sc.Text())
			}
			_ = cmd.Wait()
		})
		return p, nil
	}
	// expect reads p's lines until one starts with word.
	expect := func(p *proc, word string, within time.Duration) ([]string, error) {
		deadline := time.After(within)
		for {
			select {
			case l, ok := <-p.lines:
				if !ok {
					return nil, fmt.Errorf("%s (pid %d) exited before it said %s", p.name, p.cmd.Process.Pid, word)
				}
				if len(l) > 0 && l[0] == word {
					return l, nil
				}
			case <-deadline:
				return nil, fmt.Errorf("%s said no %s in %s", p.name, word, within)
			}
		}
	}

	byName := map[string]*proc{}
	for _, c := range carriers {
		p, err := start(c)
		if err != nil {
			return err
		}
		byName[c] = p
	}
	for _, c := range carriers {
		if _, err := expect(byName[c], "ready", 30*time.Second); err != nil {
			return err
		}
		fmt.Fprintf(out, "%s: process %d ready\n", c, byName[c].cmd.Process.Pid)
	}
	buyer, err := start(buyerName)
	if err != nil {
		return err
	}
	if _, err := expect(buyer, "started", 30*time.Second); err != nil {
		return err
	}
	fmt.Fprintf(out, "buyer: process %d started %d calls for proposals\n", buyer.cmd.Process.Pid, cfg.conversations)

	// Midway: carrier-1 has won every job and delivers none before it
	// is killed.
	v := byName[victim]
	for range cfg.conversations {
		if _, err := expect(v, "awarded", 30*time.Second); err != nil {
			return err
		}
	}
	if err := v.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s: awarded %d jobs, process %d killed (SIGKILL)\n", victim, cfg.conversations, v.cmd.Process.Pid)
	repl, err := start(victim)
	if err != nil {
		return err
	}
	l, err := expect(repl, "resumed", 60*time.Second)
	if err != nil {
		return err
	}
	open, _ := strconv.Atoi(l[1])
	fmt.Fprintf(out, "%s: replacement process %d resumed %d open conversations\n", victim, repl.cmd.Process.Pid, open)
	l, err = expect(repl, "finished", 120*time.Second)
	if err != nil {
		return err
	}
	finished, _ := strconv.Atoi(l[1])
	l, err = expect(buyer, "ended", 120*time.Second)
	if err != nil {
		return err
	}
	ended, _ := strconv.Atoi(l[1])
	fmt.Fprintf(out, "buyer: %s\n", strings.Join(l[2:], " "))
	mu.Lock()
	n := len(procs)
	mu.Unlock()
	if ended != cfg.conversations || finished != open {
		return fmt.Errorf("%d of %d conversations ended, %d of %d resumed ones", ended, cfg.conversations, finished, open)
	}
	fmt.Fprintf(out, "distributed: %d processes, %d conversations, all ended, failover resumed %d/%d\n", n, cfg.conversations, finished, open)
	return nil
}

// cleanup removes this run's stream and bucket from the server.
func cleanup(url, runID string) {
	nc, err := natsio.Connect(url)
	if err != nil {
		return
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n := names(runID)
	_ = js.DeleteStream(ctx, n.Stream)
	_ = js.DeleteKeyValue(ctx, n.Bucket)
}

// names are this run's stream, subjects and bucket, so that runs on one
// server do not meet.
func names(runID string) natsembed.Names {
	return natsembed.Names{Prefix: "parley.distributed." + runID, Stream: "PARLEY_" + runID, Bucket: "parley_" + runID}
}

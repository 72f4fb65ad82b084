package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	berrors "go.etcd.io/bbolt/errors"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/policies"
	"github.com/parleyhq/parley/policy"
	"github.com/parleyhq/parley/store/bolt"
	"github.com/parleyhq/parley/trace"
)

// replayLockTimeout is how long replay waits for the process that holds
// the store file (the agent, while it runs) to let it go.
const replayLockTimeout = 500 * time.Millisecond

// maxJournalProblems is the most format problems of the journal replay
// prints; a last line says how many more there are.
const maxJournalProblems = 10

var replayCommand = &command{
	name: "replay",
	usage: `cpvalidate replay rebuilds an agent's conversations from its journal and
says, for each, whether it matches what the agent's store holds.

Usage:
  cpvalidate replay [-agent NAME] [-conversation ID] POLICY... JOURNAL STORE

POLICY is a policy file, or the name of a shipped policy (fipa-request),
that the agent ran; give one for each policy it runs conversations of.
Child policies are looked up among them, then among the shipped ones.
JOURNAL is the agent's own journal, as agent.WithJournal(w, true) writes
it with a trace.Writer w: every message it sent and received and every
timer that fired (docs/trace-format.md). STORE is its store file
(store/bolt), which replay reads; it waits at most ` + replayLockTimeout.String() + ` for an agent
that holds it.

Each conversation of the policies given that the store holds or the
journal shows is rebuilt by a fresh handler of its role (the store's, or
else the role of the policy that starts or accepts conversations): in
journal order, it is fed each message the agent sent, as sent, each
message it received (a message delivered again is applied once, as the
agent applies it) and each timer that fired; child policies start and
end as the agent runs them, and a conversation the store says the agent
aborted is aborted at the time the store gives. The handler is then
compared with the store's snapshot of the conversation: whether and how
it ended, each session's state, variables and commitments (state and
deadline), the deadlines of the timers armed, the messages applied, the
peer that opened it, its parent and the children it started. Tickets,
epochs and counters are not compared: they count decisions, which the
journal does not record; nor are the timers of a conversation the agent
started while it is in its initial state, since the journal does not say
when Start ran.

The journal is read as cpvalidate trace reads a trace, within the same
limits. ` + limitsText() + `
Replay feeds the handlers at most ` + fmt.Sprint(replayMaxSteps) + ` inputs, and prints at most
` + fmt.Sprint(maxDifferences) + ` differences per conversation and ` + fmt.Sprint(maxJournalProblems) + ` format problems of the journal.

Output is one line per conversation, in id order:
  ID: match
  ID: mismatch: DIFFERENCE      (a line per difference)
  ID: no longer stored: NOTE    (ended, and swept after its retention)
then a summary line. The journal's format problems go to stderr.
`,
	exitCodes: `  0  every conversation replayed matches the store
  1  some conversation does not match
  2  usage error, a file that cannot be read, a policy with errors, a store
     another process holds or with unreadable records, or a journal that
     needs more inputs than the limit
`,
	examples: `  cpvalidate replay fipa-request alice.jsonl alice.db
  cpvalidate replay -agent buyer policies/shop.yaml fipa-request buyer.jsonl buyer.db
  cpvalidate replay -conversation alice-3k2m fipa-contract-net alice.jsonl alice.db
`,
	flags: replayFlags,
	run:   runReplay,
}

type replayOptions struct {
	agent        string
	conversation string
}

func replayFlags(fs *flag.FlagSet) any {
	o := &replayOptions{}
	fs.StringVar(&o.agent, "agent", "", "the agent whose journal and store these are, `NAME` (default: the agent of the store's snapshots)")
	fs.StringVar(&o.conversation, "conversation", "", "replay and report only conversation `ID` (its parent and children are replayed with it)")
	return o
}

func runReplay(c *command, opts any, args []string, stdout, stderr io.Writer) int {
	o := opts.(*replayOptions)
	if len(args) < 3 {
		return c.usageError(stderr, "needs a policy, a journal and a store, got %d argument(s)", len(args))
	}
	journalPath, storePath := args[len(args)-2], args[len(args)-1]
	given, code := replayPolicies(c, args[:len(args)-2], stderr)
	if given == nil {
		return code
	}
	names := map[string]bool{}
	for _, p := range given {
		names[p.Name] = true
	}
	stored, storeErr := readStore(storePath)
	if stored == nil {
		fmt.Fprintf(stderr, "%s: %v\n", c.fullName(), storeErr)
		return exitUsage
	}
	code = exitOK
	if storeErr != nil {
		// The readable records are replayed; the error names the others.
		fmt.Fprintf(stderr, "%s: %v\n", c.fullName(), storeErr)
		code = exitUsage
	}
	entries, at, err := readJournal(journalPath, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", c.fullName(), err)
		return exitUsage
	}
	self := o.agent
	if self == "" {
		if self = storeAgent(stored.Conversations); self == "" {
			return c.usageError(stderr, "the store holds no conversation to tell the agent by; give -agent NAME")
		}
	}
	r := newReplayer(self, journalPath, given, stored.Conversations)
	r.wanted = func(root, protocol string) bool {
		if o.conversation != "" && root != rootOf(o.conversation) {
			return false
		}
		if sc := r.stored[root]; sc != nil {
			return names[sc.Policy]
		}
		return names[protocol]
	}
	if err := r.feed(entries, at); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", c.fullName(), err)
		return exitUsage
	}
	results, err := r.results()
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", c.fullName(), err)
		return exitUsage
	}
	if r.foreign > 0 {
		fmt.Fprintf(stderr, "%s: %s of %s involve neither agent %s nor its timers; replay needs the agent's own journal\n",
			c.fullName(), plural(r.foreign, "line", "lines"), journalPath, policy.Quote(self))
	}
	if r.received == 0 && receivedAny(stored.Conversations) {
		fmt.Fprintf(stderr, "%s: the store has messages %s applied, but the journal none it received: was it written with WithJournal(j, true)?\n", c.fullName(), policy.Quote(self))
	}
	if o.conversation != "" {
		results = onlyResult(results, o.conversation)
		if len(results) == 0 {
			fmt.Fprintf(stderr, "%s: neither %s nor %s has conversation %s of agent %s (in the policies given)\n",
				c.fullName(), storePath, journalPath, policy.Quote(o.conversation), policy.Quote(self))
			return exitUsage
		}
	}
	if writeReplay(stdout, self, results, skipped(stored.Conversations, names)) && code == exitOK {
		code = exitErrors
	}
	return code
}

// replayPolicies loads the policies args name (files, or shipped
// policies) and checks them, resolving child policies among them and
// then among the shipped ones. It returns nil, and the exit code, when
// one cannot be loaded or has errors.
func replayPolicies(c *command, args []string, stderr io.Writer) ([]*policy.Policy, int) {
	var given []*policy.Policy
	byName := map[string]*policy.Policy{}
	for _, arg := range args {
		var p *policy.Policy
		if _, err := os.Stat(arg); err != nil && !strings.ContainsAny(arg, `/\.`) {
			if p, err = policies.Load(arg); err != nil {
				fmt.Fprintf(stderr, "%s: %s is neither a file nor a shipped policy (%s)\n", c.fullName(), arg, strings.Join(policies.Names(), ", "))
				return nil, exitUsage
			}
		} else if p, _ = loadForCommand(c, arg, stderr, false); p == nil {
			return nil, exitUsage
		}
		if byName[p.Name] == nil {
			byName[p.Name] = p
			given = append(given, p)
		}
	}
	resolve := func(name string) *policy.Policy {
		if p := byName[name]; p != nil {
			return p
		}
		return policies.Resolve(name)
	}
	for i, p := range given {
		if ds := policy.CheckPolicy(p, policy.WithPolicies(resolve)); ds.HasErrors() {
			for _, d := range ds {
				if d.Severity == policy.SeverityError {
					writeDiagnostic(stderr, d)
				}
			}
			fmt.Fprintf(stderr, "%s: %s has errors; fix them before replaying against it\n", c.fullName(), args[i])
			return nil, exitUsage
		}
	}
	return given, exitOK
}

// readStore reads every record of the store file at path. The file must
// exist (bolt.Open would create it). With the records it returns the
// error naming those it cannot read; without them, why it cannot read
// the file.
func readStore(path string) (*agent.Stored, error) {
	info, err := os.Stat(path)
	switch {
	case err != nil:
		return nil, pathError(path, err)
	case !info.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a store file", path)
	}
	s, err := bolt.Open(path, bolt.WithLockTimeout(replayLockTimeout))
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("%w (another process holds the file: stop the agent before replaying)", err)
	}
	if err != nil {
		return nil, err
	}
	defer s.Close()
	st, err := s.Load()
	if st == nil && err == nil {
		st = &agent.Stored{}
	}
	return st, err
}

// readJournal reads the journal at path and reports its format problems
// on stderr. It returns the entries and, for the message lines Read
// moved forward in time (a journal written by several workers at once
// can interleave lines slightly out of time order), the time each line
// gives: the time the agent fed the message to the handler.
func readJournal(path string, stderr io.Writer) ([]trace.Entry, map[int]time.Time, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, pathError(path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, int64(trace.DefaultLimits.MaxBytes)+1))
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", path, err)
	}
	entries, problems, err := trace.Read(bytes.NewReader(data))
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", path, err)
	}
	moved := map[int]bool{}
	shown := 0
	for _, p := range problems {
		if p.Code == trace.CodeBackwards {
			moved[p.Line] = true
			continue
		}
		if shown++; shown <= maxJournalProblems {
			fmt.Fprintf(stderr, "%s:%d: %s [%s]\n", path, p.Line, p.Message, p.Code)
		}
	}
	if shown > maxJournalProblems {
		fmt.Fprintf(stderr, "%s: ... and %s\n", path, plural(shown-maxJournalProblems, "more problem", "more problems"))
	}
	return entries, lineTimes(data, moved), nil
}

// lineTimes returns the RFC 3339 time of each line of data named in
// lines, by line number (from 1).
func lineTimes(data []byte, lines map[int]bool) map[int]time.Time {
	out := map[int]time.Time{}
	for n := 1; len(lines) > len(out) && len(data) > 0; n++ {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if !lines[n] {
			continue
		}
		var l struct {
			At string `json:"at"`
		}
		if json.Unmarshal(line, &l) == nil {
			if t, err := time.Parse(time.RFC3339Nano, l.At); err == nil {
				out[n] = t
				continue
			}
		}
		delete(lines, n) // a relative time keeps the time Read gave it
	}
	return out
}

// storeAgent returns the agent the store's snapshots are of: the first
// one that names it.
func storeAgent(convs []agent.StoredConversation) string {
	for _, sc := range convs {
		if v, err := decodeSnapshot(sc.Handler); err == nil && v.Self != "" {
			return v.Self
		}
	}
	return ""
}

func receivedAny(convs []agent.StoredConversation) bool {
	for _, sc := range convs {
		if len(sc.Applied) > 0 {
			return true
		}
	}
	return false
}

// skipped counts the stored conversations of trees whose policy was not
// given.
func skipped(convs []agent.StoredConversation, names map[string]bool) int {
	roots := map[string]string{}
	for _, sc := range convs {
		if rootOf(sc.ID) == sc.ID {
			roots[sc.ID] = sc.Policy
		}
	}
	n := 0
	for _, sc := range convs {
		if p, ok := roots[rootOf(sc.ID)]; ok && !names[p] {
			n++
		}
	}
	return n
}

func onlyResult(results []replayResult, id string) []replayResult {
	for _, res := range results {
		if res.id == id {
			return []replayResult{res}
		}
	}
	return nil
}

// writeReplay prints the verdicts and the summary line, and reports
// whether any is a mismatch.
func writeReplay(w io.Writer, self string, results []replayResult, skipped int) bool {
	var match, mismatch, gone int
	for _, res := range results {
		id := policy.Clip(res.id)
		switch res.verdict {
		case verdictMatch:
			match++
			if len(res.lines) == 0 {
				fmt.Fprintf(w, "%s: match\n", id)
			}
			for _, l := range res.lines {
				fmt.Fprintf(w, "%s: match (%s)\n", id, l)
			}
		case verdictMismatch:
			mismatch++
			for _, l := range res.lines {
				fmt.Fprintf(w, "%s: mismatch: %s\n", id, l)
			}
		case verdictGone:
			gone++
			for _, l := range res.lines {
				fmt.Fprintf(w, "%s: no longer stored: %s\n", id, l)
			}
		}
	}
	sum := fmt.Sprintf("agent %s: %s replayed: %d match, %d mismatch", policy.Quote(self), plural(len(results), "conversation", "conversations"), match, mismatch)
	if gone > 0 {
		sum += fmt.Sprintf(", %d no longer stored", gone)
	}
	if skipped > 0 {
		sum += fmt.Sprintf("; %s of other policies not replayed", plural(skipped, "stored conversation", "stored conversations"))
	}
	fmt.Fprintln(w, sum)
	return mismatch > 0
}

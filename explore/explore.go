package explore

import (
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policy"
)

// Defaults of the exploration's bounds.
const (
	// DefaultInstances is how many agents play a many role.
	DefaultInstances = 2
	// DefaultBuffer is how many messages a channel (one sender to one
	// receiver) holds at most.
	DefaultBuffer = 2
	// DefaultMaxStates is how many distinct global states the
	// exploration visits at most.
	DefaultMaxStates = 20_000
	// MaxInstances is the most agents WithInstances lets play a many
	// role, MaxBuffer the largest buffer WithBuffer allows, and
	// MaxStatesLimit the most states WithMaxStates allows: each bounds
	// the memory and time an exploration takes.
	MaxInstances   = 4
	MaxBuffer      = 8
	MaxStatesLimit = 2_000_000
	// maxFindings is how many problems one exploration reports; the
	// count of the rest is in Report.Omitted.
	maxFindings = 50
)

// Option configures Explore.
type Option func(*options)

type options struct {
	instances int
	buffer    int
	maxStates int
}

// WithInstances sets how many agents play a many role (DefaultInstances;
// 1 to MaxInstances).
func WithInstances(n int) Option {
	return func(o *options) { o.instances = min(max(n, 1), MaxInstances) }
}

// WithBuffer sets how many messages a channel holds (DefaultBuffer; 1 to
// MaxBuffer). A step that would send one more is not taken, and the
// report says the bound cut the exploration short.
func WithBuffer(n int) Option {
	return func(o *options) { o.buffer = min(max(n, 1), MaxBuffer) }
}

// WithMaxStates sets how many distinct global states the exploration
// visits at most (DefaultMaxStates; 1 to MaxStatesLimit).
func WithMaxStates(n int) Option {
	return func(o *options) { o.maxStates = min(max(n, 1), MaxStatesLimit) }
}

// Report is what an exploration found.
type Report struct {
	// Findings are the problems found, each once (by code, role, state
	// and message), with the shortest witness, sorted by position.
	Findings []Finding
	// Omitted counts the problems found beyond the most a report holds.
	Omitted int
	// States is how many distinct global states were visited, Steps how
	// many steps were taken between them.
	States, Steps int
	// Truncated says a bound cut the exploration short: Bound names it
	// ("states" or "buffer"), and the behaviours beyond it were not seen.
	Truncated bool
	Bound     string
	// Instances, Buffer and MaxStates are the bounds used.
	Instances, Buffer, MaxStates int
}

// Diagnostics returns the findings as diagnostics, with a CP109
// information at the policy's name when a bound cut the exploration
// short.
func (r *Report) Diagnostics(p *policy.Policy) policy.Diagnostics {
	var ds policy.Diagnostics
	for _, f := range r.Findings {
		ds = append(ds, f.Diagnostic)
	}
	if r.Truncated {
		what := fmt.Sprintf("the channel buffer bound of %d messages", r.Buffer)
		if r.Bound == "states" {
			what = fmt.Sprintf("the bound of %d states", r.MaxStates)
		}
		ds = append(ds, policy.Diagnostic{Severity: severity(CodeBound), Code: CodeBound, Pos: p.Pos,
			Message: fmt.Sprintf("exploration stopped at %s after %d states: behaviours beyond it were not checked (raise the bound to check them)", what, r.States)})
	}
	ds.Sort()
	return ds
}

// instance is an agent playing a role.
type instance struct {
	role  string
	agent string
	prog  *engine.Program
}

// explorer holds what an exploration shares between its states.
type explorer struct {
	c     *engine.Compiled
	p     *policy.Policy
	o     options
	insts []instance
	start time.Time
	q     engine.Queue
	rep   Report
	found map[string]int // finding key to index in rep.Findings
}

// conversation is the id every handler of an exploration runs under.
const conversation = "explore"

// Explore runs every role of c's policy together, each as the engine's
// own handler, over asynchronous channels (first in, first out for each
// sender and receiver, of at most the buffer bound each), and visits
// every global state reachable by any order of deliveries, any choice a
// decider can make at each decision point, any order of timers due
// together and any outcome of a child policy (which ends for all its
// parents at once), breadth first, up to the state bound. It reports
// deadlocks (CP101), orphan messages (CP102), roles left unfinished
// (CP103), replies that cross the waiting role's deadline (CP104),
// commitments open at a terminal state (CP105), waits no timer bounds
// (CP106) and runs that reach the policy's run budget (CP107), each
// with its shortest witness.
//
// A many role is played by WithInstances agents. Time is virtual: it
// moves only when a timer fires, and a message may be delivered at any
// time after it was sent. A decision's content is made up from its
// message type: one value for each required field (see the package
// doc); a choice whose guard this content fails is not explored.
//
// Cost: each visited state costs one step for every message that can be
// delivered, every choice open and every timer due, so the time grows
// as states times steps per state, and the states as the policy's
// global states times the ways its channels can be filled (up to the
// buffer bound per channel). The states visited and the report are
// bounded by the options; the memory is that of the states visited
// (each handler's snapshot, shared between states that did not change
// it) and of the queue of states still to visit.
func Explore(c *engine.Compiled, opts ...Option) (*Report, error) {
	if c == nil {
		return nil, errors.New("explore: no compiled policy")
	}
	o := options{instances: DefaultInstances, buffer: DefaultBuffer, maxStates: DefaultMaxStates}
	for _, opt := range opts {
		opt(&o)
	}
	x := &explorer{c: c, p: c.Policy(), o: o, start: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), found: map[string]int{}}
	x.rep.Instances, x.rep.Buffer, x.rep.MaxStates = o.instances, o.buffer, o.maxStates
	if err := x.cast(); err != nil {
		return nil, err
	}
	w0, err := x.initial()
	if err != nil {
		return nil, err
	}
	if err := x.search(w0); err != nil {
		return nil, err
	}
	slices.SortStableFunc(x.rep.Findings, func(a, b Finding) int {
		if a.Diagnostic.Pos.Before(b.Diagnostic.Pos) {
			return -1
		}
		if b.Diagnostic.Pos.Before(a.Diagnostic.Pos) {
			return 1
		}
		return cmp.Compare(a.Diagnostic.Code, b.Diagnostic.Code)
	})
	return &x.rep, nil
}

// cast names an agent for each role, and WithInstances agents for a many
// role.
func (x *explorer) cast() error {
	for _, r := range x.p.Roles {
		pr, err := x.c.Program(r.Name)
		if err != nil {
			return err
		}
		if !r.Many {
			x.insts = append(x.insts, instance{role: r.Name, agent: r.Name, prog: pr})
			continue
		}
		for i := 1; i <= x.o.instances; i++ {
			x.insts = append(x.insts, instance{role: r.Name, agent: r.Name + strconv.Itoa(i), prog: pr})
		}
	}
	return nil
}

// agentsOf returns the agents playing role.
func (x *explorer) agentsOf(role string) []string {
	var out []string
	for _, in := range x.insts {
		if in.role == role {
			out = append(out, in.agent)
		}
	}
	return out
}

// instanceOf returns the index of agent's instance, or -1.
func (x *explorer) instanceOf(agent string) int {
	return slices.IndexFunc(x.insts, func(in instance) bool { return in.agent == agent })
}

// initial starts every handler and returns the first global state.
func (x *explorer) initial() (*world, error) {
	n := len(x.insts)
	w := &world{snaps: make([][]byte, n), norm: make([][]byte, n), states: make([]string, n), done: make([]bool, n), chans: make([][]flight, n*n)}
	for i, in := range x.insts {
		var hopts []engine.HandlerOption
		for _, r := range x.p.Roles {
			if r.Name == in.role {
				continue
			}
			hopts = append(hopts, engine.WithPeers(r.Name, x.agentsOf(r.Name)...))
		}
		h, err := in.prog.NewHandler(conversation, in.agent, hopts...)
		if err != nil {
			return nil, err
		}
		x.q.Reset()
		if err := h.Start(x.start, &x.q); err != nil {
			return nil, err
		}
		var steps []Step
		if _, err := x.absorb(w, i, h, "", nil, &steps); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// node is a visited global state and how the search first reached it.
type node struct {
	w      *world
	parent *node
	steps  []Step
	depth  int
}

// search visits the global states breadth first.
func (x *explorer) search(w0 *world) error {
	seen := map[[sha256.Size]byte]bool{w0.key(x): true}
	queue := []*node{{w: w0}}
	x.rep.States = 1
	for len(queue) > 0 {
		nd := queue[0]
		queue[0] = nil
		queue = queue[1:]
		x.waits(nd)
		succs, err := x.successors(nd)
		if err != nil {
			return err
		}
		enabled := 0
		for _, s := range succs {
			if s.blocked {
				x.truncate("buffer")
				enabled++
				continue
			}
			if s.refused {
				enabled++
				continue
			}
			enabled++
			x.rep.Steps++
			k := s.w.key(x)
			if seen[k] {
				continue
			}
			if x.rep.States >= x.o.maxStates {
				x.truncate("states")
				return nil
			}
			seen[k] = true
			x.rep.States++
			queue = append(queue, &node{w: s.w, parent: nd, steps: s.steps, depth: nd.depth + 1})
		}
		if enabled == 0 {
			x.stuck(nd)
		}
	}
	return nil
}

func (x *explorer) truncate(bound string) {
	if !x.rep.Truncated || bound == "states" {
		x.rep.Truncated, x.rep.Bound = true, bound
	}
}

// witness returns the steps from the initial state to nd, then extra.
func witness(nd *node, extra []Step) []Step {
	var chain [][]Step
	for n := nd; n != nil; n = n.parent {
		chain = append(chain, n.steps)
	}
	var out []Step
	for i := len(chain) - 1; i >= 0; i-- {
		out = append(out, chain[i]...)
	}
	return append(out, extra...)
}

// flight is a message in a channel.
type flight struct {
	msg    *forms.Message // shared by every state holding it: never changed
	name   string         // the message type
	serial int            // numbers the messages of a run, for the witness
	from   int            // the sender's instance
	pos    policy.Pos     // the transition that sent it
}

// armed is a timer a handler set.
type armed struct {
	inst int
	ev   engine.TimerEvent
}

// ask is a decision a handler raised and has not had answered.
type ask struct {
	inst int
	ev   engine.DecisionEvent
}

// load is a child policy a handler runs.
type load struct {
	inst  int
	ev    engine.LoadCPEvent
	key   string
	state string // the parent's state that runs it
}

// world is a global state: every handler (as its snapshot), the channels,
// the timers, the open decisions and the child policies running. A world
// is never changed once built; a step builds a new one sharing what it
// did not change.
type world struct {
	snaps  [][]byte
	norm   [][]byte // each snapshot normalized, for the key
	states []string // each handler's state, for the witness and findings
	done   []bool
	chans  [][]flight // from*n+to
	timers []armed
	asks   []ask
	loads  []load
	now    time.Duration // since the start
	serial int
}

func (w *world) clone() *world {
	c := *w
	c.snaps = slices.Clone(w.snaps)
	c.norm = slices.Clone(w.norm)
	c.states = slices.Clone(w.states)
	c.done = slices.Clone(w.done)
	c.chans = slices.Clone(w.chans)
	c.timers = slices.Clone(w.timers)
	c.asks = slices.Clone(w.asks)
	c.loads = slices.Clone(w.loads)
	return &c
}

// key identifies a world up to what cannot change its future: handler
// snapshots without their counters, reply-with numbers and absolute
// times; messages by type, content and order; timers by the time left.
func (w *world) key(x *explorer) [sha256.Size]byte {
	h := sha256.New()
	for i, s := range w.norm {
		fmt.Fprintf(h, "h%d:%d:", i, len(s))
		h.Write(s)
	}
	for c, ch := range w.chans {
		for _, f := range ch {
			content, _ := json.Marshal(f.msg.Content)
			fmt.Fprintf(h, "c%d:%s:%s;", c, f.name, content)
		}
	}
	ts := make([]string, 0, len(w.timers))
	for _, t := range w.timers {
		ts = append(ts, fmt.Sprintf("t%d:%s:%s:%s:%d;", t.inst, t.ev.Name, t.ev.Commitment, t.ev.Session, t.ev.Deadline.Sub(x.start)-w.now))
	}
	slices.Sort(ts)
	for _, t := range ts {
		h.Write([]byte(t))
	}
	for _, a := range w.asks {
		fmt.Fprintf(h, "a%d:%s:%s:%v;", a.inst, a.ev.Request.Point, a.ev.Request.Peer, len(a.ev.Request.Sessions))
	}
	for _, l := range w.loads {
		fmt.Fprintf(h, "l%d:%s:%s;", l.inst, l.key, l.ev.Session)
	}
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// normalize returns a handler snapshot without what only numbers or
// dates its history: counters, epochs, tickets (kept as open or not),
// reply-with values and absolute times (the timers armed stand for the
// deadlines, by the time left).
func normalize(snap []byte) []byte {
	data, err := engine.SnapshotJSON(snap)
	if err != nil {
		return snap
	}
	var sn map[string]any
	if json.Unmarshal(data, &sn) != nil {
		return snap
	}
	for _, k := range []string{"counter", "seq", "conversation", "fingerprint", "version"} {
		delete(sn, k)
	}
	for _, k := range []string{"group_ticket", "join_ticket"} {
		sn[k] = sn[k] != nil && sn[k] != float64(0)
	}
	if sessions, ok := sn["sessions"].([]any); ok {
		for _, s := range sessions {
			ss, ok := s.(map[string]any)
			if !ok {
				continue
			}
			for _, k := range []string{"epoch", "last_reply_with", "last_in_reply_to", "sent", "deadlines", "source_times"} {
				delete(ss, k)
			}
			ss["ticket"] = ss["ticket"] != nil
			if cs, ok := ss["commitments"].([]any); ok {
				for _, c := range cs {
					if cm, ok := c.(map[string]any); ok {
						delete(cm, "epoch")
						delete(cm, "deadline")
					}
				}
			}
		}
	}
	out, err := json.Marshal(sn)
	if err != nil {
		return snap
	}
	return out
}

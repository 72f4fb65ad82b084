package membership

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/policy"
)

// Health is what a group knows of a member's liveness.
type Health uint8

// Health values, from the heartbeats a member sent (and the health they
// reported) and the group's thresholds.
const (
	// Unknown: registered, and no heartbeat yet, for less than the
	// unhealthy threshold.
	Unknown Health = iota
	// Healthy: the last heartbeat came within the degraded threshold and
	// reported no trouble.
	Healthy
	// Degraded: the last heartbeat is older than the degraded threshold,
	// or the member reported itself degraded.
	Degraded
	// Unhealthy: no heartbeat for the unhealthy threshold (counted from
	// registration before the first), or the member reported itself
	// unhealthy. An unhealthy member is removed once it has been so for
	// the group's removal delay.
	Unhealthy
)

// String returns the health's name.
func (h Health) String() string {
	switch h {
	case Unknown:
		return "unknown"
	case Healthy:
		return "healthy"
	case Degraded:
		return "degraded"
	case Unhealthy:
		return "unhealthy"
	}
	return fmt.Sprintf("health(%d)", uint8(h))
}

// Errors a Group returns.
var (
	ErrUnknownMember = errors.New("membership: no such member")
	ErrRegistered    = errors.New("membership: already registered")
	ErrFull          = errors.New("membership: the group is full")
	ErrNoRoom        = errors.New("membership: the member has no room for another task")
	ErrNoTask        = errors.New("membership: the member has no task in progress")
	ErrInvalid       = errors.New("membership: invalid registration")
)

// Limits a Group holds registrations to, since members may register
// themselves over the network.
const (
	// MaxNameBytes is the longest member name, role or capability.
	MaxNameBytes = 256
	// MaxCapabilities is the most capabilities one member may declare.
	MaxCapabilities = 64
	// DefaultMaxMembers is how many members a group holds unless
	// WithMaxMembers says otherwise.
	DefaultMaxMembers = 10_000
	// DefaultHistory is how many join and removal events a group keeps
	// unless WithHistory says otherwise.
	DefaultHistory = 1024
)

// Default health thresholds and removal delay.
const (
	DefaultDegradedAfter  = 10 * time.Second
	DefaultUnhealthyAfter = 30 * time.Second
	DefaultRemoveAfter    = 30 * time.Second
)

// Registration is what a member declares when it joins.
type Registration struct {
	// Name is the member's agent name, unique in the group.
	Name string
	// Role is the role the member plays (a policy role such as
	// Participant, or one of the application's).
	Role string
	// Capabilities are what the member can do; queries and elections
	// filter by them.
	Capabilities []string
	// Priority orders members for elections: higher is preferred.
	Priority int
	// Capacity is the most tasks the member takes at once; 0 for no
	// limit.
	Capacity int
}

// Member is a snapshot of one member of a group.
type Member struct {
	Name         string
	Role         string
	Capabilities []string // sorted, without repeats
	Priority     int
	Capacity     int // the most tasks at once; 0 for no limit
	// Active counts tasks started and not yet finished.
	Active int
	// Health is the member's health when the snapshot was taken.
	Health Health
	// Joined is when the member registered; Seq orders members by
	// joining (first is 1), telling apart members that joined at the
	// same instant.
	Joined time.Time
	Seq    uint64
	// LastHeartbeat is the time of the latest heartbeat, zero before the
	// first.
	LastHeartbeat time.Time
}

// HasCapability reports whether the member declared capability c.
func (m Member) HasCapability(c string) bool {
	_, ok := slices.BinarySearch(m.Capabilities, c)
	return ok
}

// HasRoom reports whether the member can take another task.
func (m Member) HasRoom() bool { return m.Capacity == 0 || m.Active < m.Capacity }

// EventKind says what happened to a member.
type EventKind uint8

// Event kinds of a group's history.
const (
	// Joined: the member registered.
	Joined EventKind = iota + 1
	// Left: the member unregistered.
	Left
	// Removed: the group removed the member, unhealthy for the removal
	// delay.
	Removed
)

// String returns the kind's name.
func (k EventKind) String() string {
	switch k {
	case Joined:
		return "joined"
	case Left:
		return "left"
	case Removed:
		return "removed"
	}
	return fmt.Sprintf("event(%d)", uint8(k))
}

// Event is one entry of a group's history.
type Event struct {
	Kind   EventKind
	Member string
	// At is when it happened: for a removal, the instant the member had
	// been unhealthy for the removal delay.
	At time.Time
}

// Option configures New.
type Option func(*options)

type options struct {
	degraded, unhealthy, remove time.Duration
	maxMembers, history         int
}

// WithThresholds sets how long after its last heartbeat (or, before the
// first, its registration) a member is degraded and unhealthy (by
// default DefaultDegradedAfter and DefaultUnhealthyAfter). Values that are
// not positive, or a degraded threshold not below the unhealthy one, are
// ignored.
func WithThresholds(degraded, unhealthy time.Duration) Option {
	return func(o *options) {
		if degraded > 0 && unhealthy > degraded {
			o.degraded, o.unhealthy = degraded, unhealthy
		}
	}
}

// WithRemoveAfter sets how long a member stays unhealthy before the group
// removes it (DefaultRemoveAfter by default; 0 removes it as soon as it
// is unhealthy). A negative value is ignored.
func WithRemoveAfter(d time.Duration) Option {
	return func(o *options) {
		if d >= 0 {
			o.remove = d
		}
	}
}

// WithMaxMembers bounds the group (DefaultMaxMembers by default); Register
// beyond it fails with ErrFull. A value below 1 is ignored.
func WithMaxMembers(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.maxMembers = n
		}
	}
}

// WithHistory sets how many events History keeps, the latest
// (DefaultHistory by default). A value below 1 is ignored.
func WithHistory(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.history = n
		}
	}
}

// Group is a set of members with their capabilities, health and load. It
// reads time from the runtime's clock (agent.Clock; agent.FakeClock in
// tests) and works out health and removals from it whenever it is used,
// so it runs no goroutine and needs no closing: a member due for removal
// is gone from every answer from that instant on, and its removal is in
// the history at that instant. A Group is safe for concurrent use.
type Group struct {
	clock agent.Clock
	o     options

	mu      sync.Mutex
	members map[string]*member
	seq     uint64
	history []Event // a ring of at most o.history events
	start   int     // index of the oldest event once the ring is full
}

type member struct {
	Member
	reported   Health // the health the last heartbeat reported
	reportedAt time.Time
}

// New returns an empty group on clock.
func New(clock agent.Clock, opts ...Option) *Group {
	o := options{degraded: DefaultDegradedAfter, unhealthy: DefaultUnhealthyAfter, remove: DefaultRemoveAfter, maxMembers: DefaultMaxMembers, history: DefaultHistory}
	for _, opt := range opts {
		opt(&o)
	}
	return &Group{clock: clock, o: o, members: map[string]*member{}}
}

// Register adds a member, with health Unknown until its first heartbeat.
// It fails with ErrRegistered for a name already in the group, ErrFull
// when the group holds its maximum, and ErrInvalid for an empty name, a
// name, role or capability longer than MaxNameBytes, more than
// MaxCapabilities capabilities or a negative capacity.
func (g *Group) Register(r Registration) error {
	if err := r.check(); err != nil {
		return err
	}
	caps := slices.Clone(r.Capabilities)
	slices.Sort(caps)
	caps = slices.Compact(caps)
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.expire()
	if _, ok := g.members[r.Name]; ok {
		return fmt.Errorf("%w: %s", ErrRegistered, policy.Quote(r.Name))
	}
	if len(g.members) >= g.o.maxMembers {
		return fmt.Errorf("%w: it holds %d members", ErrFull, g.o.maxMembers)
	}
	g.seq++
	g.members[r.Name] = &member{Member: Member{
		Name: r.Name, Role: r.Role, Capabilities: caps, Priority: r.Priority, Capacity: r.Capacity,
		Joined: now, Seq: g.seq,
	}}
	g.record(Event{Kind: Joined, Member: r.Name, At: now})
	return nil
}

func (r Registration) check() error {
	switch {
	case r.Name == "":
		return fmt.Errorf("%w: no name", ErrInvalid)
	case len(r.Name) > MaxNameBytes:
		return fmt.Errorf("%w: name %s is longer than %d bytes", ErrInvalid, policy.Quote(r.Name), MaxNameBytes)
	case len(r.Role) > MaxNameBytes:
		return fmt.Errorf("%w: role %s is longer than %d bytes", ErrInvalid, policy.Quote(r.Role), MaxNameBytes)
	case len(r.Capabilities) > MaxCapabilities:
		return fmt.Errorf("%w: %d capabilities, more than %d", ErrInvalid, len(r.Capabilities), MaxCapabilities)
	case r.Capacity < 0:
		return fmt.Errorf("%w: capacity %d is negative", ErrInvalid, r.Capacity)
	}
	for _, c := range r.Capabilities {
		if len(c) > MaxNameBytes {
			return fmt.Errorf("%w: capability %s is longer than %d bytes", ErrInvalid, policy.Quote(c), MaxNameBytes)
		}
	}
	return nil
}

// Unregister removes a member that leaves; ErrUnknownMember if it is not
// in the group.
func (g *Group) Unregister(name string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.expire()
	if _, ok := g.members[name]; !ok {
		return unknown(name)
	}
	delete(g.members, name)
	g.record(Event{Kind: Left, Member: name, At: now})
	return nil
}

func unknown(name string) error { return fmt.Errorf("%w: %s", ErrUnknownMember, policy.Quote(name)) }

// Heartbeat records that the member is alive and well: it is healthy
// until the degraded threshold passes without another heartbeat.
func (g *Group) Heartbeat(name string) error { return g.Report(name, Healthy) }

// Report is a heartbeat that carries the health the member reports of
// itself (Healthy, Degraded or Unhealthy): the member's health is the
// worse of that and what the heartbeats' timing says, until the next
// heartbeat. A member that reports itself unhealthy is removed after the
// removal delay unless it reports better first.
func (g *Group) Report(name string, h Health) error {
	if h != Healthy && h != Degraded && h != Unhealthy {
		return fmt.Errorf("membership: a heartbeat reports healthy, degraded or unhealthy, not %s", h)
	}
	return g.with(name, func(m *member, now time.Time) error {
		m.LastHeartbeat = now
		if h != Unhealthy || m.reported != Unhealthy {
			m.reportedAt = now // an unhealthy member reporting so again stays due for removal
		}
		m.reported = h
		return nil
	})
}

// StartTask counts a task the member takes on; ErrNoRoom when it already
// has as many as its capacity.
func (g *Group) StartTask(name string) error {
	return g.with(name, func(m *member, _ time.Time) error {
		if !m.HasRoom() {
			return fmt.Errorf("%w: %s has %d of %d", ErrNoRoom, policy.Quote(name), m.Active, m.Capacity)
		}
		m.Active++
		return nil
	})
}

// FinishTask counts a task of the member as done (completed or failed);
// ErrNoTask when it has none in progress.
func (g *Group) FinishTask(name string) error {
	return g.with(name, func(m *member, _ time.Time) error {
		if m.Active == 0 {
			return fmt.Errorf("%w: %s", ErrNoTask, policy.Quote(name))
		}
		m.Active--
		return nil
	})
}

// with calls f with the member called name and the time, under the lock
// and after removing the members due; ErrUnknownMember if there is no
// such member.
func (g *Group) with(name string, f func(m *member, now time.Time) error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.expire()
	m, ok := g.members[name]
	if !ok {
		return unknown(name)
	}
	return f(m, now)
}

// Get returns the member called name, and false if it is not in the
// group.
func (g *Group) Get(name string) (Member, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.expire()
	m, ok := g.members[name]
	if !ok {
		return Member{}, false
	}
	return g.snapshot(m, now), true
}

// Health returns the member's health, Unknown for a name not in the
// group.
func (g *Group) Health(name string) Health {
	m, _ := g.Get(name)
	return m.Health
}

// Len returns how many members the group has.
func (g *Group) Len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.expire()
	return len(g.members)
}

// Filter narrows a query (Members, Names, Elect).
type Filter func(*filter)

type filter struct {
	caps     []string
	role     *string
	health   []Health
	room     bool
	above    int
	hasAbove bool
}

// WithCapability keeps members that have every capability caps.
func WithCapability(caps ...string) Filter {
	return func(f *filter) { f.caps = append(f.caps, caps...) }
}

// WithRole keeps members of role.
func WithRole(role string) Filter { return func(f *filter) { f.role = &role } }

// WithHealth keeps members in one of the healths hs.
func WithHealth(hs ...Health) Filter { return func(f *filter) { f.health = hs } }

// WithRoom keeps members with room for another task.
func WithRoom() Filter { return func(f *filter) { f.room = true } }

// WithPriorityAbove keeps members whose priority is above p (those a
// member of priority p defers to in a bully election).
func WithPriorityAbove(p int) Filter {
	return func(f *filter) { f.above, f.hasAbove = p, true }
}

func (f *filter) keep(m *Member) bool {
	switch {
	case f.role != nil && m.Role != *f.role,
		f.health != nil && !slices.Contains(f.health, m.Health),
		f.room && !m.HasRoom(),
		f.hasAbove && m.Priority <= f.above:
		return false
	}
	for _, c := range f.caps {
		if !m.HasCapability(c) {
			return false
		}
	}
	return true
}

// Members returns the members the filters keep (every member without
// one), in the order they joined.
func (g *Group) Members(filters ...Filter) []Member {
	var f filter
	for _, fn := range filters {
		fn(&f)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.expire()
	var out []Member
	for _, m := range g.members {
		s := g.snapshot(m, now)
		if f.keep(&s) {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, bySeq)
	return out
}

// Names returns the names of the members the filters keep, in the order
// they joined.
func (g *Group) Names(filters ...Filter) []string {
	ms := g.Members(filters...)
	out := make([]string, len(ms))
	for i := range ms {
		out[i] = ms[i].Name
	}
	return out
}

// Available returns the names of the healthy members that have every
// capability caps and room for another task, in the order they joined:
// the peers to address a many role with, as in
//
//	Peers: map[string][]string{"Participant": g.Available("transport")}
func (g *Group) Available(caps ...string) []string {
	return g.Names(WithHealth(Healthy), WithCapability(caps...), WithRoom())
}

// History returns the latest joins, departures and removals, oldest
// first: at most the group's history limit (DefaultHistory unless
// WithHistory set it), older ones are dropped.
func (g *Group) History() []Event {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.expire()
	out := make([]Event, 0, len(g.history))
	out = append(out, g.history[g.start:]...)
	return append(out, g.history[:g.start]...)
}

func (g *Group) record(e Event) {
	if len(g.history) < g.o.history {
		g.history = append(g.history, e)
		return
	}
	g.history[g.start] = e
	g.start = (g.start + 1) % len(g.history)
}

// expire removes the members due for removal, records their removals in
// the order they fell due, and returns the time now. Call it with g.mu
// held.
func (g *Group) expire() time.Time {
	now := g.clock.Now()
	var due []Event
	for name, m := range g.members {
		if at := g.unhealthySince(m).Add(g.o.remove); !now.Before(at) {
			due = append(due, Event{Kind: Removed, Member: name, At: at})
		}
	}
	slices.SortFunc(due, func(a, b Event) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return cmp.Compare(g.members[a.Member].Seq, g.members[b.Member].Seq)
	})
	for _, e := range due {
		delete(g.members, e.Member)
		g.record(e)
	}
	return now
}

// unhealthySince returns when m became unhealthy, by its heartbeats'
// timing or by its own report, whichever was first.
func (g *Group) unhealthySince(m *member) time.Time {
	last := m.LastHeartbeat
	if last.IsZero() {
		last = m.Joined
	}
	since := last.Add(g.o.unhealthy)
	if m.reported == Unhealthy && m.reportedAt.Before(since) {
		since = m.reportedAt
	}
	return since
}

// health works out m's health at now.
func (g *Group) health(m *member, now time.Time) Health {
	if !now.Before(g.unhealthySince(m)) {
		return Unhealthy
	}
	if m.LastHeartbeat.IsZero() {
		return Unknown
	}
	h := Healthy
	if !now.Before(m.LastHeartbeat.Add(g.o.degraded)) {
		h = Degraded
	}
	return max(h, m.reported)
}

func (g *Group) snapshot(m *member, now time.Time) Member {
	s := m.Member
	s.Capabilities = slices.Clone(m.Capabilities)
	s.Health = g.health(m, now)
	return s
}

package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policy"
)

// WithStore makes the manager's conversations durable in s: after each
// group of inputs a worker processes, the new state of every conversation
// they changed, the messages they produced (the outbox) and the removal
// of conversations swept after their retention are committed to s in one
// Commit, before any of those messages leaves. Commits of all workers are
// grouped into one store transaction. Resume loads them back after a
// restart. A message stays in the outbox until every receiver has
// acknowledged it (see Manager.Acknowledge); Resume sends what is left
// again, and a receiver with a store applies a message once (by
// MessageID).
func WithStore(s Store) Option {
	return func(o *options) {
		if s == nil {
			o.fail("agent: WithStore: nil store")
		}
		o.store = s
	}
}

// ErrFingerprint is wrapped by the error Resume returns for a stored
// conversation whose policy has changed since it was stored.
var ErrFingerprint = errors.New("agent: stored conversation's policy has changed")

// durable is a worker's part of the store: what the inputs it is
// processing changed (the lists of the next commit), and the messages it
// sent that await acknowledgement.
type durable struct {
	dirty map[*conversation]struct{}
	commitLists
	// outbox holds the unacknowledged messages by Seq, and byID finds
	// them by their sender and reply-with (see keyOf).
	outbox map[uint64]*OutboxEntry
	byID   map[msgKey]uint64
	// sentAt says when each outbox entry was last sent (an entry whose
	// commit is not done has none); retry is the alarm that sends again
	// what waits too long.
	sentAt map[uint64]time.Time
	retry  ClockTimer
	// pending counts the commits handed to the committer and not yet
	// released, last being the latest; the committer puts the done ones
	// in committed, in order, and signals them on wake. free holds
	// released ones, emptied, for flush to reuse their room.
	pending   int
	last      *release
	mu        sync.Mutex
	committed []*release
	wake      chan struct{}
	free      []*release
}

// commitLists is what one commit carries (batch) and holds back until
// it is done: sends wait for the commit; acks are the acknowledgements
// of inbound messages, given once their effect is committed; flushes
// and starts are the Flush and Start calls that wait for it.
type commitLists struct {
	batch   Batch
	sends   []outMsg
	acks    []func()
	flushes []chan struct{}
	starts  []chan error
}

// isEmpty reports whether l holds nothing.
func (l *commitLists) isEmpty() bool {
	return l.batch.Empty() && len(l.sends) == 0 && len(l.acks) == 0 && len(l.flushes) == 0 && len(l.starts) == 0
}

// moveTo appends what l holds to dst, and empties l.
func (l *commitLists) moveTo(dst *commitLists) {
	l.batch.addTo(&dst.batch)
	dst.sends = append(dst.sends, l.sends...)
	dst.acks = append(dst.acks, l.acks...)
	dst.flushes = append(dst.flushes, l.flushes...)
	dst.starts = append(dst.starts, l.starts...)
	l.empty()
}

// empty empties l's lists, keeping their room, and lets go of what they
// referred to.
func (l *commitLists) empty() {
	b := &l.batch
	clear(b.Put)
	clear(b.Send)
	clear(b.Update)
	clear(l.sends)
	clear(l.acks)
	clear(l.flushes)
	clear(l.starts)
	l.batch = Batch{Put: b.Put[:0], Delete: b.Delete[:0], Send: b.Send[:0], Update: b.Update[:0], Acked: b.Acked[:0]}
	l.sends, l.acks, l.flushes, l.starts = l.sends[:0], l.acks[:0], l.flushes[:0], l.starts[:0]
}

// maxFreeReleases bounds how many released commits a worker keeps for
// their room (it has two or three at a time: one the committer is
// committing, one queued that its flushes join, one done).
const maxFreeReleases = 8

// release is one commit's lists. queued says that the committer has not
// taken it yet (guarded by the committer's mu): until then the worker's
// later flushes join it.
type release struct {
	commitLists
	queued bool
}

func newDurable() *durable {
	return &durable{dirty: map[*conversation]struct{}{}, outbox: map[uint64]*OutboxEntry{}, byID: map[msgKey]uint64{}, sentAt: map[uint64]time.Time{}, wake: make(chan struct{}, 1)}
}

// touch marks c changed, to be committed with the current inputs.
func (w *worker) touch(c *conversation) {
	if w.d != nil {
		w.d.dirty[c] = struct{}{}
	}
}

// flush hands what the inputs just processed changed to the committer,
// with the messages they produced, the acknowledgements of the messages
// they consumed and the Flush calls among them; all of those are held
// until the commit is done (see released). The worker goes on with its
// next inputs meanwhile, so that one store transaction carries the work
// of many inputs: that is the group commit. Without a store flush does
// nothing.
func (w *worker) flush() {
	d := w.d
	if d == nil {
		return
	}
	for c := range d.dirty {
		sc, err := d.storedOf(c)
		if err != nil {
			w.log(c, slog.LevelError, "conversation not stored", "error", err)
			continue
		}
		d.batch.Put = append(d.batch.Put, sc)
	}
	clear(d.dirty)
	if d.isEmpty() {
		return
	}
	if w.m.commit.join(d.last, d) {
		return
	}
	// r takes the current lists, and the worker goes on with r's old,
	// emptied ones: the committer is done with a batch once it is
	// committed (a Store keeps none of its lists).
	var r *release
	if n := len(d.free); n > 0 {
		r, d.free = d.free[n-1], d.free[:n-1]
	} else {
		r = &release{}
	}
	r.commitLists, d.commitLists = d.commitLists, r.commitLists
	d.last = r
	d.pending++
	w.m.inflight.v.Add(1)
	w.m.commit.submit(r, func(err error) {
		if err != nil {
			w.m.o.logger.Error("store commit failed: the messages leave, but a restart may not find what they changed", "agent", w.m.self, "error", err)
		}
		d.mu.Lock()
		d.committed = append(d.committed, r)
		d.mu.Unlock()
		select {
		case d.wake <- struct{}{}:
		default:
		}
		_ = w.push(input{kind: inCommitted}, false) // fails only once stopped: halt waits on wake then
	})
}

// released lets go what the commits done since the last call held back:
// their messages leave, in the order they were produced, and their
// acknowledgements and Flush calls are answered.
func (w *worker) released() {
	d := w.d
	d.mu.Lock()
	done := d.committed
	d.committed = nil
	d.mu.Unlock()
	if len(done) == 0 {
		return
	}
	now := w.m.o.clock.Now()
	for _, r := range done {
		for _, s := range r.sends {
			if seq, ok := d.byID[keyOf(s.msg)]; ok {
				d.sentAt[seq] = now
			}
			w.out.queueMsg(s)
		}
		for _, ack := range r.acks {
			ack()
		}
		for _, f := range r.flushes {
			f <- struct{}{}
		}
		for _, done := range r.starts {
			done <- nil
		}
		if len(d.free) < maxFreeReleases {
			r.empty()
			d.free = append(d.free, r)
		}
	}
	d.pending -= len(done)
	w.m.inflight.v.Add(-int64(len(done)))
	w.armRetry()
}

// drain waits until every commit handed to the committer is done and
// released; the stopping worker calls it.
func (w *worker) drain() {
	d := w.d
	if d == nil {
		return
	}
	for d.pending > 0 {
		<-d.wake
		w.released()
	}
}

// forget removes a swept conversation from the store, with the messages
// it sent that are still unacknowledged: its retention is over, so no
// receiver will apply them now.
func (d *durable) forget(c *conversation) {
	delete(d.dirty, c)
	d.batch.Delete = append(d.batch.Delete, c.id)
	for seq, e := range d.outbox {
		if e.Conversation == c.id {
			delete(d.outbox, seq)
			delete(d.sentAt, seq)
			delete(d.byID, keyOf(e.Message))
			d.batch.Acked = append(d.batch.Acked, seq)
		}
	}
}

// storedOf is c as a Store keeps it.
func (d *durable) storedOf(c *conversation) (StoredConversation, error) {
	snap, err := c.h.Snapshot()
	if err != nil {
		return StoredConversation{}, err
	}
	prog := c.h.Program()
	sc := StoredConversation{
		ID: c.id, Policy: prog.Policy().Name, Role: prog.Role(), Fingerprint: prog.Fingerprint(), Handler: snap,
		Opener: c.opener, Children: c.children, Ended: c.endedAt, Outcome: c.outcome, Abort: c.abortReason,
	}
	if c.parent != nil {
		sc.Parent, sc.ParentSession, sc.ParentEpoch = c.parent.id, c.parentSession, c.parentEpoch
	}
	sc.Applied = c.applied
	return sc, nil
}

// isApplied reports whether c has applied the message id names (see
// MessageID).
func (c *conversation) isApplied(id string) bool {
	_, ok := slices.BinarySearch(c.applied, id)
	return ok
}

// addApplied records that c has applied the message id names. c.applied
// stays sorted, so that storedOf stores it as it is, and becomes a new
// slice: the records committed before share the old one, and a Store
// may keep them.
func (c *conversation) addApplied(id string) {
	if i, ok := slices.BinarySearch(c.applied, id); !ok {
		c.applied = slices.Insert(slices.Clip(c.applied), i, id)
	}
}

// queueSend holds msg until the commit, and keeps it in the outbox until
// its receivers acknowledge it.
func (w *worker) queueSend(c *conversation, msg *forms.Message) {
	d := w.d
	if msg.ReplyWith == "" { // no MessageID
		d.sends = append(d.sends, outMsg{conv: c.id, msg: msg})
		return
	}
	defer func() { d.sends[len(d.sends)-1].keep = true }()
	e := &OutboxEntry{Seq: w.m.seq.Add(1), Conversation: c.id, Message: msg, Pending: slices.Clone(msg.Receivers)}
	d.outbox[e.Seq] = e
	d.byID[keyOf(msg)] = e.Seq
	d.batch.Send = append(d.batch.Send, *e)
	d.sends = append(d.sends, outMsg{conv: c.id, msg: msg})
}

// armRetry sets the retry alarm while messages wait for acknowledgement.
func (w *worker) armRetry() {
	d := w.d
	if d.retry != nil || len(d.outbox) == 0 || w.m.closed.Load() {
		return
	}
	d.retry = w.m.o.clock.AfterFunc(w.m.o.limits.RetryInterval, func() {
		_ = w.push(input{kind: inRetry}, false) // fails only once closed
	})
}

// retry sends again every message that has waited a retry interval for
// its acknowledgement, in the order they were first sent.
func (w *worker) retry(now time.Time) {
	d := w.d
	d.retry = nil
	var due []*OutboxEntry
	for seq, e := range d.outbox {
		if at, ok := d.sentAt[seq]; ok && now.Sub(at) >= w.m.o.limits.RetryInterval {
			due = append(due, e)
		}
	}
	slices.SortFunc(due, func(a, b *OutboxEntry) int { return cmp.Compare(a.Seq, b.Seq) })
	for _, e := range due {
		d.sentAt[e.Seq] = now
		w.out.queueMsg(outMsg{conv: e.Conversation, msg: e.Message, keep: true})
	}
	w.armRetry()
}

// kept reports whether msg, which failed to send, stays in the outbox to
// be sent again by Resume: with a store a failed send does not abort its
// conversation (the policy's timers bound the wait for the receiver).
func (w *worker) kept(msg *forms.Message) bool {
	if w.d == nil {
		return false
	}
	_, ok := w.d.byID[keyOf(msg)]
	return ok
}

// msgKey is a sent message's MessageID as its two parts: the outbox
// finds its entries by it without joining them into a new string.
type msgKey struct{ sender, replyWith string }

// keyOf returns the key of m.
func keyOf(m *forms.Message) msgKey { return msgKey{m.Sender, m.ReplyWith} }

// acked records that receiver acknowledged msg.
func (w *worker) acked(msg *forms.Message, receiver string) {
	d := w.d
	if d == nil {
		return
	}
	k := keyOf(msg)
	seq, ok := d.byID[k]
	if !ok {
		return
	}
	e := d.outbox[seq]
	i := slices.Index(e.Pending, receiver)
	if i < 0 {
		return
	}
	if len(e.Pending) > 1 {
		// a new list: the committed entries share the old one, and a
		// store may keep them
		e.Pending = slices.Delete(slices.Clone(e.Pending), i, i+1)
		d.batch.Update = append(d.batch.Update, OutboxEntry{Seq: e.Seq, Conversation: e.Conversation, Message: e.Message, Pending: e.Pending})
		return
	}
	delete(d.outbox, seq)
	delete(d.byID, k)
	delete(d.sentAt, seq)
	d.batch.Acked = append(d.batch.Acked, seq)
}

// Acknowledge tells the manager that receiver has applied m, a message
// this manager sent: with a store, m leaves the outbox once every
// receiver has acknowledged it. Transports call it; the Bus does when the
// receiver's commit is done. It is safe to call more than once. The
// manager reads m's sender and reply-with after Acknowledge returns: m
// must not change (the messages a manager sends never do).
func (m *Manager) Acknowledge(receiver string, msg *forms.Message) {
	if m.o.store == nil || m.closed.Load() {
		return
	}
	if msg.ReplyWith == "" { // no MessageID
		return
	}
	_ = m.workerOf(msg.ConversationID).push(input{kind: inAck, msg: msg, extra: &inputExtra{from: receiver}}, false) // fails only once closed
}

// Resume loads the conversations of the manager's store and carries them
// on where they stood: timers are armed again at their absolute
// deadlines (those already past fire at once, in deadline order),
// pending decisions are asked again with their tickets, children are
// linked to their parents, ended conversations keep their retention, and
// the messages still unacknowledged are sent again. Register every policy
// the stored conversations run before calling it. A conversation whose
// policy is not registered, whose policy's fingerprint has changed
// (ErrFingerprint, naming the conversation and both fingerprints) or
// whose record cannot be read is not resumed and stays in the store;
// Resume resumes the others and returns an error naming each.
func (m *Manager) Resume(ctx context.Context) error {
	if m.closed.Load() {
		return ErrClosed
	}
	if m.o.store == nil {
		return errors.New("agent: Resume: no store (WithStore)")
	}
	st, loadErr := m.loaded, m.loadErr
	m.loaded, m.loadErr = nil, nil
	if st == nil && loadErr == nil {
		st, loadErr = m.o.store.Load()
	}
	if st == nil {
		return loadErr
	}
	errs := []error{loadErr}
	per := make([]*resumeReq, len(m.workers))
	for i := range per {
		per[i] = &resumeReq{done: make(chan struct{})}
	}
	for _, sc := range st.Conversations {
		h, err := m.restore(sc)
		if err != nil {
			errs = append(errs, fmt.Errorf("agent: resume conversation %s: %w", policy.Quote(sc.ID), err))
			continue
		}
		r := per[m.workerIndex(sc.ID)]
		r.convs = append(r.convs, resumed{sc: sc, h: h})
	}
	for _, e := range st.Outbox {
		if e.Message == nil {
			continue
		}
		r := per[m.workerIndex(e.Conversation)]
		r.outbox = append(r.outbox, e)
		for m.seq.Load() < e.Seq {
			m.seq.Store(e.Seq)
		}
	}
	for i, w := range m.workers {
		if err := w.push(input{kind: inResume, extra: &inputExtra{resume: per[i]}}, false); err != nil {
			return err
		}
	}
	m.resumed.Store(true) // behind the resume inputs in every queue
	for _, r := range per {
		select {
		case <-r.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return errors.Join(errs...)
}

func (m *Manager) restore(sc StoredConversation) (*engine.Handler, error) {
	prog, err := m.program(sc.Policy, sc.Role)
	if err != nil {
		return nil, err
	}
	if prog.Fingerprint() != sc.Fingerprint {
		return nil, fmt.Errorf("%w: %s was stored with fingerprint %s, the registered policy has %s",
			ErrFingerprint, policy.Quote(sc.Policy), sc.Fingerprint, prog.Fingerprint())
	}
	return prog.Restore(sc.Handler)
}

type resumeReq struct {
	convs  []resumed
	outbox []OutboxEntry
	done   chan struct{}
}

type resumed struct {
	sc StoredConversation
	h  *engine.Handler
}

// resume adds the restored conversations of one worker and carries them
// on.
func (w *worker) resume(r *resumeReq, now time.Time) {
	defer close(r.done)
	m := w.m
	byID := map[string]*conversation{}
	var added []*conversation
	for _, x := range r.convs {
		if w.convs[x.sc.ID] != nil {
			continue // already running: Resume was called twice
		}
		c := &conversation{id: x.sc.ID, h: x.h, opener: x.sc.Opener, children: x.sc.Children,
			endedAt: x.sc.Ended, outcome: x.sc.Outcome, abortReason: x.sc.Abort}
		if len(x.sc.Applied) > 0 {
			// a copy, sorted whatever order the store kept
			c.applied = slices.Compact(slices.Sorted(slices.Values(x.sc.Applied)))
		}
		w.add(c)
		m.total.v.Add(1) // a restored conversation counts, but is not refused
		byID[c.id] = c
		added = append(added, c)
	}
	for _, x := range r.convs {
		c := byID[x.sc.ID]
		if c == nil || x.sc.Parent == "" {
			continue
		}
		c.parentSession, c.parentEpoch = x.sc.ParentSession, x.sc.ParentEpoch
		if c.parent = byID[x.sc.Parent]; c.parent == nil {
			c.parent = w.convs[x.sc.Parent]
		}
	}
	w.retainEnded(added)
	for _, c := range added {
		if c.h.Done() {
			continue
		}
		if c.opener != "" {
			m.peersMu.Lock()
			m.opened[c.opener]++
			m.peersMu.Unlock()
		}
		for _, ev := range c.h.Armed() {
			w.timers.apply(c, &ev, now)
		}
		w.log(c, slog.LevelInfo, "conversation resumed")
	}
	for _, c := range added {
		for _, ev := range c.h.Open() {
			w.decide(c, ev.Ticket, &ev.Request, now)
		}
	}
	slices.SortFunc(r.outbox, func(a, b OutboxEntry) int { return cmp.Compare(a.Seq, b.Seq) })
	for _, e := range r.outbox {
		w.d.outbox[e.Seq] = &e
		if e.Message.ReplyWith != "" {
			w.d.byID[keyOf(e.Message)] = e.Seq
		}
		w.d.sends = append(w.d.sends, outMsg{conv: e.Conversation, msg: e.Message, keep: true})
	}
}

// committer groups the commits of every worker into one store
// transaction.
type committer struct {
	store  Store
	mu     sync.Mutex
	queue  []commitReq
	closed bool
	wake   chan struct{}
	done   chan struct{}
}

type commitReq struct {
	r    *release
	done func(error)
}

// join moves what d holds for the next commit into r, d's latest
// release, if the committer has not taken r yet, and reports whether it
// did: r's commit then carries it, and r's release lets it go.
func (c *committer) join(r *release, d *durable) bool {
	if r == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !r.queued {
		return false
	}
	d.moveTo(&r.commitLists)
	return true
}

func newCommitter(s Store) *committer {
	c := &committer{store: s, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go c.run()
	return c
}

// submit queues r, to be committed with whatever other workers commit at
// the same time, and calls done with the outcome once it is committed.
// Batches are committed, and their done called, in the order submitted.
// After close, done gets ErrClosed at once.
func (c *committer) submit(r *release, done func(error)) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		done(ErrClosed)
		return
	}
	r.queued = true
	c.queue = append(c.queue, commitReq{r: r, done: done})
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *committer) run() {
	defer close(c.done)
	var merged Batch
	for range c.wake {
		for {
			c.mu.Lock()
			reqs, closed := c.queue, c.closed
			c.queue = nil
			for _, r := range reqs {
				r.r.queued = false
			}
			c.mu.Unlock()
			if len(reqs) == 0 {
				if closed {
					return
				}
				break
			}
			merged = Batch{Put: merged.Put[:0], Delete: merged.Delete[:0], Send: merged.Send[:0], Update: merged.Update[:0], Acked: merged.Acked[:0]}
			for _, r := range reqs {
				r.r.batch.addTo(&merged)
			}
			var err error
			if !merged.Empty() {
				err = c.store.Commit(&merged)
			}
			clear(merged.Put) // drop the snapshots until the next commit
			for _, r := range reqs {
				r.done(err)
			}
		}
	}
}

// close stops the committer once what is queued is committed.
func (c *committer) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

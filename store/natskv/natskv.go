// Package natskv is an agent.Store on the NATS JetStream key-value
// store, so that another process, on another host, can resume an
// agent's conversations: the agent's identity is its name, not its
// machine.
//
//	nc, err := nats.Connect(url, nats.MaxReconnects(-1))
//	s, err := natskv.Open(ctx, nc, "alice")    // takes alice's lease
//	t, err := natstransport.New(ctx, nc, "alice", natstransport.WithFence(s.Lost()))
//	m, err := agent.NewManager("alice", agent.WithStore(s), agent.WithTransport(t))
//
// # One owner at a time
//
// Open takes the agent's lease, the key <agent>.lease of the bucket
// (DefaultBucket, "parley", WithBucket), created only if absent and kept
// by the server for the lease's TTL (WithLeaseTTL, 10 s by default); the
// store renews it every third of the TTL. A second process opening the
// same agent gets ErrOwned (or, WithWait, waits until the lease is
// free: when the owner closes its store, or its TTL after the owner
// died). Every write carries the lease's revision in
// Nats-Expected-Last-Subject-Sequence, checked by the server on the
// lease's subject: a process whose lease has expired or been taken over
// can write nothing, and its Commit fails with ErrFenced and closes Lost.
//
// # Records and atomicity
//
// The conversations of one root conversation (the root and its
// children), with the outbox entries they sent, are one key,
// <agent>.c.<hash of the root's id>: a Commit publishes one record per
// root it changed, so what a step changed in one conversation, with the
// messages it sent, is written or not as a whole. A root with nothing
// left is purged. The store keeps a copy of every record in memory, as
// large as what the manager holds.
//
// # Broker outage
//
// While the server cannot be reached, Commit retries, so the manager's
// conversations pause, and carries on when it is back; an outage longer
// than the lease's TTL loses the lease (ErrFenced): restart the process
// to resume from the store.
package natskv

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	natsio "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/internal/natsname"
	"github.com/parleyhq/parley/policy"
)

// DefaultBucket is the key-value bucket the store uses unless
// WithBucket says otherwise.
const DefaultBucket = "parley"

// formatVersion is the version of the records; a record of another
// version is not read.
const formatVersion = 1

var (
	// ErrOwned is returned by Open when another process holds the
	// agent's lease.
	ErrOwned = errors.New("natskv: another process owns the agent")
	// ErrFenced is returned by Commit once the lease is lost: another
	// process may own the agent now.
	ErrFenced = errors.New("natskv: the agent's lease is lost")
	// ErrClosed is returned by Commit after Close.
	ErrClosed = errors.New("natskv: store closed")
)

// Option configures Open.
type Option func(*options)

type options struct {
	bucket   string
	ttl      time.Duration
	wait     bool
	maxValue int
	logger   *slog.Logger
}

// WithBucket sets the bucket's name (default DefaultBucket). Open creates
// it when it does not exist.
func WithBucket(name string) Option { return func(o *options) { o.bucket = name } }

// WithLeaseTTL sets how long the server keeps the lease without renewal
// (default 10 s; at least 1 s): how long a replacement waits after its
// predecessor died, and the longest broker outage the owner survives.
func WithLeaseTTL(d time.Duration) Option {
	return func(o *options) {
		if d >= time.Second {
			o.ttl = d.Truncate(time.Second)
		}
	}
}

// WithWait makes Open wait, until its context ends, for the lease of an
// agent another process owns, instead of returning ErrOwned.
func WithWait() Option { return func(o *options) { o.wait = true } }

// WithMaxRecord bounds one root conversation's record (default 1 MiB,
// the NATS server's default max_payload); the bucket refuses larger
// values and Commit fails for a root whose record would be larger.
func WithMaxRecord(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.maxValue = n
		}
	}
}

// WithLogger sets the logger (default: none).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// Store is an agent.Store on a JetStream key-value bucket, owning one
// agent while its lease lasts. It is safe for concurrent use.
type Store struct {
	o      options
	agent  string
	nc     *natsio.Conn
	js     jetstream.JetStream
	kv     jetstream.KeyValue
	token  string
	prefix string // "$KV.<bucket>."
	// mu serializes writes: the lease's revision changes with every
	// renewal, and every write names it.
	mu       sync.Mutex
	leaseRev uint64
	roots    map[string]*root
	seqRoot  map[uint64]string
	lost     chan struct{}
	lostOnce sync.Once
	closed   chan struct{}
	closeO   sync.Once
	done     chan struct{}
}

var _ agent.Store = (*Store)(nil)

// root is what one key holds: a root conversation, its children and
// their outbox entries.
type root struct {
	convs  map[string]agent.StoredConversation
	outbox map[uint64]agent.OutboxEntry
}

// record is a root as the bucket holds it.
type record struct {
	Version       int                        `json:"v"`
	Root          string                     `json:"root"`
	Conversations []agent.StoredConversation `json:"conversations,omitempty"`
	Outbox        []agent.OutboxEntry        `json:"outbox,omitempty"`
}

// Open takes agent's lease in the bucket (creating the bucket if need
// be) and returns its store. It returns an error wrapping ErrOwned when
// another process holds the lease, unless WithWait.
func Open(ctx context.Context, nc *natsio.Conn, agentName string, opts ...Option) (*Store, error) {
	if err := natsname.Check(agentName); err != nil {
		return nil, fmt.Errorf("natskv: %w", err)
	}
	o := options{bucket: DefaultBucket, ttl: 10 * time.Second, maxValue: 1 << 20, logger: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(&o)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("natskv: %w", err)
	}
	kv, err := js.KeyValue(ctx, o.bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, BucketConfig(o.bucket, o.maxValue))
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = js.KeyValue(ctx, o.bucket)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("natskv: bucket %s: %w", policy.Quote(o.bucket), err)
	}
	host, _ := os.Hostname()
	var nonce [12]byte
	_, _ = rand.Read(nonce[:])
	s := &Store{
		o: o, agent: agentName, nc: nc, js: js, kv: kv, prefix: "$KV." + o.bucket + ".",
		token: fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(nonce[:])),
		roots: map[string]*root{}, seqRoot: map[uint64]string{},
		lost: make(chan struct{}), closed: make(chan struct{}), done: make(chan struct{}),
	}
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	go s.renew()
	return s, nil
}

// BucketConfig is the configuration Open gives the bucket it creates:
// one revision per key, file storage, values up to maxRecord bytes, and
// per-key TTLs (the lease's). An administrator creating the bucket ahead
// (with Replicas for a cluster) starts from it.
func BucketConfig(name string, maxRecord int) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket: name, History: 1, Storage: jetstream.FileStorage,
		MaxValueSize: int32(min(maxRecord, 1<<31-1)), LimitMarkerTTL: time.Second,
	}
}

func (s *Store) leaseKey() string { return s.agent + ".lease" }

// acquire creates the lease, waiting for it WithWait.
func (s *Store) acquire(ctx context.Context) error {
	for {
		rev, err := s.kv.Create(ctx, s.leaseKey(), []byte(s.token), jetstream.KeyTTL(s.o.ttl))
		if err == nil {
			s.leaseRev = rev
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return fmt.Errorf("natskv: lease of %s: %w", s.agent, err)
		}
		if !s.o.wait {
			holder := "?"
			if e, err := s.kv.Get(ctx, s.leaseKey()); err == nil {
				holder = policy.Quote(string(e.Value()))
			}
			return fmt.Errorf("%w: %s is held by %s", ErrOwned, s.agent, holder)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("natskv: waiting for the lease of %s: %w", s.agent, ctx.Err())
		case <-time.After(s.o.ttl / 4):
		}
	}
}

// opTimeout bounds one round of writes, so a renewal is never held back
// past its lease.
func (s *Store) opTimeout() time.Duration { return min(5*time.Second, s.o.ttl/3) }

// renew renews the lease every third of its TTL until Close or its loss.
func (s *Store) renew() {
	defer close(s.done)
	tick := time.NewTicker(s.o.ttl / 3)
	defer tick.Stop()
	for {
		select {
		case <-s.closed:
			return
		case <-s.lost:
			return
		case <-tick.C:
		}
		s.mu.Lock()
		ctx, cancel := context.WithTimeout(context.Background(), s.opTimeout())
		ack, err := s.js.PublishMsg(ctx, &natsio.Msg{Subject: s.prefix + s.leaseKey(), Data: []byte(s.token)},
			jetstream.WithMsgTTL(s.o.ttl), jetstream.WithExpectLastSequencePerSubject(s.leaseRev))
		switch {
		case err == nil:
			s.leaseRev = ack.Sequence
		case wrongLastSeq(err):
			if !s.stillOurs(ctx) {
				s.lose("the lease was renewed by another process or expired")
			}
		default:
			s.o.logger.Warn("natskv: lease renewal failed", "agent", s.agent, "error", err)
		}
		cancel()
		s.mu.Unlock()
	}
}

// stillOurs reads the lease after a write was refused for its revision:
// a renewal sent twice during an outage moves the revision, and the
// lease is still ours when it holds this process's token. Called with mu
// held.
func (s *Store) stillOurs(ctx context.Context) bool {
	e, err := s.kv.Get(ctx, s.leaseKey())
	if err != nil || string(e.Value()) != s.token {
		return false
	}
	s.leaseRev = e.Revision()
	return true
}

func (s *Store) lose(why string) {
	s.lostOnce.Do(func() {
		s.o.logger.Error("natskv: lease lost: this process stops writing", "agent", s.agent, "reason", why)
		close(s.lost)
	})
}

// Lost is closed when the store loses the agent's lease: from then on
// Commit fails with ErrFenced. Hand it to the transport
// (transport/nats.WithFence) so that nothing more is sent or
// acknowledged, then close the manager.
func (s *Store) Lost() <-chan struct{} { return s.lost }

// Agent returns the agent's name.
func (s *Store) Agent() string { return s.agent }

func wrongLastSeq(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

func (s *Store) rootKey(rootID string) string {
	sum := sha256.Sum256([]byte(rootID))
	return s.agent + ".c." + base64.RawURLEncoding.EncodeToString(sum[:])
}

func rootOf(conversation string) string {
	r, _, _ := strings.Cut(conversation, "/")
	return r
}

// Load reads every record of the agent. A record it cannot read is left
// out and named in the error; the others are returned.
func (s *Store) Load() (*agent.Stored, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*s.opTimeout())
	defer cancel()
	w, err := s.kv.WatchFiltered(ctx, []string{s.agent + ".c.*"}, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("natskv: load %s: %w", s.agent, err)
	}
	defer w.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.roots)
	clear(s.seqRoot)
	var bad []error
	for {
		var e jetstream.KeyValueEntry
		select {
		case e = <-w.Updates():
		case <-ctx.Done():
			return nil, fmt.Errorf("natskv: load %s: %w", s.agent, ctx.Err())
		}
		if e == nil {
			break // every current value is read
		}
		var rec record
		if err := json.Unmarshal(e.Value(), &rec); err != nil || rec.Version != formatVersion || s.rootKey(rec.Root) != e.Key() {
			bad = append(bad, fmt.Errorf("record %s: unreadable", policy.Quote(e.Key())))
			continue
		}
		r := &root{convs: map[string]agent.StoredConversation{}, outbox: map[uint64]agent.OutboxEntry{}}
		ok := true
		for _, c := range rec.Conversations {
			ok = ok && rootOf(c.ID) == rec.Root
			r.convs[c.ID] = c
		}
		for _, en := range rec.Outbox {
			ok = ok && en.Message != nil && rootOf(en.Conversation) == rec.Root
			r.outbox[en.Seq] = en
		}
		if !ok {
			bad = append(bad, fmt.Errorf("record %s: unreadable", policy.Quote(e.Key())))
			continue
		}
		s.roots[rec.Root] = r
		for seq := range r.outbox {
			s.seqRoot[seq] = rec.Root
		}
	}
	st := &agent.Stored{}
	for _, r := range s.roots {
		for _, c := range r.convs {
			st.Conversations = append(st.Conversations, c)
		}
		for _, e := range r.outbox {
			st.Outbox = append(st.Outbox, e)
		}
	}
	slices.SortFunc(st.Conversations, func(a, b agent.StoredConversation) int { return strings.Compare(a.ID, b.ID) })
	slices.SortFunc(st.Outbox, func(a, b agent.OutboxEntry) int { return cmp.Compare(a.Seq, b.Seq) })
	if len(bad) > 0 {
		return st, fmt.Errorf("natskv: load %s: %w", s.agent, errors.Join(bad...))
	}
	return st, nil
}

func (s *Store) rootFor(conversation string, touched map[string]struct{}) *root {
	id := rootOf(conversation)
	touched[id] = struct{}{}
	r := s.roots[id]
	if r == nil {
		r = &root{convs: map[string]agent.StoredConversation{}, outbox: map[uint64]agent.OutboxEntry{}}
		s.roots[id] = r
	}
	return r
}

// Commit applies b: it writes the record of every root conversation b
// changes, and returns when all are written. While the server cannot be
// reached it tries again, until Close or the connection is closed; once
// the lease is lost it returns ErrFenced, and a record larger than
// WithMaxRecord is an error.
func (s *Store) Commit(b *agent.Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.lost:
		return ErrFenced
	case <-s.closed:
		return ErrClosed
	default:
	}
	touched := map[string]struct{}{}
	for _, c := range b.Put {
		s.rootFor(c.ID, touched).convs[c.ID] = c
	}
	for _, id := range b.Delete {
		delete(s.rootFor(id, touched).convs, id)
	}
	for _, list := range [][]agent.OutboxEntry{b.Send, b.Update} {
		for _, e := range list {
			s.rootFor(e.Conversation, touched).outbox[e.Seq] = e
			s.seqRoot[e.Seq] = rootOf(e.Conversation)
		}
	}
	for _, seq := range b.Acked {
		if id, ok := s.seqRoot[seq]; ok {
			delete(s.rootFor(id, touched).outbox, seq)
			delete(s.seqRoot, seq)
		}
	}
	todo := slices.Collect(maps.Keys(touched))
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		failed, err := s.write(todo)
		if err != nil || len(failed) == 0 {
			return err
		}
		todo = failed
		s.mu.Unlock()
		select {
		case <-s.closed:
			s.mu.Lock()
			return ErrClosed
		case <-time.After(wait):
		}
		s.mu.Lock()
		if s.isLost() {
			return ErrFenced
		}
	}
}

func (s *Store) isLost() bool {
	select {
	case <-s.lost:
		return true
	default:
		return false
	}
}

// write publishes the current record of each root, fenced by the lease,
// and returns the roots to write again (the server did not answer). It
// is called with mu held.
func (s *Store) write(roots []string) ([]string, error) {
	type pending struct {
		root string
		fut  jetstream.PubAckFuture
	}
	var futs []pending
	var failed []string
	for _, id := range roots {
		msg, err := s.recordMsg(id)
		if err != nil {
			return nil, err
		}
		fut, err := s.js.PublishMsgAsync(msg)
		if err != nil {
			failed = append(failed, id)
			continue
		}
		futs = append(futs, pending{id, fut})
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opTimeout())
	defer cancel()
	var fenced, permanent error
	for _, p := range futs {
		select {
		case <-p.fut.Ok():
			if r := s.roots[p.root]; r != nil && len(r.convs) == 0 && len(r.outbox) == 0 {
				delete(s.roots, p.root) // purged
			}
		case err := <-p.fut.Err():
			var apiErr *jetstream.APIError
			switch {
			case wrongLastSeq(err):
				fenced = err
				failed = append(failed, p.root)
			case errors.As(err, &apiErr):
				permanent = fmt.Errorf("natskv: commit %s: %w", s.agent, err)
			default:
				failed = append(failed, p.root)
			}
		case <-ctx.Done():
			failed = append(failed, p.root)
		}
	}
	if permanent != nil {
		return nil, permanent
	}
	if len(failed) > 0 && s.nc.IsClosed() {
		return nil, fmt.Errorf("natskv: commit %s: %w", s.agent, natsio.ErrConnectionClosed)
	}
	if fenced != nil {
		ctx, cancel := context.WithTimeout(context.Background(), s.opTimeout())
		defer cancel()
		if !s.stillOurs(ctx) {
			s.lose("a commit was refused: the lease has moved")
			return nil, ErrFenced
		}
	}
	return failed, nil
}

// recordMsg is the publish that writes root id's current record, or
// purges its key when nothing is left in it.
func (s *Store) recordMsg(id string) (*natsio.Msg, error) {
	msg := natsio.NewMsg(s.prefix + s.rootKey(id))
	msg.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(s.leaseRev, 10))
	msg.Header.Set(jetstream.ExpectedLastSubjSeqSubjHeader, s.prefix+s.leaseKey())
	r := s.roots[id]
	if r == nil || len(r.convs) == 0 && len(r.outbox) == 0 {
		msg.Header.Set("KV-Operation", "PURGE")
		msg.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
		msg.Header.Set(jetstream.MsgTTLHeader, s.o.ttl.String())
		return msg, nil
	}
	rec := record{Version: formatVersion, Root: id}
	for _, c := range r.convs {
		rec.Conversations = append(rec.Conversations, c)
	}
	for _, e := range r.outbox {
		rec.Outbox = append(rec.Outbox, e)
	}
	slices.SortFunc(rec.Conversations, func(a, b agent.StoredConversation) int { return strings.Compare(a.ID, b.ID) })
	slices.SortFunc(rec.Outbox, func(a, b agent.OutboxEntry) int { return cmp.Compare(a.Seq, b.Seq) })
	data, err := json.Marshal(&rec)
	if err != nil {
		return nil, fmt.Errorf("natskv: conversation %s: %w", policy.Quote(id), err)
	}
	if len(data) > s.o.maxValue {
		return nil, fmt.Errorf("natskv: conversation %s: a record of %d bytes, over the limit of %d", policy.Quote(id), len(data), s.o.maxValue)
	}
	msg.Data = data
	return msg, nil
}

// Close stops renewing the lease and releases it, so that a replacement
// can take the agent over at once. Close the manager first.
func (s *Store) Close() error {
	var err error
	s.closeO.Do(func() {
		close(s.closed)
		<-s.done
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.isLost() {
			return
		}
		s.lostOnce.Do(func() { close(s.lost) }) // stops the transport too
		ctx, cancel := context.WithTimeout(context.Background(), s.opTimeout())
		defer cancel()
		err = s.kv.Purge(ctx, s.leaseKey(), jetstream.LastRevision(s.leaseRev))
		if err != nil {
			err = fmt.Errorf("natskv: release the lease of %s: %w", s.agent, err)
		}
	})
	return err
}

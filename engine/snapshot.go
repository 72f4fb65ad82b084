package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policy"
)

// snapshotVersion is the version of the snapshot format Snapshot
// writes: version 3 is binary (see Snapshot). jsonSnapshotVersion is
// the JSON format earlier releases wrote, which Restore still reads.
// Version 2 types commitment timers (TimerEvent.Commitment); version 1
// named them "commitment:<name>", so the timers a runtime kept for a
// version 1 handler would not reach a restored one: Restore refuses
// version 1.
const (
	snapshotVersion     = 3
	jsonSnapshotVersion = 2
)

// snapshot is what a snapshot holds, in either format: JSON as its
// tags say, binary as appendSnapshot writes it.
type snapshot struct {
	Version      int               `json:"version"`
	Fingerprint  string            `json:"fingerprint"`
	Policy       string            `json:"policy"`
	Role         string            `json:"role"`
	Conversation string            `json:"conversation"`
	Self         string            `json:"self"`
	Mode         Mode              `json:"mode"`
	Started      bool              `json:"started"`
	Done         bool              `json:"done"`
	Aborted      bool              `json:"aborted,omitempty"`
	Counter      uint64            `json:"counter"`
	Seq          uint64            `json:"seq"`
	Peers        []string          `json:"peers"`
	Sessions     []sessionSnapshot `json:"sessions"`
	AtJoin       int32             `json:"at_join"`
	Ended        int32             `json:"ended"`
	GroupTicket  uint64            `json:"group_ticket"`
	JoinTicket   uint64            `json:"join_ticket"`
	Held         []heldSnapshot    `json:"held,omitempty"`
}

type sessionSnapshot struct {
	Peer          string           `json:"peer,omitempty"`
	State         string           `json:"state,omitempty"`
	TimedOutFrom  string           `json:"timed_out_from,omitempty"`
	Epoch         uint64           `json:"epoch"`
	Ticket        uint64           `json:"ticket,omitempty"`
	Deadlines     []int64          `json:"deadlines,omitempty"`
	LastReplyWith string           `json:"last_reply_with,omitempty"`
	LastInReplyTo string           `json:"last_in_reply_to,omitempty"`
	LastMessage   string           `json:"last_message,omitempty"`
	LastSender    string           `json:"last_sender,omitempty"`
	Content       map[string]any   `json:"content,omitempty"`
	Sent          [2]string        `json:"sent"`
	Vars          map[string]any   `json:"vars,omitempty"`
	SrcTimes      []int64          `json:"source_times,omitempty"`
	Commits       []commitSnapshot `json:"commitments,omitempty"`
	// Messages and Visits are the run budget's counts.
	Messages int32   `json:"messages,omitempty"`
	Visits   []int32 `json:"visits,omitempty"`
}

type commitSnapshot struct {
	State    CommitmentState `json:"state,omitempty"`
	Epoch    uint64          `json:"epoch"`
	Deadline int64           `json:"deadline,omitempty"`
}

// Snapshot returns the handler's whole state as bytes: the policy
// fingerprint and role, every session's state, variables, armed timers
// with their epochs, commitments, pending decisions and held messages
// (see MaxHeld). Program.Restore turns it back into a handler that
// behaves exactly as this one would. The same state gives the same bytes:
// maps are written in key order.
//
// The format (version 3) is binary: a byte 3, then the fields in a fixed
// order. A number is a uvarint (a signed one a varint), a string or
// byte slice a uvarint length and its bytes, a list a uvarint count and
// its items, a flag set one byte. In order: the fingerprint (a byte 1
// and the 32 bytes of a "sha256:" digest, or a byte 0 and a string),
// policy, role, conversation and self; the mode (a byte) and the flags
// started, done and aborted (1, 2, 4); counter and seq; the peers; the
// sessions at the join and ended; the group and join tickets; the
// sessions; the held messages. A session is its peer, state and
// timed-out-from state (by name, so that a store outlives a change to
// how programs number states), epoch, ticket, deadlines, the last
// reply-with, in-reply-to, message type and sender, content, the last
// two reply-withs sent, variables, deadline sources, commitments (state
// by name, epoch, deadline) and budget counts. A held message is its
// arrival time, envelope and content. A time is a byte 0 (the zero
// time), or a byte 1 (UTC) or 2 (another zone) followed by Unix seconds
// and nanoseconds, and for 2 the zone's offset in seconds. A map (content, variables) is a count and its
// keys in increasing order, each with its value; a value is a tag byte
// (0 null, 1 false, 2 true, 3 an integer as a varint, 4 a float64's
// eight bytes little-endian, 5 a string, 6 a list, 7 a map) and what
// the tag says.
//
// A snapshot keeps content and variables as JSON would: a number of any
// Go type, a json.Number and a time.Duration (nanoseconds) come back as
// float64, a time.Time as its RFC 3339 string; strings come back byte
// for byte. A restored handler reads them as the original did, since
// expressions see content through the fields' declared types and
// duplicate detection compares numbers by value (forms.SameContent).
// Snapshot fails on a value JSON cannot carry (a NaN, a time outside
// the years 0 to 9999, maps and lists nested more than
// forms.DefaultLimits.MaxDepth+1 deep): the engine refuses such content in
// messages and decisions, and WithContent's data is the caller's to keep
// within forms.CheckContent.
func (h *Handler) Snapshot() ([]byte, error) {
	// Room for most snapshots in one allocation: a header of about 100
	// bytes and sessions of about 100 bytes and some content.
	data, err := h.AppendSnapshot(make([]byte, 0, 128+192*len(h.sessions)))
	if err != nil {
		return nil, err
	}
	return data, nil
}

// AppendSnapshot appends the handler's snapshot (see Snapshot) to dst and
// returns the extended buffer, so that a runtime can reuse one buffer for
// every checkpoint. On an error it returns dst unchanged.
func (h *Handler) AppendSnapshot(dst []byte) ([]byte, error) {
	b, err := h.appendSnapshot(dst)
	if err != nil {
		return dst, fmt.Errorf("engine: snapshot: %w", err)
	}
	return b, nil
}

// snapshotHeader returns h's snapshot without its sessions and held
// messages.
func (h *Handler) snapshotHeader() snapshot {
	pr := h.prog
	sn := snapshot{
		Version: snapshotVersion, Fingerprint: pr.fingerprint, Policy: pr.policy.Name, Role: pr.role,
		Conversation: h.conv, Self: h.self, Mode: h.mode, Started: h.started, Done: h.done, Aborted: h.aborted,
		Counter: h.counter, Seq: h.seq, Peers: h.peers(), Ended: h.ended,
	}
	if h.many != nil {
		sn.AtJoin, sn.GroupTicket, sn.JoinTicket = h.many.atJoin, h.many.groupTicket, h.many.joinTicket
	}
	return sn
}

// sessionSnapshot returns session s as a snapshot keeps it, its
// commitments appended to commits.
func (h *Handler) sessionSnapshot(i int, commits []commitSnapshot) sessionSnapshot {
	pr := h.prog
	name := func(st int32) string {
		if st < 0 {
			return ""
		}
		return pr.states[st].name
	}
	s := &h.sessions[i]
	ss := sessionSnapshot{
		Peer: h.sessionName(i), State: name(s.state), TimedOutFrom: name(s.timedOutFrom), Epoch: s.epoch, Ticket: s.ticket,
		Deadlines: h.deadlines(s), LastReplyWith: s.lastReplyWith, LastInReplyTo: s.lastInReplyTo, LastSender: s.lastSender,
		Content: s.content, Sent: s.sent, Vars: s.vars, SrcTimes: h.srcTimes(s),
		Messages: s.messageCount(), Visits: s.visitCounts(),
	}
	if s.lastMsg > 0 {
		ss.LastMessage = pr.msgs[s.lastMsg-1].name
	}
	for _, c := range h.commits(s) {
		commits = append(commits, commitSnapshot{State: c.state.state(), Epoch: c.epoch, Deadline: c.deadline})
	}
	if len(commits) > 0 {
		ss.Commits = commits
	}
	return ss
}

// Restore rebuilds a handler from a Snapshot, of the binary format
// Snapshot writes or of the JSON format (version 2) earlier releases
// wrote. It fails, saying why, when
// the snapshot was taken with another policy (by fingerprint) or role, is
// of another format version, is truncated or has bytes after its end, or
// has a field that does not fit the program
// or the rest of the snapshot: an unknown field; a state, message type,
// variable or commitment state the program does not have; deadlines,
// deadline sources or commitments of another number than the program's;
// an epoch or ticket issued after the snapshot's counter; a ticket where
// no decision can be pending; counts of ended and joined sessions, or a
// done flag, that the sessions' states contradict; peers missing,
// repeated or bound where the program binds none; content or variables
// beyond forms.DefaultLimits; held messages the restored handler would not
// hold (see MaxHeld). A handler Restore returns processes every
// event as the handler it was taken from would.
//
// Restore reads a binary snapshot without allocating more than a small
// multiple of its length: every count and length is bounded by the
// bytes left, and maps and lists may nest at most
// forms.DefaultLimits.MaxDepth+1 deep.
func (pr *Program) Restore(data []byte) (*Handler, error) {
	sn, err := decodeSnapshot(data, pr)
	if err != nil {
		return nil, fmt.Errorf("engine: restore: %w", err)
	}
	h, err := pr.restore(sn)
	if err != nil {
		return nil, fmt.Errorf("engine: restore: %w", err)
	}
	return h, nil
}

// SnapshotJSON returns data, a snapshot of either format Restore reads,
// as JSON of format version 2, which Restore reads too: for tools that
// read or edit a snapshot's fields (the JSON names are those of version
// 2, and its numbers are float64 as Snapshot documents). It checks the
// format only; Restore checks a snapshot against a program.
func SnapshotJSON(data []byte) ([]byte, error) {
	sn, err := decodeSnapshot(data, nil)
	if err != nil {
		return nil, fmt.Errorf("engine: snapshot JSON: %w", err)
	}
	sn.Version = jsonSnapshotVersion
	out, err := json.Marshal(sn)
	if err != nil {
		return nil, fmt.Errorf("engine: snapshot JSON: %w", err)
	}
	return out, nil
}

// decodeSnapshot reads data of either format; pr, when not nil, lends
// the names of its states and messages so that they need no copies.
func decodeSnapshot(data []byte, pr *Program) (*snapshot, error) {
	if len(data) > 0 && data[0] < ' ' && data[0] != '\t' && data[0] != '\n' && data[0] != '\r' {
		// A byte JSON cannot start with: a binary format's version.
		return decodeBinary(data, pr)
	}
	var sn snapshot
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sn); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the snapshot")
	}
	switch sn.Version {
	case jsonSnapshotVersion:
	case 1:
		return nil, fmt.Errorf("snapshot format version 1, want %d: version 1 named commitment timers \"commitment:<name>\", and the timers kept for it would not reach the restored handler", jsonSnapshotVersion)
	default:
		return nil, fmt.Errorf("JSON snapshot format version %d, want %d", sn.Version, jsonSnapshotVersion)
	}
	return &sn, nil
}

// restore checks sn, of either format, against pr and the rest of the
// snapshot, and rebuilds its handler.
func (pr *Program) restore(sn *snapshot) (*Handler, error) {
	q := policy.Quote
	if sn.Fingerprint != pr.fingerprint {
		fp := sn.Fingerprint // shown bare when it is no longer than a fingerprint
		if len(fp) > len(pr.fingerprint) {
			fp = q(fp)
		}
		return nil, fmt.Errorf("the snapshot is of policy %s with fingerprint %s, but this program runs %s with fingerprint %s", q(sn.Policy), fp, q(pr.policy.Name), pr.fingerprint)
	}
	if sn.Role != pr.role {
		return nil, fmt.Errorf("the snapshot plays role %s, this program %s", q(sn.Role), q(pr.role))
	}
	if sn.Mode != Enforce && sn.Mode != Observe {
		return nil, fmt.Errorf("mode %d is neither enforce (%d) nor observe (%d)", sn.Mode, Enforce, Observe)
	}
	if sn.Counter >= 1<<(64-ticketSessionBits) {
		return nil, fmt.Errorf("counter %d is too large for tickets", sn.Counter)
	}
	if len(sn.Peers) != len(pr.roles) {
		return nil, fmt.Errorf("the snapshot binds %d roles, the policy has %d", len(sn.Peers), len(pr.roles))
	}
	switch {
	case pr.manyRole < 0 && len(sn.Sessions) != 1:
		return nil, fmt.Errorf("%d sessions for a role with one peer", len(sn.Sessions))
	case len(sn.Sessions) >= 1<<ticketSessionBits:
		return nil, fmt.Errorf("%d sessions, more than tickets can tell apart", len(sn.Sessions))
	case pr.manyRole >= 0 && sn.Peers[pr.manyRole] != "":
		return nil, fmt.Errorf("role %s has a session per agent, but the snapshot binds it to %s", q(pr.roles[pr.manyRole]), q(sn.Peers[pr.manyRole]))
	case pr.manyRole < 0 && (sn.AtJoin != 0 || sn.GroupTicket != 0 || sn.JoinTicket != 0):
		return nil, errors.New("join and group decisions for a role with one peer")
	case sn.Done && !sn.Started:
		return nil, errors.New("the conversation is done but was never started")
	case sn.Aborted && !sn.Done:
		return nil, errors.New("the conversation was aborted but is not done")
	}
	for _, t := range []struct {
		name   string
		ticket uint64
	}{{"group", sn.GroupTicket}, {"join", sn.JoinTicket}} {
		if t.ticket == 0 {
			continue
		}
		if err := sn.issued(t.name+" ticket", t.ticket>>ticketSessionBits); err != nil {
			return nil, err
		}
		if t.ticket&(1<<ticketSessionBits-1) != 0 {
			return nil, fmt.Errorf("%s ticket %d names a session", t.name, t.ticket)
		}
	}
	h := &Handler{
		prog: pr, conv: sn.Conversation, self: sn.Self, mode: sn.Mode, started: sn.Started, done: sn.Done, aborted: sn.Aborted,
		counter: sn.Counter, seq: sn.Seq, ended: sn.Ended,
	}
	if pr.manyRole >= 0 {
		h.many = &manyState{atJoin: sn.AtJoin, groupTicket: sn.GroupTicket, joinTicket: sn.JoinTicket}
	}
	h.makePeers()
	copy(h.peers(), sn.Peers)
	var ended, atJoin int32
	for i := range sn.Sessions {
		s, err := pr.restoreSession(sn, i)
		if err != nil {
			return nil, fmt.Errorf("session %d: %w", i, err)
		}
		if s.state >= 0 {
			st := &pr.states[s.state]
			if st.terminal {
				ended++
			} else if st.join && st.child == nil && pr.manyRole >= 0 {
				atJoin++
			}
			if st.join && pr.manyRole >= 0 && s.ticket == 0 {
				h.many.undecided++
			}
		}
		if pr.manyRole < 0 {
			h.one[0] = s
			h.sessions = h.one[:1]
			continue
		}
		peer := sn.Sessions[i].Peer
		if _, ok := h.many.peers.find(peer); ok {
			return nil, fmt.Errorf("session %d: %s has two sessions", i, q(peer))
		}
		if h.sessions == nil {
			h.sessions = make([]session, 0, len(sn.Sessions))
			h.many.peers.reserve(len(sn.Sessions))
		}
		h.sessions = append(h.sessions, s)
		h.many.peers.add(peer)
	}
	if ended != sn.Ended {
		return nil, fmt.Errorf("%d sessions are in a terminal state, the snapshot counts %d", ended, sn.Ended)
	}
	if atJoin != sn.AtJoin {
		return nil, fmt.Errorf("%d sessions are at a join, the snapshot counts %d", atJoin, sn.AtJoin)
	}
	if finished := len(h.sessions) > 0 && int(ended) == len(h.sessions); !sn.Aborted && sn.Done != finished {
		return nil, fmt.Errorf("done is %v, but %d of %d sessions have ended", sn.Done, ended, len(h.sessions))
	}
	if err := pr.restoreHeld(sn, h); err != nil {
		return nil, err
	}
	return h, nil
}

// issued checks that n, an epoch or a ticket's number, was issued by the
// snapshot's counter.
func (sn *snapshot) issued(what string, n uint64) error {
	if n == 0 || n > sn.Counter {
		return fmt.Errorf("%s %d was not issued: the counter is at %d", what, n, sn.Counter)
	}
	return nil
}

// restoreSession checks and rebuilds session i of sn.
func (pr *Program) restoreSession(sn *snapshot, i int) (session, error) {
	q := policy.Quote
	ss := &sn.Sessions[i]
	s := pr.newSession()
	switch {
	case pr.manyRole < 0 && ss.Peer != "":
		return s, fmt.Errorf("a role with one peer keeps one session without a peer, not one with %s", q(ss.Peer))
	case pr.manyRole >= 0 && ss.Peer == "":
		return s, errors.New("a session of a many role has no peer")
	}
	state := func(name string) (int32, error) {
		if name == "" {
			return -1, nil
		}
		k, ok := pr.stateIndex[name]
		if !ok {
			return 0, fmt.Errorf("the program has no state %s", q(name))
		}
		return int32(k), nil
	}
	var err error
	if s.state, err = state(ss.State); err != nil {
		return s, err
	}
	if s.timedOutFrom, err = state(ss.TimedOutFrom); err != nil {
		return s, err
	}
	if s.state < 0 {
		if sn.Started {
			return s, errors.New("the handler has started, but the session has no state")
		}
		if ss.TimedOutFrom != "" || ss.Epoch != 0 || ss.Ticket != 0 || len(ss.Deadlines) > 0 || len(ss.Commits) > 0 || ss.LastMessage != "" {
			return s, errors.New("a session that has not started has timers, decisions, commitments or messages")
		}
	} else {
		if !sn.Started {
			return s, fmt.Errorf("the session is in state %s, but the handler has not started", q(ss.State))
		}
		if err := sn.issued("epoch", ss.Epoch); err != nil {
			return s, err
		}
	}
	if s.state >= 0 && len(ss.Deadlines) != len(pr.states[s.state].arms) {
		return s, fmt.Errorf("state %s arms %d timers, the snapshot has %d", q(ss.State), len(pr.states[s.state].arms), len(ss.Deadlines))
	}
	if err := pr.restoreTicket(sn, i, s.state); err != nil {
		return s, err
	}
	if len(ss.SrcTimes) > 0 && len(ss.SrcTimes) != len(pr.deadlineSrc) {
		return s, fmt.Errorf("%d deadline sources, the program has %d", len(ss.SrcTimes), len(pr.deadlineSrc))
	}
	if ss.LastMessage != "" {
		k := slices.IndexFunc(pr.msgs, func(m msgProg) bool { return m.name == ss.LastMessage })
		if k < 0 {
			return s, fmt.Errorf("the program has no message type %s", q(ss.LastMessage))
		}
		s.lastMsg = int32(k + 1)
	}
	if err := forms.CheckContent(ss.Content, forms.DefaultLimits); err != nil {
		return s, err
	}
	for name, v := range ss.Vars {
		if !slices.Contains(pr.vars, name) {
			return s, fmt.Errorf("the policy declares no variable %s", q(name))
		}
		if err := forms.CheckValue(v, forms.DefaultLimits); err != nil {
			return s, fmt.Errorf("variable %s: %w", q(name), err)
		}
	}
	if err = pr.restoreCommits(&s, sn, ss); err != nil {
		return s, err
	}
	if err := pr.restoreBudget(&s, ss); err != nil {
		return s, err
	}
	s.epoch, s.ticket = ss.Epoch, ss.Ticket
	copy(pr.deadlineSlots(&s, len(ss.Deadlines)), ss.Deadlines) // as many as the state arms
	s.lastReplyWith, s.lastInReplyTo, s.lastSender, s.content = ss.LastReplyWith, ss.LastInReplyTo, ss.LastSender, ss.Content
	s.sent, s.vars = ss.Sent, ss.Vars
	if len(ss.SrcTimes) > 0 { // as many as the program has; none is none set
		s.srcSet = true
		copy(pr.srcSlots(&s), ss.SrcTimes)
	}
	return s, nil
}

// restoreTicket checks session i's ticket: one of its own, for a state
// that decides, or the join's, for a join; none once it has ended.
func (pr *Program) restoreTicket(sn *snapshot, i int, state int32) error {
	t := sn.Sessions[i].Ticket
	if t == 0 {
		return nil
	}
	if sn.Done || state < 0 || pr.states[state].terminal {
		return fmt.Errorf("ticket %d is pending in a session that has ended", t)
	}
	if err := sn.issued("ticket", t>>ticketSessionBits); err != nil {
		return err
	}
	st := &pr.states[state]
	switch idx := t & (1<<ticketSessionBits - 1); {
	case idx == uint64(i+1) && len(st.sends) > 0:
	case idx == 0 && t == sn.JoinTicket && st.join:
	default:
		return fmt.Errorf("ticket %d cannot be pending in state %s of this session", t, policy.Quote(st.name))
	}
	return nil
}

// restoreCommits checks and rebuilds session s's commitments (after its
// state): one per commitment of the policy, or none; each in a
// commitment state, with an epoch issued when it was created; none open
// once the session ended.
func (pr *Program) restoreCommits(s *session, sn *snapshot, ss *sessionSnapshot) error {
	if len(ss.Commits) == 0 {
		return nil
	}
	if len(ss.Commits) != len(pr.commits) {
		return fmt.Errorf("%d commitments, the policy declares %d", len(ss.Commits), len(pr.commits))
	}
	state := s.state
	ended := sn.Aborted || state >= 0 && pr.states[state].terminal
	s.cmSet = true
	out := pr.commitSlots(s)
	for k, c := range ss.Commits {
		switch c.State {
		case "":
			if c.Epoch != 0 {
				return fmt.Errorf("commitment %s was never created but has epoch %d", policy.Quote(pr.commits[k].name), c.Epoch)
			}
		case CommitmentConditional, CommitmentDetached, CommitmentDischarged, CommitmentViolated, CommitmentExpired, CommitmentCancelled, CommitmentReleased:
			if err := sn.issued("commitment epoch", c.Epoch); err != nil {
				return err
			}
			if ended && c.State.active() {
				return fmt.Errorf("commitment %s is %s in a session that has ended", policy.Quote(pr.commits[k].name), c.State)
			}
		default:
			return fmt.Errorf("commitment %s is in state %s, which commitments do not have", policy.Quote(pr.commits[k].name), policy.Quote(string(c.State)))
		}
		// Any Unix nanoseconds are a deadline (before 1970, negative), but
		// only a commitment with a timer armed has one.
		if c.Deadline != 0 && pr.commits[k].timer(phaseOf(c.State)) < 0 {
			return fmt.Errorf("commitment %s is %s, which arms no timer, but has a deadline", policy.Quote(pr.commits[k].name), policy.Quote(string(c.State)))
		}
		out[k] = commitInst{state: phaseOf(c.State), epoch: c.Epoch, deadline: c.Deadline}
	}
	return nil
}

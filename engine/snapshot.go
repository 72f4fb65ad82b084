package engine

import (
	"encoding/json"
	"fmt"
	"slices"
)

// snapshotVersion is the version of the snapshot format. Version 2
// types commitment timers (TimerEvent.Commitment); version 1 named them
// "commitment:<name>", so the timers a runtime kept for a version 1
// handler would not reach a restored one: Restore refuses version 1.
const snapshotVersion = 2

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
}

type commitSnapshot struct {
	State CommitmentState `json:"state,omitempty"`
	Epoch uint64          `json:"epoch"`
}

// Snapshot returns the handler's whole state as bytes (JSON): the policy
// fingerprint and role, every session's state, variables, armed timers
// with their epochs, commitments and pending decisions. Program.Restore
// turns it back into a handler that behaves exactly as this one would.
// Message content is kept as JSON, so numbers come back as float64.
func (h *Handler) Snapshot() ([]byte, error) {
	pr := h.prog
	name := func(st int32) string {
		if st < 0 {
			return ""
		}
		return pr.states[st].name
	}
	sn := snapshot{
		Version: snapshotVersion, Fingerprint: pr.fingerprint, Policy: pr.policy.Name, Role: pr.role,
		Conversation: h.conv, Self: h.self, Mode: h.mode, Started: h.started, Done: h.done, Aborted: h.aborted,
		Counter: h.counter, Seq: h.seq, Peers: h.peers, Ended: h.ended,
	}
	if h.many != nil {
		sn.AtJoin, sn.GroupTicket, sn.JoinTicket = h.many.atJoin, h.many.groupTicket, h.many.joinTicket
	}
	for i := range h.sessions {
		s := &h.sessions[i]
		ss := sessionSnapshot{
			Peer: s.peer, State: name(s.state), TimedOutFrom: name(s.timedOutFrom), Epoch: s.epoch, Ticket: s.ticket,
			Deadlines: s.deadlines, LastReplyWith: s.lastReplyWith, LastInReplyTo: s.lastInReplyTo, LastSender: s.lastSender,
			Content: s.content, Sent: s.sent, Vars: s.vars, SrcTimes: s.srcTimes,
		}
		if s.lastMsg > 0 {
			ss.LastMessage = pr.msgs[s.lastMsg-1].name
		}
		for _, c := range s.commits {
			ss.Commits = append(ss.Commits, commitSnapshot{State: c.state, Epoch: c.epoch})
		}
		sn.Sessions = append(sn.Sessions, ss)
	}
	return json.Marshal(sn)
}

// Restore rebuilds a handler from a Snapshot. It fails when the snapshot
// was taken with another policy (by fingerprint) or role.
func (pr *Program) Restore(data []byte) (*Handler, error) {
	var sn snapshot
	if err := json.Unmarshal(data, &sn); err != nil {
		return nil, fmt.Errorf("engine: restore: %w", err)
	}
	switch sn.Version {
	case snapshotVersion:
	case 1:
		return nil, fmt.Errorf("engine: restore: snapshot format version 1, want %d: version 1 named commitment timers \"commitment:<name>\", and the timers kept for it would not reach the restored handler", snapshotVersion)
	default:
		return nil, fmt.Errorf("engine: restore: snapshot format version %d, want %d", sn.Version, snapshotVersion)
	}
	if sn.Fingerprint != pr.fingerprint {
		return nil, fmt.Errorf("engine: restore: the snapshot is of policy %q with fingerprint %s, but this program runs %q with fingerprint %s", sn.Policy, sn.Fingerprint, pr.policy.Name, pr.fingerprint)
	}
	if sn.Role != pr.role {
		return nil, fmt.Errorf("engine: restore: the snapshot plays role %q, this program %q", sn.Role, pr.role)
	}
	if len(sn.Peers) != len(pr.roles) {
		return nil, fmt.Errorf("engine: restore: the snapshot binds %d roles, the policy has %d", len(sn.Peers), len(pr.roles))
	}
	h := &Handler{
		prog: pr, conv: sn.Conversation, self: sn.Self, mode: sn.Mode, started: sn.Started, done: sn.Done, aborted: sn.Aborted,
		counter: sn.Counter, seq: sn.Seq, ended: sn.Ended,
	}
	if pr.manyRole >= 0 {
		h.many = &manyState{atJoin: sn.AtJoin, groupTicket: sn.GroupTicket, joinTicket: sn.JoinTicket}
	}
	h.peers = h.peerSlots()
	copy(h.peers, sn.Peers)
	state := func(name string) (int32, error) {
		if name == "" {
			return -1, nil
		}
		i, ok := pr.stateIndex[name]
		if !ok {
			return 0, fmt.Errorf("engine: restore: the program has no state %q", name)
		}
		return int32(i), nil
	}
	for _, ss := range sn.Sessions {
		s := newSession(ss.Peer)
		var err error
		if s.state, err = state(ss.State); err != nil {
			return nil, err
		}
		if s.timedOutFrom, err = state(ss.TimedOutFrom); err != nil {
			return nil, err
		}
		if s.state >= 0 && len(ss.Deadlines) != len(pr.states[s.state].arms) {
			return nil, fmt.Errorf("engine: restore: state %q arms %d timers, the snapshot has %d", ss.State, len(pr.states[s.state].arms), len(ss.Deadlines))
		}
		if len(ss.Commits) > 0 && len(ss.Commits) != len(pr.commits) {
			return nil, fmt.Errorf("engine: restore: %d commitments, the policy declares %d", len(ss.Commits), len(pr.commits))
		}
		if len(ss.SrcTimes) > 0 && len(ss.SrcTimes) != len(pr.deadlineSrc) {
			return nil, fmt.Errorf("engine: restore: %d deadline sources, the program has %d", len(ss.SrcTimes), len(pr.deadlineSrc))
		}
		s.epoch, s.ticket, s.deadlines = ss.Epoch, ss.Ticket, ss.Deadlines
		s.lastReplyWith, s.lastInReplyTo, s.lastSender, s.content = ss.LastReplyWith, ss.LastInReplyTo, ss.LastSender, ss.Content
		if ss.LastMessage != "" {
			k := slices.IndexFunc(pr.msgs, func(m msgProg) bool { return m.name == ss.LastMessage })
			if k < 0 {
				return nil, fmt.Errorf("engine: restore: the program has no message type %q", ss.LastMessage)
			}
			s.lastMsg = int32(k + 1)
		}
		s.sent, s.vars, s.srcTimes = ss.Sent, ss.Vars, ss.SrcTimes
		for _, c := range ss.Commits {
			s.commits = append(s.commits, commitInst{state: c.State, epoch: c.Epoch})
		}
		if pr.manyRole < 0 && len(h.sessions) == 0 {
			h.one[0] = s
			h.sessions = h.one[:1]
		} else {
			h.sessions = append(h.sessions, s)
		}
		if pr.manyRole >= 0 {
			if h.many.bySender == nil {
				h.many.bySender = map[string]int{}
			}
			h.many.bySender[s.peer] = len(h.sessions) - 1
		}
	}
	if pr.manyRole < 0 && len(h.sessions) != 1 {
		return nil, fmt.Errorf("engine: restore: %d sessions for a role with one peer", len(h.sessions))
	}
	return h, nil
}

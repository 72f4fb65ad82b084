package a2a

import (
	"sync"
	"time"

	sdk "github.com/a2aproject/a2a-go/a2a"

	"github.com/parleyhq/parley/engine"
)

// causeTimer marks a conversation a timer moved last.
const causeTimer = "\x00timer"

// task is one client's engagement in one conversation. Its fields are
// guarded by the server's mutex; sendMu serialises the client's
// messages.
type task struct {
	id        sdk.TaskID
	context   string // the conversation id
	client    string
	sk        *skill
	sender    string // the agent name the client speaks as
	openedKey string

	sendMu sync.Mutex

	state     sdk.TaskState
	local     string   // the agent's state in the policy
	allowed   []string // what the client may send in it
	history   []*sdk.Message
	last      *sdk.Message // the agent's last message
	artifacts []*sdk.Artifact
	applied   map[string]bool // the client's message ids applied
	received  int
	added     int // messages added to the history, dropped ones included

	// pending is the reply-with of the client's message being delivered,
	// pendingErr the protocol error the conversation answered it with.
	pending    string
	pendingErr error

	effect, before effect
	violated       bool
	canceled       bool
	ended          bool
	released       bool
	outcome        string
	reason         string
	endedAt        time.Time

	notify chan struct{}
}

// effect is what moved the conversation last.
type effect struct {
	// cause is the performative of the last message, or causeTimer.
	cause string
	// local is true when the agent sent that message.
	local bool
	// cancelled is true once the client has sent a cancel.
	cancelled bool
}

func newTask(id sdk.TaskID, conv, client string, sk *skill) *task {
	return &task{
		id: id, context: conv, client: client, sk: sk, sender: senderPrefix + string(id),
		state: sdk.TaskStateSubmitted, applied: map[string]bool{}, notify: make(chan struct{}),
	}
}

// changed wakes whoever waits for t to change.
func (t *task) changed() {
	close(t.notify)
	t.notify = make(chan struct{})
}

// add appends m to the history, dropping the oldest beyond max.
func (t *task) add(m *sdk.Message, max int) {
	if len(t.history) >= max {
		t.history = append(t.history[:0], t.history[len(t.history)-max+1:]...)
	}
	t.history = append(t.history, m)
	t.added++
}

// since returns the messages added to the history after the first seen
// (those still in it).
func (t *task) since(seen int) []*sdk.Message {
	n := min(t.added-seen, len(t.history))
	return t.history[len(t.history)-n:]
}

// metadata returns the Parley part of the task's metadata.
func (t *task) metadata() map[string]any {
	var allowed []string
	if !t.state.Terminal() {
		allowed = t.allowed
	}
	tm := TaskMeta{Policy: t.sk.policy.Name, Role: t.sk.role, ClientRole: t.sk.external, State: t.local, Allowed: append([]string{}, allowed...), Outcome: t.outcome, Reason: t.reason}
	return map[string]any{ExtensionURI: toMap(tm)}
}

// final returns the terminal state of an ended conversation: canceled
// when the client canceled the task; failed when it was aborted, a
// commitment was violated, a timer ended it or the last message was a
// failure; rejected when the last message was a refuse, reject-proposal
// or not-understood; canceled when the client had sent a cancel;
// completed otherwise.
func (t *task) final() sdk.TaskState {
	switch {
	case t.canceled:
		return sdk.TaskStateCanceled
	case t.outcome == engine.OutcomeAborted || t.outcome == "" || t.violated:
		return sdk.TaskStateFailed
	}
	switch t.effect.cause {
	case causeTimer, "failure":
		return sdk.TaskStateFailed
	case "refuse", "reject-proposal", "not-understood":
		return sdk.TaskStateRejected
	case "cancel":
		return sdk.TaskStateCanceled
	}
	if t.effect.cancelled {
		return sdk.TaskStateCanceled
	}
	return sdk.TaskStateCompleted
}

// metaType returns the message type an A2A message's Parley metadata
// names.
func metaType(m *sdk.Message) string {
	meta, _, _ := metaOf(m.Metadata)
	return meta.Type
}

// TaskInfo names t's task and context, for the SDK's event constructors.
func (t *task) TaskInfo() sdk.TaskInfo { return sdk.TaskInfo{TaskID: t.id, ContextID: t.context} }

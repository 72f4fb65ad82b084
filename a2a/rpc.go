package a2a

import (
	"context"
	"fmt"
	"iter"
	"time"

	sdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"

	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policy"
)

// rpcHandler serves the A2A methods.
type rpcHandler struct{ s *Server }

var _ a2asrv.RequestHandler = rpcHandler{}

// OnSendMessage handles message/send: a message without a task id opens
// a task and its conversation, one with a task id continues it.
func (h rpcHandler) OnSendMessage(ctx context.Context, p *sdk.MessageSendParams) (sdk.SendMessageResult, error) {
	t, err := h.s.take(ctx, p)
	if err != nil {
		return nil, err
	}
	h.s.wait(ctx, t, p.Config == nil || p.Config.Blocking == nil || *p.Config.Blocking)
	var hl *int
	if p.Config != nil {
		hl = p.Config.HistoryLength
	}
	return h.s.snapshot(t, hl), nil
}

// take applies the message of p to its task, or opens one.
func (s *Server) take(ctx context.Context, p *sdk.MessageSendParams) (*task, error) {
	if p == nil || p.Message == nil {
		return nil, fmt.Errorf("%w: no message", sdk.ErrInvalidParams)
	}
	msg := p.Message
	if msg.ID == "" {
		return nil, fmt.Errorf("%w: the message has no messageId", sdk.ErrInvalidParams)
	}
	for _, id := range []string{msg.ID, msg.ContextID, string(msg.TaskID)} {
		if err := checkID(id); err != nil {
			return nil, err
		}
	}
	meta, hasMeta, err := metaOf(msg.Metadata)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", sdk.ErrInvalidParams, err)
	}
	in := inbound{msg: msg, meta: meta, plain: !hasMeta || (meta.Type == "" && meta.Performative == "")}
	if msg.TaskID != "" {
		return s.continueTask(ctx, clientOf(ctx), in)
	}
	return s.openTask(ctx, clientOf(ctx), in)
}

// OnSendMessageStream handles message/stream: the message is taken as by
// message/send, and the stream carries the task, then what changes (see
// stream).
func (h rpcHandler) OnSendMessageStream(ctx context.Context, p *sdk.MessageSendParams) iter.Seq2[sdk.Event, error] {
	return func(yield func(sdk.Event, error) bool) {
		t, err := h.s.take(ctx, p)
		if err != nil {
			yield(nil, err)
			return
		}
		h.s.stream(ctx, t, yield)
	}
}

// OnResubscribeToTask handles tasks/resubscribe: the stream carries the
// task as it is, then what changes (see stream).
func (h rpcHandler) OnResubscribeToTask(ctx context.Context, p *sdk.TaskIDParams) iter.Seq2[sdk.Event, error] {
	return func(yield func(sdk.Event, error) bool) {
		if p == nil || p.ID == "" {
			yield(nil, fmt.Errorf("%w: no task id", sdk.ErrInvalidParams))
			return
		}
		t, err := h.s.lookup(clientOf(ctx), p.ID)
		if err != nil {
			yield(nil, err)
			return
		}
		h.s.stream(ctx, t, yield)
	}
}

// stream yields t, then a status update for each message the agent sends,
// an artifact update for each artifact, and a final status update once
// the agent's turn is over (t is terminal or input-required). It stops
// early, without a final update, when ctx ends or after Limits.StreamFor;
// at most Limits.MaxStreams streams are open at once.
func (s *Server) stream(ctx context.Context, t *task, yield func(sdk.Event, error) bool) {
	if s.streams.Add(1) > int64(s.o.limits.MaxStreams) {
		s.streams.Add(-1)
		yield(nil, fmt.Errorf("%w: %d streams are open (the limit)", sdk.ErrServerError, s.o.limits.MaxStreams))
		return
	}
	defer s.streams.Add(-1)
	// Each round takes the change channel before it refreshes, so that no
	// change after the refresh goes unseen.
	s.mu.Lock()
	ch := t.notify
	s.mu.Unlock()
	settled := s.refresh(ctx, t)
	s.mu.Lock()
	first, seen, arts := s.snapshotLocked(t, nil), t.added, len(t.artifacts)
	s.mu.Unlock()
	if !yield(first, nil) {
		return
	}
	timer := time.NewTimer(s.o.limits.StreamFor)
	defer timer.Stop()
	for !settled {
		select {
		case <-ch:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
		s.mu.Lock()
		ch = t.notify
		s.mu.Unlock()
		settled = s.refresh(ctx, t)
		s.mu.Lock()
		var events []sdk.Event
		for _, m := range t.since(seen) {
			if m.Role == sdk.MessageRoleAgent {
				events = append(events, sdk.NewStatusUpdateEvent(t, t.state, m))
			}
		}
		for _, a := range t.artifacts[arts:] {
			events = append(events, &sdk.TaskArtifactUpdateEvent{TaskID: t.id, ContextID: t.context, Artifact: a, LastChunk: true})
		}
		seen, arts = t.added, len(t.artifacts)
		s.mu.Unlock()
		for _, ev := range events {
			if !yield(ev, nil) {
				return
			}
		}
	}
	s.mu.Lock()
	final := sdk.NewStatusUpdateEvent(t, t.state, nil)
	final.Final, final.Metadata = true, t.metadata()
	s.mu.Unlock()
	yield(final, nil)
}

// OnGetTask handles tasks/get.
func (h rpcHandler) OnGetTask(ctx context.Context, q *sdk.TaskQueryParams) (*sdk.Task, error) {
	if q == nil || q.ID == "" {
		return nil, fmt.Errorf("%w: no task id", sdk.ErrInvalidParams)
	}
	t, err := h.s.lookup(clientOf(ctx), q.ID)
	if err != nil {
		return nil, err
	}
	h.s.refresh(ctx, t)
	return h.s.snapshot(t, q.HistoryLength), nil
}

// OnCancelTask handles tasks/cancel: the client sends the policy's cancel
// message, when the current state lets it, and the task is canceled.
func (h rpcHandler) OnCancelTask(ctx context.Context, p *sdk.TaskIDParams) (*sdk.Task, error) {
	s := h.s
	if p == nil || p.ID == "" {
		return nil, fmt.Errorf("%w: no task id", sdk.ErrInvalidParams)
	}
	t, err := s.lookup(clientOf(ctx), p.ID)
	if err != nil {
		return nil, err
	}
	t.sendMu.Lock()
	defer t.sendMu.Unlock()
	s.refresh(ctx, t)
	s.mu.Lock()
	terminal, local, allowed := t.state.Terminal(), t.local, t.allowed
	s.mu.Unlock()
	if terminal {
		return nil, fmt.Errorf("%w: task %s has ended", sdk.ErrTaskNotCancelable, policy.Quote(string(p.ID)))
	}
	typ := ""
	for _, name := range allowed {
		if t.sk.forms[name].Type.Performative == "cancel" {
			typ = name
			break
		}
	}
	if typ == "" {
		return nil, fmt.Errorf("%w: %s does not let the client cancel in state %s; %s", sdk.ErrTaskNotCancelable, policy.Quote(t.sk.policy.Name), policy.Quote(local), allowedText(allowed))
	}
	fm := &forms.Message{Performative: "cancel", Sender: t.sender, Receivers: []string{s.m.Name()}, Protocol: t.sk.policy.Name, ConversationID: t.context, ReplyWith: newID("cancel"), Content: map[string]any{}, Language: "json"}
	if err := t.sk.forms[typ].Validate(fm.Content); err != nil {
		return nil, fmt.Errorf("%w: %v", sdk.ErrTaskNotCancelable, err)
	}
	um := toA2A(fm, typ, sdk.MessageRoleUser)
	if err := s.deliver(ctx, t, fm, typ, um); err != nil {
		return nil, fmt.Errorf("%w: %v", sdk.ErrTaskNotCancelable, err)
	}
	s.mu.Lock()
	if !t.state.Terminal() {
		t.canceled, t.state, t.endedAt = true, sdk.TaskStateCanceled, time.Now()
		t.changed()
	}
	s.mu.Unlock()
	return s.snapshot(t, nil), nil
}

var errNoPush = fmt.Errorf("%w: the agent sends no push notifications", sdk.ErrPushNotificationNotSupported)

// OnGetTaskPushConfig is not supported.
func (rpcHandler) OnGetTaskPushConfig(context.Context, *sdk.GetTaskPushConfigParams) (*sdk.TaskPushConfig, error) {
	return nil, errNoPush
}

// OnListTaskPushConfig is not supported.
func (rpcHandler) OnListTaskPushConfig(context.Context, *sdk.ListTaskPushConfigParams) ([]*sdk.TaskPushConfig, error) {
	return nil, errNoPush
}

// OnSetTaskPushConfig is not supported.
func (rpcHandler) OnSetTaskPushConfig(context.Context, *sdk.TaskPushConfig) (*sdk.TaskPushConfig, error) {
	return nil, errNoPush
}

// OnDeleteTaskPushConfig is not supported.
func (rpcHandler) OnDeleteTaskPushConfig(context.Context, *sdk.DeleteTaskPushConfigParams) error {
	return errNoPush
}

// OnGetExtendedAgentCard is not supported: the public card is all there
// is.
func (rpcHandler) OnGetExtendedAgentCard(context.Context) (*sdk.AgentCard, error) {
	return nil, sdk.ErrAuthenticatedExtendedCardNotConfigured
}

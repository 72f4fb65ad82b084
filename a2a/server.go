package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policy"
)

// ProtocolVersion is the A2A protocol version the server and client
// speak.
const ProtocolVersion = "0.3.0"

// senderPrefix starts the agent name an A2A client speaks as in the
// conversation of its task: the prefix and the task id.
const senderPrefix = "a2a:"

// Limits bound what A2A clients can make a server spend. A zero field
// keeps its default.
type Limits struct {
	// MaxRequestBytes is the largest JSON-RPC request body; a larger one
	// is a parse error. Default 4 MiB.
	MaxRequestBytes int64
	// MaxTasks is the most tasks the server holds, ended ones within
	// their retention included; a message that would open one more is
	// refused (-32000). Default 10,000.
	MaxTasks int
	// MaxTasksPerClient is the most live tasks (whose conversation has
	// not ended) one client may have opened; one more is refused
	// (-32000). Default 100.
	MaxTasksPerClient int
	// MaxMessagesPerTask is the most messages a client may send in one
	// task (and the most a task's history keeps, the oldest dropped
	// first); one more is refused (-32600). Default 1,000.
	MaxMessagesPerTask int
	// MaxWait is how long a blocking message/send waits for the agent to
	// finish its turn (the conversation to end or to wait for the
	// client) before it returns the task as working. Default 10 s.
	MaxWait time.Duration
	// Retention is how long a task is kept after it reached a terminal
	// state, for tasks/get. Default 10 minutes.
	Retention time.Duration
	// MaxStreams is the most message/stream and tasks/resubscribe
	// streams open at once; one more is refused (-32000). Default 1,000.
	MaxStreams int
	// StreamFor is how long a stream lasts at most; it ends without a
	// final event after it (resubscribe, or poll with tasks/get).
	// Default 5 minutes.
	StreamFor time.Duration
}

// DefaultLimits are the limits NewServer uses unless WithLimits says
// otherwise.
var DefaultLimits = Limits{
	MaxRequestBytes:    4 << 20,
	MaxTasks:           10_000,
	MaxTasksPerClient:  100,
	MaxMessagesPerTask: 1_000,
	MaxWait:            10 * time.Second,
	Retention:          10 * time.Minute,
	MaxStreams:         1_000,
	StreamFor:          5 * time.Minute,
}

// Info describes the agent in its agent card.
type Info struct {
	// Name is the agent's name (the manager's name when empty).
	Name        string
	Description string
	// URL is where the server's JSON-RPC endpoint is reached, such as
	// https://agents.example.com/painter/. When empty, the card gives
	// the root of the host each request for it names.
	URL     string
	Version string
}

// ServerOption configures NewServer.
type ServerOption func(*serverOptions)

type serverOptions struct {
	limits   Limits
	clientID func(*http.Request) string
	forward  agent.Transport
	errs     []error
}

// WithForward sends the manager's messages to agents that are not the
// server's A2A clients through t, such as a Client: one manager then
// serves A2A clients and talks to other agents too.
func WithForward(t agent.Transport) ServerOption {
	return func(o *serverOptions) {
		if t == nil {
			o.errs = append(o.errs, errors.New("a2a: WithForward: nil transport"))
		}
		o.forward = t
	}
}

// WithLimits replaces DefaultLimits; zero fields keep their default, and
// a negative one is an error.
func WithLimits(l Limits) ServerOption {
	return func(o *serverOptions) {
		set := func(name string, dst *int, v int) { setLimit(&o.errs, "WithLimits", name, dst, v) }
		setLimit(&o.errs, "WithLimits", "MaxRequestBytes", &o.limits.MaxRequestBytes, l.MaxRequestBytes)
		set("MaxTasks", &o.limits.MaxTasks, l.MaxTasks)
		set("MaxTasksPerClient", &o.limits.MaxTasksPerClient, l.MaxTasksPerClient)
		set("MaxMessagesPerTask", &o.limits.MaxMessagesPerTask, l.MaxMessagesPerTask)
		setLimit(&o.errs, "WithLimits", "MaxWait", &o.limits.MaxWait, l.MaxWait)
		setLimit(&o.errs, "WithLimits", "Retention", &o.limits.Retention, l.Retention)
		set("MaxStreams", &o.limits.MaxStreams, l.MaxStreams)
		setLimit(&o.errs, "WithLimits", "StreamFor", &o.limits.StreamFor, l.StreamFor)
	}
}

// setLimit sets *dst to a positive v, keeps it for a zero v and reports
// a negative one.
func setLimit[T ~int | ~int64](errs *[]error, opt, name string, dst *T, v T) {
	switch {
	case v < 0:
		*errs = append(*errs, fmt.Errorf("a2a: %s: %s is %v, not positive", opt, name, v))
	case v > 0:
		*dst = v
	}
}

// WithClientID sets how the server tells clients apart, for
// Limits.MaxTasksPerClient and so that a task is only seen by the client
// that opened it: f returns the client's identity for an HTTP request
// (an authenticated user, say). The default is the host of the request's
// remote address.
func WithClientID(f func(*http.Request) string) ServerOption {
	return func(o *serverOptions) {
		if f == nil {
			o.errs = append(o.errs, errors.New("a2a: WithClientID: nil function"))
		}
		o.clientID = f
	}
}

func remoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// Server exposes the roles an agent.Manager accepts conversations in as
// an A2A agent, over A2A's JSON-RPC binding: an agent card with one skill
// per (policy, role), message/send, message/stream, tasks/get,
// tasks/cancel and tasks/resubscribe. Each task
// is one client's part in one conversation, whose id is the task's
// contextId; docs/a2a.md documents the mapping.
//
// The server is the manager's transport and observer (ManagerOptions),
// and Attach connects it to the manager. It is safe for concurrent use.
type Server struct {
	o    serverOptions
	info Info

	m        *agent.Manager
	skills   []*skill
	byPolicy map[string]*skill
	handler  atomic.Pointer[http.Handler]
	streams  atomic.Int64

	mu       sync.Mutex
	tasks    map[sdk.TaskID]*task
	contexts map[string]*task
	senders  map[string]*task
	live     map[string]int
	opened   map[string]sdk.TaskID
	swept    time.Time
}

// NewServer returns a server for the agent info describes. It fails for
// a bad option.
func NewServer(info Info, opts ...ServerOption) (*Server, error) {
	o := serverOptions{limits: DefaultLimits, clientID: remoteHost}
	for _, opt := range opts {
		opt(&o)
	}
	if err := errors.Join(o.errs...); err != nil {
		return nil, err
	}
	return &Server{
		o: o, info: info, byPolicy: map[string]*skill{},
		tasks: map[sdk.TaskID]*task{}, contexts: map[string]*task{}, senders: map[string]*task{},
		live: map[string]int{}, opened: map[string]sdk.TaskID{},
	}, nil
}

// ManagerOptions returns the options that make the server the transport
// and the observer of a manager: give them to agent.NewManager. An
// application that observes the manager too calls Observe from its own
// observer instead of using the observer option.
func (s *Server) ManagerOptions() []agent.Option {
	return []agent.Option{agent.WithTransport(s), agent.WithObserver(s.Observe)}
}

// Attach registers ps with m and exposes every role of them that
// accepts new conversations as a skill; the first policy's is the skill a
// client that names no protocol gets. m must have been created with
// ManagerOptions. Attach fails for a policy that does not compile, for
// one with no such role, and when called twice.
func (s *Server) Attach(m *agent.Manager, ps ...*policy.Policy) error {
	if s.m != nil {
		return errors.New("a2a: Attach: the server is attached already")
	}
	if len(ps) == 0 {
		return errors.New("a2a: Attach: no policy")
	}
	var skills []*skill
	for _, p := range ps {
		if p == nil {
			return errors.New("a2a: Attach: nil policy")
		}
		sk, err := newSkills(p)
		if err != nil {
			return err
		}
		if len(sk) == 0 {
			return fmt.Errorf("a2a: Attach: no role of %s receives its first message", policy.Quote(p.Name))
		}
		if err := m.Register(p); err != nil {
			return err
		}
		skills = append(skills, sk...)
	}
	s.m, s.skills = m, skills
	for _, sk := range skills {
		if s.byPolicy[sk.policy.Name] == nil {
			s.byPolicy[sk.policy.Name] = sk
		}
	}
	if s.info.Name == "" {
		s.info.Name = m.Name()
	}
	card := s.card()
	mux := http.NewServeMux()
	mux.Handle(a2asrv.WellKnownAgentCardPath, cardHandler(card))
	rpc := a2asrv.NewJSONRPCHandler(rpcHandler{s})
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, s.o.limits.MaxRequestBytes)
		w.Header().Set("Content-Type", "application/json")
		rpc.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), clientKey{}, s.o.clientID(r))))
	}))
	var h http.Handler = mux
	s.handler.Store(&h)
	return nil
}

// cardHandler serves card, with the URL of the request's host when it
// has none.
func cardHandler(card *sdk.AgentCard) http.Handler {
	static, err := json.Marshal(card)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "a2a: the agent card is read with GET", http.StatusMethodNotAllowed)
			return
		}
		b := static
		if card.URL == "" {
			scheme := "http"
			if r.TLS != nil {
				scheme = "https"
			}
			cp := *card
			cp.URL = scheme + "://" + r.Host + "/"
			b, err = json.Marshal(&cp)
		}
		if err != nil {
			http.Error(w, "a2a: agent card: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Access-Control-Allow-Origin", "*")
		_, _ = w.Write(b)
	})
}

type clientKey struct{}

func clientOf(ctx context.Context) string {
	c, _ := ctx.Value(clientKey{}).(string)
	return c
}

// ServeHTTP serves the agent card at /.well-known/agent-card.json and
// the JSON-RPC endpoint at every other path. Before Attach it answers
// 503.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := s.handler.Load()
	if h == nil {
		http.Error(w, "a2a: server not attached to a manager", http.StatusServiceUnavailable)
		return
	}
	(*h).ServeHTTP(w, r)
}

// Card returns the agent card the server serves (nil before Attach).
func (s *Server) Card() *sdk.AgentCard {
	if s.m == nil {
		return nil
	}
	return s.card()
}

func (s *Server) card() *sdk.AgentCard {
	card := &sdk.AgentCard{
		Name: s.info.Name, Description: s.info.Description, URL: s.info.URL, Version: s.info.Version,
		ProtocolVersion: ProtocolVersion, PreferredTransport: sdk.TransportProtocolJSONRPC,
		Capabilities: sdk.AgentCapabilities{Streaming: true, Extensions: []sdk.AgentExtension{{
			URI:         ExtensionURI,
			Description: "Parley conversation policies: message metadata carries the policy message type, performative, reply-with and in-reply-to; task metadata the policy, roles, state and the messages the client may send",
		}}},
		DefaultInputModes:  []string{"application/json"},
		DefaultOutputModes: []string{"application/json", "text/plain"},
	}
	if card.Version == "" {
		card.Version = "1"
	}
	if card.Description == "" {
		card.Description = "A Parley agent: " + s.info.Name
	}
	for _, sk := range s.skills {
		desc := strings.TrimSpace(sk.policy.Doc)
		if desc == "" {
			desc = sk.policy.Name
		}
		desc = fmt.Sprintf("%s The agent plays %s; the client plays %s and opens with %s.", desc, sk.role, sk.external, strings.Join(sk.opening(), " or "))
		card.Skills = append(card.Skills, sdk.AgentSkill{
			ID: sk.id, Name: sk.policy.Name + " as " + sk.role, Description: desc,
			Tags: []string{"parley", sk.policy.Name, sk.role}, InputModes: []string{"application/json"},
		})
	}
	return card
}

// Send takes the messages the manager sends to A2A clients: the observer
// has already put them in their task's history. A message to other
// agents goes through the WithForward transport, and is an error without
// one.
func (s *Server) Send(ctx context.Context, m *forms.Message) error {
	var others []string
	s.mu.Lock()
	for _, r := range m.Receivers {
		if s.senders[r] == nil {
			others = append(others, r)
		}
	}
	s.mu.Unlock()
	switch {
	case len(others) == 0:
		return nil
	case s.o.forward == nil:
		return fmt.Errorf("a2a: server: %s is not the client of a task this server holds (the server reaches only its A2A clients, and forwards to no transport)", policy.Quote(others[0]))
	}
	cp := *m
	cp.Receivers = others
	return s.o.forward.Send(ctx, &cp)
}

// Observe records what the manager does in the conversations of the
// server's tasks: the messages it sends the clients, the timers that
// fire, violated commitments, protocol errors and ends.
func (s *Server) Observe(o agent.Observation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.contexts[o.Conversation]
	if t == nil {
		return
	}
	switch e := o.Event.(type) {
	case *engine.MessageEvent:
		msg := e.Message
		switch {
		case o.Input && msg.Sender == t.sender:
			t.before = t.effect
			t.effect.cause, t.effect.local = msg.Performative, false
			t.effect.cancelled = t.effect.cancelled || msg.Performative == "cancel"
		case !o.Input && o.Err == nil && msg.HasReceiver(t.sender):
			am := toA2A(msg, t.sk.typeOf(msg), sdk.MessageRoleAgent)
			am.TaskID = t.id
			t.add(am, s.o.limits.MaxMessagesPerTask)
			t.last = am
			t.effect.cause, t.effect.local = msg.Performative, true
			t.changed()
		}
	case *engine.TimerEvent:
		if o.Input {
			t.effect.cause, t.effect.local = causeTimer, false
		}
	case *engine.CommitmentEvent:
		if e.State == engine.CommitmentViolated {
			t.violated = true
		}
	case *engine.ProtocolErrorEvent:
		if m := e.Message; m != nil && !e.Applied && t.pending != "" && m.Sender == t.sender && m.ReplyWith == t.pending {
			t.pendingErr = fmt.Errorf("%s: %s", e.Code, e.Reason)
			t.effect = t.before
		}
	case *engine.CPDoneEvent:
		if !o.Input {
			s.endLocked(t, e.Outcome, e.Reason)
		}
	}
}

// endLocked records the end of t's conversation.
func (s *Server) endLocked(t *task, outcome, reason string) {
	if t.ended {
		return
	}
	t.ended, t.outcome, t.reason = true, outcome, reason
	if !t.canceled {
		t.endedAt = time.Now()
	}
	t.state = t.final()
	if t.state == sdk.TaskStateCompleted && t.effect.local && t.last != nil {
		t.artifacts = append(t.artifacts, &sdk.Artifact{ID: sdk.ArtifactID(newID("artifact")), Name: metaType(t.last), Parts: t.last.Parts})
	}
	s.releaseLocked(t)
	t.changed()
}

// releaseLocked gives back t's place among its client's live tasks.
func (s *Server) releaseLocked(t *task) {
	if t.released {
		return
	}
	t.released = true
	if s.live[t.client]--; s.live[t.client] <= 0 {
		delete(s.live, t.client)
	}
}

// sweepLocked removes the tasks whose retention is over.
func (s *Server) sweepLocked(now time.Time) {
	for id, t := range s.tasks {
		if !t.endedAt.IsZero() && now.Sub(t.endedAt) > s.o.limits.Retention {
			s.dropLocked(t)
			delete(s.tasks, id)
		}
	}
}

// dropLocked forgets t.
func (s *Server) dropLocked(t *task) {
	s.releaseLocked(t)
	delete(s.tasks, t.id)
	delete(s.contexts, t.context)
	delete(s.senders, t.sender)
	delete(s.opened, t.openedKey)
}

// inbound is a message a client sends.
type inbound struct {
	msg   *sdk.Message
	meta  Meta
	plain bool
}

// policyMessage returns the policy message in carries, of a type among
// allowed, from sender in conversation conv of sk.
func (s *Server) policyMessage(sk *skill, in inbound, allowed []string, sender, conv string) (*forms.Message, string, error) {
	content, err := contentOf(in.msg.Parts)
	if err != nil {
		return nil, "", err
	}
	if err := forms.CheckContent(content, forms.DefaultLimits); err != nil {
		return nil, "", fmt.Errorf("%w: content: %v", sdk.ErrInvalidParams, err)
	}
	fm := &forms.Message{Sender: sender, Receivers: []string{s.m.Name()}, Protocol: sk.policy.Name, ConversationID: conv, Content: content, Language: "json"}
	if err := fromMeta(fm, in.meta); err != nil {
		return nil, "", err
	}
	if fm.ReplyWith == "" {
		fm.ReplyWith = in.msg.ID
	}
	typ, err := sk.classify(allowed, in.meta.Type, in.meta.Performative, in.plain, fm)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %v", sdk.ErrInvalidParams, err)
	}
	return fm, typ, nil
}

func (s *Server) openTask(ctx context.Context, client string, in inbound) (*task, error) {
	sk := s.skills[0]
	if in.meta.Protocol != "" {
		if sk = s.byPolicy[in.meta.Protocol]; sk == nil {
			names := make([]string, 0, len(s.byPolicy))
			for _, k := range s.skills {
				names = append(names, k.policy.Name)
			}
			return nil, fmt.Errorf("%w: the agent accepts no conversation of %s; it accepts %s", sdk.ErrInvalidParams, policy.Quote(in.meta.Protocol), quoteAll(names))
		}
	}
	conv := in.msg.ContextID
	if conv == "" {
		conv = newID(s.m.Name())
	} else if strings.Contains(conv, "/") {
		return nil, fmt.Errorf("%w: contextId %s names a child conversation", sdk.ErrInvalidParams, policy.Quote(conv))
	}
	id := sdk.TaskID(newID("task"))
	t := newTask(id, conv, client, sk)
	fm, typ, err := s.policyMessage(sk, in, sk.opening(), t.sender, conv)
	if err != nil {
		return nil, err
	}
	key := client + "\x00" + in.msg.ID
	s.mu.Lock()
	if prev, ok := s.opened[key]; ok {
		t := s.tasks[prev]
		s.mu.Unlock()
		return t, nil // the message opened this task already
	}
	if s.contexts[conv] != nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: context %s has a task already: send with its taskId", sdk.ErrInvalidParams, policy.Quote(conv))
	}
	now := time.Now()
	if len(s.tasks) >= s.o.limits.MaxTasks || now.Sub(s.swept) > time.Second {
		s.sweepLocked(now)
		s.swept = now
	}
	l := s.o.limits
	switch {
	case len(s.tasks) >= l.MaxTasks:
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: the agent holds %d tasks (the limit)", sdk.ErrServerError, l.MaxTasks)
	case s.live[client] >= l.MaxTasksPerClient:
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: the client has %d live tasks (the limit)", sdk.ErrServerError, l.MaxTasksPerClient)
	}
	t.sendMu.Lock()
	defer t.sendMu.Unlock()
	t.openedKey = key
	s.tasks[id], s.contexts[conv], s.senders[t.sender], s.opened[key] = t, t, t, id
	s.live[client]++
	s.mu.Unlock()
	if err := s.deliver(ctx, t, fm, typ, in.msg); err != nil {
		s.mu.Lock()
		s.dropLocked(t)
		s.mu.Unlock()
		return nil, err
	}
	return t, nil
}

// lookup returns client's task id.
func (s *Server) lookup(client string, id sdk.TaskID) (*task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tasks[id]
	if t == nil || t.client != client {
		return nil, fmt.Errorf("%w: %s", sdk.ErrTaskNotFound, policy.Quote(string(id)))
	}
	return t, nil
}

func (s *Server) continueTask(ctx context.Context, client string, in inbound) (*task, error) {
	t, err := s.lookup(client, in.msg.TaskID)
	if err != nil {
		return nil, err
	}
	t.sendMu.Lock()
	defer t.sendMu.Unlock()
	s.mu.Lock()
	applied, state, received := t.applied[in.msg.ID], t.state, t.received
	s.mu.Unlock()
	switch {
	case applied:
		return t, nil // a repeated message is applied once
	case state.Terminal():
		return nil, fmt.Errorf("%w: task %s is %s and takes no more messages", sdk.ErrInvalidRequest, policy.Quote(string(t.id)), state)
	case in.msg.ContextID != "" && in.msg.ContextID != t.context:
		return nil, fmt.Errorf("%w: task %s is not of context %s", sdk.ErrInvalidParams, policy.Quote(string(t.id)), policy.Quote(in.msg.ContextID))
	case in.meta.Protocol != "" && in.meta.Protocol != t.sk.policy.Name:
		return nil, fmt.Errorf("%w: task %s is a conversation of %s, not %s", sdk.ErrInvalidParams, policy.Quote(string(t.id)), policy.Quote(t.sk.policy.Name), policy.Quote(in.meta.Protocol))
	case received >= s.o.limits.MaxMessagesPerTask:
		return nil, fmt.Errorf("%w: task %s has taken %d messages (the limit)", sdk.ErrInvalidRequest, policy.Quote(string(t.id)), received)
	}
	st, err := s.m.Status(ctx, t.context)
	if err != nil {
		return nil, fmt.Errorf("%w: task %s: %v", sdk.ErrInternalError, policy.Quote(string(t.id)), err)
	}
	local := stateOf(st)
	v := t.sk.stateView(local)
	if in.plain && v.acts {
		return nil, fmt.Errorf("%w: the agent is working (state %s): a message without a message type in its metadata %s is taken only when the task is input-required; %s",
			sdk.ErrInvalidParams, policy.Quote(local), policy.Quote(ExtensionURI), allowedText(v.allowed))
	}
	fm, typ, err := s.policyMessage(t.sk, in, v.allowed, t.sender, t.context)
	if err != nil {
		return nil, fmt.Errorf("%w (state %s)", err, policy.Quote(local))
	}
	if err := s.deliver(ctx, t, fm, typ, in.msg); err != nil {
		return nil, err
	}
	return t, nil
}

// stateOf returns the local state of a conversation of one session.
func stateOf(st agent.Status) string {
	if s, ok := st.States[""]; ok {
		return s
	}
	for _, s := range st.States {
		return s
	}
	return ""
}

// deliver hands fm to the manager as t's client and waits until the
// manager has processed it. A message the conversation refuses leaves
// the task as it was and is an error. um is the client's A2A message,
// which joins the task's history with fm's parameters, of type typ, in
// its metadata.
func (s *Server) deliver(ctx context.Context, t *task, fm *forms.Message, typ string, um *sdk.Message) error {
	hm := toA2A(fm, typ, sdk.MessageRoleUser)
	hm.ID, hm.TaskID, hm.Parts = um.ID, t.id, um.Parts
	s.mu.Lock()
	t.pending, t.pendingErr = fm.ReplyWith, nil
	t.add(hm, s.o.limits.MaxMessagesPerTask)
	s.mu.Unlock()
	err := s.m.Deliver(t.sender, fm)
	if err == nil {
		// The message is on its way: wait for it to be processed even if
		// the client goes away, so that the task says what became of it.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.o.limits.MaxWait)
		err = s.m.Flush(fctx)
		cancel()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	perr := t.pendingErr
	t.pending, t.pendingErr = "", nil
	if err == nil && perr != nil {
		err = fmt.Errorf("%w: the conversation refused the message: %v", sdk.ErrInvalidParams, perr)
	}
	if err != nil {
		t.history = slices.DeleteFunc(t.history, func(m *sdk.Message) bool { return m == hm })
		switch {
		case isA2AError(err):
		case errors.Is(err, agent.ErrContent):
			err = fmt.Errorf("%w: %v", sdk.ErrInvalidParams, err)
		case errors.Is(err, agent.ErrBusy):
			err = fmt.Errorf("%w: the agent is busy, try again later: %v", sdk.ErrServerError, err)
		default:
			err = fmt.Errorf("%w: %v", sdk.ErrInternalError, err)
		}
		return err
	}
	t.applied[um.ID] = true
	t.received++
	t.changed()
	return nil
}

// wait refreshes t and, when blocking, waits until the conversation ends
// or waits for the client, or Limits.MaxWait passes.
func (s *Server) wait(ctx context.Context, t *task, blocking bool) {
	timer := time.NewTimer(s.o.limits.MaxWait)
	defer timer.Stop()
	for {
		s.mu.Lock()
		ch := t.notify
		s.mu.Unlock()
		if s.refresh(ctx, t) || !blocking {
			return
		}
		select {
		case <-ch:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// refresh brings t's state up to date with its conversation's and
// reports whether the agent's turn is over: the task is terminal or
// input-required.
func (s *Server) refresh(ctx context.Context, t *task) bool {
	s.mu.Lock()
	done := t.state.Terminal()
	s.mu.Unlock()
	if done {
		return true
	}
	st, err := s.m.Status(ctx, t.context)
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.state.Terminal() {
		return true
	}
	switch {
	case errors.Is(err, agent.ErrNoConversation):
		s.endLocked(t, "", "the agent no longer holds the conversation")
		return true
	case err != nil:
		return false
	case st.Done:
		s.endLocked(t, st.Outcome, "")
		return true
	}
	t.local = stateOf(st)
	v := t.sk.stateView(t.local)
	t.allowed = v.allowed
	if !v.acts && len(v.allowed) > 0 {
		t.state = sdk.TaskStateInputRequired
		return true
	}
	t.state = sdk.TaskStateWorking
	return false
}

// snapshot returns the A2A view of t, with at most historyLength
// messages of its history when that is set.
func (s *Server) snapshot(t *task, historyLength *int) *sdk.Task {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snapshotLocked(t, historyLength)
}

func (s *Server) snapshotLocked(t *task, historyLength *int) *sdk.Task {
	history := t.history
	if historyLength != nil {
		n := max(*historyLength, 0)
		if len(history) > n {
			history = history[len(history)-n:]
		}
	}
	now := time.Now()
	return &sdk.Task{
		ID: t.id, ContextID: t.context,
		Status:    sdk.TaskStatus{State: t.state, Message: t.last, Timestamp: &now},
		History:   slices.Clone(history),
		Artifacts: slices.Clone(t.artifacts),
		Metadata:  t.metadata(),
	}
}

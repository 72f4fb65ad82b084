package a2a

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policy"
)

// ClientLimits bound what external agents can make a Client spend. A
// zero field keeps its default.
type ClientLimits struct {
	// MaxResponseBytes is the largest response body the client reads; a
	// larger one fails the call. Default 4 MiB.
	MaxResponseBytes int64
	// MaxMessagesPerTask is the most messages the client takes from one
	// remote task; it ignores the rest. Default 1,000.
	MaxMessagesPerTask int
	// MaxTasks is the most remote tasks the client follows at once; a
	// message that would start one more fails to send. Default 10,000.
	MaxTasks int
	// PollFor is how long the client polls a remote task that is working
	// (tasks/get, every 100 ms at first and then every 2 s at most) for
	// the agent's next messages. Default 5 minutes.
	PollFor time.Duration
	// CallTimeout bounds each tasks/get the client polls with; each
	// message/send is bounded by the context the manager gives Send
	// (agent.Limits.SendTimeout). Default 10 s.
	CallTimeout time.Duration
}

// DefaultClientLimits are the limits NewClient uses unless
// WithClientLimits says otherwise.
var DefaultClientLimits = ClientLimits{
	MaxResponseBytes:   4 << 20,
	MaxMessagesPerTask: 1_000,
	MaxTasks:           10_000,
	PollFor:            5 * time.Minute,
	CallTimeout:        10 * time.Second,
}

// ClientOption configures NewClient.
type ClientOption func(*clientOptions)

type clientOptions struct {
	limits ClientLimits
	peers  map[string]string
	http   *http.Client
	logger *slog.Logger
	errs   []error
}

// WithPeer names the external agent whose A2A JSON-RPC endpoint is at
// url: a message to name goes there.
func WithPeer(name, url string) ClientOption {
	return func(o *clientOptions) {
		if name == "" || url == "" {
			o.errs = append(o.errs, errors.New("a2a: WithPeer: empty name or URL"))
		}
		o.peers[name] = url
	}
}

// WithClientLimits replaces DefaultClientLimits; zero fields keep their
// default, and a negative one is an error.
func WithClientLimits(l ClientLimits) ClientOption {
	return func(o *clientOptions) {
		const opt = "WithClientLimits"
		setLimit(&o.errs, opt, "MaxResponseBytes", &o.limits.MaxResponseBytes, l.MaxResponseBytes)
		setLimit(&o.errs, opt, "MaxMessagesPerTask", &o.limits.MaxMessagesPerTask, l.MaxMessagesPerTask)
		setLimit(&o.errs, opt, "MaxTasks", &o.limits.MaxTasks, l.MaxTasks)
		setLimit(&o.errs, opt, "PollFor", &o.limits.PollFor, l.PollFor)
		setLimit(&o.errs, opt, "CallTimeout", &o.limits.CallTimeout, l.CallTimeout)
	}
}

// WithHTTPClient sets the HTTP client calls go through (one without a
// timeout by default: the manager's contexts bound each call).
func WithHTTPClient(c *http.Client) ClientOption {
	return func(o *clientOptions) {
		if c == nil {
			o.errs = append(o.errs, errors.New("a2a: WithHTTPClient: nil client"))
		}
		o.http = c
	}
}

// WithClientLogger sets the logger for calls that fail while the client
// polls (slog.Default by default; nil discards).
func WithClientLogger(l *slog.Logger) ClientOption {
	return func(o *clientOptions) {
		if l == nil {
			l = slog.New(slog.DiscardHandler)
		}
		o.logger = l
	}
}

// Client is an agent.Transport that lets a Parley agent's conversations
// talk to external A2A agents, each named by WithPeer. Each message goes
// out with message/send, in the remote task of its conversation (the
// conversation id is the contextId); the agent messages the remote task
// holds come back to the manager, mapped back as the server maps them
// out (docs/a2a.md), and a remote task that is still working is polled
// with tasks/get. A remote agent that knows nothing of Parley is
// answered for by its task's state: completed is an inform of its
// artifacts' data, rejected a refuse, failed a failure, input-required a
// not-understood. It is safe for concurrent use.
type Client struct {
	o     clientOptions
	m     atomic.Pointer[agent.Manager]
	peers map[string]a2aclient.Transport

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	tasks map[remoteKey]*remoteTask
}

type remoteKey struct{ peer, conv string }

// remoteTask is what the client knows of a remote task.
type remoteTask struct {
	id       sdk.TaskID
	seen     map[string]bool
	parley   bool // the remote agent speaks Parley's metadata
	answered bool // a plain agent's state has been mapped to a message
	polling  bool
	taken    int
	req      *forms.Message // the last message sent in the task
	touched  time.Time
}

// NewClient returns a client. It fails for a bad option.
func NewClient(opts ...ClientOption) (*Client, error) {
	o := clientOptions{limits: DefaultClientLimits, peers: map[string]string{}, http: &http.Client{}, logger: slog.Default()}
	for _, opt := range opts {
		opt(&o)
	}
	if err := errors.Join(o.errs...); err != nil {
		return nil, err
	}
	hc := *o.http
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc.Transport = limitedTransport{base: base, max: o.limits.MaxResponseBytes}
	c := &Client{o: o, peers: map[string]a2aclient.Transport{}, tasks: map[remoteKey]*remoteTask{}}
	for name, url := range o.peers {
		c.peers[name] = a2aclient.NewJSONRPCTransport(url, &hc)
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c, nil
}

// Attach makes m the manager the client delivers the external agents'
// messages to; m must have the client as its transport
// (agent.WithTransport).
func (c *Client) Attach(m *agent.Manager) { c.m.Store(m) }

// Close stops polling remote tasks and waits for the pollers to stop.
func (c *Client) Close() {
	c.cancel()
	c.wg.Wait()
}

// Send sends m to each of its receivers, which must be peers of the
// client, and delivers what they answer. An error (a peer that is not
// known, a call that fails, a JSON-RPC error such as a message the remote
// policy does not allow) fails the send, which aborts the conversation
// (see agent.Transport).
func (c *Client) Send(ctx context.Context, m *forms.Message) error {
	if c.m.Load() == nil {
		return errors.New("a2a: client: not attached to a manager")
	}
	var errs []error
	for _, r := range m.Receivers {
		if err := c.sendTo(ctx, r, m); err != nil {
			errs = append(errs, fmt.Errorf("a2a: %s: %w", policy.Quote(r), err))
		}
	}
	return errors.Join(errs...)
}

func (c *Client) sendTo(ctx context.Context, peer string, m *forms.Message) error {
	t := c.peers[peer]
	if t == nil {
		return fmt.Errorf("%w: the A2A client has no URL for it", agent.ErrNoSuchAgent)
	}
	key := remoteKey{peer, m.ConversationID}
	c.mu.Lock()
	rt := c.tasks[key]
	if rt == nil {
		if len(c.tasks) >= c.o.limits.MaxTasks {
			c.sweepLocked(time.Now())
		}
		if len(c.tasks) >= c.o.limits.MaxTasks {
			c.mu.Unlock()
			return fmt.Errorf("the client follows %d remote tasks (the limit)", c.o.limits.MaxTasks)
		}
		rt = &remoteTask{seen: map[string]bool{}}
		c.tasks[key] = rt
	}
	rt.req, rt.answered, rt.touched = m, false, time.Now()
	am := toA2A(m, "", sdk.MessageRoleUser)
	am.ID, am.TaskID = messageID(m), rt.id
	c.mu.Unlock()
	res, err := t.SendMessage(ctx, &sdk.MessageSendParams{Message: am})
	if err != nil {
		return err
	}
	switch r := res.(type) {
	case *sdk.Message:
		c.mu.Lock()
		c.deliverLocked(key, rt, c.plainReply(key, rt, sdk.TaskStateCompleted, r.Parts, r.Parts))
		delete(c.tasks, key)
		c.mu.Unlock()
	case *sdk.Task:
		c.absorb(key, rt, r, false)
	default:
		return fmt.Errorf("%w: message/send returned %T", sdk.ErrInvalidAgentResponse, res)
	}
	return nil
}

// messageID returns the A2A message id of m: the same for the same
// message sent again (a retry), so that a server applies it once.
func messageID(m *forms.Message) string {
	if m.ReplyWith == "" {
		return newID("parley")
	}
	sum := sha256.Sum256([]byte(m.Sender + "\x00" + m.ConversationID + "\x00" + m.ReplyWith))
	return "parley-" + idEncoding.EncodeToString(sum[:16])
}

// absorb delivers what a remote task holds that the client has not
// delivered yet, and reports whether the task is still working: then,
// unless the poller calls it, it starts polling the task.
func (c *Client) absorb(key remoteKey, rt *remoteTask, task *sdk.Task, poller bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tasks[key] != rt {
		return false // the task was dropped meanwhile
	}
	rt.id, rt.touched = task.ID, time.Now()
	msgs := task.History
	if sm := task.Status.Message; sm != nil {
		msgs = append(msgs[:len(msgs):len(msgs)], sm)
	}
	for _, hm := range msgs {
		if hm == nil || hm.Role != sdk.MessageRoleAgent || rt.seen[hm.ID] || rt.taken >= c.o.limits.MaxMessagesPerTask {
			continue
		}
		meta, ok, err := metaOf(hm.Metadata)
		if !ok || err != nil || meta.Performative == "" {
			continue
		}
		rt.seen[hm.ID], rt.parley = true, true
		content, err := contentOf(hm.Parts)
		if err != nil {
			content = map[string]any{}
		}
		fm := &forms.Message{Performative: meta.Performative, Sender: key.peer, Receivers: []string{rt.req.Sender}, Protocol: rt.req.Protocol,
			ConversationID: key.conv, Content: content, Language: "json"}
		if fromMeta(fm, meta) != nil {
			continue
		}
		c.deliverLocked(key, rt, fm)
	}
	state := task.Status.State
	if !rt.parley && !rt.answered {
		var parts sdk.ContentParts
		for _, a := range task.Artifacts {
			if a != nil {
				parts = append(parts, a.Parts...)
			}
		}
		var status sdk.ContentParts
		if task.Status.Message != nil {
			status = task.Status.Message.Parts
		}
		if fm := c.plainReply(key, rt, state, parts, status); fm != nil {
			rt.answered = true
			c.deliverLocked(key, rt, fm)
		}
	}
	switch {
	case state.Terminal():
		delete(c.tasks, key)
		return false
	case state == sdk.TaskStateInputRequired || state == sdk.TaskStateAuthRequired:
		return false
	}
	if !poller && !rt.polling {
		rt.polling = true
		c.wg.Add(1)
		go c.poll(key, rt)
	}
	return true
}

// plainReply maps the state of a remote task whose agent knows nothing
// of Parley to the message it means, or nil for a state that means none
// yet (submitted, working). parts are its artifacts' parts (a reply
// message's, for a reply without a task), status its status message's.
func (c *Client) plainReply(key remoteKey, rt *remoteTask, state sdk.TaskState, parts, status sdk.ContentParts) *forms.Message {
	text := textOf(status)
	var perf string
	var content map[string]any
	switch state {
	case sdk.TaskStateCompleted:
		perf = "inform"
		content, _ = contentOf(append(parts[:len(parts):len(parts)], status...))
		if content == nil {
			content = map[string]any{}
			if t := textOf(parts); t != "" {
				content["text"] = t
			}
		}
	case sdk.TaskStateRejected:
		perf, content = "refuse", map[string]any{"reason": text}
	case sdk.TaskStateFailed:
		perf, content = "failure", map[string]any{"reason": text}
	case sdk.TaskStateCanceled:
		if rt.req.Performative == "cancel" {
			perf, content = "inform", map[string]any{"done": true}
		} else {
			perf, content = "failure", map[string]any{"reason": "canceled: " + text}
		}
	case sdk.TaskStateInputRequired, sdk.TaskStateAuthRequired:
		perf, content = "not-understood", map[string]any{"reason": fmt.Sprintf("the agent's task is %s: %s", state, text)}
	default:
		return nil
	}
	return &forms.Message{Performative: perf, Sender: key.peer, Receivers: []string{rt.req.Sender}, Protocol: rt.req.Protocol,
		ConversationID: key.conv, InReplyTo: rt.req.ReplyWith, Content: content, Language: "json"}
}

// deliverLocked hands fm to the manager as the peer's message.
func (c *Client) deliverLocked(key remoteKey, rt *remoteTask, fm *forms.Message) {
	if fm == nil || rt.taken >= c.o.limits.MaxMessagesPerTask {
		return
	}
	rt.taken++
	if err := c.m.Load().Deliver(key.peer, fm); err != nil {
		c.o.logger.Warn("a2a client: delivery refused", "peer", key.peer, "conversation", policy.Quote(key.conv), "error", err)
	}
}

// poll polls a working remote task until it is no longer working, the
// poll time is over or the client closes.
func (c *Client) poll(key remoteKey, rt *remoteTask) {
	defer c.wg.Done()
	defer func() {
		c.mu.Lock()
		rt.polling = false
		c.mu.Unlock()
	}()
	t := c.peers[key.peer]
	end := time.Now().Add(c.o.limits.PollFor)
	interval := 100 * time.Millisecond
	for time.Now().Before(end) {
		select {
		case <-c.ctx.Done():
			return
		case <-time.After(interval):
		}
		interval = min(2*interval, 2*time.Second)
		c.mu.Lock()
		id := rt.id
		c.mu.Unlock()
		ctx, cancel := context.WithTimeout(c.ctx, c.o.limits.CallTimeout)
		task, err := t.GetTask(ctx, &sdk.TaskQueryParams{ID: id})
		cancel()
		switch {
		case errors.Is(err, sdk.ErrTaskNotFound):
			return
		case err != nil:
			c.o.logger.Warn("a2a client: tasks/get failed", "peer", key.peer, "task", policy.Quote(string(id)), "error", err)
		case !c.absorb(key, rt, task, true):
			return
		}
	}
}

// sweepLocked forgets remote tasks nobody has touched for PollFor.
func (c *Client) sweepLocked(now time.Time) {
	for k, rt := range c.tasks {
		if !rt.polling && now.Sub(rt.touched) > c.o.limits.PollFor {
			delete(c.tasks, k)
		}
	}
}

// limitedTransport fails a response body beyond max bytes.
type limitedTransport struct {
	base http.RoundTripper
	max  int64
}

func (l limitedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := l.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &limitedBody{rc: resp.Body, left: l.max}
	return resp, nil
}

type limitedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	if int64(n) > b.left {
		return 0, errors.New("a2a: client: response larger than ClientLimits.MaxResponseBytes")
	}
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

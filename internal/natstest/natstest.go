// Package natstest runs Parley agents on a NATS server inside the test
// process: the harness of the transport/nats and store/natskv tests.
package natstest

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	natsio "github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/internal/natsembed"
	"github.com/parleyhq/parley/policies"
	"github.com/parleyhq/parley/store/natskv"
	natstransport "github.com/parleyhq/parley/transport/nats"
)

// LeaseTTL is the lease the harness's stores take: short, so failover
// tests wait little.
const LeaseTTL = 2 * time.Second

// Site is a NATS server with JetStream in a temporary directory.
type Site struct {
	t     testing.TB
	dir   string
	users []*server.User
	srv   *server.Server
	url   string
	port  int

	// Transport are more options of every agent's transport.
	Transport []natstransport.Option

	mu    sync.Mutex
	codes []engine.ErrorCode
	// Inputs counts, by conversation and performative, the messages
	// agents applied.
	inputs map[[3]string]int
}

// NewSite starts a server, with users when given; it is shut down when
// the test ends.
func NewSite(t testing.TB, users ...*server.User) *Site {
	s := &Site{t: t, dir: t.TempDir(), users: users, inputs: map[[3]string]int{}}
	srv, err := natsembed.Start(s.dir, -1, users...)
	require.NoError(t, err)
	s.srv, s.url, s.port = srv, srv.ClientURL(), srv.Addr().(*net.TCPAddr).Port
	t.Cleanup(func() { s.srv.Shutdown() })
	return s
}

// URL is the server's client URL.
func (s *Site) URL() string { return s.url }

// Stop shuts the server down; Start starts it again on the same port and
// directory.
func (s *Site) Stop() { s.srv.Shutdown(); s.srv.WaitForShutdown() }

// Start starts the server again after Stop.
func (s *Site) Start() {
	srv, err := natsembed.Start(s.dir, s.port, s.users...)
	require.NoError(s.t, err)
	s.srv = srv
}

// Connect connects to the server, as user when not empty (password
// "pw-"+user), reconnecting for ever, with more options when given.
func (s *Site) Connect(user string, more ...natsio.Option) *natsio.Conn {
	opts := append([]natsio.Option{natsio.MaxReconnects(-1), natsio.ReconnectWait(50 * time.Millisecond), natsio.NoCallbacksAfterClientClose()}, more...)
	if user != "" {
		opts = append(opts, natsio.UserInfo(user, "pw-"+user), natsio.CustomInboxPrefix(natsembed.InboxPrefix(user)))
	}
	nc, err := natsio.Connect(s.url, opts...)
	require.NoError(s.t, err)
	s.t.Cleanup(nc.Close)
	return nc
}

// User is a NATS user for agent with its permissions.
func User(agentName string) *server.User {
	return &server.User{Username: agentName, Password: "pw-" + agentName, Permissions: natsembed.Permissions(natsembed.Defaults, agentName)}
}

// Agent is one agent's process: its connection, store, transport and
// manager.
type Agent struct {
	Name      string
	NC        *natsio.Conn
	Store     *natskv.Store
	Transport *natstransport.Transport
	M         *agent.Manager
}

// Run starts agent name on its own connection (as user, when not
// empty), resumed and consuming, with d deciding.
func (s *Site) Run(name, user string, d decision.Decider, opts ...agent.Option) (*Agent, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	nc := s.Connect(user)
	st, err := natskv.Open(ctx, nc, name, natskv.WithLeaseTTL(LeaseTTL), natskv.WithWait())
	if err != nil {
		nc.Close()
		return nil, err
	}
	a := &Agent{Name: name, NC: nc, Store: st}
	topts := append([]natstransport.Option{natstransport.WithFence(st.Lost()),
		natstransport.WithLimits(natstransport.Limits{AckWait: time.Second, Redeliver: 100 * time.Millisecond})}, s.Transport...)
	tr, err := natstransport.New(ctx, nc, name, topts...)
	if err != nil {
		a.Kill()
		return nil, err
	}
	a.Transport = tr
	opts = append([]agent.Option{agent.WithStore(st), agent.WithTransport(tr), agent.WithLogger(slog.New(slog.DiscardHandler)),
		agent.WithDecider(d), agent.WithLimits(agent.Limits{RetryInterval: 500 * time.Millisecond}),
		agent.WithObserver(s.observe)}, opts...)
	m, err := agent.NewManager(name, opts...)
	if err != nil {
		a.Kill()
		return nil, err
	}
	a.M = m
	p, err := policies.Load("fipa-request")
	require.NoError(s.t, err)
	require.NoError(s.t, m.Register(p))
	if err := m.Resume(ctx); err != nil {
		a.Kill()
		return nil, err
	}
	if err := tr.Attach(ctx, m); err != nil {
		a.Kill()
		return nil, err
	}
	s.t.Cleanup(a.Stop)
	return a, nil
}

func (s *Site) observe(o agent.Observation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch e := o.Event.(type) {
	case *engine.ProtocolErrorEvent:
		s.codes = append(s.codes, e.Code)
	case *engine.MessageEvent:
		if o.Input {
			s.inputs[[3]string{o.Agent, o.Conversation, e.Message.Performative}]++
		}
	}
}

// Applied returns how many times agent applied a message of performative
// in conversation.
func (s *Site) Applied(agentName, conversation, performative string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inputs[[3]string{agentName, conversation, performative}]
}

// Codes returns the protocol errors agents reported.
func (s *Site) Codes() []engine.ErrorCode {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]engine.ErrorCode(nil), s.codes...)
}

// Kill stops the agent as a crash would: its connection closes first,
// so it releases nothing and acknowledges nothing more.
func (a *Agent) Kill() {
	a.NC.Close()
	if a.M != nil {
		_ = a.M.Close(context.Background())
	}
	if a.Transport != nil {
		a.Transport.Close()
	}
}

// Stop stops the agent cleanly, releasing its lease; stopping twice is
// fine.
func (a *Agent) Stop() {
	if a.M != nil {
		_ = a.M.Close(context.Background())
	}
	if a.Transport != nil {
		a.Transport.Close()
	}
	_ = a.Store.Close()
	a.NC.Close()
}

// Script answers decision points from a table.
type Script map[string]decision.Answer

// Decide implements decision.Decider.
func (s Script) Decide(_ context.Context, req *decision.Request) (decision.Answer, error) {
	if a, ok := s[req.Point]; ok {
		return a, nil
	}
	return decision.Answer{}, decision.ErrNoDecision
}

// Initiator and Performer play FIPA Request: paint, agree, then the
// result.
var (
	Initiator = Script{"start": {Choice: "request", Content: map[string]any{"action": "paint"}}}
	Performer = Script{"requested": {Choice: "agree"}, "agreed": {Choice: "inform-result", Content: map[string]any{"result": "green"}}}
)

// Request starts a FIPA Request from m to peer.
func Request(t testing.TB, m *agent.Manager, peer string) string {
	id, err := m.Start(context.Background(), agent.StartRequest{Policy: "fipa-request", Role: "Initiator", Peers: map[string][]string{"Participant": {peer}}})
	require.NoError(t, err)
	return id
}

// Wait waits for conversation to end and returns its outcome.
func Wait(t testing.TB, m *agent.Manager, conversation string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := m.Wait(ctx, conversation)
	require.NoError(t, err, "conversation %s", conversation)
	return out
}

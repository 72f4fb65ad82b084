package agent_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/agent"
	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/policies"
)

// patient is the decision timeout and the retention of the library's
// agents. The manager keeps a decision's timeout running after its
// decider answers decision.ErrNoDecision, and aborts the conversation
// when it fires, although the point is meant to stay open with the
// policy's timers bounding the wait; these tests leave such points open
// (a subscriber that may cancel) while the fake clock moves on by
// minutes, and look at conversations after it has.
const patient = 24 * time.Hour

// library is an agent of the world that also speaks the named shipped
// policies of the protocol library.
func (w *world) library(name string, d decision.Decider, names []string, opts ...agent.Option) *agent.Manager {
	opts = append([]agent.Option{agent.WithLimits(agent.Limits{DecisionTimeout: patient}), agent.WithRetention(patient)}, opts...)
	m := w.agent(name, d, opts...)
	for _, n := range names {
		p, err := policies.Load(n)
		require.NoError(w.t, err)
		require.NoError(w.t, m.Register(p))
	}
	return m
}

// advance moves the fake clock on by d, plus one step, in steps of
// step with every agent settling in between. A worker re-arms its alarm
// relative to the time it read when it took the input, and FakeClock
// adds that duration to its own time, which a concurrent Advance has
// moved on meanwhile: an alarm re-armed during Advance can land up to
// one Advance later than its deadline. Short steps keep that drift
// within a step, and the extra step lets such an alarm go off.
func (w *world) advance(d time.Duration) {
	const step = 30 * time.Second
	for end := w.clock.Now().Add(d + step); w.clock.Now().Before(end); {
		w.clock.Advance(min(step, end.Sub(w.clock.Now())))
		w.settle()
	}
}

// outcomes waits for conversation conv to end at each agent and returns
// each agent's outcome.
func outcomes(t *testing.T, conv string, agents map[string]*agent.Manager) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out := map[string]string{}
	for name, m := range agents {
		outcome, err := m.Wait(ctx, conv)
		require.NoError(t, err, "%s", name)
		out[name] = outcome
	}
	return out
}

// duo is what a two-party library test checks once its agents are set
// up: the Initiator starts policy with the Participant, and after the
// agents settle (then the test's own steps, then advance of the clock)
// both end with outcome, the messages sent are want, no protocol error
// was reported, and the recorder saw commit ("agent commitment state").
type duo struct {
	policy   string
	ini, par string // the agents
	advance  time.Duration
	want     []string
	outcome  string
	commit   string
}

func (d duo) run(t *testing.T, w *world, agents map[string]*agent.Manager, steps func()) {
	t.Helper()
	conv, err := agents[d.ini].Start(context.Background(), agent.StartRequest{Policy: d.policy, Role: "Initiator", Peers: map[string][]string{"Participant": {d.par}}})
	require.NoError(t, err)
	w.settle()
	if steps != nil {
		steps()
	}
	if d.advance > 0 {
		w.advance(d.advance)
	}
	assert.Equal(t, map[string]string{d.ini: d.outcome, d.par: d.outcome}, outcomes(t, conv, agents))
	assert.Equal(t, d.want, w.rec.performatives())
	assert.Empty(t, w.rec.codes())
	w.rec.mu.Lock()
	defer w.rec.mu.Unlock()
	assert.Contains(t, w.rec.commits, d.commit)
}

func TestLibraryIteratedContractNet(t *testing.T) {
	const name = "fipa-iterated-contract-net"
	// Each printer first asks its list price, then, when a revised cfp
	// caps the price, bids its floor if that is under the cap.
	printer := func(list, floor float64) decision.Decider {
		return decision.Func(func(_ context.Context, req *decision.Request) (decision.Answer, error) {
			switch req.Point {
			case "solicited":
				limit, revised := req.Content["max_price"].(float64)
				switch {
				case list == 0 || revised && floor > limit:
					return decision.Answer{Choice: "refuse", Content: map[string]any{"reason": "not at that price"}}, nil
				case revised:
					return decision.Answer{Choice: "propose", Content: map[string]any{"price": floor}}, nil
				}
				return decision.Answer{Choice: "propose", Content: map[string]any{"price": list}}, nil
			case "awarded":
				return decision.Answer{Choice: "inform-result", Content: map[string]any{"result": "printed"}}, nil
			}
			return decision.Answer{}, decision.ErrNoDecision
		})
	}
	// The buyer accepts the cheapest proposal within its budget of 100,
	// and otherwise calls again, capping the price at 100.
	var (
		mu     sync.Mutex
		rounds []int // the number of proposals at each join
	)
	buyer := decision.Func(func(_ context.Context, req *decision.Request) (decision.Answer, error) {
		switch req.Point {
		case "start":
			return decision.Answer{Choice: "cfp", Content: map[string]any{"task": "print 500 flyers"}, ReplyBy: mt0.Add(10 * time.Second)}, nil
		case "proposed":
			mu.Lock()
			rounds = append(rounds, len(req.Sessions))
			mu.Unlock()
			best, lowest := "", 100.0
			for _, s := range req.Sessions {
				if p, _ := s.Content["price"].(float64); p <= lowest {
					best, lowest = s.Peer, p
				}
			}
			a := decision.Answer{Sessions: map[string]decision.SessionAnswer{}}
			for _, s := range req.Sessions {
				switch {
				case best == "":
					a.Sessions[s.Peer] = decision.SessionAnswer{Choice: "cfp", Content: map[string]any{"task": "print 500 flyers", "max_price": 100.0}, ReplyBy: mt0.Add(20 * time.Second)}
				case s.Peer == best:
					a.Sessions[s.Peer] = decision.SessionAnswer{Choice: "accept-proposal"}
				default:
					a.Sessions[s.Peer] = decision.SessionAnswer{Choice: "reject-proposal", Content: map[string]any{"reason": "dearer"}}
				}
			}
			return a, nil
		}
		return decision.Answer{}, decision.ErrNoDecision
	})

	w := newWorld(t)
	names := []string{name}
	agents := map[string]*agent.Manager{
		"buyer": w.library("buyer", buyer, names),
		"p1":    w.library("p1", printer(120, 95), names),
		"p2":    w.library("p2", printer(110, 105), names),
		"p3":    w.library("p3", printer(0, 0), names),
	}
	conv, err := agents["buyer"].Start(context.Background(), agent.StartRequest{Policy: name, Role: "Initiator", Peers: map[string][]string{"Participant": {"p1", "p2", "p3"}}})
	require.NoError(t, err)
	w.settle()
	assert.Equal(t, map[string]string{"buyer": "refused=2,result=1", "p1": "result", "p2": "refused", "p3": "refused"}, outcomes(t, conv, agents))
	mu.Lock()
	assert.Equal(t, []int{2, 1}, rounds, "two proposals in the first round, one in the second")
	mu.Unlock()
	assert.Empty(t, w.rec.codes())
	w.rec.mu.Lock()
	defer w.rec.mu.Unlock()
	assert.Contains(t, w.rec.commits, "buyer task released", "the revised cfp releases the first proposals")
	assert.Contains(t, w.rec.commits, "buyer task discharged")
}

func TestLibrarySubscribe(t *testing.T) {
	const name = "fipa-subscribe"
	// ticker agrees and sends notes notifications, then waits.
	ticker := func(notes int) decision.Decider {
		var sent atomic.Int32
		return decision.Func(func(_ context.Context, req *decision.Request) (decision.Answer, error) {
			switch req.Point {
			case "subscribing":
				return decision.Answer{Choice: "agree"}, nil
			case "subscribed":
				if n := sent.Add(1); int(n) <= notes {
					return decision.Answer{Choice: "inform-result", Content: map[string]any{"result": 100 + float64(n)}}, nil
				}
			case "cancelling":
				return decision.Answer{Choice: "inform-done", Content: map[string]any{"done": true}}, nil
			}
			return decision.Answer{}, decision.ErrNoDecision
		})
	}
	// desk subscribes until its lease, and cancels once it has seen the
	// price reach cancelAt (never, for 0).
	desk := func(until time.Time, cancelAt float64) decision.Decider {
		return decision.Func(func(_ context.Context, req *decision.Request) (decision.Answer, error) {
			switch req.Point {
			case "start":
				return decision.Answer{Choice: "subscribe", Content: map[string]any{"objects": "price of ACME", "until": until}}, nil
			case "subscribed":
				if p, _ := req.Content["result"].(float64); cancelAt != 0 && p >= cancelAt {
					return decision.Answer{Choice: "cancel"}, nil
				}
			}
			return decision.Answer{}, decision.ErrNoDecision
		})
	}
	tests := []struct {
		name     string
		notes    int
		cancelAt float64
		advance  time.Duration // how long the test lets pass
		want     []string      // what the ticker sends
		outcome  string
		commit   string // the notify commitment's last state
	}{
		{
			name: "notified until cancelled", notes: 3, cancelAt: 103,
			want:    []string{"desk:subscribe", "ticker:agree", "ticker:inform", "ticker:inform", "ticker:inform", "desk:cancel", "ticker:inform"},
			outcome: "cancelled", commit: "discharged",
		},
		{
			name: "the lease runs out", notes: 1, advance: 10 * time.Minute,
			want:    []string{"desk:subscribe", "ticker:agree", "ticker:inform"},
			outcome: "expired", commit: "discharged",
		},
		{
			name: "agreed but never notified", notes: 0, advance: 10 * time.Minute,
			want:    []string{"desk:subscribe", "ticker:agree"},
			outcome: "expired", commit: "violated",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			agents := map[string]*agent.Manager{
				"desk":   w.library("desk", desk(mt0.Add(10*time.Minute), tt.cancelAt), []string{name}),
				"ticker": w.library("ticker", ticker(tt.notes), []string{name}),
			}
			duo{policy: name, ini: "desk", par: "ticker", advance: tt.advance, want: tt.want, outcome: tt.outcome, commit: "desk notify " + tt.commit}.run(t, w, agents, nil)
		})
	}
}

func TestLibraryPropose(t *testing.T) {
	const name = "fipa-propose"
	cleaner := script{
		"start":    {Choice: "propose", Content: map[string]any{"action": "clean the windows", "price": 80}},
		"accepted": {Choice: "inform-result", Content: map[string]any{"result": "12 windows cleaned"}},
	}
	tests := []struct {
		name    string
		office  script
		advance time.Duration
		want    []string
		outcome string
		commit  string // the perform commitment's last state
	}{
		{
			name:   "accepted and performed",
			office: script{"proposed": {Choice: "accept-proposal"}},
			want:   []string{"cleaner:propose", "office:accept-proposal", "cleaner:inform"}, outcome: "result", commit: "discharged",
		},
		{
			name:   "rejected",
			office: script{"proposed": {Choice: "reject-proposal", Content: map[string]any{"reason": "too dear"}}},
			want:   []string{"cleaner:propose", "office:reject-proposal"}, outcome: "rejected", commit: "released",
		},
		{
			name: "never answered", office: script{}, advance: 30 * time.Second,
			want: []string{"cleaner:propose"}, outcome: "timeout", commit: "expired",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			agents := map[string]*agent.Manager{
				"cleaner": w.library("cleaner", cleaner, []string{name}),
				"office":  w.library("office", tt.office, []string{name}),
			}
			duo{policy: name, ini: "cleaner", par: "office", advance: tt.advance, want: tt.want, outcome: tt.outcome, commit: "office perform " + tt.commit}.run(t, w, agents, nil)
		})
	}
}

func TestLibraryRequestWhen(t *testing.T) {
	const name = "fipa-request-when"
	until := mt0.Add(2 * time.Hour)
	tests := []struct {
		name      string
		planner   script
		sprinkler script
		holds     time.Duration // when the precondition comes true; 0 for never
		advance   time.Duration
		want      []string
		outcome   string
		commit    string // the perform commitment's last state
	}{
		{
			name:      "acts once the precondition holds",
			sprinkler: script{"requested": {Choice: "agree"}},
			holds:     90 * time.Minute,
			want:      []string{"planner:request-when", "sprinkler:agree", "sprinkler:inform"}, outcome: "result", commit: "discharged",
		},
		{
			name:      "the precondition never holds",
			sprinkler: script{"requested": {Choice: "agree"}},
			advance:   2 * time.Hour,
			want:      []string{"planner:request-when", "sprinkler:agree"}, outcome: "expired", commit: "violated",
		},
		{
			name:      "cancelled while waiting",
			planner:   script{"waiting": {Choice: "cancel"}},
			sprinkler: script{"requested": {Choice: "agree"}, "cancelling": {Choice: "inform-done", Content: map[string]any{"done": true}}},
			want:      []string{"planner:request-when", "sprinkler:agree", "planner:cancel", "sprinkler:inform"}, outcome: "cancelled", commit: "released",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			// The sprinkler leaves "waiting" to the application, which
			// answers once the precondition holds.
			waiting := make(chan agent.DecisionRequest, 1)
			planner := script{"start": {Choice: "request-when", Content: map[string]any{"action": "water the lawn", "when": "soil moisture below 20%", "until": until}}}
			for k, v := range tt.planner {
				planner[k] = v
			}
			agents := map[string]*agent.Manager{
				"planner": w.library("planner", planner, []string{name}),
				"sprinkler": w.library("sprinkler", tt.sprinkler, []string{name}, agent.WithAsyncDecisions(func(r agent.DecisionRequest) {
					if r.Request.Point == "waiting" {
						waiting <- r
					}
				})),
			}
			precondition := func() {
				if tt.holds == 0 {
					return
				}
				w.advance(tt.holds)
				var r agent.DecisionRequest
				select {
				case r = <-waiting:
				case <-time.After(10 * time.Second):
					require.FailNow(t, "the sprinkler was never asked to act")
				}
				require.NoError(t, agents["sprinkler"].Answer(r.Conversation, r.Ticket, decision.Answer{Choice: "inform-result", Content: map[string]any{"result": "watered for 20 minutes"}}))
				w.settle()
			}
			duo{policy: name, ini: "planner", par: "sprinkler", advance: tt.advance, want: tt.want, outcome: tt.outcome, commit: "planner perform " + tt.commit}.run(t, w, agents, precondition)
		})
	}
}

// relayedTypes maps the performative of an agent's reply to the message
// type of brokered-exchange that relays it.
var relayedTypes = map[string]string{
	"agree": "relayed-agree", "refuse": "relayed-refuse", "not-understood": "relayed-not-understood",
	"failure": "relayed-failure", "inform": "relayed-inform",
}

func TestLibraryBrokering(t *testing.T) {
	names := []string{"fipa-brokering", "brokered-exchange"}
	proxy := map[string]any{"agents": map[string]any{"service": "weather"}, "act": map[string]any{"about": "rain in Oslo tomorrow"}}
	tests := []struct {
		name     string
		registry []string // the weather services the broker knows
		service  string   // the service the client asks for
		want     []string
		outcome  string
	}{
		{
			name: "relays every reply", registry: []string{"met", "yr"}, service: "weather",
			want: []string{
				"client:proxy", "broker:agree",
				"broker:query-ref", "met:inform", "broker:query-ref", "yr:refuse",
				"broker:inform", "broker:refuse", "broker:inform",
			},
			outcome: "done",
		},
		{
			name: "no agent matches", service: "weather",
			want: []string{"client:proxy", "broker:agree", "broker:failure"}, outcome: "no-match",
		},
		{
			name: "refused", registry: []string{"met"}, service: "tides",
			want: []string{"client:proxy", "broker:refuse"}, outcome: "refused",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			var (
				broker *agent.Manager
				mu     sync.Mutex
				queued = map[string][]decision.Answer{} // relays still to send, by conversation
			)
			// The broker runs fipa-query with every agent it knows and
			// relays each of their replies, then ends the exchange.
			brokerLogic := decision.Func(func(ctx context.Context, req *decision.Request) (decision.Answer, error) {
				switch req.Policy + ":" + req.Point {
				case "fipa-brokering:proxied":
					if agents, _ := req.Content["agents"].(map[string]any); agents["service"] != "weather" {
						return decision.Answer{Choice: "refuse", Content: map[string]any{"reason": "no such service"}}, nil
					}
					return decision.Answer{Choice: "agree"}, nil
				case "fipa-query:start":
					return decision.Answer{Choice: "query-ref", Content: req.Content}, nil
				case "brokered-exchange:forwarding":
					if len(tt.registry) == 0 {
						return decision.Answer{Choice: "failure-no-match", Content: map[string]any{"failure": "no-match"}}, nil
					}
					var relays []decision.Answer
					for _, target := range tt.registry {
						sub, err := broker.Start(ctx, agent.StartRequest{Policy: "fipa-query", Role: "Initiator", Peers: map[string][]string{"Participant": {target}}, Data: proxy["act"].(map[string]any)})
						if err != nil {
							return decision.Answer{}, err
						}
						if _, err := broker.Wait(ctx, sub); err != nil {
							return decision.Answer{}, err
						}
						w.rec.mu.Lock()
						for _, m := range w.rec.sent {
							if m.ConversationID == sub && m.Sender == target {
								content := map[string]any{"from": target}
								for k, v := range m.Content {
									content[k] = v
								}
								relays = append(relays, decision.Answer{Choice: relayedTypes[m.Performative], Content: content})
							}
						}
						w.rec.mu.Unlock()
					}
					mu.Lock()
					queued[req.ConversationID] = relays[1:]
					mu.Unlock()
					return relays[0], nil
				case "brokered-exchange:relaying":
					mu.Lock()
					defer mu.Unlock()
					rest := queued[req.ConversationID]
					if len(rest) == 0 {
						return decision.Answer{Choice: "inform-done", Content: map[string]any{"done": true}}, nil
					}
					queued[req.ConversationID] = rest[1:]
					return rest[0], nil
				}
				return decision.Answer{}, decision.ErrNoDecision
			})
			broker = w.library("broker", brokerLogic, names)
			client := w.library("client", script{"fipa-brokering:start": {Choice: "proxy", Content: map[string]any{"agents": map[string]any{"service": tt.service}, "act": proxy["act"]}}}, names)
			w.agent("met", script{"ref-queried": {Choice: "inform-result", Content: map[string]any{"result": "light rain"}}})
			w.agent("yr", script{"ref-queried": {Choice: "refuse", Content: map[string]any{"reason": "no forecasts for Norway"}}})

			conv, err := client.Start(context.Background(), agent.StartRequest{Policy: "fipa-brokering", Role: "Initiator", Peers: map[string][]string{"Broker": {"broker"}}})
			require.NoError(t, err)
			w.settle()
			both := map[string]*agent.Manager{"client": client, "broker": broker}
			assert.Equal(t, map[string]string{"client": tt.outcome, "broker": tt.outcome}, outcomes(t, conv, both))
			assert.Equal(t, tt.want, w.rec.performatives())
			assert.Empty(t, w.rec.codes())
			if tt.outcome != "refused" {
				child := conv + "/brokered-exchange#1"
				assert.Equal(t, map[string]string{"client": tt.outcome, "broker": tt.outcome}, outcomes(t, child, both))
			}
		})
	}
}

// auctionBidder bids the called price while it is at most max, and
// pays when it wins.
func auctionBidder(max float64) decision.Decider {
	return decision.Func(func(_ context.Context, req *decision.Request) (decision.Answer, error) {
		switch req.Policy + ":" + req.Point {
		case "english-auction:called", "dutch-auction:called":
			price, _ := req.Content["price"].(float64)
			if req.Vars["leading"] == true || price > max {
				return decision.Answer{}, decision.ErrNoDecision // silence: no bid this round
			}
			return decision.Answer{Choice: "propose", Content: map[string]any{"amount": price}}, nil
		case "fipa-request:requested":
			return decision.Answer{Choice: "agree"}, nil
		case "fipa-request:agreed":
			return decision.Answer{Choice: "inform-done", Content: map[string]any{"done": true}}, nil
		}
		return decision.Answer{}, decision.ErrNoDecision
	})
}

// auction is an auction the tests run: an auctioneer ("house") and its
// logic, three Bidders with the highest price each will pay, and the
// decision that closes a round.
type auction struct {
	policy string
	house  decision.Decider // decides everything but the end of a round
	// closeRound answers the join decision at the end of a round.
	closeRound func(*decision.Request) decision.Answer
	bidders    map[string]float64 // b1, b2 and b3
}

// run runs the auction between Managers. The house sells to b2, who pays
// under the fipa-request child.
//
// The clock moves to the end of each round in turn, mt0 + k×10s, and the
// test answers each round's join decision once every agent has settled,
// so the auctioneer calls again only after every Bidder's own timer has
// closed the round: a worker takes an inbound message before a timer
// tick that is already due, so a call that overtakes the tick finds the
// Bidder still in the old round (PE001). Each step lands on a deadline,
// since a single large Advance can arm a worker's next alarm late (see
// advance).
func (a auction) run(t *testing.T) {
	t.Helper()
	w := newWorld(t)
	joins := make(chan agent.DecisionRequest, 1)
	names := []string{a.policy}
	agents := map[string]*agent.Manager{
		"house": w.library("house", a.house, names, agent.WithAsyncDecisions(func(r agent.DecisionRequest) {
			if r.Request.Sessions != nil {
				joins <- r
			}
		})),
	}
	for _, b := range []string{"b1", "b2", "b3"} {
		agents[b] = w.library(b, auctionBidder(a.bidders[b]), names)
	}
	ctx := context.Background()
	conv, err := agents["house"].Start(ctx, agent.StartRequest{Policy: a.policy, Role: "Auctioneer", Peers: map[string][]string{"Bidder": {"b1", "b2", "b3"}}})
	require.NoError(t, err)
	w.settle()
	for k := 1; ; k++ {
		st, err := agents["house"].Status(ctx, conv)
		require.NoError(t, err)
		if st.Done {
			break
		}
		require.Less(t, k, 20, "the auction did not end in 20 rounds")
		w.clock.Set(mt0.Add(time.Duration(k) * 10 * time.Second))
		w.settle()
		select {
		case r := <-joins:
			require.NoError(t, agents["house"].Answer(r.Conversation, r.Ticket, a.closeRound(&r.Request)))
			w.settle()
		default:
		}
	}
	assert.Equal(t, map[string]string{"house": "lost=2,sold=1", "b1": "lost", "b2": "sold", "b3": "lost"}, outcomes(t, conv, agents))
	assert.Empty(t, w.rec.codes())
	child, err := agents["b2"].Status(ctx, conv+"/fipa-request#1")
	require.NoError(t, err)
	assert.Equal(t, "done", child.Outcome, "the winner paid")
}

// callAll answers an auction's opening join: call to every Bidder.
func callAll(req *decision.Request, call decision.SessionAnswer) decision.Answer {
	a := decision.Answer{Sessions: map[string]decision.SessionAnswer{}}
	for _, s := range req.Sessions {
		a.Sessions[s.Peer] = call
	}
	return a
}

// bids reports whether a session at an auction's join bid this round.
func bids(s decision.Session) bool { return slices.Contains(s.Choices, "accept-proposal") }

func TestLibraryEnglishAuction(t *testing.T) {
	// The house accepts the highest bid of a round (the first in session
	// order on a tie) and calls again 10 higher; a round without a bid
	// ends the auction. Round k closes at mt0 + k×10s.
	var (
		mu           sync.Mutex
		leader       string
		best, called float64
		round        int
	)
	call := func() decision.SessionAnswer {
		return decision.SessionAnswer{Choice: "cfp", Content: map[string]any{"price": called}, ReplyBy: mt0.Add(time.Duration(round) * 10 * time.Second)}
	}
	closeRound := func(req *decision.Request) decision.Answer {
		mu.Lock()
		defer mu.Unlock()
		top := ""
		for _, s := range req.Sessions {
			if amount, _ := s.Content["amount"].(float64); bids(s) && (top == "" || amount > best) {
				top, best = s.Peer, amount
			}
		}
		if top != "" {
			leader, called = top, best+10
			round++
		}
		a := decision.Answer{Sessions: map[string]decision.SessionAnswer{}}
		for _, s := range req.Sessions {
			switch {
			case s.Peer == top:
				a.Sessions[s.Peer] = decision.SessionAnswer{Choice: "accept-proposal"}
			case bids(s):
				a.Sessions[s.Peer] = decision.SessionAnswer{Choice: "reject-proposal", Content: map[string]any{"reason": "outbid"}}
			case top != "":
				a.Sessions[s.Peer] = call()
			case s.Peer == leader:
				a.Sessions[s.Peer] = decision.SessionAnswer{Choice: "inform-won", Content: map[string]any{"winner": true, "price": best}}
			default:
				a.Sessions[s.Peer] = decision.SessionAnswer{Choice: "inform-end", Content: map[string]any{"winner": false, "price": best}}
			}
		}
		return a
	}
	house := decision.Func(func(_ context.Context, req *decision.Request) (decision.Answer, error) {
		mu.Lock()
		defer mu.Unlock()
		switch req.Policy + ":" + req.Point {
		case "english-auction:start":
			return decision.Answer{Choice: "inform-start", Content: map[string]any{"item": "a carriage clock", "price": 100}}, nil
		case "english-auction:opened":
			called, round = 100, 1
			return callAll(req, call()), nil
		case "english-auction:leading", "english-auction:outbid":
			a := call()
			return decision.Answer{Choice: a.Choice, Content: a.Content, ReplyBy: a.ReplyBy}, nil
		case "fipa-request:start":
			return decision.Answer{Choice: "request", Content: map[string]any{"action": "pay", "amount": best}}, nil
		}
		return decision.Answer{}, decision.ErrNoDecision // a round's end: the test answers it
	})
	auction{policy: "english-auction", house: house, closeRound: closeRound, bidders: map[string]float64{"b1": 120, "b2": 150, "b3": 90}}.run(t)
	mu.Lock()
	defer mu.Unlock()
	// 100: b1 and b2 bid, b1 leads (first on a tie); 110: b2; 120: b1;
	// 130: b2; 140: nobody.
	assert.Equal(t, 5, round)
	assert.Equal(t, "b2", leader)
	assert.Equal(t, 130.0, best)
}

func TestLibraryDutchAuction(t *testing.T) {
	// The market calls 200 and lowers the price by 20 each silent round,
	// down to its reserve of 100; the first bid (in session order) of a
	// round wins. Round k closes at mt0 + k×10s.
	var (
		mu     sync.Mutex
		price  float64
		round  int
		winner string
	)
	call := func() decision.SessionAnswer {
		return decision.SessionAnswer{Choice: "cfp", Content: map[string]any{"price": price}, ReplyBy: mt0.Add(time.Duration(round) * 10 * time.Second)}
	}
	closeRound := func(req *decision.Request) decision.Answer {
		mu.Lock()
		defer mu.Unlock()
		for _, s := range req.Sessions {
			if winner == "" && bids(s) {
				winner = s.Peer
			}
		}
		if winner == "" && price > 100 {
			price -= 20
			round++
		}
		a := decision.Answer{Sessions: map[string]decision.SessionAnswer{}}
		for _, s := range req.Sessions {
			switch {
			case s.Peer == winner:
				a.Sessions[s.Peer] = decision.SessionAnswer{Choice: "accept-proposal"}
			case bids(s):
				a.Sessions[s.Peer] = decision.SessionAnswer{Choice: "reject-proposal", Content: map[string]any{"reason": "taken"}}
			case winner == "" && price >= 100:
				a.Sessions[s.Peer] = call()
			default:
				a.Sessions[s.Peer] = decision.SessionAnswer{Choice: "inform-end", Content: map[string]any{"winner": false}}
			}
		}
		return a
	}
	market := decision.Func(func(_ context.Context, req *decision.Request) (decision.Answer, error) {
		mu.Lock()
		defer mu.Unlock()
		switch req.Policy + ":" + req.Point {
		case "dutch-auction:start":
			return decision.Answer{Choice: "inform-start", Content: map[string]any{"item": "a crate of tulips", "price": 200}}, nil
		case "dutch-auction:opened":
			price, round = 200, 1
			return callAll(req, call()), nil
		case "dutch-auction:accepted":
			return decision.Answer{Choice: "inform-won", Content: map[string]any{"winner": true, "price": price}}, nil
		case "dutch-auction:rejected":
			return decision.Answer{Choice: "inform-end", Content: map[string]any{"winner": false, "price": price}}, nil
		case "fipa-request:start":
			return decision.Answer{Choice: "request", Content: map[string]any{"action": "pay", "amount": price}}, nil
		}
		return decision.Answer{}, decision.ErrNoDecision // a round's end: the test answers it
	})
	auction{policy: "dutch-auction", house: market, closeRound: closeRound, bidders: map[string]float64{"b1": 120, "b2": 150, "b3": 140}}.run(t)
	mu.Lock()
	defer mu.Unlock()
	// 200, 180, 160: silence; 140: b2 and b3 bid, b2 is first.
	assert.Equal(t, 4, round)
	assert.Equal(t, 140.0, price)
	assert.Equal(t, "b2", winner)
}

func TestLibraryContractNetNegotiation(t *testing.T) {
	const name = "contract-net-negotiation"
	// A supplier opens at its list price and answers a counter-offer with
	// the countered price or its floor, whichever is higher.
	supplier := func(list, floor float64, takes bool) decision.Decider {
		return decision.Func(func(_ context.Context, req *decision.Request) (decision.Answer, error) {
			switch req.Point {
			case "solicited":
				return decision.Answer{Choice: "propose", Content: map[string]any{"price": list}}, nil
			case "countered":
				offered, _ := req.Content["price"].(float64)
				return decision.Answer{Choice: "propose", Content: map[string]any{"price": max(offered, floor)}}, nil
			case "awarded":
				if !takes {
					return decision.Answer{Choice: "disconfirm", Content: map[string]any{"reason": "no trucks left"}}, nil
				}
				return decision.Answer{Choice: "confirm"}, nil
			case "confirmed":
				return decision.Answer{Choice: "inform-result", Content: map[string]any{"result": "10 t delivered"}}, nil
			}
			return decision.Answer{}, decision.ErrNoDecision
		})
	}
	// The mill awards the cheapest proposal within its budget of 460 and
	// rejects the rest; while none is, it counters every proposal at its
	// budget, as often as the policy lets it, then rejects.
	var (
		mu       sync.Mutex
		counters int
	)
	mill := decision.Func(func(_ context.Context, req *decision.Request) (decision.Answer, error) {
		switch req.Point {
		case "start":
			return decision.Answer{Choice: "cfp", Content: map[string]any{"task": "deliver 10 t of wheat"}, ReplyBy: mt0.Add(10 * time.Second)}, nil
		case "proposed":
			best, lowest := "", 460.0
			for _, s := range req.Sessions {
				if p, _ := s.Content["price"].(float64); p <= lowest {
					best, lowest = s.Peer, p
				}
			}
			a := decision.Answer{Sessions: map[string]decision.SessionAnswer{}}
			for _, s := range req.Sessions {
				switch {
				case s.Peer == best:
					a.Sessions[s.Peer] = decision.SessionAnswer{Choice: "accept-proposal", Content: map[string]any{"due": mt0.Add(time.Hour)}}
				case best == "" && slices.Contains(s.Choices, "counter"):
					mu.Lock()
					counters++
					mu.Unlock()
					a.Sessions[s.Peer] = decision.SessionAnswer{Choice: "counter", Content: map[string]any{"price": 460}}
				default:
					a.Sessions[s.Peer] = decision.SessionAnswer{Choice: "reject-proposal", Content: map[string]any{"reason": "over budget"}}
				}
			}
			return a, nil
		}
		return decision.Answer{}, decision.ErrNoDecision
	})
	tests := []struct {
		name      string
		suppliers map[string]decision.Decider
		outcomes  map[string]string
		counters  int
		commits   []string
	}{
		{
			name:      "a counter-offer brings one supplier within budget",
			suppliers: map[string]decision.Decider{"s1": supplier(500, 450, true), "s2": supplier(560, 540, true)},
			outcomes:  map[string]string{"mill": "rejected=1,result=1", "s1": "result", "s2": "rejected"},
			counters:  2, commits: []string{"mill proposal discharged", "mill task discharged"},
		},
		{
			name:      "three counter-offers at most",
			suppliers: map[string]decision.Decider{"s2": supplier(560, 540, true)},
			outcomes:  map[string]string{"mill": "rejected=1", "s2": "rejected"},
			counters:  3, commits: []string{"mill proposal released"},
		},
		{
			name:      "the award disconfirmed",
			suppliers: map[string]decision.Decider{"s1": supplier(450, 450, false)},
			outcomes:  map[string]string{"mill": "declined=1", "s1": "declined"},
			commits:   []string{"mill proposal violated"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mu.Lock()
			counters = 0
			mu.Unlock()
			w := newWorld(t)
			agents := map[string]*agent.Manager{"mill": w.library("mill", mill, []string{name})}
			var peers []string
			for n, d := range tt.suppliers {
				agents[n] = w.library(n, d, []string{name})
				peers = append(peers, n)
			}
			slices.Sort(peers)
			conv, err := agents["mill"].Start(context.Background(), agent.StartRequest{Policy: name, Role: "Initiator", Peers: map[string][]string{"Participant": peers}})
			require.NoError(t, err)
			w.settle()
			assert.Equal(t, tt.outcomes, outcomes(t, conv, agents))
			assert.Empty(t, w.rec.codes())
			mu.Lock()
			assert.Equal(t, tt.counters, counters)
			mu.Unlock()
			w.rec.mu.Lock()
			defer w.rec.mu.Unlock()
			for _, c := range tt.commits {
				assert.Contains(t, w.rec.commits, c)
			}
		})
	}
}

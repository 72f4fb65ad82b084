package engine_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policies"
)

// The benchmarks below time, per participant, the steps of a Contract
// Net initiator that touch every session at once, at sizes a factor of
// ten apart: ns/participant stays flat when the step is linear. Each
// once looked at every session for each session (checkJoin for each
// rejection, allAtInitial for each new peer).

// BenchmarkJoinRejectingEveryone times the initiator applying a join
// decision that rejects every proposal.
func BenchmarkJoinRejectingEveryone(b *testing.B) {
	ini := contractNetProgram(b, "Initiator")
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("participants=%d", n), func(b *testing.B) {
			peers := peerNames(n)
			answer := decision.Answer{Sessions: make(map[string]decision.SessionAnswer, n)}
			for _, p := range peers {
				answer.Sessions[p] = decision.SessionAnswer{Choice: "reject-proposal"}
			}
			var q engine.Queue
			b.ReportAllocs()
			var elapsed time.Duration
			for b.Loop() {
				hi, join := initiatorAtJoin(b, ini, peers, &q)
				q.Reset()
				start := time.Now()
				_ = hi.Process(&engine.DecisionEvent{At: t0, Ticket: join, Answer: answer}, &q)
				elapsed += time.Since(start)
				if !hi.Done() {
					b.Fatal("the initiator did not end")
				}
			}
			b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N)/float64(n), "ns/participant")
		})
	}
}

// BenchmarkSentBroadcast times an initiator with no peers bound
// overhearing its own agent's cfp to n peers, each of which gets a
// session.
func BenchmarkSentBroadcast(b *testing.B) {
	ini := contractNetProgram(b, "Initiator")
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("participants=%d", n), func(b *testing.B) {
			cfp := &forms.Message{Performative: "cfp", Sender: "buyer", Receivers: peerNames(n), ConversationID: "cn", ReplyWith: "cn/buyer#1"}
			var q engine.Queue
			b.ReportAllocs()
			for b.Loop() {
				hi, err := ini.NewHandler("cn", "buyer")
				if err != nil {
					b.Fatal(err)
				}
				q.Reset()
				_ = hi.Start(t0, &q)
				q.Reset()
				if err := hi.Process(&engine.MessageEvent{At: t0, Sent: true, Message: cfp}, &q); err != nil {
					b.Fatal(err)
				}
				if got := len(hi.Sessions()); got != n {
					b.Fatalf("%d sessions, want %d", got, n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/participant")
		})
	}
}

func contractNetProgram(tb testing.TB, role string) *engine.Program {
	p, err := policies.Load("fipa-contract-net")
	if err != nil {
		tb.Fatal(err)
	}
	pr, ds := engine.Compile(p, role)
	if pr == nil {
		tb.Fatal(ds)
	}
	return pr
}

func peerNames(n int) []string {
	peers := make([]string, n)
	for i := range peers {
		peers[i] = "p" + strconv.Itoa(i)
	}
	return peers
}

// initiatorAfterCFP returns an initiator of conversation "cn" with peers
// bound, started at t0, that has sent the cfp (the last message in q, returned).
func initiatorAfterCFP(tb testing.TB, ini *engine.Program, peers []string, q *engine.Queue) (*engine.Handler, *forms.Message) {
	hi, err := ini.NewHandler("cn", "buyer", engine.WithPeers("Participant", peers...))
	if err != nil {
		tb.Fatal(err)
	}
	q.Reset()
	_ = hi.Start(t0, q)
	d := lastDecision(q)
	q.Reset()
	_ = hi.Process(&engine.DecisionEvent{At: t0, Ticket: d, Answer: decision.Answer{Choice: "cfp", Content: map[string]any{"task": "t"}}}, q)
	return hi, lastMessage(q)
}

// initiatorAtJoin returns an initiator that has sent the cfp to peers
// and received a proposal from each, and the ticket of its join
// decision.
func initiatorAtJoin(tb testing.TB, ini *engine.Program, peers []string, q *engine.Queue) (*engine.Handler, uint64) {
	hi, m := initiatorAfterCFP(tb, ini, peers, q)
	cfp := m.ReplyWith
	var join uint64
	for _, p := range peers {
		q.Reset()
		_ = hi.Process(&engine.MessageEvent{At: t0, Message: &forms.Message{Performative: "propose", Sender: p, Receivers: []string{"buyer"}, ConversationID: "cn", InReplyTo: cfp, Content: map[string]any{"price": 1}}}, q)
		for _, e := range q.Events() {
			if de, ok := e.(*engine.DecisionEvent); ok && len(de.Request.Sessions) > 0 {
				join = de.Ticket
			}
		}
	}
	if join == 0 {
		tb.Fatal("no join decision")
	}
	return hi, join
}

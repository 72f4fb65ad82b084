package engine_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/forms"
	"github.com/parleyhq/parley/policies"
)

// What the hot paths allocate, pinned: a step that moves the state
// allocates nothing, and a whole FIPA Request conversation (two handlers,
// three decisions, three messages, their timers and the commitment) only
// what it keeps: each handler (agreed, set to a literal, is the program's
// map, shared; the reply-withs of the messages sent are cut from the
// Queue's blocks, one every twenty or so messages here). Under -race it is skipped: the
// race detector allocates.
func TestHotPathAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	tests := []struct {
		name string
		run  func()
		want float64
	}{
		{"a ping-pong step", pingPongSteps(t, pingPong, nil), 0},
		{"a guarded step", pingPongSteps(t, guardedPingPong, map[string]any{"n": 1}), 0},
		{"a request conversation", requestWithReusedInputs(t), 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.run() // warm the queue up
			assert.Equal(t, tt.want, testing.AllocsPerRun(100, tt.run))
		})
	}
}

// requestWithReusedInputs returns a run of a whole FIPA Request
// conversation between two handlers that, as a runtime does, reuses its
// inputs and keeps a queue per agent, so a message one handler sent stays
// valid while the other receives it.
func requestWithReusedInputs(t *testing.T) func() {
	p, err := policies.Load("fipa-request")
	if err != nil {
		t.Fatal(err)
	}
	ini, _ := engine.Compile(p, "Initiator")
	par, _ := engine.Compile(p, "Participant")
	opts := []engine.HandlerOption{engine.WithPeers("Participant", "bob")}
	var qi, qp engine.Queue
	var decide [3]engine.DecisionEvent
	var recv [3]engine.MessageEvent
	decide[0].Answer = decision.Answer{Choice: "request", Content: map[string]any{"action": "x"}}
	decide[1].Answer = decision.Answer{Choice: "agree"}
	decide[2].Answer = decision.Answer{Choice: "inform-result", Content: map[string]any{"result": 42}}
	step := func(h *engine.Handler, ev engine.Event, q *engine.Queue) {
		q.Reset()
		if err := h.Process(ev, q); err != nil {
			t.Fatal(err)
		}
	}
	return func() {
		hi, err := ini.NewHandler("c1", "alice", opts...)
		if err != nil {
			t.Fatal(err)
		}
		hp, err := par.NewHandler("c1", "bob")
		if err != nil {
			t.Fatal(err)
		}
		qp.Reset()
		_ = hp.Start(t0, &qp)
		qi.Reset()
		_ = hi.Start(t0, &qi)
		decide[0].Ticket = lastDecision(&qi)
		step(hi, &decide[0], &qi)
		recv[0].Message = sentMessage(&qi)
		step(hp, &recv[0], &qp)
		decide[1].Ticket = lastDecision(&qp)
		step(hp, &decide[1], &qp)
		recv[1].Message = sentMessage(&qp)
		decide[2].Ticket = lastDecision(&qp)
		step(hi, &recv[1], &qi)
		step(hp, &decide[2], &qp)
		recv[2].Message = sentMessage(&qp)
		step(hi, &recv[2], &qi)
		if !hi.Done() || !hp.Done() {
			t.Fatalf("conversation did not end: %s / %s", hi.State(""), hp.State(""))
		}
	}
}

// sentMessage returns the first message q holds, valid until q is reset.
func sentMessage(q *engine.Queue) *forms.Message {
	for _, e := range q.Events() {
		if m, ok := e.(*engine.MessageEvent); ok {
			return m.Message
		}
	}
	return nil
}

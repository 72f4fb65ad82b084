package engine_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/forms"
)

// A Contract Net Initiator's handler that overhears its own agent's
// messages judges an accept-proposal or reject-proposal by the join: sent
// before every Participant has answered or the deadline for proposals has
// passed, it is PE016, not applied in enforce mode and applied in observe
// mode. Once the join is released, the same message is fine; a cancel,
// which the Initiator may also send while Participants are still out, is
// never judged by the join.
func TestEarlyAcceptBeforeJoinIsJoinPending(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	cfp := forms.Message{Performative: "cfp", Sender: "alice", Receivers: []string{"bob", "carol"}, ConversationID: "c1", ReplyWith: "cfp1", ReplyBy: t0.Add(time.Minute), Content: map[string]any{"task": "deliver"}}
	propose := forms.Message{Performative: "propose", Sender: "bob", Receivers: []string{"alice"}, ConversationID: "c1", InReplyTo: "cfp1", ReplyWith: "p1", Content: map[string]any{"price": 10}}
	refuse := forms.Message{Performative: "refuse", Sender: "carol", Receivers: []string{"alice"}, ConversationID: "c1", InReplyTo: "cfp1"}
	accept := forms.Message{Performative: "accept-proposal", Sender: "alice", Receivers: []string{"bob"}, ConversationID: "c1", InReplyTo: "p1", ReplyWith: "a1"}
	reject := forms.Message{Performative: "reject-proposal", Sender: "alice", Receivers: []string{"bob"}, ConversationID: "c1", InReplyTo: "p1"}
	cancel := forms.Message{Performative: "cancel", Sender: "alice", Receivers: []string{"bob", "carol"}, ConversationID: "c1", ReplyWith: "x1"}
	sent := func(m forms.Message, at time.Duration) engine.Event {
		return &engine.MessageEvent{At: t0.Add(at), Message: &m, Sent: true}
	}
	got := func(m forms.Message, at time.Duration) engine.Event {
		return &engine.MessageEvent{At: t0.Add(at), Message: &m}
	}
	tests := []struct {
		name      string
		mode      engine.Mode
		inputs    []engine.Event
		wantCodes []engine.ErrorCode
		wantBob   string // bob's session's state afterwards
	}{
		{name: "early accept, enforce", mode: engine.Enforce,
			inputs:    []engine.Event{sent(cfp, 0), got(propose, time.Second), sent(accept, 2*time.Second)},
			wantCodes: []engine.ErrorCode{engine.CodeJoinPending}, wantBob: "proposed"},
		{name: "early accept, observe", mode: engine.Observe,
			inputs:    []engine.Event{sent(cfp, 0), got(propose, time.Second), sent(accept, 2*time.Second)},
			wantCodes: []engine.ErrorCode{engine.CodeJoinPending}, wantBob: "awarded"},
		{name: "early reject, enforce", mode: engine.Enforce,
			inputs:    []engine.Event{sent(cfp, 0), got(propose, time.Second), sent(reject, 2*time.Second)},
			wantCodes: []engine.ErrorCode{engine.CodeJoinPending}, wantBob: "proposed"},
		{name: "accept once every participant answered", mode: engine.Enforce,
			inputs:  []engine.Event{sent(cfp, 0), got(propose, time.Second), got(refuse, 2*time.Second), sent(accept, 3*time.Second)},
			wantBob: "awarded"},
		{name: "accept once the deadline for proposals passed", mode: engine.Enforce,
			inputs: []engine.Event{sent(cfp, 0), got(propose, time.Second),
				&engine.TimerEvent{At: t0.Add(time.Minute), Name: "proposals", Session: "carol"},
				sent(accept, time.Minute+time.Second)},
			wantBob: "awarded"},
		{name: "cancel before the join is released", mode: engine.Enforce,
			inputs:  []engine.Event{sent(cfp, 0), got(propose, time.Second), sent(cancel, 2*time.Second)},
			wantBob: "cancelling"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := program(t, "fipa-contract-net", "Initiator").NewHandler("c1", "alice", engine.WithMode(tc.mode), engine.WithPeers("Participant", "bob", "carol"))
			require.NoError(t, err)
			var q engine.Queue
			require.NoError(t, h.Start(t0, &q))
			var codes []engine.ErrorCode
			epochs := map[string]uint64{} // the epoch of each timer set, by name/session
			for _, in := range tc.inputs {
				if te, ok := in.(*engine.TimerEvent); ok {
					te.Epoch = epochs[te.Name+"/"+te.Session]
				}
				q.Reset()
				require.NoError(t, h.Process(in, &q))
				for _, e := range q.Events() {
					switch e := e.(type) {
					case *engine.TimerEvent:
						if e.Op == engine.TimerSet && e.Commitment == "" {
							epochs[e.Name+"/"+e.Session] = e.Epoch
						}
					case *engine.ProtocolErrorEvent:
						codes = append(codes, e.Code)
						assert.Equal(t, tc.mode == engine.Observe, e.Applied, e.Reason)
						assert.Equal(t, "bob", e.Session)
					}
				}
			}
			assert.Equal(t, tc.wantCodes, codes)
			assert.Equal(t, tc.wantBob, h.State("bob"))
		})
	}
}

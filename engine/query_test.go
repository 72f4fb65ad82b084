package engine_test

import (
	"testing"
	"time"

	"github.com/parleyhq/parley/engine"
)

// The FIPA Query policy, driven between alice (Initiator) and bob
// (Participant). alice asks with query-if (answered by an inform with a
// bool "holds") or query-ref (answered by an inform with a "result");
// bob has 20 seconds to answer.

func queryIf() []step {
	return []step{
		{do: start(), want: `
			alice: decide start [query-if query-ref]`},
		{do: sayBy("alice", "query-if", content{"proposition": "(raining)"}, 20*time.Second), want: `
			alice: send query-if alice->bob rw=c1/alice#1 by=+20s {"proposition":"(raining)"}
			alice: timer set if-reply +20s
			alice: decide if-queried [cancel]
			bob: timer set if-reply +20s
			bob: decide if-queried [agree refuse not-understood inform-tf failure] {"proposition":"(raining)"}`},
	}
}

func queryRef() []step {
	return []step{
		{do: start(), want: `
			alice: decide start [query-if query-ref]`},
		{do: sayBy("alice", "query-ref", content{"ref": "(iota ?x (colour sky ?x))"}, 20*time.Second), want: `
			alice: send query-ref alice->bob rw=c1/alice#1 by=+20s {"ref":"(iota ?x (colour sky ?x))"}
			alice: timer set ref-reply +20s
			alice: decide ref-queried [cancel]
			bob: timer set ref-reply +20s
			bob: decide ref-queried [agree refuse not-understood inform-result failure] {"ref":"(iota ?x (colour sky ?x))"}`},
	}
}

func TestQueryConversations(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
	}{
		{name: "query-if answered", steps: then(queryIf(),
			step{at: time.Second, do: say("bob", "inform-tf", content{"holds": true}), want: `
				bob: send inform bob->alice rw=c1/bob#1 irt=c1/alice#1 {"holds":true}
				bob: timer cancel if-reply
				bob: done answered
				alice: timer cancel if-reply
				alice: done answered`},
		)},
		{name: "query-if agreed then answered", steps: then(queryIf(),
			step{at: time.Second, do: say("bob", "agree", nil), want: `
				bob: send agree bob->alice rw=c1/bob#1 irt=c1/alice#1
				bob: commitment answer created bob->alice (agree)
				bob: commitment answer detached bob->alice (agree)
				bob: timer set answer commitment=answer +5m1s
				bob: timer cancel if-reply
				bob: timer set answer +5m1s
				bob: decide if-agreed [inform-tf failure] {"proposition":"(raining)"}
				alice: commitment answer created bob->alice (agree)
				alice: commitment answer detached bob->alice (agree)
				alice: timer set answer commitment=answer +5m1s
				alice: timer cancel if-reply
				alice: timer set answer +5m1s
				alice: decide if-agreed [cancel]`},
			step{at: 2 * time.Second, do: say("bob", "inform-tf", content{"holds": false}), want: `
				bob: send inform bob->alice rw=c1/bob#2 irt=c1/alice#1 {"holds":false}
				bob: timer cancel answer commitment=answer
				bob: commitment answer discharged bob->alice (inform-tf)
				bob: timer cancel answer
				bob: done answered
				alice: timer cancel answer commitment=answer
				alice: commitment answer discharged bob->alice (inform-tf)
				alice: timer cancel answer
				alice: done answered`},
		)},
		{name: "query-ref answered", steps: then(queryRef(),
			step{at: time.Second, do: say("bob", "inform-result", content{"result": []any{"blue"}}), want: `
				bob: send inform bob->alice rw=c1/bob#1 irt=c1/alice#1 {"result":["blue"]}
				bob: timer cancel ref-reply
				bob: done answered
				alice: timer cancel ref-reply
				alice: done answered`},
		)},
		{name: "query-ref agreed then answered", steps: then(queryRef(),
			step{at: time.Second, do: say("bob", "agree", nil), want: `
				bob: send agree bob->alice rw=c1/bob#1 irt=c1/alice#1
				bob: commitment answer created bob->alice (agree)
				bob: commitment answer detached bob->alice (agree)
				bob: timer set answer commitment=answer +5m1s
				bob: timer cancel ref-reply
				bob: timer set answer +5m1s
				bob: decide ref-agreed [inform-result failure] {"ref":"(iota ?x (colour sky ?x))"}
				alice: commitment answer created bob->alice (agree)
				alice: commitment answer detached bob->alice (agree)
				alice: timer set answer commitment=answer +5m1s
				alice: timer cancel ref-reply
				alice: timer set answer +5m1s
				alice: decide ref-agreed [cancel]`},
			step{at: 2 * time.Second, do: say("bob", "inform-result", content{"result": "blue"}), want: `
				bob: send inform bob->alice rw=c1/bob#2 irt=c1/alice#1 {"result":"blue"}
				bob: timer cancel answer commitment=answer
				bob: commitment answer discharged bob->alice (inform-result)
				bob: timer cancel answer
				bob: done answered
				alice: timer cancel answer commitment=answer
				alice: commitment answer discharged bob->alice (inform-result)
				alice: timer cancel answer
				alice: done answered`},
		)},
		{name: "query-if refused", steps: then(queryIf(),
			step{at: time.Second, do: say("bob", "refuse", content{"reason": "private"}), want: `
				bob: send refuse bob->alice rw=c1/bob#1 irt=c1/alice#1 {"reason":"private"}
				bob: timer cancel if-reply
				bob: done refused
				alice: timer cancel if-reply
				alice: done refused`},
		)},
		{name: "query-ref refused", steps: then(queryRef(),
			step{at: time.Second, do: say("bob", "refuse", nil), want: `
				bob: send refuse bob->alice rw=c1/bob#1 irt=c1/alice#1
				bob: timer cancel ref-reply
				bob: done refused
				alice: timer cancel ref-reply
				alice: done refused`},
		)},
		{name: "query-if failure", steps: then(queryIf(),
			step{at: time.Second, do: say("bob", "failure", content{"reason": "no sensor"}), want: `
				bob: send failure bob->alice rw=c1/bob#1 irt=c1/alice#1 {"reason":"no sensor"}
				bob: timer cancel if-reply
				bob: done failed
				alice: timer cancel if-reply
				alice: done failed`},
		)},
		{name: "query-ref agreed then failure", steps: then(queryRef(),
			step{at: time.Second, do: say("bob", "agree", nil), want: `
				bob: send agree bob->alice rw=c1/bob#1 irt=c1/alice#1
				bob: commitment answer created bob->alice (agree)
				bob: commitment answer detached bob->alice (agree)
				bob: timer set answer commitment=answer +5m1s
				bob: timer cancel ref-reply
				bob: timer set answer +5m1s
				bob: decide ref-agreed [inform-result failure] {"ref":"(iota ?x (colour sky ?x))"}
				alice: commitment answer created bob->alice (agree)
				alice: commitment answer detached bob->alice (agree)
				alice: timer set answer commitment=answer +5m1s
				alice: timer cancel ref-reply
				alice: timer set answer +5m1s
				alice: decide ref-agreed [cancel]`},
			step{at: 2 * time.Second, do: say("bob", "failure", nil), want: `
				bob: send failure bob->alice rw=c1/bob#2 irt=c1/alice#1
				bob: timer cancel answer commitment=answer
				bob: commitment answer violated bob->alice (failure)
				bob: timer cancel answer
				bob: done failed
				alice: timer cancel answer commitment=answer
				alice: commitment answer violated bob->alice (failure)
				alice: timer cancel answer
				alice: done failed`},
		)},
		{name: "query-ref not understood", steps: then(queryRef(),
			step{at: time.Second, do: say("bob", "not-understood", content{"reason": "iota?"}), want: `
				bob: send not-understood bob->alice rw=c1/bob#1 irt=c1/alice#1 {"reason":"iota?"}
				bob: timer cancel ref-reply
				bob: done not-understood
				alice: timer cancel ref-reply
				alice: done not-understood`},
		)},
		{name: "query-if cancelled", steps: then(queryIf(),
			step{at: time.Second, do: say("alice", "cancel", nil), want: `
				alice: send cancel alice->bob rw=c1/alice#2
				alice: timer cancel if-reply
				alice: timer set cancel-reply +31s
				bob: timer cancel if-reply
				bob: timer set cancel-reply +31s
				bob: decide cancelling [inform-done failure inform-tf inform-result refuse agree not-understood]`},
			step{at: 2 * time.Second, do: say("bob", "inform-done", content{"done": true}), want: `
				bob: send inform bob->alice rw=c1/bob#1 irt=c1/alice#2 {"done":true}
				bob: timer cancel cancel-reply
				bob: done cancelled
				alice: timer cancel cancel-reply
				alice: done cancelled`},
		)},
		{name: "query-ref cancel after agree fails", steps: then(queryRef(),
			step{at: time.Second, do: say("bob", "agree", nil), want: `
				bob: send agree bob->alice rw=c1/bob#1 irt=c1/alice#1
				bob: commitment answer created bob->alice (agree)
				bob: commitment answer detached bob->alice (agree)
				bob: timer set answer commitment=answer +5m1s
				bob: timer cancel ref-reply
				bob: timer set answer +5m1s
				bob: decide ref-agreed [inform-result failure] {"ref":"(iota ?x (colour sky ?x))"}
				alice: commitment answer created bob->alice (agree)
				alice: commitment answer detached bob->alice (agree)
				alice: timer set answer commitment=answer +5m1s
				alice: timer cancel ref-reply
				alice: timer set answer +5m1s
				alice: decide ref-agreed [cancel]`},
			step{at: 2 * time.Second, do: say("alice", "cancel", nil), want: `
				alice: send cancel alice->bob rw=c1/alice#2 irt=c1/bob#1
				alice: timer cancel answer commitment=answer
				alice: commitment answer released bob->alice (cancel)
				alice: timer cancel answer
				alice: timer set cancel-reply +32s
				bob: timer cancel answer commitment=answer
				bob: commitment answer released bob->alice (cancel)
				bob: timer cancel answer
				bob: timer set cancel-reply +32s
				bob: decide cancelling [inform-done failure inform-tf inform-result]`},
			step{at: 3 * time.Second, do: say("bob", "failure", content{"reason": "already sent"}), want: `
				bob: send failure bob->alice rw=c1/bob#2 irt=c1/alice#2 {"reason":"already sent"}
				bob: timer cancel cancel-reply
				bob: done cancel-failed
				alice: timer cancel cancel-reply
				alice: done cancel-failed`},
		)},
		{name: "answer crosses cancel", steps: then(queryIf(),
			step{at: time.Second, do: hold("alice", "cancel", nil), want: `
				alice: send cancel alice->bob rw=c1/alice#2
				alice: timer cancel if-reply
				alice: timer set cancel-reply +31s`},
			step{at: time.Second, do: say("bob", "inform-tf", content{"holds": true}), want: `
				bob: send inform bob->alice rw=c1/bob#1 irt=c1/alice#1 {"holds":true}
				bob: timer cancel if-reply
				bob: done answered
				alice: timer cancel cancel-reply
				alice: done answered`},
			step{at: 2 * time.Second, do: deliverHeld(), want: `
				bob: error PE005 [answered]: cancel from "alice" arrived after the conversation ended with outcome "answered"`},
		)},
		{name: "query-if not answered", steps: then(queryIf(),
			step{at: 20 * time.Second, do: fireEach("if-reply", "alice", "bob"), want: `
				alice: timer cancel if-reply
				alice: done timeout
				bob: timer cancel if-reply
				bob: done timeout`},
		)},
		{name: "query-ref agreed but not answered", steps: then(queryRef(),
			step{at: time.Second, do: say("bob", "agree", nil), want: `
				bob: send agree bob->alice rw=c1/bob#1 irt=c1/alice#1
				bob: commitment answer created bob->alice (agree)
				bob: commitment answer detached bob->alice (agree)
				bob: timer set answer commitment=answer +5m1s
				bob: timer cancel ref-reply
				bob: timer set answer +5m1s
				bob: decide ref-agreed [inform-result failure] {"ref":"(iota ?x (colour sky ?x))"}
				alice: commitment answer created bob->alice (agree)
				alice: commitment answer detached bob->alice (agree)
				alice: timer set answer commitment=answer +5m1s
				alice: timer cancel ref-reply
				alice: timer set answer +5m1s
				alice: decide ref-agreed [cancel]`},
			step{at: 5*time.Minute + time.Second, do: fireEach("answer commitment=answer", "alice", "bob"), want: `
				alice: timer cancel answer commitment=answer
				alice: commitment answer violated bob->alice (deadline)
				bob: timer cancel answer commitment=answer
				bob: commitment answer violated bob->alice (deadline)`},
			step{at: 5*time.Minute + time.Second, do: fireEach("answer", "alice", "bob"), want: `
				alice: timer cancel answer
				alice: done timeout
				bob: timer cancel answer
				bob: done timeout`},
		)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			newConv(t, "fipa-query", cast("fipa-query")).run(t, tt.steps)
		})
	}
}

func TestQueryViolations(t *testing.T) {
	tests := []struct {
		name  string
		mode  engine.Mode
		steps []step
	}{
		{name: "holds is a string", steps: then(queryIf(),
			step{at: time.Second, do: recv("alice", msg("inform", "bob", "alice", content{"holds": "yes"})), want: `
				alice: error PE007 [if-queried]: field "holds" of "inform-tf" is a string, not a bool`},
		)},
		{name: "holds is a string observed", mode: engine.Observe, steps: then(queryIf(),
			step{at: time.Second, do: recv("alice", msg("inform", "bob", "alice", content{"holds": "yes"})), want: `
				alice: error PE007 [if-queried] applied: field "holds" of "inform-tf" is a string, not a bool
				alice: timer cancel if-reply
				alice: done answered`},
		)},
		{name: "deciding an answer without holds", steps: then(queryIf(),
			step{at: time.Second, do: say("bob", "inform-tf", content{}), want: `
				bob: error PE007 [if-queried]: the decision's content does not fit: field "holds" of "inform-tf" is required but missing`},
		)},
		{name: "query-if answered with a result", steps: then(queryIf(),
			step{at: time.Second, do: recv("alice", msg("inform", "bob", "alice", content{"result": true})), want: `
				alice: error PE001 [if-queried]: unexpected inform from "bob": state "if-queried" allows agree from Participant, refuse from Participant, not-understood from Participant, inform-tf from Participant or failure from Participant`},
		)},
		{name: "query-if answered with a result observed", mode: engine.Observe, steps: then(queryIf(),
			step{at: time.Second, do: recv("alice", msg("inform", "bob", "alice", content{"result": true})), want: `
				alice: error PE001 [if-queried]: unexpected inform from "bob": state "if-queried" allows agree from Participant, refuse from Participant, not-understood from Participant, inform-tf from Participant or failure from Participant`},
		)},
		{name: "query-ref answered with holds", steps: then(queryRef(),
			step{at: time.Second, do: recv("alice", msg("inform", "bob", "alice", content{"holds": true})), want: `
				alice: error PE001 [ref-queried]: unexpected inform from "bob": state "ref-queried" allows agree from Participant, refuse from Participant, not-understood from Participant, inform-result from Participant or failure from Participant`},
		)},
		{name: "query-if answered with inform-done", steps: then(queryIf(),
			step{at: time.Second, do: recv("alice", msg("inform", "bob", "alice", content{"done": true})), want: `
				alice: error PE001 [if-queried]: unexpected inform from "bob": state "if-queried" allows agree from Participant, refuse from Participant, not-understood from Participant, inform-tf from Participant or failure from Participant`},
		)},
		{name: "deciding a result for a query-if", steps: then(queryIf(),
			step{at: time.Second, do: say("bob", "inform-result", content{"result": 1}), want: `
				bob: error PE009 [if-queried]: choice "inform-result" is not allowed in state "if-queried"; the choices are agree, refuse, not-understood, inform-tf, failure`},
		)},
		{name: "participant sends query-ref", steps: []step{
			{do: start(), want: `
				alice: decide start [query-if query-ref]`},
			{at: time.Second, do: recv("alice", msg("query-ref", "bob", "alice", nil)), want: `
				alice: error PE002 [start]: "bob" sent query-ref, which only Initiator sends here; state "start" expects no message: Initiator sends next`},
		}},
		{name: "answer before the query", steps: []step{
			{do: start(), want: `
				alice: decide start [query-if query-ref]`},
			{at: time.Second, do: recv("bob", msg("inform", "alice", "bob", content{"holds": true})), want: `
				bob: error PE001 [start]: unexpected inform from "alice": state "start" allows query-if from Initiator or query-ref from Initiator`},
		}},
		{name: "late answer", steps: then(queryRef(),
			step{at: 25 * time.Second, do: say("bob", "inform-result", content{"result": "blue"}), want: `
				bob: error PE004 [ref-queried]: too late to send inform-result: the deadline 2026-03-01T09:00:20Z of state "ref-queried" passed at 2026-03-01T09:00:25Z`},
			step{at: 25 * time.Second, do: recv("alice", msg("inform", "bob", "alice", content{"result": "blue"})), want: `
				alice: error PE004 [ref-queried]: inform-result from "bob" arrived at 2026-03-01T09:00:25Z, after the deadline 2026-03-01T09:00:20Z of state "ref-queried"`},
		)},
		{name: "duplicate answer", steps: then(queryRef(),
			step{at: time.Second, do: say("bob", "inform-result", content{"result": "blue"}), want: `
				bob: send inform bob->alice rw=c1/bob#1 irt=c1/alice#1 {"result":"blue"}
				bob: timer cancel ref-reply
				bob: done answered
				alice: timer cancel ref-reply
				alice: done answered`},
			step{at: 2 * time.Second, do: again(), want: `
				alice: error PE006 [answered]: inform from "bob" repeats a message already received; the conversation has ended with outcome "answered"`},
		)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			newConv(t, "fipa-query", cast("fipa-query", engine.WithMode(tt.mode))).run(t, tt.steps)
		})
	}
}

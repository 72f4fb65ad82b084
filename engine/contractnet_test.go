package engine_test

import (
	"testing"
	"time"

	"github.com/parleyhq/parley/decision"
	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/forms"
)

// The FIPA Contract Net policy with alice as Initiator and bob, carol and
// dave as Participants. alice's cfp goes to all three at once and gives
// them a minute to answer; alice decides on every proposal at once (the
// join) once each participant has answered or the minute has passed.

// cnCalled: alice calls for proposals, answers within a minute.
func cnCalled() []step {
	return []step{
		{do: start(), want: `
			alice: decide start [cfp]`},
		{do: sayBy("alice", "cfp", content{"task": "deliver"}, time.Minute), want: `
			alice: send cfp alice->bob,carol,dave rw=c1/alice#1 by=+1m0s {"task":"deliver"}
			alice: timer set proposals/bob +1m0s
			alice: decide solicited [cancel] peer=bob
			alice: timer set proposals/carol +1m0s
			alice: decide solicited [cancel] peer=carol
			alice: timer set proposals/dave +1m0s
			alice: decide solicited [cancel] peer=dave
			bob: timer set proposals +1m0s
			bob: decide solicited [propose refuse not-understood] {"task":"deliver"}
			carol: timer set proposals +1m0s
			carol: decide solicited [propose refuse not-understood] {"task":"deliver"}
			dave: timer set proposals +1m0s
			dave: decide solicited [propose refuse not-understood] {"task":"deliver"}`},
	}
}

// cnProposed: bob and carol propose (their offers stand for two minutes),
// dave refuses.
func cnProposed() []step {
	return then(cnCalled(),
		step{at: time.Second, do: sayBy("bob", "propose", content{"price": 10}, 2*time.Minute), want: `
			bob: send propose bob->alice rw=c1/bob#1 irt=c1/alice#1 by=+2m0s {"price":10}
			bob: commitment task created bob->alice (propose)
			bob: timer set award commitment=task +2m0s
			bob: timer cancel proposals
			bob: timer set award +2m0s
			alice: commitment task/bob created bob->alice (propose)
			alice: timer set award/bob commitment=task +2m0s
			alice: timer cancel proposals/bob
			alice: timer set award/bob +2m0s`},
		step{at: 2 * time.Second, do: sayBy("carol", "propose", content{"price": 12}, 2*time.Minute), want: `
			carol: send propose carol->alice rw=c1/carol#1 irt=c1/alice#1 by=+2m0s {"price":12}
			carol: commitment task created carol->alice (propose)
			carol: timer set award commitment=task +2m0s
			carol: timer cancel proposals
			carol: timer set award +2m0s
			alice: commitment task/carol created carol->alice (propose)
			alice: timer set award/carol commitment=task +2m0s
			alice: timer cancel proposals/carol
			alice: timer set award/carol +2m0s`},
		step{at: 3 * time.Second, do: say("dave", "refuse", content{"reason": "busy"}), want: `
			dave: send refuse dave->alice rw=c1/dave#1 irt=c1/alice#1 {"reason":"busy"}
			dave: timer cancel proposals
			dave: done refused
			alice: timer cancel proposals/dave
			alice: decide proposed join(bob={"price":10} carol={"price":12}) [accept-proposal reject-proposal cancel]`},
	)
}

// cnAwarded: alice accepts bob's proposal and rejects carol's.
func cnAwarded() []step {
	return then(cnProposed(),
		step{at: 4 * time.Second, do: join("alice", map[string]string{"bob": "accept-proposal", "carol": "reject-proposal"}), want: `
			alice: send accept-proposal alice->bob rw=c1/alice#2 irt=c1/bob#1
			alice: timer cancel award/bob commitment=task
			alice: commitment task/bob detached bob->alice (accept-proposal)
			alice: timer set result/bob commitment=task +5m4s
			alice: timer cancel award/bob
			alice: timer set result/bob +5m4s
			alice: decide awarded [cancel] peer=bob {"price":10}
			alice: send reject-proposal alice->carol rw=c1/alice#3 irt=c1/carol#1
			alice: timer cancel award/carol commitment=task
			alice: commitment task/carol released carol->alice (reject-proposal)
			alice: timer cancel award/carol
			bob: timer cancel award commitment=task
			bob: commitment task detached bob->alice (accept-proposal)
			bob: timer set result commitment=task +5m4s
			bob: timer cancel award
			bob: timer set result +5m4s
			bob: decide awarded [inform-done inform-result failure]
			carol: timer cancel award commitment=task
			carol: commitment task released carol->alice (reject-proposal)
			carol: timer cancel award
			carol: done rejected`},
	)
}

func TestContractNetConversations(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
	}{
		{name: "propose refuse not-understood", steps: then(cnCalled(),
			step{at: time.Second, do: sayBy("bob", "propose", content{"price": 10}, 2*time.Minute), want: `
				bob: send propose bob->alice rw=c1/bob#1 irt=c1/alice#1 by=+2m0s {"price":10}
				bob: commitment task created bob->alice (propose)
				bob: timer set award commitment=task +2m0s
				bob: timer cancel proposals
				bob: timer set award +2m0s
				alice: commitment task/bob created bob->alice (propose)
				alice: timer set award/bob commitment=task +2m0s
				alice: timer cancel proposals/bob
				alice: timer set award/bob +2m0s`},
			step{at: 2 * time.Second, do: say("carol", "refuse", content{"reason": "busy"}), want: `
				carol: send refuse carol->alice rw=c1/carol#1 irt=c1/alice#1 {"reason":"busy"}
				carol: timer cancel proposals
				carol: done refused
				alice: timer cancel proposals/carol`},
			step{at: 3 * time.Second, do: say("dave", "not-understood", nil), want: `
				dave: send not-understood dave->alice rw=c1/dave#1 irt=c1/alice#1
				dave: timer cancel proposals
				dave: done not-understood
				alice: timer cancel proposals/dave
				alice: decide proposed join(bob={"price":10}) [accept-proposal reject-proposal cancel]`},
			step{at: 4 * time.Second, do: join("alice", map[string]string{"bob": "accept-proposal"}), want: `
				alice: send accept-proposal alice->bob rw=c1/alice#2 irt=c1/bob#1
				alice: timer cancel award/bob commitment=task
				alice: commitment task/bob detached bob->alice (accept-proposal)
				alice: timer set result/bob commitment=task +5m4s
				alice: timer cancel award/bob
				alice: timer set result/bob +5m4s
				alice: decide awarded [cancel] peer=bob {"price":10}
				bob: timer cancel award commitment=task
				bob: commitment task detached bob->alice (accept-proposal)
				bob: timer set result commitment=task +5m4s
				bob: timer cancel award
				bob: timer set result +5m4s
				bob: decide awarded [inform-done inform-result failure]`},
			step{at: 5 * time.Second, do: say("bob", "inform-done", content{"done": true}), want: `
				bob: send inform bob->alice rw=c1/bob#2 irt=c1/alice#2 {"done":true}
				bob: timer cancel result commitment=task
				bob: commitment task discharged bob->alice (inform-done)
				bob: timer cancel result
				bob: done done
				alice: timer cancel result/bob commitment=task
				alice: commitment task/bob discharged bob->alice (inform-done)
				alice: timer cancel result/bob
				alice: done done=1,not-understood=1,refused=1 (bob=done carol=refused dave=not-understood)`},
		)},
		{name: "accepted reports inform-result", steps: then(cnAwarded(),
			step{at: 10 * time.Second, do: say("bob", "inform-result", content{"result": "delivered at 10:00"}), want: `
				bob: send inform bob->alice rw=c1/bob#2 irt=c1/alice#2 {"result":"delivered at 10:00"}
				bob: timer cancel result commitment=task
				bob: commitment task discharged bob->alice (inform-result)
				bob: timer cancel result
				bob: done result
				alice: timer cancel result/bob commitment=task
				alice: commitment task/bob discharged bob->alice (inform-result)
				alice: timer cancel result/bob
				alice: done refused=1,rejected=1,result=1 (bob=result carol=rejected dave=refused)`},
		)},
		{name: "accepted reports failure", steps: then(cnAwarded(),
			step{at: 10 * time.Second, do: say("bob", "failure", content{"reason": "flat tyre"}), want: `
				bob: send failure bob->alice rw=c1/bob#2 irt=c1/alice#2 {"reason":"flat tyre"}
				bob: timer cancel result commitment=task
				bob: commitment task violated bob->alice (failure)
				bob: timer cancel result
				bob: done failed
				alice: timer cancel result/bob commitment=task
				alice: commitment task/bob violated bob->alice (failure)
				alice: timer cancel result/bob
				alice: done failed=1,refused=1,rejected=1 (bob=failed carol=rejected dave=refused)`},
		)},
		{name: "silent participant until the deadline", steps: then(cnCalled(),
			step{at: time.Second, do: sayBy("bob", "propose", content{"price": 10}, 3*time.Minute), want: `
				bob: send propose bob->alice rw=c1/bob#1 irt=c1/alice#1 by=+3m0s {"price":10}
				bob: commitment task created bob->alice (propose)
				bob: timer set award commitment=task +3m0s
				bob: timer cancel proposals
				bob: timer set award +3m0s
				alice: commitment task/bob created bob->alice (propose)
				alice: timer set award/bob commitment=task +3m0s
				alice: timer cancel proposals/bob
				alice: timer set award/bob +3m0s`},
			step{at: 2 * time.Second, do: say("carol", "refuse", nil), want: `
				carol: send refuse carol->alice rw=c1/carol#1 irt=c1/alice#1
				carol: timer cancel proposals
				carol: done refused
				alice: timer cancel proposals/carol`},
			step{at: time.Minute, do: fireEach("proposals", "dave"), want: `
				dave: timer cancel proposals
				dave: done no-bid`},
			step{at: time.Minute, do: fire("alice", "proposals/dave"), want: `
				alice: timer cancel proposals/dave
				alice: decide proposed join(bob={"price":10}) [accept-proposal reject-proposal cancel]`},
			step{at: time.Minute + time.Second, do: join("alice", map[string]string{"bob": "accept-proposal"}), want: `
				alice: send accept-proposal alice->bob rw=c1/alice#2 irt=c1/bob#1
				alice: timer cancel award/bob commitment=task
				alice: commitment task/bob detached bob->alice (accept-proposal)
				alice: timer set result/bob commitment=task +6m1s
				alice: timer cancel award/bob
				alice: timer set result/bob +6m1s
				alice: decide awarded [cancel] peer=bob {"price":10}
				bob: timer cancel award commitment=task
				bob: commitment task detached bob->alice (accept-proposal)
				bob: timer set result commitment=task +6m1s
				bob: timer cancel award
				bob: timer set result +6m1s
				bob: decide awarded [inform-done inform-result failure]`},
			step{at: 2 * time.Minute, do: say("bob", "inform-done", nil), want: `
				bob: send inform bob->alice rw=c1/bob#2 irt=c1/alice#2
				bob: timer cancel result commitment=task
				bob: commitment task discharged bob->alice (inform-done)
				bob: timer cancel result
				bob: done done
				alice: timer cancel result/bob commitment=task
				alice: commitment task/bob discharged bob->alice (inform-done)
				alice: timer cancel result/bob
				alice: done done=1,no-bid=1,refused=1 (bob=done carol=refused dave=no-bid)`},
		)},
		{name: "all propose, one accepted", steps: then(cnCalled(),
			step{at: time.Second, do: say("bob", "propose", content{"price": 10}), want: `
				bob: send propose bob->alice rw=c1/bob#1 irt=c1/alice#1 {"price":10}
				bob: commitment task created bob->alice (propose)
				bob: timer set award commitment=task +2m1s
				bob: timer cancel proposals
				bob: timer set award +2m1s
				alice: commitment task/bob created bob->alice (propose)
				alice: timer set award/bob commitment=task +2m1s
				alice: timer cancel proposals/bob
				alice: timer set award/bob +2m1s`},
			step{at: 2 * time.Second, do: say("carol", "propose", content{"price": 9}), want: `
				carol: send propose carol->alice rw=c1/carol#1 irt=c1/alice#1 {"price":9}
				carol: commitment task created carol->alice (propose)
				carol: timer set award commitment=task +2m2s
				carol: timer cancel proposals
				carol: timer set award +2m2s
				alice: commitment task/carol created carol->alice (propose)
				alice: timer set award/carol commitment=task +2m2s
				alice: timer cancel proposals/carol
				alice: timer set award/carol +2m2s`},
			step{at: 3 * time.Second, do: say("dave", "propose", content{"price": 11}), want: `
				dave: send propose dave->alice rw=c1/dave#1 irt=c1/alice#1 {"price":11}
				dave: commitment task created dave->alice (propose)
				dave: timer set award commitment=task +2m3s
				dave: timer cancel proposals
				dave: timer set award +2m3s
				alice: commitment task/dave created dave->alice (propose)
				alice: timer set award/dave commitment=task +2m3s
				alice: timer cancel proposals/dave
				alice: timer set award/dave +2m3s
				alice: decide proposed join(bob={"price":10} carol={"price":9} dave={"price":11}) [accept-proposal reject-proposal cancel]`},
			step{at: 4 * time.Second, do: join("alice", map[string]string{"bob": "reject-proposal", "carol": "accept-proposal", "dave": "reject-proposal"}), want: `
				alice: send reject-proposal alice->bob rw=c1/alice#2 irt=c1/bob#1
				alice: timer cancel award/bob commitment=task
				alice: commitment task/bob released bob->alice (reject-proposal)
				alice: timer cancel award/bob
				alice: send accept-proposal alice->carol rw=c1/alice#3 irt=c1/carol#1
				alice: timer cancel award/carol commitment=task
				alice: commitment task/carol detached carol->alice (accept-proposal)
				alice: timer set result/carol commitment=task +5m4s
				alice: timer cancel award/carol
				alice: timer set result/carol +5m4s
				alice: decide awarded [cancel] peer=carol {"price":9}
				alice: send reject-proposal alice->dave rw=c1/alice#4 irt=c1/dave#1
				alice: timer cancel award/dave commitment=task
				alice: commitment task/dave released dave->alice (reject-proposal)
				alice: timer cancel award/dave
				bob: timer cancel award commitment=task
				bob: commitment task released bob->alice (reject-proposal)
				bob: timer cancel award
				bob: done rejected
				carol: timer cancel award commitment=task
				carol: commitment task detached carol->alice (accept-proposal)
				carol: timer set result commitment=task +5m4s
				carol: timer cancel award
				carol: timer set result +5m4s
				carol: decide awarded [inform-done inform-result failure]
				dave: timer cancel award commitment=task
				dave: commitment task released dave->alice (reject-proposal)
				dave: timer cancel award
				dave: done rejected`},
			step{at: 5 * time.Second, do: say("carol", "inform-done", content{"done": true}), want: `
				carol: send inform carol->alice rw=c1/carol#2 irt=c1/alice#3 {"done":true}
				carol: timer cancel result commitment=task
				carol: commitment task discharged carol->alice (inform-done)
				carol: timer cancel result
				carol: done done
				alice: timer cancel result/carol commitment=task
				alice: commitment task/carol discharged carol->alice (inform-done)
				alice: timer cancel result/carol
				alice: done done=1,rejected=2 (bob=rejected carol=done dave=rejected)`},
		)},
		{name: "a session waits while the others are decided", steps: then(cnProposed(),
			step{at: 4 * time.Second, do: join("alice", map[string]string{"bob": "", "carol": "reject-proposal"}), want: `
				alice: send reject-proposal alice->carol rw=c1/alice#2 irt=c1/carol#1
				alice: timer cancel award/carol commitment=task
				alice: commitment task/carol released carol->alice (reject-proposal)
				alice: timer cancel award/carol
				carol: timer cancel award commitment=task
				carol: commitment task released carol->alice (reject-proposal)
				carol: timer cancel award
				carol: done rejected`},
			step{at: 5 * time.Second, do: answer("alice", "join", decision.Answer{Sessions: map[string]decision.SessionAnswer{"bob": {Choice: "accept-proposal"}}}), want: `
				alice: send accept-proposal alice->bob rw=c1/alice#3 irt=c1/bob#1
				alice: timer cancel award/bob commitment=task
				alice: commitment task/bob detached bob->alice (accept-proposal)
				alice: timer set result/bob commitment=task +5m5s
				alice: timer cancel award/bob
				alice: timer set result/bob +5m5s
				alice: decide awarded [cancel] peer=bob {"price":10}
				bob: timer cancel award commitment=task
				bob: commitment task detached bob->alice (accept-proposal)
				bob: timer set result commitment=task +5m5s
				bob: timer cancel award
				bob: timer set result +5m5s
				bob: decide awarded [inform-done inform-result failure]`},
		)},
		{name: "award timeout", steps: then(cnProposed(),
			step{at: 2*time.Minute + time.Second, do: fireEach("award commitment=task", "bob"), want: `
				bob: timer cancel award commitment=task
				bob: commitment task expired bob->alice (deadline)`},
			step{at: 2*time.Minute + time.Second, do: fireEach("award", "bob"), want: `
				bob: timer cancel award
				bob: done expired`},
			step{at: 2*time.Minute + time.Second, do: seq(fire("alice", "award/bob commitment=task"), fire("alice", "award/bob")), want: `
				alice: timer cancel award/bob commitment=task
				alice: commitment task/bob expired bob->alice (deadline)
				alice: timer cancel award/bob`},
			step{at: 2*time.Minute + 2*time.Second, do: seq(fire("alice", "award/carol commitment=task"), fire("alice", "award/carol"), fire("carol", "award commitment=task"), fire("carol", "award")), want: `
				alice: timer cancel award/carol commitment=task
				alice: commitment task/carol expired carol->alice (deadline)
				alice: timer cancel award/carol
				alice: done expired=2,refused=1 (bob=expired carol=expired dave=refused)
				carol: timer cancel award commitment=task
				carol: commitment task expired carol->alice (deadline)
				carol: timer cancel award
				carol: done expired`},
		)},
		{name: "cancel one participant while soliciting", steps: then(cnCalled(),
			step{at: time.Second, do: answer("alice", "solicited/carol", decisionChoice("cancel")), want: `
				alice: send cancel alice->carol rw=c1/alice#2
				alice: timer cancel proposals/carol
				alice: timer set cancel-reply/carol +31s
				carol: timer cancel proposals
				carol: timer set cancel-reply +31s
				carol: decide cancelling [inform-done failure inform-result propose refuse not-understood]`},
			step{at: 2 * time.Second, do: say("carol", "inform-done", content{"done": true}), want: `
				carol: send inform carol->alice rw=c1/carol#1 irt=c1/alice#2 {"done":true}
				carol: timer cancel cancel-reply
				carol: done cancelled
				alice: timer cancel cancel-reply/carol`},
		)},
		{name: "cancel at the join", steps: then(cnProposed(),
			step{at: 4 * time.Second, do: join("alice", map[string]string{"bob": "cancel", "carol": "reject-proposal"}), want: `
				alice: send cancel alice->bob rw=c1/alice#2 irt=c1/bob#1
				alice: timer cancel award/bob commitment=task
				alice: commitment task/bob released bob->alice (cancel)
				alice: timer cancel award/bob
				alice: timer set cancel-reply/bob +34s
				alice: send reject-proposal alice->carol rw=c1/alice#3 irt=c1/carol#1
				alice: timer cancel award/carol commitment=task
				alice: commitment task/carol released carol->alice (reject-proposal)
				alice: timer cancel award/carol
				bob: timer cancel award commitment=task
				bob: commitment task released bob->alice (cancel)
				bob: timer cancel award
				bob: timer set cancel-reply +34s
				bob: decide cancelling [inform-done failure inform-result propose refuse not-understood]
				carol: timer cancel award commitment=task
				carol: commitment task released carol->alice (reject-proposal)
				carol: timer cancel award
				carol: done rejected`},
			step{at: 5 * time.Second, do: say("bob", "inform-done", nil), want: `
				bob: send inform bob->alice rw=c1/bob#2 irt=c1/alice#2
				bob: timer cancel cancel-reply
				bob: done cancelled
				alice: timer cancel cancel-reply/bob
				alice: done cancelled=1,refused=1,rejected=1 (bob=cancelled carol=rejected dave=refused)`},
		)},
		{name: "cancel after the award fails", steps: then(cnAwarded(),
			step{at: 10 * time.Second, do: answer("alice", "awarded/bob", decisionChoice("cancel")), want: `
				alice: send cancel alice->bob rw=c1/alice#4 irt=c1/bob#1
				alice: timer cancel result/bob commitment=task
				alice: commitment task/bob released bob->alice (cancel)
				alice: timer cancel result/bob
				alice: timer set cancel-reply/bob +40s
				bob: timer cancel result commitment=task
				bob: commitment task released bob->alice (cancel)
				bob: timer cancel result
				bob: timer set cancel-reply +40s
				bob: decide cancelling [inform-done failure inform-result propose refuse not-understood]`},
			step{at: 11 * time.Second, do: say("bob", "failure", content{"reason": "already on the road"}), want: `
				bob: send failure bob->alice rw=c1/bob#2 irt=c1/alice#4 {"reason":"already on the road"}
				bob: timer cancel cancel-reply
				bob: done cancel-failed
				alice: timer cancel cancel-reply/bob
				alice: done cancel-failed=1,refused=1,rejected=1 (bob=cancel-failed carol=rejected dave=refused)`},
		)},
		{name: "no result after the award", steps: then(cnAwarded(),
			step{at: 5*time.Minute + 4*time.Second, do: seq(fire("bob", "result commitment=task"), fire("bob", "result")), want: `
				bob: timer cancel result commitment=task
				bob: commitment task violated bob->alice (deadline)
				bob: timer cancel result
				bob: done timeout`},
			step{at: 5*time.Minute + 4*time.Second, do: seq(fire("alice", "result/bob commitment=task"), fire("alice", "result/bob")), want: `
				alice: timer cancel result/bob commitment=task
				alice: commitment task/bob violated bob->alice (deadline)
				alice: timer cancel result/bob
				alice: done refused=1,rejected=1,timeout=1 (bob=timeout carol=rejected dave=refused)`},
		)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			newConv(t, "fipa-contract-net", cast("fipa-contract-net")).run(t, tt.steps)
		})
	}
}

func TestContractNetViolations(t *testing.T) {
	tests := []struct {
		name  string
		mode  engine.Mode
		steps []step
	}{
		{name: "late proposal before the timer", steps: then(cnCalled(),
			step{at: time.Minute + time.Second, do: say("dave", "propose", content{"price": 1}), want: `
				dave: error PE004 [solicited]: too late to send propose: the deadline 2026-03-01T09:01:00Z of state "solicited" passed at 2026-03-01T09:01:01Z`},
			step{at: time.Minute + time.Second, do: recv("alice", msg("propose", "dave", "alice", content{"price": 1})), want: `
				alice: error PE004 [dave@solicited]: propose from "dave" arrived at 2026-03-01T09:01:01Z, after the deadline 2026-03-01T09:01:00Z of state "solicited"`},
		)},
		{name: "late proposal before the timer observed", mode: engine.Observe, steps: then(cnCalled(),
			step{at: time.Minute + time.Second, do: say("dave", "propose", content{"price": 1}), want: `
				dave: send propose dave->alice rw=c1/dave#1 irt=c1/alice#1 {"price":1}
				dave: commitment task created dave->alice (propose)
				dave: timer set award commitment=task +3m1s
				dave: timer cancel proposals
				dave: timer set award +3m1s
				alice: error PE004 [dave@solicited] applied: propose from "dave" arrived at 2026-03-01T09:01:01Z, after the deadline 2026-03-01T09:01:00Z of state "solicited"
				alice: commitment task/dave created dave->alice (propose)
				alice: timer set award/dave commitment=task +3m1s
				alice: timer cancel proposals/dave
				alice: timer set award/dave +3m1s`},
		)},
		{name: "late proposal after the timer", steps: then(cnCalled(),
			step{at: time.Minute, do: fire("alice", "proposals/dave"), want: `
				alice: timer cancel proposals/dave`},
			step{at: time.Minute + time.Second, do: say("dave", "propose", content{"price": 1}), want: `
				dave: error PE004 [solicited]: too late to send propose: the deadline 2026-03-01T09:01:00Z of state "solicited" passed at 2026-03-01T09:01:01Z`},
			step{at: time.Minute + time.Second, do: recv("alice", msg("propose", "dave", "alice", content{"price": 1})), want: `
				alice: error PE004 [dave@no-bid]: propose from "dave" is late: state "solicited" timed out and the session with dave ended with outcome "no-bid"`},
		)},
		{name: "unknown agent proposes", steps: then(cnCalled(),
			step{at: time.Second, do: recv("alice", msg("propose", "mallory", "alice", content{"price": 1})), want: `
				alice: error PE003: "mallory" is not a Participant of this conversation`},
		)},
		{name: "participant sends cfp", steps: then(cnCalled(),
			step{at: time.Second, do: recv("alice", msg("cfp", "bob", "alice", nil)), want: `
				alice: error PE001 [bob@solicited]: unexpected cfp from "bob": state "solicited" allows propose from Participant, refuse from Participant or not-understood from Participant`},
		)},
		{name: "participant sends cfp before the cfp", steps: []step{
			{do: start(), want: `
				alice: decide start [cfp]`},
			{at: time.Second, do: recv("alice", msg("cfp", "bob", "alice", nil)), want: `
				alice: error PE002 [bob@start]: "bob" sent cfp, which only Initiator sends here; state "start" expects no message: Initiator sends next`},
		}},
		{name: "inform before the award", steps: then(cnProposed(),
			step{at: 4 * time.Second, do: recv("alice", msg("inform", "bob", "alice", content{"done": true})), want: `
				alice: error PE001 [bob@proposed]: unexpected inform from "bob": state "proposed" expects no message: Initiator sends next`},
		)},
		{name: "accept before a proposal", steps: then(cnCalled(),
			step{at: time.Second, do: recv("bob", msg("accept-proposal", "alice", "bob", nil)), want: `
				bob: error PE001 [solicited]: unexpected accept-proposal from "alice": state "solicited" allows cancel from Initiator`},
		)},
		{name: "proposal after the session ended", steps: then(cnProposed(),
			step{at: 4 * time.Second, do: recv("alice", msg("propose", "dave", "alice", content{"price": 5})), want: `
				alice: error PE005 [dave@refused]: propose from "dave" arrived after the session with dave ended with outcome "refused"`},
		)},
		{name: "duplicate proposal", steps: then(cnCalled(),
			step{at: time.Second, do: say("bob", "propose", content{"price": 10}), want: `
				bob: send propose bob->alice rw=c1/bob#1 irt=c1/alice#1 {"price":10}
				bob: commitment task created bob->alice (propose)
				bob: timer set award commitment=task +2m1s
				bob: timer cancel proposals
				bob: timer set award +2m1s
				alice: commitment task/bob created bob->alice (propose)
				alice: timer set award/bob commitment=task +2m1s
				alice: timer cancel proposals/bob
				alice: timer set award/bob +2m1s`},
			step{at: 2 * time.Second, do: again(), want: `
				alice: error PE006 [bob@proposed]: propose from "bob" repeats the message already received; state "proposed" expects no message: Initiator sends next`},
		)},
		{name: "stale session decision", steps: then(cnProposed(),
			step{at: 4 * time.Second, do: answer("alice", "solicited/bob", decisionChoice("cancel")), want: `
				alice: error PE008: decision for ticket 100663297 is stale: the conversation moved on before it was answered`},
		)},
		{name: "unknown agent proposes observed", mode: engine.Observe, steps: then(cnCalled(),
			step{at: time.Second, do: recv("alice", msg("propose", "mallory", "alice", content{"price": 1})), want: `
				alice: error PE003: "mallory" is not a Participant of this conversation`},
		)},
		{name: "join choice not allowed", steps: then(cnProposed(),
			step{at: 4 * time.Second, do: join("alice", map[string]string{"bob": "inform-done", "carol": "reject-proposal"}), want: `
				alice: error PE009 [bob@proposed]: choice "inform-done" is not allowed in state "proposed"; the choices are accept-proposal, reject-proposal, cancel
				alice: send reject-proposal alice->carol rw=c1/alice#2 irt=c1/carol#1
				alice: timer cancel award/carol commitment=task
				alice: commitment task/carol released carol->alice (reject-proposal)
				alice: timer cancel award/carol
				carol: timer cancel award commitment=task
				carol: commitment task released carol->alice (reject-proposal)
				carol: timer cancel award
				carol: done rejected`},
		)},
		{name: "join answer missing a session", steps: then(cnProposed(),
			step{at: 4 * time.Second, do: join("alice", map[string]string{"bob": "accept-proposal"}), want: `
				alice: send accept-proposal alice->bob rw=c1/alice#2 irt=c1/bob#1
				alice: timer cancel award/bob commitment=task
				alice: commitment task/bob detached bob->alice (accept-proposal)
				alice: timer set result/bob commitment=task +5m4s
				alice: timer cancel award/bob
				alice: timer set result/bob +5m4s
				alice: decide awarded [cancel] peer=bob {"price":10}
				alice: error PE009: the join decision has no answer for "carol"; they keep waiting
				bob: timer cancel award commitment=task
				bob: commitment task detached bob->alice (accept-proposal)
				bob: timer set result commitment=task +5m4s
				bob: timer cancel award
				bob: timer set result +5m4s
				bob: decide awarded [inform-done inform-result failure]`},
		)},
		{name: "join answer for a session not waiting", steps: then(cnProposed(),
			step{at: 4 * time.Second, do: join("alice", map[string]string{"bob": "accept-proposal", "carol": "reject-proposal", "dave": "accept-proposal"}), want: `
				alice: send accept-proposal alice->bob rw=c1/alice#2 irt=c1/bob#1
				alice: timer cancel award/bob commitment=task
				alice: commitment task/bob detached bob->alice (accept-proposal)
				alice: timer set result/bob commitment=task +5m4s
				alice: timer cancel award/bob
				alice: timer set result/bob +5m4s
				alice: decide awarded [cancel] peer=bob {"price":10}
				alice: send reject-proposal alice->carol rw=c1/alice#3 irt=c1/carol#1
				alice: timer cancel award/carol commitment=task
				alice: commitment task/carol released carol->alice (reject-proposal)
				alice: timer cancel award/carol
				alice: error PE008: the join decision answers "dave", which is not waiting at the join
				bob: timer cancel award commitment=task
				bob: commitment task detached bob->alice (accept-proposal)
				bob: timer set result commitment=task +5m4s
				bob: timer cancel award
				bob: timer set result +5m4s
				bob: decide awarded [inform-done inform-result failure]
				carol: timer cancel award commitment=task
				carol: commitment task released carol->alice (reject-proposal)
				carol: timer cancel award
				carol: done rejected`},
		)},
		{name: "join answer for a session not waiting, missing one that is", steps: then(cnProposed(),
			step{at: 4 * time.Second, do: join("alice", map[string]string{"bob": "accept-proposal", "dave": "accept-proposal"}), want: `
				alice: send accept-proposal alice->bob rw=c1/alice#2 irt=c1/bob#1
				alice: timer cancel award/bob commitment=task
				alice: commitment task/bob detached bob->alice (accept-proposal)
				alice: timer set result/bob commitment=task +5m4s
				alice: timer cancel award/bob
				alice: timer set result/bob +5m4s
				alice: decide awarded [cancel] peer=bob {"price":10}
				alice: error PE008: the join decision answers "dave", which is not waiting at the join
				alice: error PE009: the join decision has no answer for "carol"; they keep waiting
				bob: timer cancel award commitment=task
				bob: commitment task detached bob->alice (accept-proposal)
				bob: timer set result commitment=task +5m4s
				bob: timer cancel award
				bob: timer set result +5m4s
				bob: decide awarded [inform-done inform-result failure]`},
		)},
		{name: "join answer for a peer with no session, missing one that is", steps: then(cnProposed(),
			step{at: 4 * time.Second, do: join("alice", map[string]string{"bob": "accept-proposal", "zed": "accept-proposal"}), want: `
				alice: send accept-proposal alice->bob rw=c1/alice#2 irt=c1/bob#1
				alice: timer cancel award/bob commitment=task
				alice: commitment task/bob detached bob->alice (accept-proposal)
				alice: timer set result/bob commitment=task +5m4s
				alice: timer cancel award/bob
				alice: timer set result/bob +5m4s
				alice: decide awarded [cancel] peer=bob {"price":10}
				alice: error PE008: the join decision answers "zed", which is not waiting at the join
				alice: error PE009: the join decision has no answer for "carol"; they keep waiting
				bob: timer cancel award commitment=task
				bob: commitment task detached bob->alice (accept-proposal)
				bob: timer set result commitment=task +5m4s
				bob: timer cancel award
				bob: timer set result +5m4s
				bob: decide awarded [inform-done inform-result failure]`},
		)},
		{name: "join answered twice", steps: then(cnAwarded(),
			step{at: 5 * time.Second, do: join("alice", map[string]string{"bob": "reject-proposal"}), want: `
				alice: error PE008: the join decision answers "bob", which is not waiting at the join`},
		)},
		{name: "join answered after the award timed out", steps: then(cnProposed(),
			step{at: 2*time.Minute + time.Second, do: seq(fire("alice", "award/bob"), fire("alice", "award/carol")), want: `
				alice: timer cancel award/bob
				alice: timer cancel award/bob commitment=task
				alice: commitment task/bob expired bob->alice (conversation ended)
				alice: timer cancel award/carol
				alice: timer cancel award/carol commitment=task
				alice: commitment task/carol expired carol->alice (conversation ended)
				alice: done expired=2,refused=1 (bob=expired carol=expired dave=refused)`},
			step{at: 2*time.Minute + 2*time.Second, do: join("alice", map[string]string{"bob": "accept-proposal", "carol": "reject-proposal"}), want: `
				alice: error PE008: the join decision answers "bob", which is not waiting at the join
				alice: error PE008: the join decision answers "carol", which is not waiting at the join`},
		)},
		{name: "reject whose reason is a number", steps: then(cnProposed(),
			step{at: 4 * time.Second, do: answer("alice", "join", decision.Answer{Sessions: map[string]decision.SessionAnswer{
				"bob": {Choice: "accept-proposal"}, "carol": {Choice: "reject-proposal", Content: content{"reason": 7}},
			}}), want: `
				alice: send accept-proposal alice->bob rw=c1/alice#2 irt=c1/bob#1
				alice: timer cancel award/bob commitment=task
				alice: commitment task/bob detached bob->alice (accept-proposal)
				alice: timer set result/bob commitment=task +5m4s
				alice: timer cancel award/bob
				alice: timer set result/bob +5m4s
				alice: decide awarded [cancel] peer=bob {"price":10}
				alice: error PE007 [carol@proposed]: the decision's content does not fit: field "reason" of "reject-proposal" is a number, not a string
				bob: timer cancel award commitment=task
				bob: commitment task detached bob->alice (accept-proposal)
				bob: timer set result commitment=task +5m4s
				bob: timer cancel award
				bob: timer set result +5m4s
				bob: decide awarded [inform-done inform-result failure]`},
		)},
		{name: "wrong in-reply-to", steps: then(cnCalled(),
			step{at: time.Second, do: recv("alice", with(msg("propose", "bob", "alice", nil), func(m *forms.Message) { m.InReplyTo = "c1#9" })), want: `
				alice: error PE010 [bob@solicited]: propose from "bob" is in reply to "c1#9", which was not sent to it (the last message sent had reply-with "c1/alice#1")`},
		)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			newConv(t, "fipa-contract-net", cast("fipa-contract-net", engine.WithMode(tt.mode))).run(t, tt.steps)
		})
	}
}

package engine_test

import (
	"testing"
	"time"

	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/forms"
)

// The FIPA Request policy, driven between alice (Initiator) and bob
// (Participant): what alice sends is delivered to bob's handler and the
// other way round, so each step shows both roles. Every case starts with
// alice's request, which gives bob 30 seconds to answer.

// requestOpened: alice asks bob to paint, answer within 30s.
func requestOpened() []step {
	return []step{
		{do: start(), want: `
			alice: decide start [request]`},
		{do: sayBy("alice", "request", content{"action": "paint"}, 30*time.Second), want: `
			alice: send request alice->bob rw=c1/alice#1 by=+30s {"action":"paint"}
			alice: timer set reply +30s
			alice: decide requested [cancel]
			bob: timer set reply +30s
			bob: decide requested [agree refuse not-understood inform-done inform-result failure] {"action":"paint"}`},
	}
}

// requestAgreed: and bob agrees a second later.
func requestAgreed() []step {
	return then(requestOpened(), step{at: time.Second, do: say("bob", "agree", nil), want: `
		bob: send agree bob->alice rw=c1/bob#1 irt=c1/alice#1
		bob: commitment perform created bob->alice (agree)
		bob: commitment perform detached bob->alice (agree)
		bob: timer set result commitment=perform +5m1s
		bob: timer cancel reply
		bob: timer set result +5m1s
		bob: decide agreed [inform-done inform-result failure] {"action":"paint"}
		alice: commitment perform created bob->alice (agree)
		alice: commitment perform detached bob->alice (agree)
		alice: timer set result commitment=perform +5m1s
		alice: timer cancel reply
		alice: timer set result +5m1s
		alice: decide agreed [cancel]`})
}

// then appends steps to a prefix.
func then(prefix []step, rest ...step) []step { return append(prefix, rest...) }

func TestRequestConversations(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
	}{
		{name: "agree then inform-done", steps: then(requestAgreed(),
			step{at: 2 * time.Second, do: say("bob", "inform-done", content{"done": true}), want: `
				bob: send inform bob->alice rw=c1/bob#2 irt=c1/alice#1 {"done":true}
				bob: timer cancel result commitment=perform
				bob: commitment perform discharged bob->alice (inform-done)
				bob: timer cancel result
				bob: done done
				alice: timer cancel result commitment=perform
				alice: commitment perform discharged bob->alice (inform-done)
				alice: timer cancel result
				alice: done done`},
		)},
		{name: "agree then inform-result", steps: then(requestAgreed(),
			step{at: 2 * time.Second, do: say("bob", "inform-result", content{"result": 42}), want: `
				bob: send inform bob->alice rw=c1/bob#2 irt=c1/alice#1 {"result":42}
				bob: timer cancel result commitment=perform
				bob: commitment perform discharged bob->alice (inform-result)
				bob: timer cancel result
				bob: done result
				alice: timer cancel result commitment=perform
				alice: commitment perform discharged bob->alice (inform-result)
				alice: timer cancel result
				alice: done result`},
		)},
		{name: "agree then failure", steps: then(requestAgreed(),
			step{at: 2 * time.Second, do: say("bob", "failure", content{"reason": "out of paint"}), want: `
				bob: send failure bob->alice rw=c1/bob#2 irt=c1/alice#1 {"reason":"out of paint"}
				bob: timer cancel result commitment=perform
				bob: commitment perform violated bob->alice (failure)
				bob: timer cancel result
				bob: done failed
				alice: timer cancel result commitment=perform
				alice: commitment perform violated bob->alice (failure)
				alice: timer cancel result
				alice: done failed`},
		)},
		{name: "inform-done without agree", steps: then(requestOpened(),
			step{at: time.Second, do: say("bob", "inform-done", content{"done": true}), want: `
				bob: send inform bob->alice rw=c1/bob#1 irt=c1/alice#1 {"done":true}
				bob: timer cancel reply
				bob: done done
				alice: timer cancel reply
				alice: done done`},
		)},
		{name: "inform-result without agree", steps: then(requestOpened(),
			step{at: time.Second, do: say("bob", "inform-result", content{"result": "blue"}), want: `
				bob: send inform bob->alice rw=c1/bob#1 irt=c1/alice#1 {"result":"blue"}
				bob: timer cancel reply
				bob: done result
				alice: timer cancel reply
				alice: done result`},
		)},
		{name: "failure without agree", steps: then(requestOpened(),
			step{at: time.Second, do: say("bob", "failure", nil), want: `
				bob: send failure bob->alice rw=c1/bob#1 irt=c1/alice#1
				bob: timer cancel reply
				bob: done failed
				alice: timer cancel reply
				alice: done failed`},
		)},
		{name: "refuse", steps: then(requestOpened(),
			step{at: time.Second, do: say("bob", "refuse", content{"reason": "busy"}), want: `
				bob: send refuse bob->alice rw=c1/bob#1 irt=c1/alice#1 {"reason":"busy"}
				bob: timer cancel reply
				bob: done refused
				alice: timer cancel reply
				alice: done refused`},
		)},
		{name: "not-understood", steps: then(requestOpened(),
			step{at: time.Second, do: say("bob", "not-understood", content{"reason": "paint what?"}), want: `
				bob: send not-understood bob->alice rw=c1/bob#1 irt=c1/alice#1 {"reason":"paint what?"}
				bob: timer cancel reply
				bob: done not-understood
				alice: timer cancel reply
				alice: done not-understood`},
		)},
		{name: "cancel before agree answered by inform-done", steps: then(requestOpened(),
			step{at: time.Second, do: say("alice", "cancel", nil), want: `
				alice: send cancel alice->bob rw=c1/alice#2
				alice: timer cancel reply
				alice: timer set cancel-reply +31s
				bob: timer cancel reply
				bob: timer set cancel-reply +31s
				bob: decide cancelling [inform-done failure inform-result refuse agree not-understood]`},
			step{at: 2 * time.Second, do: say("bob", "inform-done", content{"done": true}), want: `
				bob: send inform bob->alice rw=c1/bob#1 irt=c1/alice#2 {"done":true}
				bob: timer cancel cancel-reply
				bob: done cancelled
				alice: timer cancel cancel-reply
				alice: done cancelled`},
		)},
		{name: "cancel before agree answered by failure", steps: then(requestOpened(),
			step{at: time.Second, do: say("alice", "cancel", nil), want: `
				alice: send cancel alice->bob rw=c1/alice#2
				alice: timer cancel reply
				alice: timer set cancel-reply +31s
				bob: timer cancel reply
				bob: timer set cancel-reply +31s
				bob: decide cancelling [inform-done failure inform-result refuse agree not-understood]`},
			step{at: 2 * time.Second, do: say("bob", "failure", content{"reason": "already painted"}), want: `
				bob: send failure bob->alice rw=c1/bob#1 irt=c1/alice#2 {"reason":"already painted"}
				bob: timer cancel cancel-reply
				bob: done cancel-failed
				alice: timer cancel cancel-reply
				alice: done cancel-failed`},
		)},
		{name: "cancel after agree answered by inform-done", steps: then(requestAgreed(),
			step{at: 2 * time.Second, do: say("alice", "cancel", nil), want: `
				alice: send cancel alice->bob rw=c1/alice#2 irt=c1/bob#1
				alice: timer cancel result commitment=perform
				alice: commitment perform released bob->alice (cancel)
				alice: timer cancel result
				alice: timer set cancel-reply +32s
				bob: timer cancel result commitment=perform
				bob: commitment perform released bob->alice (cancel)
				bob: timer cancel result
				bob: timer set cancel-reply +32s
				bob: decide cancelling [inform-done failure inform-result]`},
			step{at: 3 * time.Second, do: say("bob", "inform-done", nil), want: `
				bob: send inform bob->alice rw=c1/bob#2 irt=c1/alice#2
				bob: timer cancel cancel-reply
				bob: done cancelled
				alice: timer cancel cancel-reply
				alice: done cancelled`},
		)},
		{name: "cancel after agree answered by failure", steps: then(requestAgreed(),
			step{at: 2 * time.Second, do: say("alice", "cancel", nil), want: `
				alice: send cancel alice->bob rw=c1/alice#2 irt=c1/bob#1
				alice: timer cancel result commitment=perform
				alice: commitment perform released bob->alice (cancel)
				alice: timer cancel result
				alice: timer set cancel-reply +32s
				bob: timer cancel result commitment=perform
				bob: commitment perform released bob->alice (cancel)
				bob: timer cancel result
				bob: timer set cancel-reply +32s
				bob: decide cancelling [inform-done failure inform-result]`},
			step{at: 3 * time.Second, do: say("bob", "failure", content{"reason": "too late"}), want: `
				bob: send failure bob->alice rw=c1/bob#2 irt=c1/alice#2 {"reason":"too late"}
				bob: timer cancel cancel-reply
				bob: done cancel-failed
				alice: timer cancel cancel-reply
				alice: done cancel-failed`},
		)},
		{name: "agree crosses cancel", steps: then(requestOpened(),
			step{at: time.Second, do: hold("alice", "cancel", nil), want: `
				alice: send cancel alice->bob rw=c1/alice#2
				alice: timer cancel reply
				alice: timer set cancel-reply +31s`},
			step{at: time.Second, do: say("bob", "agree", nil), want: `
				bob: send agree bob->alice rw=c1/bob#1 irt=c1/alice#1
				bob: commitment perform created bob->alice (agree)
				bob: commitment perform detached bob->alice (agree)
				bob: timer set result commitment=perform +5m1s
				bob: timer cancel reply
				bob: timer set result +5m1s
				bob: decide agreed [inform-done inform-result failure] {"action":"paint"}
				alice: timer cancel cancel-reply
				alice: timer set cancel-reply +31s`},
			step{at: 2 * time.Second, do: deliverHeld(), want: `
				bob: timer cancel result commitment=perform
				bob: commitment perform released bob->alice (cancel)
				bob: timer cancel result
				bob: timer set cancel-reply +32s
				bob: decide cancelling [inform-done failure inform-result]`},
			step{at: 3 * time.Second, do: say("bob", "inform-done", content{"done": true}), want: `
				bob: send inform bob->alice rw=c1/bob#2 irt=c1/alice#2 {"done":true}
				bob: timer cancel cancel-reply
				bob: done cancelled
				alice: timer cancel cancel-reply
				alice: done cancelled`},
		)},
		{name: "inform-result crosses cancel", steps: then(requestOpened(),
			step{at: time.Second, do: hold("alice", "cancel", nil), want: `
				alice: send cancel alice->bob rw=c1/alice#2
				alice: timer cancel reply
				alice: timer set cancel-reply +31s`},
			step{at: time.Second, do: say("bob", "inform-result", content{"result": "blue"}), want: `
				bob: send inform bob->alice rw=c1/bob#1 irt=c1/alice#1 {"result":"blue"}
				bob: timer cancel reply
				bob: done result
				alice: timer cancel cancel-reply
				alice: done result`},
			step{at: 2 * time.Second, do: deliverHeld(), want: `
				bob: error PE005 [result]: cancel from "alice" arrived after the conversation ended with outcome "result"`},
		)},
		{name: "no answer to the request", steps: then(requestOpened(),
			step{at: 30 * time.Second, do: fireEach("reply", "alice", "bob"), want: `
				alice: timer cancel reply
				alice: done timeout
				bob: timer cancel reply
				bob: done timeout`},
		)},
		{name: "no result after agree", steps: then(requestAgreed(),
			step{at: 5*time.Minute + time.Second, do: fireEach("result commitment=perform", "alice", "bob"), want: `
				alice: timer cancel result commitment=perform
				alice: commitment perform violated bob->alice (deadline)
				bob: timer cancel result commitment=perform
				bob: commitment perform violated bob->alice (deadline)`},
			step{at: 5*time.Minute + time.Second, do: fireEach("result", "alice", "bob"), want: `
				alice: timer cancel result
				alice: done timeout
				bob: timer cancel result
				bob: done timeout`},
		)},
		{name: "no answer to the cancel", steps: then(requestAgreed(),
			step{at: 2 * time.Second, do: say("alice", "cancel", nil), want: `
				alice: send cancel alice->bob rw=c1/alice#2 irt=c1/bob#1
				alice: timer cancel result commitment=perform
				alice: commitment perform released bob->alice (cancel)
				alice: timer cancel result
				alice: timer set cancel-reply +32s
				bob: timer cancel result commitment=perform
				bob: commitment perform released bob->alice (cancel)
				bob: timer cancel result
				bob: timer set cancel-reply +32s
				bob: decide cancelling [inform-done failure inform-result]`},
			step{at: 32 * time.Second, do: fireEach("cancel-reply", "alice", "bob"), want: `
				alice: timer cancel cancel-reply
				alice: done timeout
				bob: timer cancel cancel-reply
				bob: done timeout`},
		)},
		{name: "a stale timer is ignored", steps: then(requestAgreed(),
			step{at: 30 * time.Second, do: fireEach("reply", "alice", "bob"), want: ``},
		)},
		{name: "a reply without in-reply-to is accepted", steps: then(requestOpened(),
			step{at: time.Second, do: recv("alice", msg("agree", "bob", "alice", nil)), want: `
				alice: commitment perform created bob->alice (agree)
				alice: commitment perform detached bob->alice (agree)
				alice: timer set result commitment=perform +5m1s
				alice: timer cancel reply
				alice: timer set result +5m1s
				alice: decide agreed [cancel]`},
		)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			newConv(t, "fipa-request", cast("fipa-request")).run(t, tt.steps)
		})
	}
}

func TestRequestViolations(t *testing.T) {
	agreeFromBob := with(msg("agree", "bob", "alice", nil), func(m *forms.Message) { m.InReplyTo = "c1/alice#1" })
	tests := []struct {
		name  string
		mode  engine.Mode
		steps []step
	}{
		{name: "inform before request", steps: []step{
			{do: start(), want: `
				alice: decide start [request]`},
			{at: time.Second, do: recv("alice", msg("inform", "bob", "alice", content{"done": true})), want: `
				alice: error PE001 [start]: unexpected inform from "bob": state "start" expects no message: Initiator sends next`},
		}},
		{name: "cancel before request", steps: []step{
			{do: start(), want: `
				alice: decide start [request]`},
			{at: time.Second, do: recv("bob", msg("cancel", "alice", "bob", nil)), want: `
				bob: error PE001 [start]: unexpected cancel from "alice": state "start" allows request from Initiator`},
		}},
		{name: "participant sends request", steps: []step{
			{do: start(), want: `
				alice: decide start [request]`},
			{at: time.Second, do: recv("alice", msg("request", "bob", "alice", nil)), want: `
				alice: error PE002 [start]: "bob" sent request, which only Initiator sends here; state "start" expects no message: Initiator sends next`},
		}},
		{name: "initiator sends agree", steps: then(requestOpened(),
			step{at: time.Second, do: recv("bob", msg("agree", "alice", "bob", nil)), want: `
				bob: error PE002 [requested]: "alice" sent agree, which only Participant sends here; state "requested" allows cancel from Initiator`},
		)},
		{name: "unknown agent agrees", steps: then(requestOpened(),
			step{at: time.Second, do: recv("alice", msg("agree", "mallory", "alice", nil)), want: `
				alice: error PE003 [requested]: "mallory" sent agree, but Participant is played by "bob" in this conversation`},
		)},
		{name: "unknown agent agrees observed", mode: engine.Observe, steps: then(requestOpened(),
			step{at: time.Second, do: recv("alice", msg("agree", "mallory", "alice", nil)), want: `
				alice: error PE003 [requested] applied: "mallory" sent agree, but Participant is played by "bob" in this conversation
				alice: commitment perform created bob->alice (agree)
				alice: commitment perform detached bob->alice (agree)
				alice: timer set result commitment=perform +5m1s
				alice: timer cancel reply
				alice: timer set result +5m1s
				alice: decide agreed [cancel]`},
		)},
		{name: "unknown agent cancels", steps: then(requestOpened(),
			step{at: time.Second, do: recv("bob", msg("cancel", "mallory", "bob", nil)), want: `
				bob: error PE003 [requested]: "mallory" sent cancel, but Initiator is played by "alice" in this conversation`},
		)},
		{name: "late agree before the timer", steps: then(requestOpened(),
			step{at: 31 * time.Second, do: say("bob", "agree", nil), want: `
				bob: error PE004 [requested]: too late to send agree: the deadline 2026-03-01T09:00:30Z of state "requested" passed at 2026-03-01T09:00:31Z`},
			step{at: 31 * time.Second, do: recv("alice", msg("agree", "bob", "alice", nil)), want: `
				alice: error PE004 [requested]: agree from "bob" arrived at 2026-03-01T09:00:31Z, after the deadline 2026-03-01T09:00:30Z of state "requested"`},
			step{at: 31 * time.Second, do: fire("alice", "reply"), want: `
				alice: timer cancel reply
				alice: done timeout`},
		)},
		{name: "late agree before the timer observed", mode: engine.Observe, steps: then(requestOpened(),
			step{at: 31 * time.Second, do: say("bob", "agree", nil), want: `
				bob: send agree bob->alice rw=c1/bob#1 irt=c1/alice#1
				bob: commitment perform created bob->alice (agree)
				bob: commitment perform detached bob->alice (agree)
				bob: timer set result commitment=perform +5m31s
				bob: timer cancel reply
				bob: timer set result +5m31s
				bob: decide agreed [inform-done inform-result failure] {"action":"paint"}
				alice: error PE004 [requested] applied: agree from "bob" arrived at 2026-03-01T09:00:31Z, after the deadline 2026-03-01T09:00:30Z of state "requested"
				alice: commitment perform created bob->alice (agree)
				alice: commitment perform detached bob->alice (agree)
				alice: timer set result commitment=perform +5m31s
				alice: timer cancel reply
				alice: timer set result +5m31s
				alice: decide agreed [cancel]`},
			step{at: 31 * time.Second, do: fire("alice", "reply"), want: ``},
		)},
		{name: "late agree after the timer", steps: then(requestOpened(),
			step{at: 30 * time.Second, do: fire("alice", "reply"), want: `
				alice: timer cancel reply
				alice: done timeout`},
			step{at: 31 * time.Second, do: say("bob", "agree", nil), want: `
				bob: error PE004 [requested]: too late to send agree: the deadline 2026-03-01T09:00:30Z of state "requested" passed at 2026-03-01T09:00:31Z`},
			step{at: 31 * time.Second, do: recv("alice", msg("agree", "bob", "alice", nil)), want: `
				alice: error PE004 [timed-out]: agree from "bob" is late: state "requested" timed out and the conversation ended with outcome "timeout"`},
		)},
		{name: "late agree after the timer observed", mode: engine.Observe, steps: then(requestOpened(),
			step{at: 30 * time.Second, do: fire("alice", "reply"), want: `
				alice: timer cancel reply
				alice: done timeout`},
			step{at: 31 * time.Second, do: say("bob", "agree", nil), want: `
				bob: send agree bob->alice rw=c1/bob#1 irt=c1/alice#1
				bob: commitment perform created bob->alice (agree)
				bob: commitment perform detached bob->alice (agree)
				bob: timer set result commitment=perform +5m31s
				bob: timer cancel reply
				bob: timer set result +5m31s
				bob: decide agreed [inform-done inform-result failure] {"action":"paint"}
				alice: error PE004 [timed-out]: agree from "bob" is late: state "requested" timed out and the conversation ended with outcome "timeout"`},
		)},
		{name: "reply after the end", steps: then(requestOpened(),
			step{at: time.Second, do: say("bob", "refuse", nil), want: `
				bob: send refuse bob->alice rw=c1/bob#1 irt=c1/alice#1
				bob: timer cancel reply
				bob: done refused
				alice: timer cancel reply
				alice: done refused`},
			step{at: 2 * time.Second, do: recv("alice", agreeFromBob), want: `
				alice: error PE005 [refused]: agree from "bob" arrived after the conversation ended with outcome "refused"`},
		)},
		{name: "cancel after the end", steps: then(requestOpened(),
			step{at: time.Second, do: say("bob", "inform-done", nil), want: `
				bob: send inform bob->alice rw=c1/bob#1 irt=c1/alice#1
				bob: timer cancel reply
				bob: done done
				alice: timer cancel reply
				alice: done done`},
			step{at: 2 * time.Second, do: recv("bob", msg("cancel", "alice", "bob", nil)), want: `
				bob: error PE005 [done]: cancel from "alice" arrived after the conversation ended with outcome "done"`},
		)},
		{name: "duplicate agree", steps: then(requestAgreed(),
			step{at: 2 * time.Second, do: again(), want: `
				alice: error PE006 [agreed]: agree from "bob" repeats the message already received; state "agreed" allows inform-done from Participant, inform-result from Participant or failure from Participant`},
		)},
		{name: "duplicate inform after the end", steps: then(requestOpened(),
			step{at: time.Second, do: say("bob", "inform-done", content{"done": true}), want: `
				bob: send inform bob->alice rw=c1/bob#1 irt=c1/alice#1 {"done":true}
				bob: timer cancel reply
				bob: done done
				alice: timer cancel reply
				alice: done done`},
			step{at: 2 * time.Second, do: again(), want: `
				alice: error PE006 [done]: inform from "bob" repeats a message already received; the conversation has ended with outcome "done"`},
		)},
		{name: "inform without result is inform-done", steps: then(requestOpened(),
			step{at: time.Second, do: recv("alice", msg("inform", "bob", "alice", content{"painted": "blue"})), want: `
				alice: timer cancel reply
				alice: done done`},
		)},
		{name: "inform-done whose done is a string", steps: then(requestOpened(),
			step{at: time.Second, do: recv("alice", msg("inform", "bob", "alice", content{"done": "yes"})), want: `
				alice: error PE007 [requested]: field "done" of "inform-done" is a string, not a bool`},
		)},
		{name: "refuse whose reason is a number", steps: then(requestOpened(),
			step{at: time.Second, do: recv("alice", msg("refuse", "bob", "alice", content{"reason": 42})), want: `
				alice: error PE007 [requested]: field "reason" of "refuse" is a number, not a string`},
		)},
		{name: "refuse whose reason is a number observed", mode: engine.Observe, steps: then(requestOpened(),
			step{at: time.Second, do: recv("alice", msg("refuse", "bob", "alice", content{"reason": 42})), want: `
				alice: error PE007 [requested] applied: field "reason" of "refuse" is a number, not a string
				alice: timer cancel reply
				alice: done refused`},
		)},
		{name: "deciding a refuse whose reason is a number", steps: then(requestOpened(),
			step{at: time.Second, do: say("bob", "refuse", content{"reason": 42}), want: `
				bob: error PE007 [requested]: the decision's content does not fit: field "reason" of "refuse" is a number, not a string`},
		)},
		// Content with a field no message type of the state declares is
		// checked and validated the other way (iterating over it): the
		// same errors.
		{name: "refuse whose reason is a number, with an undeclared field", steps: then(requestOpened(),
			step{at: time.Second, do: recv("alice", msg("refuse", "bob", "alice", content{"reason": 42, "note": "x"})), want: `
				alice: error PE007 [requested]: field "reason" of "refuse" is a number, not a string`},
		)},
		{name: "deciding a refuse whose reason is a number, with an undeclared field", steps: then(requestOpened(),
			step{at: time.Second, do: say("bob", "refuse", content{"reason": 42, "note": "x"}), want: `
				bob: error PE007 [requested]: the decision's content does not fit: field "reason" of "refuse" is a number, not a string`},
		)},
		{name: "stale decision ticket", steps: then(requestAgreed(),
			step{at: 2 * time.Second, do: answer("alice", "requested", decisionChoice("cancel")), want: `
				alice: error PE008: decision for ticket 67108865 is stale: the conversation moved on before it was answered`},
		)},
		{name: "decision after the end", steps: then(requestOpened(),
			step{at: time.Second, do: say("bob", "refuse", nil), want: `
				bob: send refuse bob->alice rw=c1/bob#1 irt=c1/alice#1
				bob: timer cancel reply
				bob: done refused
				alice: timer cancel reply
				alice: done refused`},
			step{at: 2 * time.Second, do: say("alice", "cancel", nil), want: `
				alice: error PE008: decision for ticket 67108865 is stale: the conversation moved on before it was answered`},
		)},
		{name: "decision with an unknown ticket", steps: then(requestOpened(),
			step{at: time.Second, do: decideTicket("alice", 12345, "cancel"), want: `
				alice: error PE008: decision for ticket 12345 is stale: the conversation moved on before it was answered`},
		)},
		{name: "choice not allowed", steps: then(requestOpened(),
			step{at: time.Second, do: say("bob", "cancel", nil), want: `
				bob: error PE009 [requested]: choice "cancel" is not allowed in state "requested"; the choices are agree, refuse, not-understood, inform-done, inform-result, failure`},
			step{at: time.Second, do: say("alice", "agree", nil), want: `
				alice: error PE009 [requested]: choice "agree" is not allowed in state "requested"; the choices are cancel`},
		)},
		{name: "no choice yet keeps the decision open", steps: then(requestOpened(),
			step{at: time.Second, do: say("alice", "", nil), want: ``},
			step{at: 2 * time.Second, do: say("alice", "cancel", nil), want: `
				alice: send cancel alice->bob rw=c1/alice#2
				alice: timer cancel reply
				alice: timer set cancel-reply +32s
				bob: timer cancel reply
				bob: timer set cancel-reply +32s
				bob: decide cancelling [inform-done failure inform-result refuse agree not-understood]`},
		)},
		{name: "wrong in-reply-to", steps: then(requestOpened(),
			step{at: time.Second, do: recv("alice", with(agreeFromBob, func(m *forms.Message) { m.InReplyTo = "c1#7" })), want: `
				alice: error PE010 [requested]: agree from "bob" is in reply to "c1#7", which was not sent to it (the last message sent had reply-with "c1/alice#1")`},
		)},
		{name: "wrong in-reply-to observed", mode: engine.Observe, steps: then(requestOpened(),
			step{at: time.Second, do: recv("alice", with(agreeFromBob, func(m *forms.Message) { m.InReplyTo = "c1#7" })), want: `
				alice: error PE010 [requested] applied: agree from "bob" is in reply to "c1#7", which was not sent to it (the last message sent had reply-with "c1/alice#1")
				alice: commitment perform created bob->alice (agree)
				alice: commitment perform detached bob->alice (agree)
				alice: timer set result commitment=perform +5m1s
				alice: timer cancel reply
				alice: timer set result +5m1s
				alice: decide agreed [cancel]`},
		)},
		{name: "wrong conversation id", steps: then(requestOpened(),
			step{at: time.Second, do: recv("alice", with(agreeFromBob, func(m *forms.Message) { m.ConversationID = "c2" })), want: `
				alice: error PE011: message for conversation "c2" reached conversation "c1"`},
		)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			newConv(t, "fipa-request", cast("fipa-request", engine.WithMode(tt.mode))).run(t, tt.steps)
		})
	}
}

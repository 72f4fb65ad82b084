package bench

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/qmuntal/stateless"
)

// qmuntal/stateless is written as its README shows: NewStateMachineWithMode
// (NewStateMachine is the queued mode), Configure(state).Permit(trigger,
// destination, guards...), SetTriggerParameters for a trigger that takes
// an argument, and Fire. States and triggers are strings. An unhandled
// trigger returns the error of the default OnUnhandledTrigger action.
//
// A StateMachine holds its own configuration, so a conversation builds
// its machines from scratch: stateless has no immutable definition to
// share between conversations. (One machine with external state storage
// that reads the state from the context could serve many conversations;
// the README does not present that use, so it is not measured.)

func statelessImpl(name string) impl {
	mode := stateless.FiringImmediate
	if name == libStatelessQueued {
		mode = stateless.FiringQueued
	}
	return impl{
		name: name,
		pingPong: func(b *testing.B) {
			benchStatelessPingPong(b, newStatelessPingPong(mode), nil)
		},
		guard: func(b *testing.B) {
			benchStatelessPingPong(b, newStatelessGuard(mode), guardOK)
		},
		request:  func(b *testing.B) { benchStatelessRequest(b, mode) },
		rejected: func(b *testing.B) { benchStatelessRejected(b, mode) },
		live: func(b *testing.B) {
			benchLive(b, func(string) (*stateless.StateMachine, error) { return newStatelessInitiator(mode) }, statelessState)
		},
		testPingPong: func(t *testing.T) { testStatelessPingPong(t, newStatelessPingPong(mode), nil) },
		testGuard:    func(t *testing.T) { testStatelessGuard(t, mode) },
		testRequest:  func(t *testing.T) { testStatelessRequest(t, mode) },
		testRejected: func(t *testing.T) { testStatelessRejected(t, mode) },
		testLive: func(t *testing.T) {
			testLive(t, func(string) (*stateless.StateMachine, error) { return newStatelessInitiator(mode) }, statelessState)
		},
	}
}

func statelessState(sm *stateless.StateMachine) string { return sm.MustState().(string) }

func newStatelessPingPong(mode stateless.FiringMode) *stateless.StateMachine {
	sm := stateless.NewStateMachineWithMode(stS0, mode)
	sm.Configure(stS0).
		Permit(trPing, stS1).
		Permit(trStop, stEnd)
	sm.Configure(stS1).
		Permit(trPong, stS0)
	return sm
}

// positive is the guard: the trigger's argument is greater than zero.
func positive(_ context.Context, args ...any) bool {
	return args[0].(int) > 0
}

// newStatelessGuard is the ping-pong machine whose ping and pong take an
// int argument and are guarded by positive (stateless's Permit takes the
// guards that .NET's PermitIf does).
func newStatelessGuard(mode stateless.FiringMode) *stateless.StateMachine {
	sm := stateless.NewStateMachineWithMode(stS0, mode)
	sm.SetTriggerParameters(trPing, reflect.TypeOf(0))
	sm.SetTriggerParameters(trPong, reflect.TypeOf(0))
	sm.Configure(stS0).
		Permit(trPing, stS1, positive).
		Permit(trStop, stEnd)
	sm.Configure(stS1).
		Permit(trPong, stS0, positive)
	return sm
}

// fire fires trigger with arg, if any.
func fire(sm *stateless.StateMachine, trigger string, arg any) error {
	if arg == nil {
		return sm.Fire(trigger)
	}
	return sm.Fire(trigger, arg)
}

func benchStatelessPingPong(b *testing.B, sm *stateless.StateMachine, arg any) {
	triggers := [2]string{trPing, trPong}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := fire(sm, triggers[i&1], arg); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func testStatelessPingPong(t *testing.T, sm *stateless.StateMachine, arg any) {
	triggers := [2]string{trPing, trPong}
	for i, want := range []string{stS1, stS0, stS1, stS0} {
		if err := fire(sm, triggers[i&1], arg); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := statelessState(sm); got != want {
			t.Fatalf("step %d: state %q, want %q", i, got, want)
		}
	}
}

func testStatelessGuard(t *testing.T, mode stateless.FiringMode) {
	testStatelessPingPong(t, newStatelessGuard(mode), guardOK)
	sm := newStatelessGuard(mode)
	err := sm.Fire(trPing, guardBlocked)
	if err == nil {
		t.Fatal("ping with n = 0 passed the guard")
	}
	if !strings.Contains(err.Error(), "guard") {
		t.Fatalf("error %q does not say a guard blocked", err)
	}
	if got := statelessState(sm); got != stS0 {
		t.Fatalf("blocked ping moved the state to %q", got)
	}
}

func benchStatelessRejected(b *testing.B, mode stateless.FiringMode) {
	sm := newStatelessPingPong(mode)
	b.ReportAllocs()
	for b.Loop() {
		if err := sm.Fire(trPong); err == nil {
			b.Fatal("pong in s0 was accepted")
		}
	}
}

func testStatelessRejected(t *testing.T, mode stateless.FiringMode) {
	sm := newStatelessPingPong(mode)
	if err := sm.Fire(trPong); err == nil {
		t.Fatal("pong in s0 was accepted")
	}
	if got := statelessState(sm); got != stS0 {
		t.Fatalf("rejected pong moved the state to %q", got)
	}
}

// newStatelessRequest returns the machine of one role of a FIPA Request
// conversation: the happy path of fipa-request (both roles see the same
// states and messages).
func newStatelessRequest(mode stateless.FiringMode) *stateless.StateMachine {
	sm := stateless.NewStateMachineWithMode(stStart, mode)
	sm.Configure(stStart).
		Permit(trRequest, stRequested)
	sm.Configure(stRequested).
		Permit(trAgree, stAgreed)
	sm.Configure(stAgreed).
		Permit(trInformResult, stResult)
	return sm
}

// statelessConversation runs one conversation: both roles' machines are
// built, and each message fires on the sender's and the receiver's.
func statelessConversation(mode stateless.FiringMode) (ini, par *stateless.StateMachine, err error) {
	ini, par = newStatelessRequest(mode), newStatelessRequest(mode)
	for _, step := range [...]struct {
		sm      *stateless.StateMachine
		trigger string
	}{
		{ini, trRequest}, {par, trRequest},
		{par, trAgree}, {ini, trAgree},
		{par, trInformResult}, {ini, trInformResult},
	} {
		if err := step.sm.Fire(step.trigger); err != nil {
			return nil, nil, err
		}
	}
	return ini, par, nil
}

func benchStatelessRequest(b *testing.B, mode stateless.FiringMode) {
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := statelessConversation(mode); err != nil {
			b.Fatal(err)
		}
	}
}

func testStatelessRequest(t *testing.T, mode stateless.FiringMode) {
	ini, par, err := statelessConversation(mode)
	if err != nil {
		t.Fatal(err)
	}
	if statelessState(ini) != stResult || statelessState(par) != stResult {
		t.Fatalf("final states %q and %q, want %q", statelessState(ini), statelessState(par), stResult)
	}
}

// newStatelessInitiator returns an initiator's machine that has sent its
// request.
func newStatelessInitiator(mode stateless.FiringMode) (*stateless.StateMachine, error) {
	sm := newStatelessRequest(mode)
	return sm, sm.Fire(trRequest)
}

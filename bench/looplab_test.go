package bench

import (
	"context"
	"errors"
	"testing"

	"github.com/looplab/fsm"
)

// looplab/fsm is written as its README shows: fsm.NewFSM(initial,
// fsm.Events{...}, fsm.Callbacks{...}) and Event(ctx, name, args...),
// with a before_event callback that cancels the event as the guard. An
// event the current state does not allow returns an InvalidEventError.
//
// NewFSM builds each machine's transition and callback maps from the
// event list, so a conversation builds its machines from scratch: looplab
// has no definition to share between conversations.

var looplabImpl = impl{
	name:     libLooplab,
	pingPong: func(b *testing.B) { benchLooplabPingPong(b, newLooplabPingPong(), nil) },
	guard:    func(b *testing.B) { benchLooplabPingPong(b, newLooplabGuard(), guardOK) },
	request:  benchLooplabRequest,
	rejected: benchLooplabRejected,
	live: func(b *testing.B) {
		benchLive(b, func(string) (*fsm.FSM, error) { return newLooplabInitiator() }, (*fsm.FSM).Current)
	},
	testPingPong: func(t *testing.T) { testLooplabPingPong(t, newLooplabPingPong(), nil) },
	testGuard:    testLooplabGuard,
	testRequest:  testLooplabRequest,
	testRejected: testLooplabRejected,
	testLive: func(t *testing.T) {
		testLive(t, func(string) (*fsm.FSM, error) { return newLooplabInitiator() }, (*fsm.FSM).Current)
	},
}

var pingPongEvents = fsm.Events{
	{Name: trPing, Src: []string{stS0}, Dst: stS1},
	{Name: trPong, Src: []string{stS1}, Dst: stS0},
	{Name: trStop, Src: []string{stS0}, Dst: stEnd},
}

func newLooplabPingPong() *fsm.FSM {
	return fsm.NewFSM(stS0, pingPongEvents, fsm.Callbacks{})
}

var errNotPositive = errors.New("n is not positive")

// newLooplabGuard is the ping-pong machine with a before_event callback
// that cancels a ping or pong whose argument is not positive (stop has
// no argument and no guard).
func newLooplabGuard() *fsm.FSM {
	return fsm.NewFSM(stS0, pingPongEvents, fsm.Callbacks{
		"before_event": func(_ context.Context, e *fsm.Event) {
			if len(e.Args) > 0 && e.Args[0].(int) <= 0 {
				e.Cancel(errNotPositive)
			}
		},
	})
}

// event fires name with arg, if any.
func event(ctx context.Context, f *fsm.FSM, name string, arg any) error {
	if arg == nil {
		return f.Event(ctx, name)
	}
	return f.Event(ctx, name, arg)
}

func benchLooplabPingPong(b *testing.B, f *fsm.FSM, arg any) {
	ctx := context.Background()
	names := [2]string{trPing, trPong}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := event(ctx, f, names[i&1], arg); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func testLooplabPingPong(t *testing.T, f *fsm.FSM, arg any) {
	ctx := context.Background()
	names := [2]string{trPing, trPong}
	for i, want := range []string{stS1, stS0, stS1, stS0} {
		if err := event(ctx, f, names[i&1], arg); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := f.Current(); got != want {
			t.Fatalf("step %d: state %q, want %q", i, got, want)
		}
	}
}

func testLooplabGuard(t *testing.T) {
	testLooplabPingPong(t, newLooplabGuard(), guardOK)
	f := newLooplabGuard()
	err := f.Event(context.Background(), trPing, guardBlocked)
	var canceled fsm.CanceledError
	if !errors.As(err, &canceled) || !errors.Is(canceled.Err, errNotPositive) {
		t.Fatalf("ping with n = 0: error %v, want the guard's cancellation", err)
	}
	if got := f.Current(); got != stS0 {
		t.Fatalf("blocked ping moved the state to %q", got)
	}
}

func benchLooplabRejected(b *testing.B) {
	f := newLooplabPingPong()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := f.Event(ctx, trPong); err == nil {
			b.Fatal("pong in s0 was accepted")
		}
	}
}

func testLooplabRejected(t *testing.T) {
	f := newLooplabPingPong()
	err := f.Event(context.Background(), trPong)
	var invalid fsm.InvalidEventError
	if !errors.As(err, &invalid) {
		t.Fatalf("pong in s0: error %v, want an InvalidEventError", err)
	}
	if got := f.Current(); got != stS0 {
		t.Fatalf("rejected pong moved the state to %q", got)
	}
}

// newLooplabRequest returns the machine of one role of a FIPA Request
// conversation: the happy path of fipa-request (both roles see the same
// states and messages).
func newLooplabRequest() *fsm.FSM {
	return fsm.NewFSM(stStart, fsm.Events{
		{Name: trRequest, Src: []string{stStart}, Dst: stRequested},
		{Name: trAgree, Src: []string{stRequested}, Dst: stAgreed},
		{Name: trInformResult, Src: []string{stAgreed}, Dst: stResult},
	}, fsm.Callbacks{})
}

// looplabConversation runs one conversation: both roles' machines are
// built, and each message fires on the sender's and the receiver's.
func looplabConversation(ctx context.Context) (ini, par *fsm.FSM, err error) {
	ini, par = newLooplabRequest(), newLooplabRequest()
	for _, step := range [...]struct {
		f    *fsm.FSM
		name string
	}{
		{ini, trRequest}, {par, trRequest},
		{par, trAgree}, {ini, trAgree},
		{par, trInformResult}, {ini, trInformResult},
	} {
		if err := step.f.Event(ctx, step.name); err != nil {
			return nil, nil, err
		}
	}
	return ini, par, nil
}

func benchLooplabRequest(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := looplabConversation(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func testLooplabRequest(t *testing.T) {
	ini, par, err := looplabConversation(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ini.Current() != stResult || par.Current() != stResult {
		t.Fatalf("final states %q and %q, want %q", ini.Current(), par.Current(), stResult)
	}
}

// newLooplabInitiator returns an initiator's machine that has sent its
// request.
func newLooplabInitiator() (*fsm.FSM, error) {
	f := newLooplabRequest()
	return f, f.Event(context.Background(), trRequest)
}

package engine

import (
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// setTime writes a time.Time through timeWords, which must therefore be
// its layout: the same fields, of the same kinds, at the same offsets.
func TestTimeWordsIsTheLayoutOfTime(t *testing.T) {
	tt, tw := reflect.TypeFor[time.Time](), reflect.TypeFor[timeWords]()
	require.Equal(t, tw.Size(), tt.Size())
	require.Equal(t, tw.NumField(), tt.NumField())
	for k := range tw.NumField() {
		want, got := tw.Field(k), tt.Field(k)
		assert.Equal(t, want.Name, got.Name)
		assert.Equal(t, want.Offset, got.Offset, want.Name)
		assert.Equal(t, want.Type.Kind(), got.Type.Kind(), want.Name)
		assert.Equal(t, want.Type.Size(), got.Type.Size(), want.Name)
	}
	assert.Equal(t, tw.Field(2).Type, tt.Field(2).Type, "loc")
}

func TestSetTimeWritesTheTime(t *testing.T) {
	zone := time.FixedZone("X", 3600)
	base := time.Date(2026, 1, 1, 0, 0, 0, 5, time.UTC)
	tests := []struct {
		name     string
		old, new time.Time
	}{
		{name: "zero over a time", old: base, new: time.Time{}},
		{name: "a time over zero", old: time.Time{}, new: base},
		{name: "another clock, the same location", old: base, new: base.Add(time.Second)},
		{name: "another location", old: base, new: base.In(zone)},
		{name: "the local clock, with its monotonic reading", old: base, new: time.Now()},
		{name: "the same time", old: base, new: base},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := tt.old
			setTime(&dst, tt.new)
			assert.True(t, dst == tt.new, "got %v, want %v", dst, tt.new)
			assert.Equal(t, tt.new.Location(), dst.Location())
		})
	}
}

// addTime computes time.Add itself for times without a monotonic
// reading: it must give the same time.Time, every word of it, for every
// time and duration.
func TestAddTimeIsTimeAdd(t *testing.T) {
	zone := time.FixedZone("X", -5*3600)
	base := time.Date(2026, 1, 1, 0, 0, 0, 999_999_999, time.UTC)
	times := []struct {
		name string
		t    time.Time
	}{
		{name: "zero", t: time.Time{}},
		{name: "UTC, a nanosecond before a second", t: base},
		{name: "UTC, on a second", t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		{name: "a fixed zone", t: base.In(zone)},
		{name: "local, with a monotonic reading", t: time.Now()},
		{name: "local, without one", t: time.Now().Round(0)},
		{name: "before the year 1", t: time.Date(-5, 3, 1, 0, 0, 0, 1, time.UTC)},
		{name: "the latest time", t: time.Unix(1<<63-1-62135596800, 999_999_999).UTC()},
		{name: "a second before the latest", t: time.Unix(1<<63-2-62135596800, 5).UTC()},
	}
	durations := []time.Duration{0, 1, 999_999_999, time.Second, 30 * time.Second, 5 * time.Minute, time.Hour + 1, 1<<63 - 1, -1, -time.Second, -1 << 63}
	for _, tt := range times {
		t.Run(tt.name, func(t *testing.T) {
			for _, d := range durations {
				want, got := tt.t.Add(d), addTime(tt.t, d)
				assert.True(t, got == want, "%v + %v: got %#v, want %#v", tt.t, d, got, want)
			}
		})
	}
}

// emitTimer writes the deadline of a timer it sets into the event,
// adding the timer's duration itself where it can: it must write what
// deadline returns, every word of it, and return its nanos; a cancel
// writes the zero time and returns 0.
func TestEmitTimerWritesTheDeadline(t *testing.T) {
	pr := &Program{
		timers: []timerProg{
			{name: "after", after: 5 * time.Minute, src: -1},
			{name: "read", src: 0, fallback: 30 * time.Second},
			{name: "backwards", after: -time.Second, src: -1},
		},
		deadlineSrc: make([]fieldSrc, 1),
		manyRole:    -1,
	}
	read := time.Date(2026, 1, 1, 0, 10, 0, 0, time.UTC).UnixNano()
	ats := []struct {
		name string
		at   time.Time
	}{
		{name: "UTC", at: time.Date(2026, 1, 1, 0, 0, 0, 999_999_999, time.UTC)},
		{name: "a fixed zone", at: time.Date(2026, 1, 1, 0, 0, 0, 1, time.FixedZone("X", 3600))},
		{name: "with a monotonic reading", at: time.Now()},
		{name: "zero", at: time.Time{}},
		{name: "the latest time", at: time.Unix(1<<63-1-62135596800, 999_999_999).UTC()},
		{name: "beyond what nanos holds", at: time.Date(9000, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	sessions := []struct {
		name string
		s    session
	}{
		{name: "no deadline source", s: session{}},
		{name: "a source not set", s: session{srcSet: true}},
		{name: "a source set", s: session{srcSet: true, words: inPlace{src: [1]int64{read}}}},
	}
	for _, at := range ats {
		for _, ss := range sessions {
			t.Run(at.name+", "+ss.name, func(t *testing.T) {
				h := &Handler{prog: pr, sessions: []session{ss.s}}
				var q Queue
				// The second round writes sets over the first's cancels
				// and cancels over its sets, in the queue's reused events.
				for round := range 2 {
					q.Reset()
					for k := range pr.timers {
						for _, op := range [][2]TimerOp{{TimerSet, TimerCancel}, {TimerCancel, TimerSet}}[round] {
							n := h.emitTimer(&q, op, &at.at, k, nil, 0, 7)
							got := q.Events()[q.Len()-1].(*TimerEvent)
							want := time.Time{}
							if op == TimerSet {
								want = h.deadline(&h.sessions[0], k, at.at)
							}
							assert.True(t, got.Deadline == want, "round %d, op %d, timer %s: got %#v, want %#v", round, op, pr.timers[k].name, got.Deadline, want)
							assert.Equal(t, nanos(want), n, "round %d, op %d, timer %s", round, op, pr.timers[k].name)
						}
					}
				}
			})
		}
	}
}

// emitTimer takes its event and its place in the events itself when
// both have room, and has emitTimerGrow make it when either has none:
// whichever it is, the event is every field the timer's, it follows the
// events emitted before, and Reset hands the pool's element out again.
func TestEmitTimerEmitsWhateverRoomTheQueueHas(t *testing.T) {
	pr := &Program{
		timers:   []timerProg{{name: "a", after: time.Minute, src: -1}, {name: "b", after: time.Second, src: -1}},
		commits:  []commitProg{{name: "c", expires: 0, deadline: 1}},
		manyRole: -1,
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name              string
		poolRoom, evsRoom bool
		commit            bool
	}{
		{name: "room in both", poolRoom: true, evsRoom: true},
		{name: "no element in the pool", evsRoom: true},
		{name: "no room in the events", poolRoom: true},
		{name: "room in neither"},
		{name: "a commitment's, room in both", poolRoom: true, evsRoom: true, commit: true},
		{name: "a commitment's, room in neither", commit: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &Handler{prog: pr, sessions: []session{{}}}
			var q Queue
			pool, c, commitment := &q.timers, (*commitProg)(nil), ""
			if tt.commit {
				pool, c, commitment = &q.commitTimers, &pr.commits[0], "c"
			}
			// A first step leaves a stale event in the pool's first element.
			h.emitTimer(&q, TimerSet, &at, 1, c, 0, 1)
			q.Reset()
			if !tt.poolRoom {
				pool.items = pool.items[:0:0]
			}
			first := &MessageEvent{}
			q.events = append(make([]Event, 0, 2), first)
			if !tt.evsRoom {
				q.events = q.events[:1:1]
			}
			n := h.emitTimer(&q, TimerSet, &at, 0, c, 0, 9)
			assert.Equal(t, at.Add(time.Minute).UnixNano(), n)
			require.Len(t, q.Events(), 2)
			assert.Same(t, first, q.Events()[0])
			want := TimerEvent{At: at, Op: TimerSet, Name: "a", Commitment: commitment, Deadline: at.Add(time.Minute), Epoch: 9}
			assert.Equal(t, &want, q.Events()[1])
			require.NotEmpty(t, pool.items)
			assert.Same(t, &pool.items[0], q.Events()[1], "the pool's first element")
			assert.Equal(t, 1, pool.n)
			assert.True(t, q.dirty)
			q.Reset()
			assert.Equal(t, 0, pool.n)
		})
	}
}

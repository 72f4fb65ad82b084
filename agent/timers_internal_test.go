package agent

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// timerArm is one timer a test arms: at now (after the start) for span;
// cancelled at once when brief is set, and once every timer is armed when
// cancel is.
type timerArm struct {
	now, span     time.Duration
	brief, cancel bool
}

// TestTimersFireInDeadlineOrderAcrossLanesAndHeap: timers go to the lane
// of their span, or to the heap when their span has no lane or their
// deadline comes before their lane's last; whichever it is, the worker
// finds them in the order of their deadlines, and of their arming for
// equal deadlines, and a cancelled timer is gone from wherever it was;
// the bound due looks at (low) is never after the first deadline, and
// due fires nothing before it.
func TestTimersFireInDeadlineOrderAcrossLanesAndHeap(t *testing.T) {
	const s = time.Second
	at := func(now, span time.Duration) timerArm { return timerArm{now: now, span: span} }
	cancelled := func(a timerArm) timerArm { a.cancel = true; return a }
	brief := func(a timerArm) timerArm { a.brief = true; return a }
	tests := []struct {
		name string
		arms []timerArm
		// inHeap is how many timers the heap holds once all are armed.
		inHeap int
	}{
		{"one span, in order", []timerArm{at(0, 30*s), at(1, 30*s), at(2, 30*s)}, 0},
		{"one span, cancelled first, middle and last", []timerArm{
			cancelled(at(0, 30*s)), at(1, 30*s), cancelled(at(2, 30*s)), at(3, 30*s), cancelled(at(4, 30*s)),
		}, 0},
		{"a deadline before its lane's last goes to the heap", []timerArm{
			at(5*s, 30*s), at(2*s, 30*s), at(6*s, 30*s), cancelled(at(s, 30*s)),
		}, 2},
		{"more spans than lanes", []timerArm{
			at(0, 5*s), at(0, 4*s), at(0, 3*s), at(0, 2*s), at(0, s), at(0, 6*s), at(1, s), cancelled(at(1, 6*s)), at(1, 5*s),
		}, 4},
		{"equal deadlines fire in the order they were armed", []timerArm{
			at(0, 10*s), at(5*s, 5*s), at(9*s, s), at(0, 10*s), at(3*s, 7*s), at(0, 10*s), at(2*s, 8*s),
		}, 1},
		{"a lane emptied is taken by another span", []timerArm{
			at(0, s), at(0, 2*s), at(0, 3*s), brief(at(0, 4*s)), at(1, 9*s), at(2, 8*s),
		}, 1},
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := NewFakeClock(start)
			ts := &timers{w: &worker{m: &Manager{o: options{clock: clock}}, wake: make(chan struct{}, 1)}}
			// low is never after the first deadline, so that due looks.
			lowHolds := func(when string, i int) {
				if f := ts.first(); f != nil {
					require.True(t, ts.lowSet && !ts.low.After(f.at), "%s %d: low %v, the first deadline %v", when, i, ts.low, f.at)
				}
			}
			armed := make([]*timer, len(tt.arms))
			for i, a := range tt.arms {
				armed[i] = ts.newTimer()
				armed[i].ev.Name = fmt.Sprint(i)
				ts.arm(armed[i], start.Add(a.now+a.span), start.Add(a.now))
				require.NotNil(t, ts.first())
				lowHolds("armed", i)
				if a.brief {
					ts.release(armed[i])
					lowHolds("released", i)
				}
			}
			assert.Equal(t, tt.inHeap, ts.heap.Len(), "timers in the heap")
			var want []string
			order := make([]int, len(tt.arms))
			for i := range order {
				order[i] = i
			}
			slices.SortStableFunc(order, func(a, b int) int {
				return cmp.Compare(tt.arms[a].now+tt.arms[a].span, tt.arms[b].now+tt.arms[b].span)
			})
			for _, i := range order {
				if a := tt.arms[i]; !a.cancel && !a.brief {
					want = append(want, fmt.Sprint(i))
				}
			}
			for i, a := range tt.arms {
				if a.cancel {
					ts.release(armed[i])
					lowHolds("cancelled", i)
				}
			}
			var got []string
			for x := ts.first(); x != nil; x = ts.first() {
				// Just before the first deadline nothing is due: due fires
				// nothing, and moves low up to that deadline.
				ts.due(x.at.Add(-time.Nanosecond))
				require.Same(t, x, ts.first(), "nothing fired before its deadline")
				assert.True(t, ts.low.Equal(x.at), "low %v, the first deadline %v", ts.low, x.at)
				got = append(got, x.ev.Name)
				ts.release(x)
				lowHolds("fired", len(got))
			}
			assert.Equal(t, want, got)
			assert.Zero(t, ts.heap.Len(), "the heap is empty")
			for i := range ts.lanes {
				assert.Nil(t, ts.lanes[i].first, "lane %d is empty", i)
				assert.Nil(t, ts.lanes[i].last, "lane %d is empty", i)
			}
		})
	}
}

package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/policies"
)

func TestCompareSessions(t *testing.T) {
	p, err := policies.Load("fipa-request")
	require.NoError(t, err)
	prog, ds := engine.Compile(p, "Initiator")
	require.NotNil(t, prog, "%v", ds)
	deadline := time.Date(2026, 5, 1, 9, 5, 0, 0, time.UTC).UnixNano()
	one := func(s sessionView) *snapshotView { return &snapshotView{Sessions: []sessionView{s}} }
	agreed := sessionView{State: "agreed", Vars: map[string]any{"price": 10.0, "tags": []any{"a"}},
		Commitments: []commitmentView{{State: "detached", Deadline: deadline}}}
	with := func(change func(*sessionView)) *snapshotView {
		s := agreed
		s.Vars = map[string]any{"price": 10.0, "tags": []any{"a"}}
		s.Commitments = []commitmentView{agreed.Commitments[0]}
		change(&s)
		return one(s)
	}
	tests := []struct {
		name   string
		stored *snapshotView
		want   []string
	}{
		{name: "the same", stored: one(agreed)},
		{name: "state", stored: with(func(s *sessionView) { s.State = "requested" }),
			want: []string{`state: replay "agreed", store "requested"`}},
		{name: "timed out from", stored: with(func(s *sessionView) { s.TimedOutFrom = "requested" }),
			want: []string{`timed out from: replay "", store "requested"`}},
		{name: "a variable's value", stored: with(func(s *sessionView) { s.Vars["price"] = 12.0 }),
			want: []string{`variable "price": replay 10, store 12`}},
		{name: "a variable unset", stored: with(func(s *sessionView) { delete(s.Vars, "tags") }),
			want: []string{`variable "tags": replay ["a"], store unset`}},
		{name: "a variable the replay does not set", stored: with(func(s *sessionView) { s.Vars["extra"] = true }),
			want: []string{`variable "extra": replay unset, store true`}},
		{name: "a commitment's state", stored: with(func(s *sessionView) { s.Commitments[0].State = "discharged" }),
			want: []string{`commitment "perform": replay "detached", store "discharged"`}},
		{name: "a commitment's deadline", stored: with(func(s *sessionView) { s.Commitments[0].Deadline += int64(time.Second) }),
			want: []string{`commitment "perform": deadline: replay 2026-05-01T09:05:00Z, store 2026-05-01T09:05:01Z`}},
		{name: "a commitment never created", stored: with(func(s *sessionView) { s.Commitments = nil }),
			want: []string{`commitment "perform": replay "detached", store not created`}},
		{name: "sessions of other peers", stored: &snapshotView{Sessions: []sessionView{{Peer: "bob", State: "agreed"}}},
			want: []string{`session "bob": in the store only (state "agreed")`, `in the replay only (state "agreed")`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, compareSessions(prog, one(agreed), tt.stored))
		})
	}
}

func TestCappedDifferences(t *testing.T) {
	tests := []struct {
		name string
		n    int
		want int
		last string
	}{
		{name: "under the cap", n: 3, want: 3, last: "d"},
		{name: "at the cap", n: maxDifferences, want: maxDifferences, last: "d"},
		{name: "over the cap", n: maxDifferences + 5, want: maxDifferences + 1, last: "... and 5 more differences"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines := make([]string, tt.n)
			for i := range lines {
				lines[i] = "d"
			}
			got := cappedDifferences(lines)
			require.Len(t, got, tt.want)
			assert.Equal(t, tt.last, got[len(got)-1])
		})
	}
}

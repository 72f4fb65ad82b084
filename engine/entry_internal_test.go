package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/parleyhq/parley/policy"
)

// entryOf decides once what entering each state does, in the order
// enter's cases had: a terminal state ends the session whatever else it
// has, a child is loaded before anything but the end, a join counts only
// in a program with a many role, and a state with sends raises a
// decision when nothing before applies.
func TestEntryOfEachState(t *testing.T) {
	child := &policy.ChildRef{}
	sends := []transProg{{}}
	tests := []struct {
		name string
		sp   stateProg
		many bool
		want entryKind
	}{
		{name: "nothing", want: entryNone},
		{name: "terminal", sp: stateProg{terminal: true}, want: entryEnd},
		{name: "terminal with a child and sends", sp: stateProg{terminal: true, child: child, sends: sends}, many: true, want: entryEnd},
		{name: "a child", sp: stateProg{child: child, join: true, sends: sends}, many: true, want: entryChild},
		{name: "a join of the many role", sp: stateProg{join: true, sends: sends}, many: true, want: entryJoin},
		{name: "a join without a many role", sp: stateProg{join: true, sends: sends}, want: entryRaise},
		{name: "a join without sends nor a many role", sp: stateProg{join: true}, want: entryNone},
		{name: "sends", sp: stateProg{sends: sends}, want: entryRaise},
		{name: "sends, with a many role", sp: stateProg{sends: sends}, many: true, want: entryRaise},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, entryOf(&tt.sp, tt.many))
		})
	}
}

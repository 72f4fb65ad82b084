package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDeclsFindsTheFirstOfEachName checks decls both as a list and,
// past maxScannedDecls, as a map: the first declaration of a name is
// the one found, and the empty name is never put.
func TestDeclsFindsTheFirstOfEachName(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
	}{
		{"a few", 3},
		{"at the list's limit", maxScannedDecls},
		{"past it", 3 * maxScannedDecls},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d decls[int]
			d.put("", -1)
			for i := range tc.n {
				d.put(fmt.Sprint("n", i), i)
				d.put(fmt.Sprint("n", i/2), 100+i) // a repeat, or a new name taken later
			}
			assert.Equal(t, -1, d.index(""))
			assert.Equal(t, -1, d.index("missing"))
			assert.Zero(t, d.get("missing"))
			for i := range tc.n {
				name := fmt.Sprint("n", i)
				assert.Equal(t, i, d.get(name), name)
				assert.Equal(t, name, d.names[d.index(name)])
			}
		})
	}
}

// TestFirstSeenAndNameSetPastTheirLists checks the per-state lookups of
// the determinism and timers checks as lists and, once they hold more
// than maxSearchedKeys, as maps, against a map, and that reset empties
// them.
func TestFirstSeenAndNameSetPastTheirLists(t *testing.T) {
	for _, n := range []int{2, maxSearchedKeys, 3 * maxSearchedKeys} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var f firstSeen[[2]string]
			var set nameSet
			for round := range 2 {
				want := map[[2]string]*Transition{}
				for i := range n {
					k := [2]string{"A", fmt.Sprint("m", i%(n/2+1))}
					if _, ok := f.get(k); !ok {
						tr := &Transition{Key: fmt.Sprint(round, i)}
						f.put(k, tr)
						want[k] = tr
					}
					set.add(k[1])
				}
				for k, tr := range want {
					got, ok := f.get(k)
					assert.True(t, ok, "%v", k)
					assert.Same(t, tr, got, "%v", k)
					assert.True(t, set.has(k[1]), k[1])
				}
				_, ok := f.get([2]string{"B", "m0"})
				assert.False(t, ok)
				assert.False(t, set.has("missing"))
				f.reset()
				set.reset()
				_, ok = f.get([2]string{"A", "m0"})
				assert.False(t, ok, "after reset")
				assert.False(t, set.has("m0"), "after reset")
			}
		})
	}
}

// TestEdgesGiveWhatTheTransitionsGive runs the checks on every policy
// file of the repository both ways: from the edges, where every name is
// resolved, and from the transitions alone, as for a policy with an
// undeclared name. The diagnostics must be the same.
func TestEdgesGiveWhatTheTransitionsGive(t *testing.T) {
	var files []string
	for _, pattern := range []string{"../policies/*", "../testdata/*/*", "../testdata/*/*/*", "../cmd/cpvalidate/testdata/*/*"} {
		matches, err := filepath.Glob(pattern)
		require.NoError(t, err)
		files = append(files, matches...)
	}
	resolved := 0
	for _, file := range files {
		if _, ok := FormatOf(file); !ok {
			continue
		}
		t.Run(file, func(t *testing.T) {
			src, err := os.ReadFile(file)
			require.NoError(t, err)
			p, _ := Load(file, src)
			if p == nil {
				return
			}
			fromEdges := runChecks(p, nil)
			if fromEdges.resolved {
				resolved++
			}
			c := newChecker(p, checkOptions{})
			c.resolved = false
			for _, chk := range Checks {
				chk.run(c)
			}
			c.d.list.Sort()
			assert.Equal(t, c.d.list, fromEdges.d.list)
			assert.Equal(t, len(c.projections), len(fromEdges.projections))
		})
	}
	assert.Greater(t, resolved, 30, "policies whose names all resolve")
}

// TestNextStateIsTheFirstOfItsName checks that a transition naming the
// state after its own resolves, like any other, to the first state of
// that name.
func TestNextStateIsTheFirstOfItsName(t *testing.T) {
	to := func(name string) []*Transition {
		return []*Transition{{Kind: OnTimeout, Timer: Ref{Name: "t"}, Next: Ref{Name: name}}}
	}
	for _, tc := range []struct {
		name   string
		states []*State
		want   [][]int
	}{
		{"in order", []*State{{Name: "a", Transitions: to("b")}, {Name: "b", Transitions: to("c")}, {Name: "c"}}, [][]int{{1}, {2}, {}}},
		{"the state after repeats a name", []*State{{Name: "x"}, {Name: "a", Transitions: to("x")}, {Name: "x", Transitions: to("a")}}, [][]int{{}, {0}, {1}}},
		{"an empty name", []*State{{Name: "a", Transitions: to("")}, {Name: ""}}, [][]int{{-1}, {}}},
		{"undeclared", []*State{{Name: "a", Transitions: to("z")}, {Name: "b"}}, [][]int{{-1}, {}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newChecker(&Policy{States: tc.states}, checkOptions{})
			assert.Equal(t, tc.want, c.next)
		})
	}
}

// TestKeyAppliesIsTransitionKeys holds keyApplies to the lists of keys
// each kind of transition takes.
func TestKeyAppliesIsTransitionKeys(t *testing.T) {
	for _, kind := range []TransitionKind{SendMessage, OnTimeout, ChildReturn} {
		t.Run(string(kind), func(t *testing.T) {
			for _, key := range append(allTransitionKeys, "", "nxt", "Send") {
				assert.Equal(t, contains(transitionKeys(kind), key), keyApplies(kind, key), key)
			}
		})
	}
}

// TestStatesIndexedWithOrWithoutRepeats checks indexStates on lists of
// state names with and without repeats and empty names: each name maps
// to its first state, and each later state of a name is listed with it,
// in order, as a lookup of every name finds them; and that stateIndex,
// whose last lookups are remembered, finds what the map holds however
// often it is asked.
func TestStatesIndexedWithOrWithoutRepeats(t *testing.T) {
	for _, tc := range []struct {
		name  string
		names []string
	}{
		{"none", nil},
		{"distinct", []string{"a", "b", "c"}},
		{"an empty name", []string{"a", "", "b", ""}},
		{"a repeat", []string{"a", "b", "a"}},
		{"repeats late and often", []string{"a", "b", "c", "d", "e", "f", "c", "a", "c", "", "f"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Policy{}
			for _, n := range tc.names {
				p.States = append(p.States, &State{Name: n})
			}
			c := newChecker(p, checkOptions{})
			want := map[string]int{}
			var dups [][2]int
			for i, n := range tc.names {
				if n == "" {
					continue
				}
				if j, ok := want[n]; ok {
					dups = append(dups, [2]int{i, j})
					continue
				}
				want[n] = i
			}
			assert.Equal(t, want, c.states)
			assert.Equal(t, dups, c.dupStates)
			for range 3 {
				for _, n := range append(tc.names, "missing", "z") {
					i, ok := want[n]
					if !ok {
						i = -1
					}
					assert.Equal(t, i, c.stateIndex(n), n)
				}
			}
		})
	}
}

// TestSetTwiceScansAsItIndexes checks checkSetTwice on sets of every
// length up to past maxScannedDecls, with names repeated in several
// patterns: each repeat is reported, related to the assignment of its
// name just before it, as by a map of the last position of each name.
func TestSetTwiceScansAsItIndexes(t *testing.T) {
	for n := 2; n <= 3*maxScannedDecls; n++ {
		for _, period := range []int{1, 2, 3, n} {
			t.Run(fmt.Sprint(n, "/", period), func(t *testing.T) {
				var set []*Assign
				for i := range n {
					set = append(set, &Assign{Var: Ref{Name: fmt.Sprint("v", i%period), Pos: Pos{Line: i + 1}}})
				}
				var want diags
				last := map[string]Pos{}
				for _, a := range set {
					if at, dup := last[a.Var.Name]; dup {
						want.errorf(CodeDuplicate, a.Var.Pos, "variable %s is set twice by one transition", Quote(a.Var.Name)).related(at, "first set here")
					}
					last[a.Var.Name] = a.Var.Pos
				}
				c := &checker{}
				c.checkSetTwice(set)
				assert.Equal(t, want.list, c.d.list)
			})
		}
	}
}

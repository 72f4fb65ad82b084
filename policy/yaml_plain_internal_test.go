package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// yamlPlainSeeds are mappings near the edges of what the loader reads
// without making pairs (yaml_plain.go): plain ones, and every kind it
// leaves to pairs.
var yamlPlainSeeds = []string{
	"- {send: m, from: A, to: B, next: s}",
	"- {send: m, from: A, to: B, next: s, key: k, guard: 'x > 1', set: {v: 1, w: '2'}, doc: d}",
	"- {timeout: t, next: s, guard: |\n        a &&\n        b\n      , set: {v: 1}}",
	"- {return: ok, next: s}",
	"- {send: m, from: A, to: B, next: s, send: n}",
	"- {send: m, from: A, to: B, next: s, next: t}",
	"- {send: m, timeout: t, next: s}",
	"- {send: m, return: r, timeout: t, next: s}",
	"- {from: A, to: B, next: s}",
	"- {}",
	"- {timeout: t, from: A, next: s}",
	"- {return: r, key: k, next: s}",
	"- {send: m, from: A, to: B, nxt: s}",
	"- {send: m, from: A, to: B}",
	"- {send: m, next: s}",
	"- {send: '', from: ~, to: null, next: [s]}",
	"- {send: {a: b}, from: [A], to: !!null x, next: 1}",
	"- {send: m, from: A, to: B, next: s, set: {v: 1, v: 2}}",
	"- {send: m, from: A, to: B, next: s, set: {<<: {w: 3}, v: 1}}",
	"- {send: m, from: A, to: B, next: s, set: []}",
	"- {send: m, from: A, to: B, next: s, set: {v: ''}}",
	"- {send: m, from: A, to: B, next: s, set: {[v]: 1}}",
	"- {<<: {send: m, from: A, to: B}, next: s}",
	"- {<<: [{send: m}, {from: A, to: B}], next: s, from: C}",
	"- {!!merge send: m, from: A, to: B, next: s}",
	"- {send: m, from: A, to: B, next: s, [x]: y}",
	"- {send: m, from: A, to: B, next: s, {x: 1}: y}",
	"- &t {send: m, from: A, to: B, next: s}\n    - *t",
	"- {send: &m m, from: *m, to: B, next: *m}",
	"- {send: m, from: A, to: B, next: s, guard: \"a\n        b\"}",
	"- {send: m, from: A, to: B, next: s, guard: 'a  '}",
	"- {send: m, from: A, to: B, next: s, doc: [x]}",
	"- [send, m]",
	"- plain",
	"{send: m}",
}

// yamlPlainPolicy wraps the transitions of seed in a policy: they are
// the transitions of state s, given both as its list and as its on.
func yamlPlainPolicy(seed string) []string {
	head := "policy: p\nversion: 1\nroles: [A, B]\nmessages: {m: inform, n: agree}\ntimers: {t: 1s}\nvars: {v: int, w: string}\nstates:\n"
	return []string{
		head + "  s:\n    " + seed + "\n  done: {terminal: ok}\n",
		head + "  s:\n    arm: t\n    doc: x\n    on:\n    " + strings.ReplaceAll(seed, "\n", "\n  ") + "\n  done: {terminal: ok, doc: y}\n",
		head + "  s: {on: [], arm: [t], arm: t}\n  done: {<<: {terminal: ok}}\n",
		head + "  <<: {x: {terminal: ok}, s: {terminal: no}}\n  s:\n    " + seed + "\n  s: {terminal: again}\n  [done]: {terminal: ok}\n",
		head + "  !!merge s:\n    " + seed + "\n  done: {terminal: ok}\n",
	}
}

// assertPlainAsPairs checks that loading src reads the same policy, with
// the same diagnostics, whether the loader reads plain mappings as they
// stand or every mapping through pairs, with the default limits and with
// each node limit up to the file's count of nodes, each depth limit up
// to 8 and each state limit up to 4, so that every limit is hit at
// every place (for nodes: at every node of a small file, at 100 places
// in a large one, at 4 in one that expands aliases to the default
// limit).
func assertPlainAsPairs(t *testing.T, src []byte) {
	t.Helper()
	load := func(limits Limits, general bool) (*Policy, Diagnostics, int) {
		l := &yamlLoader{file: "t.yaml", src: src, limits: limits, general: general}
		p, ds := l.load()
		return p, ds, l.nodes
	}
	p, ds, nodes := load(DefaultLimits, false)
	gp, gds, gnodes := load(DefaultLimits, true)
	require.Equal(t, gds, ds)
	require.Equal(t, gp, p)
	require.Equal(t, gnodes, nodes)
	step := max(1, nodes/100)
	if nodes > 100_000 {
		// An alias bomb, read to the default limit: a few places do.
		step = nodes / 4
	}
	same := func(limits Limits, format string, arg int) {
		p, ds, _ := load(limits, false)
		gp, gds, _ := load(limits, true)
		require.Equal(t, gds, ds, format, arg)
		require.Equal(t, gp, p, format, arg)
	}
	for n := 1; n <= nodes; n += step {
		limits := DefaultLimits
		limits.MaxNodes = n
		same(limits, "MaxNodes %d", n)
	}
	for states := 1; states <= 4; states++ {
		limits := DefaultLimits
		limits.MaxStates = states
		same(limits, "MaxStates %d", states)
	}
	for depth := 1; depth <= 8; depth++ {
		limits := DefaultLimits
		limits.MaxDepth = depth
		same(limits, "MaxDepth %d", depth)
	}
}

// TestYAMLPlainMappingsReadAsPairs checks that the loader's readings of
// plain mappings give what reading through pairs gives, on every seed
// and on every YAML policy file in the repository.
func TestYAMLPlainMappingsReadAsPairs(t *testing.T) {
	for _, seed := range yamlPlainSeeds {
		for i, src := range yamlPlainPolicy(seed) {
			t.Run(seed+"/"+string(rune('a'+i)), func(t *testing.T) {
				assertPlainAsPairs(t, []byte(src))
			})
		}
	}
	var files []string
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "bench") {
			return filepath.SkipDir
		}
		if ext := filepath.Ext(path); !d.IsDir() && (ext == ".yaml" || ext == ".yml") {
			files = append(files, path)
		}
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(file, func(t *testing.T) {
			src, err := os.ReadFile(file)
			require.NoError(t, err)
			assertPlainAsPairs(t, src)
		})
	}
}

// TestYAMLPlainReadsTheLadder checks that the loader reads the mappings
// of a generated policy as they stand, so that the tests above compare
// the readings a large policy takes: its states, transitions and sets.
func TestYAMLPlainReadsTheLadder(t *testing.T) {
	var doc yaml.Node
	require.NoError(t, yaml.Unmarshal(Ladder(10, true), &doc))
	root := doc.Content[0]
	require.Equal(t, "states", root.Content[len(root.Content)-2].Value)
	states := root.Content[len(root.Content)-1]
	l := &yamlLoader{file: "t.yaml", limits: DefaultLimits}
	assert.True(t, l.plainKeys(states, false))
	transitions, sets := 0, 0
	for i := 1; i < len(states.Content); i += 2 {
		list := states.Content[i]
		if list.Kind == yaml.MappingNode {
			assert.True(t, l.plainKeys(list, true), states.Content[i-1].Value)
			list = list.Content[len(list.Content)-1]
		}
		for _, item := range list.Content {
			var tr Transition
			assert.True(t, l.plainTransition(&tr, item, 3), "%s: %d", states.Content[i-1].Value, item.Line)
			transitions++
			if set := item.Content[len(item.Content)-1]; set.Kind == yaml.MappingNode {
				assert.True(t, l.plainKeys(set, true))
				sets++
			}
		}
	}
	assert.Equal(t, 4*2+4*3, transitions)
	assert.Equal(t, 4, sets)
}

package policy_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/policy"
)

// baseYAML is a small, clean two-party policy (FIPA Request without the
// optional parts) that the check tests patch with one mistake each.
const baseYAML = `policy: test
version: 1
roles: [Initiator, Participant]
messages:
  request: {performative: request, fields: {price: number, due: optional time}}
  agree: agree
  refuse: {performative: refuse, fields: {reason: optional string}}
  inform-result: {performative: inform, fields: {result: any}}
timers:
  reply: {after: 30s}
states:
  start:
    - {send: request, from: Initiator, to: Participant, next: requested}
  requested:
    arm: reply
    on:
      - {send: agree, from: Participant, to: Initiator, next: agreed}
      - {send: refuse, from: Participant, to: Initiator, next: refused}
      - {timeout: reply, next: timed-out}
  agreed:
    - {send: inform-result, from: Participant, to: Initiator, next: done}
  done: {terminal: done}
  refused: {terminal: refused}
  timed-out: {terminal: timeout}
`

// edit replaces the text edit[0], which must occur exactly once, by
// edit[1].
type edit [2]string

// patch applies edits to src in order.
func patch(t *testing.T, src string, edits ...edit) string {
	t.Helper()
	for _, e := range edits {
		require.Equal(t, 1, strings.Count(src, e[0]), "edit %q must match exactly once in:\n%s", e[0], src)
		src = strings.Replace(src, e[0], e[1], 1)
	}
	return src
}

// fileName is the name test policies load under: test.xml for CP-XML
// (src starting with '<'), else test.yaml.
func fileName(src string) string {
	if strings.HasPrefix(strings.TrimSpace(src), "<") {
		return "test.xml"
	}
	return "test.yaml"
}

// mustLoad loads src, which must load without any diagnostic.
func mustLoad(t *testing.T, src string) *policy.Policy {
	t.Helper()
	p, ds := policy.Load(fileName(src), []byte(src))
	require.Empty(t, ds, "the test policy must load cleanly:\n%s", src)
	require.NotNil(t, p)
	return p
}

// check loads src (cleanly) and runs every static check on it.
func check(t *testing.T, src string, opts ...policy.CheckOption) policy.Diagnostics {
	t.Helper()
	return policy.CheckPolicy(mustLoad(t, src), opts...)
}

// codes returns the codes of ds, in order.
func codes(ds policy.Diagnostics) []policy.Code {
	out := []policy.Code{}
	for _, d := range ds {
		out = append(out, d.Code)
	}
	return out
}

// lines renders ds as d.Error() lines.
func lines(ds policy.Diagnostics) []string {
	out := []string{}
	for _, d := range ds {
		out = append(out, d.Error())
	}
	return out
}

var codeSuffixRE = regexp.MustCompile(`\[(CP\d{3})\]$`)

// codesOfLines returns the codes at the end of rendered diagnostics.
func codesOfLines(lines []string) []policy.Code {
	out := []policy.Code{}
	for _, l := range lines {
		if m := codeSuffixRE.FindStringSubmatch(l); m != nil {
			out = append(out, policy.Code(m[1]))
		}
	}
	return out
}

// checkCase is one table case of a check test: a policy (src, or baseYAML
// when empty, with edits applied) and what CheckPolicy must report.
type checkCase struct {
	name  string
	src   string
	edits []edit
	// codes are exactly the codes reported, in any order; when nil, the
	// codes of want (and so, with neither, the policy must check clean).
	codes []policy.Code
	// want, when set, are exactly the diagnostics reported, rendered as
	// d.Error() in CheckPolicy's order.
	want []string
	// related, when set, are the related positions and messages of the
	// first diagnostic, rendered "pos: message".
	related []string
	// opts are passed to CheckPolicy.
	opts []policy.CheckOption
}

func (c checkCase) source(t *testing.T) string {
	src := c.src
	if src == "" {
		src = baseYAML
	}
	return patch(t, src, c.edits...)
}

func runCheckCases(t *testing.T, cases []checkCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ds := check(t, tc.source(t), tc.opts...)
			want := tc.codes
			if want == nil {
				want = codesOfLines(tc.want)
			}
			assert.ElementsMatch(t, want, codes(ds), "reported:\n%s", strings.Join(lines(ds), "\n"))
			if tc.want != nil {
				assert.Equal(t, tc.want, lines(ds))
			}
			if tc.related != nil && assert.NotEmpty(t, ds) {
				var got []string
				for _, r := range ds[0].Related {
					got = append(got, r.Pos.String()+": "+r.Message)
				}
				assert.Equal(t, tc.related, got)
			}
		})
	}
}

func TestBasePolicyIsClean(t *testing.T) {
	assert.Empty(t, lines(check(t, baseYAML)))
}

// TestChecksList checks the list of checks itself: unique names, codes
// that exist, and each code a check reports listed by some check.
func TestChecksList(t *testing.T) {
	known := map[policy.Code]bool{}
	for _, ci := range policy.Codes {
		known[ci.Code] = true
	}
	seen := map[string]bool{}
	listed := map[policy.Code]bool{}
	for _, chk := range policy.Checks {
		assert.False(t, seen[chk.Name], "check %q is listed twice", chk.Name)
		seen[chk.Name] = true
		assert.Regexp(t, `^[a-z]+(-[a-z]+)*$`, chk.Name)
		assert.NotEmpty(t, chk.Doc, chk.Name)
		assert.NotEmpty(t, chk.Codes, chk.Name)
		for _, code := range chk.Codes {
			assert.True(t, known[code], "check %q lists %s, which is not in policy.Codes", chk.Name, code)
			listed[code] = true
		}
	}
	// Every code from CP010 on comes from a check (CP001–CP006 come from
	// the loaders, though some checks report them too).
	for _, ci := range policy.Codes {
		if ci.Code >= "CP010" {
			assert.True(t, listed[ci.Code], "no check lists %s", ci.Code)
		}
	}
}

// TestEveryCheckHasATest checks that every check in policy.Checks has a
// table test named after it: TestCheckStateShapes for "state-shapes".
func TestEveryCheckHasATest(t *testing.T) {
	files, err := filepath.Glob("*_test.go")
	require.NoError(t, err)
	testRE := regexp.MustCompile(`(?m)^func (TestCheck\w+)\(t \*testing\.T\)`)
	var tests []string
	for _, f := range files {
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range testRE.FindAllStringSubmatch(string(src), -1) {
			tests = append(tests, m[1])
		}
	}
	for _, chk := range policy.Checks {
		name := "TestCheck"
		for _, part := range strings.Split(chk.Name, "-") {
			name += strings.ToUpper(part[:1]) + part[1:]
		}
		assert.True(t, slices.Contains(tests, name), "check %q has no %s", chk.Name, name)
	}
}

// TestCheckPolicyNil checks that a nil policy (one that did not load)
// has nothing to report.
func TestCheckPolicyNil(t *testing.T) {
	assert.Empty(t, policy.CheckPolicy(nil))
}

// TestCheckPolicyDoesNotModify checks that CheckPolicy leaves the policy
// as it found it.
func TestCheckPolicyDoesNotModify(t *testing.T) {
	src := patch(t, baseYAML, edit{"next: agreed}", "next: agred}"})
	p := mustLoad(t, src)
	before := p.Fingerprint()
	policy.CheckPolicy(p)
	assert.Equal(t, before, p.Fingerprint())
}

// TestCheckPolicyIsSorted checks that diagnostics come out by position.
func TestCheckPolicyIsSorted(t *testing.T) {
	src := patch(t, baseYAML,
		edit{"next: agreed}", "next: agred}"},
		edit{"from: Participant, to: Initiator, next: refused}", "from: Participant, to: Participant, next: refused}"},
		edit{"  agree: agree\n", "  agree: agree\n  cancel: cancel\n"})
	ds := check(t, src)
	require.Len(t, ds, 3) // CP022, CP010 and CP018 (the misspelt state is not also unreachable)
	for i := 1; i < len(ds); i++ {
		assert.False(t, ds[i].Pos.Before(ds[i-1].Pos), "%s before %s", ds[i].Error(), ds[i-1].Error())
	}
}

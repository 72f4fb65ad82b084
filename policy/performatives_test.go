package policy_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/policy"
)

// declaresNotify makes baseYAML's agree a notify, an extension
// performative it declares.
var declaresNotify = []edit{
	{"roles: [Initiator, Participant]\n", "roles: [Initiator, Participant]\nperformatives: [notify]\n"},
	{"  agree: agree\n", "  agree: notify\n"},
}

func TestCheckExtensionPerformatives(t *testing.T) {
	runCheckCases(t, []checkCase{
		{name: "declared and used", edits: declaresNotify},
		{name: "one name instead of a list", edits: []edit{
			{"roles: [Initiator, Participant]\n", "roles: [Initiator, Participant]\nperformatives: notify\n"},
			{"  agree: agree\n", "  agree: {performative: notify}\n"},
		}},
		{
			name:  "undeclared",
			edits: []edit{{"  agree: agree\n", "  agree: notify\n"}},
			want:  []string{`test.yaml:6:3: error: message type "agree" has performative "notify", which is not a FIPA communicative act; an extension performative must be declared under performatives [CP003]`},
		},
		{
			name:  "a misspelt FIPA performative beside declared ones",
			edits: append(declaresNotify[:1:1], edit{"inform-result: {performative: inform,", "inform-result: {performative: infrom,"}),
			want: []string{
				`test.yaml:4:17: warning: performative "notify" is declared but no message type uses it [CP022]`,
				`test.yaml:9:3: error: message type "inform-result" has performative "infrom", which is not a FIPA communicative act nor an extension the policy declares; did you mean "inform"? [CP003]`,
			},
		},
		{
			name:  "a misspelt extension",
			edits: append(declaresNotify[:1:1], edit{"  agree: agree\n", "  agree: notfy\n"}),
			want: []string{
				`test.yaml:4:17: warning: performative "notify" is declared but no message type uses it [CP022]`,
				`test.yaml:7:3: error: message type "agree" has performative "notfy", which is not a FIPA communicative act nor an extension the policy declares; did you mean "notify"? [CP003]`,
			},
		},
		{
			name:  "a FIPA performative declared",
			edits: []edit{declaresNotify[1], {"roles: [Initiator, Participant]\n", "roles: [Initiator, Participant]\nperformatives: [notify, inform]\n"}},
			want:  []string{`test.yaml:4:25: error: performative "inform" is one of FIPA's; declare only extension performatives under performatives [CP003]`},
		},
		{
			name:    "declared twice",
			edits:   []edit{declaresNotify[1], {"roles: [Initiator, Participant]\n", "roles: [Initiator, Participant]\nperformatives: [notify, notify]\n"}},
			want:    []string{`test.yaml:4:25: error: performative "notify" is declared twice [CP005]`},
			related: []string{"test.yaml:4:17: first declared here"},
		},
		{
			name:  "not a valid name",
			edits: []edit{declaresNotify[1], {"roles: [Initiator, Participant]\n", "roles: [Initiator, Participant]\nperformatives: [notify, 2way]\n"}},
			codes: []policy.Code{policy.CodeInvalidValue, policy.CodeUnused},
		},
	})
}

// notifyXML is baseYAML with declaresNotify, in CP-XML.
func notifyXML(t *testing.T) string {
	t.Helper()
	return string(policy.WriteXML(mustLoad(t, patch(t, baseYAML, declaresNotify...))))
}

func TestLoadExtensionPerformativesXML(t *testing.T) {
	decl := `<performative name="notify"/>`
	tests := []struct {
		name string
		new  string // replaces decl
		want []string
	}{
		{name: "declared", new: decl},
		{name: "without a name", new: `<performative/>`, want: []string{`test.xml:5:3: error: <performative> has no "name" attribute [CP004]`}},
		{name: "with an element inside", new: `<performative name="notify"><doc>tells</doc></performative>`, want: []string{`test.xml:5:31: error: unknown element <doc> in <performative> [CP002]`}},
		{name: "with another attribute", new: `<performative name="notify" fipa="false"/>`, want: []string{`test.xml:5:37: error: unknown attribute "fipa" on <performative> [CP002]`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := patch(t, notifyXML(t), edit{decl, tt.new})
			_, ds := policy.LoadXML("test.xml", []byte(src))
			assert.Equal(t, tt.want, linesOrNil(ds))
		})
	}
}

// linesOrNil renders ds as lines, nil for none.
func linesOrNil(ds policy.Diagnostics) []string {
	if len(ds) == 0 {
		return nil
	}
	return lines(ds)
}

// TestExtensionPerformativesRoundTrip checks that the declaration goes
// through both writers and back, into the same model and fingerprint as
// the other format's.
func TestExtensionPerformativesRoundTrip(t *testing.T) {
	py := mustLoad(t, patch(t, baseYAML, declaresNotify...))
	xml := policy.WriteXML(py)
	assert.Contains(t, string(xml), `<performative name="notify"/>`)
	px, ds := policy.LoadXML("test.xml", xml)
	require.Empty(t, ds, "%s", xml)
	yml := policy.WriteYAML(px)
	assert.Contains(t, string(yml), "\nperformatives: [notify]\n")
	py2, ds := policy.LoadYAML("test.yaml", yml)
	require.Empty(t, ds, "%s", yml)
	assert.Equal(t, py.Fingerprint(), px.Fingerprint())
	assert.Equal(t, py.Fingerprint(), py2.Fingerprint())
	for _, p := range []*policy.Policy{py, px, py2} {
		stripPositions(reflect.ValueOf(p))
	}
	assert.Equal(t, py, px)
	assert.Equal(t, py, py2)
}

func TestFingerprintOfExtensionPerformatives(t *testing.T) {
	fp := func(decl string) string {
		t.Helper()
		src := patch(t, baseYAML, edit{"roles: [Initiator, Participant]\n", "roles: [Initiator, Participant]\n" + decl})
		return mustLoad(t, src).Fingerprint()
	}
	none, one, two := fp(""), fp("performatives: [notify]\n"), fp("performatives: [notify, ping]\n")
	assert.NotEqual(t, none, one, "declaring an extension changes the fingerprint")
	assert.NotEqual(t, one, two)
	assert.Equal(t, two, fp("performatives: [ping, notify]\n"), "declarations count in name order")
	assert.Equal(t, one, fp("performatives: notify\n"), "one name or a list of one")
}

func TestAllowsPerformative(t *testing.T) {
	p := mustLoad(t, patch(t, baseYAML, declaresNotify...))
	tests := []struct {
		performative string
		fipa, allows bool
	}{
		{"inform", true, true},
		{"request-whenever", true, true},
		{"notify", false, true},
		{"Inform", false, false},
		{"ping", false, false},
		{"", false, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.performative), func(t *testing.T) {
			assert.Equal(t, tt.fipa, policy.IsFIPA(tt.performative))
			assert.Equal(t, tt.allows, p.AllowsPerformative(tt.performative))
		})
	}
	assert.Len(t, policy.Performatives, 22, "FIPA's communicative acts")
}

func ExamplePolicy_AllowsPerformative() {
	src := `policy: heartbeat
version: 1
roles: [Member, Monitor]
performatives: [notify]
messages:
  beat: notify
states:
  start:
    - {send: beat, from: Member, to: Monitor, next: sent}
  sent: {terminal: sent}
`
	p, ds := policy.LoadYAML("heartbeat.yaml", []byte(src))
	fmt.Println(len(ds), len(policy.CheckPolicy(p)))
	for _, perf := range []string{"inform", "notify", "ping"} {
		fmt.Println(perf, policy.IsFIPA(perf), p.AllowsPerformative(perf))
	}
	// Output:
	// 0 0
	// inform true true
	// notify false true
	// ping false false
}

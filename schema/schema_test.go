package schema_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/parleyhq/parley/policies"
	"github.com/parleyhq/parley/policy"
	"github.com/parleyhq/parley/schema"
)

var update = flag.Bool("update", false, "rewrite testdata/all-features.xml from testdata/all-features.yaml with policy.WriteXML")

const (
	allFeaturesYAML = "testdata/all-features.yaml"
	allFeaturesXML  = "testdata/all-features.xml"
)

// compileJSON compiles the embedded JSON Schema; compiling also checks it
// against the draft 2020-12 metaschema.
func compileJSON(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema.JSON))
	require.NoError(t, err, "policy.schema.json is not JSON")
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource("policy.schema.json", doc))
	sch, err := c.Compile("policy.schema.json")
	require.NoError(t, err, "policy.schema.json does not compile")
	return sch
}

// yamlInstance decodes YAML as an editor's YAML language server does and
// converts it to the values a JSON Schema validator expects.
func yamlInstance(t *testing.T, src []byte) any {
	t.Helper()
	var v any
	require.NoError(t, yaml.Unmarshal(src, &v), "not YAML")
	js, err := json.Marshal(jsonCompatible(v))
	require.NoError(t, err, "YAML value has no JSON form")
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	require.NoError(t, err)
	return inst
}

// jsonCompatible turns the maps yaml.v3 decodes with non-string keys into
// maps with string keys, recursively.
func jsonCompatible(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = jsonCompatible(x)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[fmt.Sprint(k)] = jsonCompatible(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = jsonCompatible(x)
		}
		return out
	}
	return v
}

// xmllint validates files against policy.xsd. It returns xmllint's output
// and whether every file is valid; it fails the test when xmllint cannot
// run or cannot load the schema, and skips it when xmllint is missing.
func xmllint(t *testing.T, files ...string) (string, bool) {
	t.Helper()
	path, err := exec.LookPath("xmllint")
	if err != nil {
		t.Skip("xmllint is not on PATH (Debian package libxml2-utils)")
	}
	args := append([]string{"--noout", "--schema", "policy.xsd"}, files...)
	out, err := exec.Command(path, args...).CombinedOutput()
	if err == nil {
		return string(out), true
	}
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "running xmllint: %v", err)
	// Exit status 3 is "validation failed"; anything else (5: the schema
	// does not load) is a broken test setup, not an invalid file.
	require.Equal(t, 3, exit.ExitCode(), "xmllint failed:\n%s", out)
	return string(out), false
}

// xmllintSource validates XML source text against policy.xsd.
func xmllintSource(t *testing.T, src string) (string, bool) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "policy.xml")
	require.NoError(t, os.WriteFile(file, []byte(src), 0o644))
	return xmllint(t, file)
}

// rejects reports whether the loader or the static checks find an error
// in a policy file.
func rejects(p *policy.Policy, ds policy.Diagnostics) bool {
	return ds.HasErrors() || policy.CheckPolicy(p).HasErrors()
}

func shipped(t *testing.T, ext string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "policies", "*."+ext))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no shipped policies/*.%s", ext)
	return files
}

func TestEmbedded(t *testing.T) {
	var js map[string]any
	require.NoError(t, json.Unmarshal(schema.JSON, &js))
	assert.Equal(t, "https://json-schema.org/draft/2020-12/schema", js["$schema"])

	dec := xml.NewDecoder(bytes.NewReader(schema.XSD))
	for {
		tok, err := dec.Token()
		require.NoError(t, err, "policy.xsd is not well-formed")
		if start, ok := tok.(xml.StartElement); ok {
			assert.Equal(t, xml.Name{Space: "http://www.w3.org/2001/XMLSchema", Local: "schema"}, start.Name)
			break
		}
	}
}

// TestShippedYAMLValidates checks every policies/*.yaml against the JSON
// Schema.
func TestShippedYAMLValidates(t *testing.T) {
	sch := compileJSON(t)
	for _, file := range shipped(t, "yaml") {
		t.Run(filepath.Base(file), func(t *testing.T) {
			src, err := os.ReadFile(file)
			require.NoError(t, err)
			assert.NoError(t, sch.Validate(yamlInstance(t, src)))
		})
	}
}

// TestShippedXMLValidates checks every policies/*.xml against the XSD.
func TestShippedXMLValidates(t *testing.T) {
	for _, file := range shipped(t, "xml") {
		t.Run(filepath.Base(file), func(t *testing.T) {
			out, ok := xmllint(t, file)
			assert.True(t, ok, "%s", out)
		})
	}
}

// TestShippedPairsAgree checks that the YAML and XML files of each shipped
// policy load, without errors, to the same model.
func TestShippedPairsAgree(t *testing.T) {
	yamls, xmls := shipped(t, "yaml"), shipped(t, "xml")
	for _, x := range xmls {
		assert.FileExists(t, strings.TrimSuffix(x, ".xml")+".yaml", "a shipped policy comes in both formats")
	}
	for _, y := range yamls {
		t.Run(filepath.Base(y), func(t *testing.T) {
			x := strings.TrimSuffix(y, ".yaml") + ".xml"
			require.FileExists(t, x, "a shipped policy comes in both formats")
			py := load(t, y)
			px := load(t, x)
			assert.Equal(t, py.Fingerprint(), px.Fingerprint(), "%s and %s describe different policies", y, x)
		})
	}
}

// load loads a policy file and requires that it has no load errors.
func load(t *testing.T, file string) *policy.Policy {
	t.Helper()
	p, ds, err := policy.LoadFile(file)
	require.NoError(t, err)
	require.False(t, ds.HasErrors(), "%s:\n%v", file, ds)
	require.NotNil(t, p)
	return p
}

// TestWrittenPoliciesValidate checks that what the writers produce for
// each shipped policy, and for the all-features policy, validates: the
// schemas accept every short form and quoting the writers use.
func TestWrittenPoliciesValidate(t *testing.T) {
	sch := compileJSON(t)
	files := append(shipped(t, "yaml"), allFeaturesYAML)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			p := load(t, file)
			assert.NoError(t, sch.Validate(yamlInstance(t, policy.WriteYAML(p))), "WriteYAML output")
			out, ok := xmllintSource(t, string(policy.WriteXML(p)))
			assert.True(t, ok, "WriteXML output:\n%s", out)
		})
	}
}

// TestAllFeatures checks the feature-complete policy in testdata: both of
// its files load with no diagnostic at all, pass the static checks,
// describe the same policy and validate against the schemas. Run with
// -update to regenerate the XML file from the YAML one.
func TestAllFeatures(t *testing.T) {
	src, err := os.ReadFile(allFeaturesYAML)
	require.NoError(t, err)
	py, ds := policy.LoadYAML(allFeaturesYAML, src)
	require.Empty(t, ds, "load diagnostics for %s", allFeaturesYAML)
	require.Empty(t, policy.CheckPolicy(py, policy.WithPolicies(policies.Resolve)), "check diagnostics for %s", allFeaturesYAML)
	assertAllFeatures(t, py)

	if *update {
		require.NoError(t, os.WriteFile(allFeaturesXML, policy.WriteXML(py), 0o644))
	}
	xsrc, err := os.ReadFile(allFeaturesXML)
	require.NoError(t, err)
	px, ds := policy.LoadXML(allFeaturesXML, xsrc)
	require.Empty(t, ds, "load diagnostics for %s", allFeaturesXML)
	assert.Equal(t, py.Fingerprint(), px.Fingerprint(), "%s is out of date: run go test ./schema -run TestAllFeatures -update", allFeaturesXML)

	assert.NoError(t, compileJSON(t).Validate(yamlInstance(t, src)))
	out, ok := xmllint(t, allFeaturesXML)
	assert.True(t, ok, "%s", out)
}

// assertAllFeatures checks that p uses every feature of the model, so the
// all-features policy cannot lose one unnoticed.
func assertAllFeatures(t *testing.T, p *policy.Policy) {
	t.Helper()
	has := map[string]bool{"initial": !p.Initial.IsZero(), "vars": len(p.Vars) > 0, "budget": p.Budget != nil && p.Budget.Messages > 0 && p.Budget.Visits > 0}
	for _, r := range p.Roles {
		has["many role"] = has["many role"] || r.Many
	}
	for _, m := range p.Messages {
		has["message fields"] = has["message fields"] || len(m.Fields) > 0
		has["match"] = has["match"] || m.Match != nil
		for _, f := range m.Fields {
			has["optional field"] = has["optional field"] || f.Optional
		}
	}
	for _, tm := range p.Timers {
		has["after timer"] = has["after timer"] || tm.After > 0
		has["deadline timer with default"] = has["deadline timer with default"] || (tm.Deadline != nil && tm.Default > 0)
	}
	for _, c := range p.Commitments {
		has["commitment with every operation"] = has["commitment with every operation"] ||
			len(c.Create) > 0 && len(c.Detach) > 0 && len(c.Discharge) > 0 && len(c.Cancel) > 0 && len(c.Release) > 0 && !c.Expires.IsZero() && !c.Deadline.IsZero()
	}
	for _, s := range p.States {
		has["join state"] = has["join state"] || s.Join
		has["decide"] = has["decide"] || s.Decide != nil
		has["arm"] = has["arm"] || len(s.Arm) > 0
		has["terminal state"] = has["terminal state"] || s.Kind == policy.KindTerminal
		has["in-child state"] = has["in-child state"] || (s.Kind == policy.KindInChild && s.Child != nil && len(s.Child.Bindings) > 0)
		for _, tr := range s.Transitions {
			has[string(tr.Kind)] = true
			has["guard"] = has["guard"] || tr.Guard != nil
			has["set"] = has["set"] || len(tr.Set) > 0
			has["key"] = has["key"] || tr.Key != ""
		}
	}
	for _, f := range []string{
		"initial", "vars", "many role", "message fields", "match", "optional field", "after timer",
		"deadline timer with default", "commitment with every operation", "join state", "decide", "arm",
		"terminal state", "in-child state", "send-message", "on-timeout", "child-return", "guard", "set", "key",
	} {
		assert.True(t, has[f], "%s uses no %s", allFeaturesYAML, f)
	}
}

// baseYAML is a small valid policy the YAML cases below vary.
const baseYAML = `policy: p
version: 1
roles: [A, B]
messages:
  m: inform
timers:
  t: 30s
states:
  start:
    arm: t
    on:
      - {send: m, from: A, to: B, next: end}
      - {timeout: t, next: end}
  end: {terminal: done}
`

// TestYAMLAccepted checks short and long forms the loader accepts: the
// schema accepts them too.
func TestYAMLAccepted(t *testing.T) {
	sch := compileJSON(t)
	tests := []struct {
		name string
		old  string // text of baseYAML to replace; "" keeps baseYAML
		new  string
	}{
		{"base", "", ""},
		{"roles as a mapping", "roles: [A, B]", "roles:\n  A:\n  B: {many: false, doc: the other one}"},
		{"message long form", "m: inform", "m:\n    performative: inform\n    fields:\n      a: string?\n      b: optional int\n      c: any\n    match: content.a != nil\n    doc: a message"},
		{"timer long form", "t: 30s", "t: {after: 1m30s, doc: a timer}"},
		{"deadline timer", "t: 30s", "t: {deadline: m.reply_by, default: 500ms}"},
		{"durations", "t: 30s", "t: +1h2m3.5s4ms5us6ns"},
		{"fractional duration", "t: 30s", "t: .5µs"},
		{"version as text", "version: 1", `version: "1.0-rc1"`},
		{"state as a list", "  start:\n    arm: t\n    on:\n      - {send: m, from: A, to: B, next: end}\n      - {timeout: t, next: end}",
			"  start:\n    - {send: m, from: A, to: B, next: end}"},
		{"arm as a list", "arm: t", "arm: [t]"},
		{"literal expressions", "- {timeout: t, next: end}", "- {timeout: t, next: end, guard: true, set: {n: 0}}\n      - {timeout: t, next: end}"},
		{"guard and set", "next: end}\n      - {timeout", "next: end, key: k, guard: 'content.x > 1', set: {n: 'vars.n + 1'}, doc: d}\n      - {timeout"},
		{"initial and doc", "states:", "initial: start\ndoc: |\n  a policy\nstates:"},
		{"terminal with doc", "end: {terminal: done}", "end:\n    terminal: done\n    doc: finished"},
		{"commitment", "states:", "commitments:\n  c: {debtor: A, creditor: B, create: m, discharge: [m], detach: [], expires: t, deadline: t}\nstates:"},
		{"merge key", "roles: [A, B]", "roles: &r\n  A: {}\n  B: {}\nvars: {<<: {n: int}}"},
		{"extension performatives", "messages:\n  m: inform", "performatives: [notify]\nmessages:\n  m: notify"},
		{"one extension performative", "messages:\n  m: inform", "performatives: notify\nmessages:\n  m: {performative: notify}"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := baseYAML
			if tc.old != "" {
				require.Contains(t, src, tc.old, "bad test case")
				src = strings.Replace(src, tc.old, tc.new, 1)
			}
			_, ds := policy.LoadYAML("case.yaml", []byte(src))
			require.False(t, ds.HasErrors(), "the loader rejects this case:\n%v\n%s", ds, src)
			assert.NoError(t, sch.Validate(yamlInstance(t, []byte(src))), "%s", src)
		})
	}
}

// TestYAMLRejected checks that the schema rejects files the loader or the
// static checks reject, at the right place.
func TestYAMLRejected(t *testing.T) {
	sch := compileJSON(t)
	tests := []struct {
		name string
		old  string // text of baseYAML to replace
		new  string
		at   string // the instance location the schema reports
	}{
		{"unknown key", "states:", "stats: {}\nstates:", "additional properties 'stats' not allowed"},
		{"unknown message key", "m: inform", "m: {performative: inform, feilds: {}}", "'/messages/m'"},
		{"missing required key", "roles: [A, B]\n", "", "missing property 'roles'"},
		{"bad performative", "m: inform", "m: {performative: infrom}", "'/messages/m"},
		{"bad performative short form", "m: inform", "m: information", "'/messages/m'"},
		{"undeclared extension performative", "m: inform", "m: {performative: notify}", "'/messages/m"},
		{"extension performative declared twice", "messages:\n  m: inform", "performatives: [notify, notify]\nmessages:\n  m: notify", "'/performatives'"},
		{"bad type", "m: inform", "m: {performative: inform, fields: {a: strin}}", "'/messages/m/fields/a'"},
		{"optional and ?", "m: inform", "m:\n    performative: inform\n    fields:\n      a: optional string?", "'/messages/m/fields/a'"},
		{"bad name", "end: {terminal: done}", "1end: {terminal: done}", "'1end' does not match pattern"},
		{"duplicate role", "roles: [A, B]", "roles: [A, B, A]", "'/roles'"},
		{"send and timeout", "- {timeout: t, next: end}", "- {send: m, timeout: t, from: A, to: B, next: end}", "'/states/start/on/1'"},
		{"key on a timeout", "- {timeout: t, next: end}", "- {timeout: t, key: k, next: end}", "'/states/start/on/1'"},
		{"transition without next", "- {timeout: t, next: end}", "- {timeout: t}", "'/states/start/on/1'"},
		{"zero duration", "t: 30s", "t: 0s", "'/timers/t'"},
		{"duration without unit", "t: 30s", "t: 30", "'/timers/t'"},
		{"negative duration", "t: 30s", "t: -5s", "'/timers/t'"},
		{"after and deadline", "t: 30s", "t: {after: 1s, deadline: m.reply_by}", "'/timers/t'"},
		{"after and default", "t: 30s", "t: {after: 1s, default: 2s}", "'/timers/t'"},
		{"bad deadline", "t: 30s", "t: {deadline: reply_by}", "'/timers/t'"},
		{"terminal with transitions", "end: {terminal: done}", "end: {terminal: done, on: []}", "'/states/end'"},
		{"state without transitions", "end: {terminal: done}", "end: {doc: nothing}", "'/states/end'"},
		{"unknown role key", "roles: [A, B]", "roles: {A: {many: true, mnay: true}, B: {}}", "'/roles"},
		{"many not a boolean", "roles: [A, B]", "roles: {A: {many: lots}, B: {}}", "'/roles"},
		{"commitment without discharge", "states:", "commitments:\n  c: {debtor: A, creditor: B, create: m}\nstates:", "'/commitments/c'"},
		{"empty doc", "states:", "doc: \"\"\nstates:", "'/doc'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Contains(t, baseYAML, tc.old, "bad test case")
			src := strings.Replace(baseYAML, tc.old, tc.new, 1)
			p, ds := policy.LoadYAML("case.yaml", []byte(src))
			assert.True(t, rejects(p, ds), "the loader and checks accept this case, so the schema should too:\n%s", src)
			err := sch.Validate(yamlInstance(t, []byte(src)))
			require.Error(t, err, "the schema accepts:\n%s", src)
			assert.Contains(t, err.Error(), tc.at)
		})
	}
}

// baseXML is a small valid policy the XML cases below vary.
const baseXML = `<?xml version="1.0" encoding="UTF-8"?>
<policy name="p" version="1">
  <role name="A"/>
  <role name="B"/>
  <message name="m" performative="inform"/>
  <timer name="t" after="30s"/>
  <state name="start">
    <arm timer="t"/>
    <send-message message="m" from="A" to="B" next="end"/>
    <on-timeout timer="t" next="end"/>
  </state>
  <state name="end" kind="terminal" outcome="done"/>
</policy>
`

// TestXMLAccepted checks forms the loader accepts: the XSD accepts them
// too.
func TestXMLAccepted(t *testing.T) {
	tests := []struct {
		name, old, new string
	}{
		{"base", "", ""},
		{"schema location", `<policy name="p"`, `<policy xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="policy.xsd" name="p"`},
		{"children in any order", `<arm timer="t"/>
    <send-message message="m" from="A" to="B" next="end"/>`, `<send-message message="m" from="A" to="B" next="end"/>
    <doc>first</doc>
    <arm timer="t"/>`},
		{"outcome without kind", `kind="terminal" outcome="done"`, `outcome="done"`},
		{"booleans", `<role name="A"/>`, `<role name="A" many="0"><doc>a</doc></role>`},
		{"fields and match", `<message name="m" performative="inform"/>`, `<message name="m" performative="inform">
    <match><![CDATA[content.a != nil && content.b < 3]]></match>
    <field name="a" type="string" optional="true"/>
    <field name="b" type="int"/>
  </message>`},
		{"deadline timer", `after="30s"`, `deadline="m.reply_by" default="1m30s"`},
		{"guard and set", `next="end"/>
    <on-timeout`, `next="end" key="k"><guard>true</guard><set var="n">0</set><doc>d</doc></send-message>
    <on-timeout`},
		{"extension performative", `<message name="m" performative="inform"/>`, `<performative name="notify"/>
  <message name="m" performative="notify"/>`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := baseXML
			if tc.old != "" {
				require.Contains(t, src, tc.old, "bad test case")
				src = strings.Replace(src, tc.old, tc.new, 1)
			}
			_, ds := policy.LoadXML("case.xml", []byte(src))
			require.False(t, ds.HasErrors(), "the loader rejects this case:\n%v\n%s", ds, src)
			out, ok := xmllintSource(t, src)
			assert.True(t, ok, "%s\n%s", out, src)
		})
	}
}

// TestXMLRejected checks that the XSD rejects files the loader or the
// static checks reject, for the right reason.
func TestXMLRejected(t *testing.T) {
	tests := []struct {
		name, old, new string
		want           string // in xmllint's report
	}{
		{"unknown attribute", `performative="inform"`, `performative="inform" perfomative="inform"`, "attribute 'perfomative'"},
		{"unknown element", `<arm timer="t"/>`, `<arm timer="t"/><timeout timer="t"/>`, "Element 'timeout'"},
		{"unknown policy child", `<role name="A"/>`, `<role name="A"/><roles/>`, "Element 'roles'"},
		{"bad performative", `performative="inform"`, `performative="in form"`, "'in form'"},
		{"extension performative without a name", `<role name="A"/>`, `<role name="A"/><performative/>`, "attribute 'name' is required"},
		{"bad type", `<message name="m" performative="inform"/>`, `<message name="m" performative="inform"><field name="a" type="strin"/></message>`, "'strin'"},
		{"optional in the type", `<message name="m" performative="inform"/>`, `<message name="m" performative="inform"><field name="a" type="string?"/></message>`, "'string?'"},
		{"bad kind", `kind="terminal"`, `kind="final"`, "'final'"},
		{"bad boolean", `<role name="A"/>`, `<role name="A" many="yes"/>`, "'yes'"},
		{"bad name", `<role name="A"/>`, `<role name="1A"/>`, "'1A'"},
		{"bad duration", `after="30s"`, `after="30"`, "'30'"},
		{"zero duration", `after="30s"`, `after="0s"`, "'0s'"},
		{"missing attribute", `<state name="start">`, `<state>`, "attribute 'name' is required"},
		{"attribute of another kind", `<on-timeout timer="t" next="end"/>`, `<on-timeout timer="t" from="A" next="end"/>`, "attribute 'from'"},
		{"blank expression", `<message name="m" performative="inform"/>`, `<message name="m" performative="inform"><match>  </match></message>`, "Element 'match'"},
		{"text in a state", `<arm timer="t"/>`, `<arm timer="t"/> stray`, "Element 'state'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Contains(t, baseXML, tc.old, "bad test case")
			src := strings.Replace(baseXML, tc.old, tc.new, 1)
			p, ds := policy.LoadXML("case.xml", []byte(src))
			assert.True(t, rejects(p, ds), "the loader and checks accept this case, so the XSD should too:\n%s", src)
			out, ok := xmllintSource(t, src)
			require.False(t, ok, "the XSD accepts:\n%s", src)
			assert.Contains(t, out, tc.want)
		})
	}
}

// TestStricterThanLoader pins the cases where a schema rejects what the
// loader and the checks let through, because the file is almost certainly
// a mistake. Only the schema's verdict is asserted.
func TestStricterThanLoader(t *testing.T) {
	sch := compileJSON(t)
	yamlTests := []struct{ name, old, new, at string }{
		{"doc that is a number", "states:", "doc: 42\nstates:", "'/doc'"},
		{"outcome that is a boolean", "end: {terminal: done}", "end: {terminal: true}", "'/states/end'"},
	}
	for _, tc := range yamlTests {
		t.Run(tc.name, func(t *testing.T) {
			require.Contains(t, baseYAML, tc.old, "bad test case")
			src := strings.Replace(baseYAML, tc.old, tc.new, 1)
			err := sch.Validate(yamlInstance(t, []byte(src)))
			require.Error(t, err, "the schema accepts:\n%s", src)
			assert.Contains(t, err.Error(), tc.at)
		})
	}
	xmlTests := []struct{ name, old, new, want string }{
		{"namespaced root", `<policy name="p"`, `<policy xmlns="urn:example" name="p"`, "Element '{urn:example}policy'"},
		{"markup in doc", `<role name="A"/>`, `<role name="A"><doc>plays <b>A</b></doc></role>`, "Element 'b'"},
		{"two docs", `<role name="A"/>`, `<role name="A"><doc>one</doc><doc>two</doc></role>`, "Element 'doc'"},
		{"attribute on doc", `<role name="A"/>`, `<role name="A"><doc lang="en">a</doc></role>`, "attribute 'lang'"},
	}
	for _, tc := range xmlTests {
		t.Run(tc.name, func(t *testing.T) {
			require.Contains(t, baseXML, tc.old, "bad test case")
			src := strings.Replace(baseXML, tc.old, tc.new, 1)
			out, ok := xmllintSource(t, src)
			require.False(t, ok, "the XSD accepts:\n%s", src)
			assert.Contains(t, out, tc.want)
		})
	}
}

// TestXSDCannotTellAnExtensionFromATypo pins where the XSD is looser than
// the loader: XSD 1.0 cannot make a message type's performative depend on
// the policy's performative elements, so it accepts any name there, and a
// misspelt FIPA performative is left to the checks (CP003). The JSON
// Schema can: without a performatives key, it accepts only FIPA's.
func TestXSDCannotTellAnExtensionFromATypo(t *testing.T) {
	src := strings.Replace(baseXML, `performative="inform"`, `performative="infrom"`, 1)
	p, ds := policy.LoadXML("case.xml", []byte(src))
	assert.True(t, rejects(p, ds), "the checks accept an undeclared performative:\n%s", src)
	out, ok := xmllintSource(t, src)
	assert.True(t, ok, "the XSD now rejects an undeclared performative; move this case to TestXMLRejected:\n%s", out)
}

package policy_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/policy"
)

// stripPositions zeroes every position in the model, so models from different
// files can be compared.
func stripPositions(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			stripPositions(v.Elem())
		}
	case reflect.Slice:
		for i := range v.Len() {
			stripPositions(v.Index(i))
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[policy.Pos]() {
			v.Set(reflect.Zero(v.Type()))
			return
		}
		if v.Type() == reflect.TypeFor[policy.Expr]() {
			v.FieldByName("Indent").SetInt(0) // where continuation lines start
		}
		for i := range v.NumField() {
			stripPositions(v.Field(i))
		}
	}
}

func shippedYAML(t testing.TB) []string {
	files, err := filepath.Glob("../policies/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return files
}

func TestShippedPairsAreTheSamePolicy(t *testing.T) {
	for _, yamlFile := range shippedYAML(t) {
		name := strings.TrimSuffix(filepath.Base(yamlFile), ".yaml")
		t.Run(name, func(t *testing.T) {
			py, ds, err := policy.LoadFile(yamlFile)
			require.NoError(t, err)
			require.Empty(t, ds)
			px, ds, err := policy.LoadFile(strings.TrimSuffix(yamlFile, ".yaml") + ".xml")
			require.NoError(t, err)
			require.Empty(t, ds)

			assert.Equal(t, py.Fingerprint(), px.Fingerprint())
			stripPositions(reflect.ValueOf(py))
			stripPositions(reflect.ValueOf(px))
			assert.Equal(t, py, px)
		})
	}
}

// TestShippedXMLIsWhatConvertWrites keeps the committed XML files in step
// with their YAML sources: each must be exactly what the writer produces.
func TestShippedXMLIsWhatConvertWrites(t *testing.T) {
	for _, yamlFile := range shippedYAML(t) {
		t.Run(filepath.Base(yamlFile), func(t *testing.T) {
			p, ds, err := policy.LoadFile(yamlFile)
			require.NoError(t, err)
			require.Empty(t, ds)
			want, err := os.ReadFile(strings.TrimSuffix(yamlFile, ".yaml") + ".xml")
			require.NoError(t, err)
			assert.Equal(t, string(want), string(policy.WriteXML(p)), "regenerate with: go run ./cmd/cpvalidate convert -to xml %s", yamlFile)
		})
	}
}

func TestRoundTripThroughBothFormats(t *testing.T) {
	for _, yamlFile := range shippedYAML(t) {
		t.Run(filepath.Base(yamlFile), func(t *testing.T) {
			p, ds, err := policy.LoadFile(yamlFile)
			require.NoError(t, err)
			require.Empty(t, ds)

			xmlOut := policy.WriteXML(p)
			px, ds := policy.LoadXML("out.xml", xmlOut)
			require.Empty(t, ds, "%s", xmlOut)
			yamlOut := policy.WriteYAML(px)
			py, ds := policy.LoadYAML("out.yaml", yamlOut)
			require.Empty(t, ds, "%s", yamlOut)

			assert.Equal(t, p.Fingerprint(), px.Fingerprint())
			assert.Equal(t, p.Fingerprint(), py.Fingerprint())
			assert.Equal(t, string(yamlOut), string(policy.WriteYAML(py)), "the YAML writer is a fixed point")
			stripPositions(reflect.ValueOf(p))
			stripPositions(reflect.ValueOf(py))
			assert.Equal(t, p, py)
		})
	}
}

func TestFingerprintIgnoresFormattingAndOrder(t *testing.T) {
	a := `policy: p
version: 1
roles: [A, B]
messages: {ping: request, pong: agree}
states:
  s0:
    - {send: ping, from: A, to: B, next: s1}
  s1:
    - {send: pong, from: B, to: A, next: end}
  end: {terminal: done}
`
	b := `# the same policy, other key order, comments and docs
version: "1"
policy: p
doc: docs do not change what the policy allows
messages:
  pong: {performative: agree}
  ping: request
roles:
  - A
  - B
initial: s0
states:
  s0:
    on:
      - send: ping
        from: A
        to: B
        next: s1
  end:
    terminal: done
  s1: [{send: pong, from: B, to: A, next: end}]
`
	pa, ds := policy.LoadYAML("a.yaml", []byte(a))
	require.Empty(t, ds)
	pb, ds := policy.LoadYAML("b.yaml", []byte(b))
	require.Empty(t, ds)
	assert.Equal(t, pa.Fingerprint(), pb.Fingerprint())

	changed := strings.Replace(a, "next: end}", "next: s0}", 1)
	pc, ds := policy.LoadYAML("c.yaml", []byte(changed))
	require.Empty(t, ds)
	assert.NotEqual(t, pa.Fingerprint(), pc.Fingerprint())
}

// TestYAMLWriterQuotesWhatALiteralBlockCannotHold: a doc of several lines
// with a control character in it was written as a literal block, which
// the YAML loader refuses (found by FuzzLoadXML).
func TestYAMLWriterQuotesWhatALiteralBlockCannotHold(t *testing.T) {
	tests := []struct {
		name, doc string
	}{
		{"delete character", "\x7f\n0"},
		{"tab", "a\tb\nc"},
		{"carriage return", "a\r\nb"},
		{"printable lines", "first\n  second\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := []byte(`<policy name="p" version="1"><doc>` + tt.doc + `</doc><role name="A"/><state name="s" kind="terminal" outcome="done"/></policy>`)
			p, ds := policy.LoadXML("p.xml", src)
			require.False(t, ds.HasErrors(), "%v", ds)
			out := policy.WriteYAML(p)
			back, ds := policy.LoadYAML("p.yaml", out)
			require.False(t, ds.HasErrors(), "%v\n%s", ds, out)
			assert.Equal(t, p.Doc, back.Doc)
			assert.Equal(t, p.Fingerprint(), back.Fingerprint())
		})
	}
}

package policy_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/policy"
)

// huge is a name or value far longer than any message may quote; long is
// still 1,000 times the quoted prefix, and quicker to parse many times
// over under the race detector.
var (
	huge = strings.Repeat("x", 5<<20)
	long = strings.Repeat("x", 64<<10)
)

// TestDiagnosticsQuoteHugeNamesBounded is the regression test for
// diagnostics that quoted a 5 MB name or value from the file in full:
// every message shows at most a prefix of it, cut with an ellipsis.
func TestDiagnosticsQuoteHugeNamesBounded(t *testing.T) {
	prefix := strings.Repeat("x", policy.MaxQuoted)
	quoted := `"` + prefix + `"…` // policy.Quote
	clipped := prefix + "…"       // a name shown without quotes
	tests := []struct {
		name string
		file string
		src  string
		want string // what the diagnostics show of huge or long
	}{
		{name: "policy name", file: "p.yaml", src: strings.Replace(minimal, "policy: tiny", "policy: "+huge, 1), want: quoted},
		{name: "scalar where a mapping belongs", file: "p.yaml", src: strings.Replace(minimal, "messages: {m: inform}", "messages: "+huge, 1), want: quoted},
		{name: "unknown key", file: "p.yaml", src: minimal + "? " + long + "\n: 1\n", want: quoted},
		{name: "performative", file: "p.yaml", src: strings.Replace(minimal, "{m: inform}", "{m: "+long+"}", 1), want: quoted},
		{name: "duration", file: "p.yaml", src: minimal + "timers: {t: " + long + "}\n", want: quoted},
		{name: "state name", file: "p.yaml", src: strings.Replace(minimal, "next: done}", "next: "+long+"}", 1), want: quoted},
		{name: "unknown anchor", file: "p.yaml", src: minimal + "doc: *" + long + "\n", want: "…"},
		{name: "XML policy name", file: "p.xml", src: strings.Replace(minimalXML, `name="tiny"`, `name="`+huge+`"`, 1), want: quoted},
		{name: "XML unknown element", file: "p.xml", src: strings.Replace(minimalXML, `<role name="A"/>`, `<role name="A"/><`+long+`/>`, 1), want: clipped},
		{name: "XML root element", file: "p.xml", src: "<" + long + "/>", want: clipped},
		{name: "XML text outside elements", file: "p.xml", src: strings.Replace(minimalXML, `<role name="A"/>`, `<role name="A"/>`+long, 1), want: quoted},
		{name: "XML mismatched end tag", file: "p.xml", src: "<policy></" + long + ">", want: "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, ds := policy.Load(tt.file, []byte(tt.src))
			if p != nil {
				ds = append(ds, policy.CheckPolicy(p)...)
			}
			require.NotEmpty(t, ds)
			out := ds.Error()
			assert.Less(t, len(out), 4096*len(ds), "each diagnostic stays small")
			assert.Contains(t, out, tt.want)
			for _, d := range ds {
				assert.Less(t, len(d.Message), 1024, d.Message[:min(len(d.Message), 200)])
			}
		})
	}
}

// TestReadFileBounded checks that ReadFile never reads more than the byte
// limit (plus one byte), and reports a file that has more as CP006.
func TestReadFileBounded(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.yaml")
	require.NoError(t, os.WriteFile(small, []byte(minimal), 0o644))
	limit := policy.WithLimits(policy.Limits{MaxBytes: len(minimal)})

	src, ds, err := policy.ReadFile(small, limit)
	require.NoError(t, err)
	assert.Empty(t, ds, "a file of exactly the limit is read")
	assert.Equal(t, minimal, string(src))

	src, ds, err = policy.ReadFile(small, policy.WithLimits(policy.Limits{MaxBytes: len(minimal) - 1}))
	require.NoError(t, err)
	assert.Nil(t, src)
	assert.Equal(t, []string{fmt.Sprintf("%s:1:1: error: file is %d bytes, more than the limit of %d [CP006]", small, len(minimal), len(minimal)-1)}, lines(ds))

	_, _, err = policy.ReadFile(filepath.Join(dir, "missing.yaml"))
	assert.ErrorIs(t, err, os.ErrNotExist)

	p, ds, err := policy.LoadFile(small, limit)
	require.NoError(t, err)
	assert.Empty(t, ds)
	assert.Equal(t, "tiny", p.Name)
}

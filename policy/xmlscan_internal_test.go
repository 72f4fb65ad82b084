package policy

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// xmlScanSeeds are files near the edges of what scan reads: every
// construct it reads, and the ones it leaves to encoding/xml.
var xmlScanSeeds = []string{
	`<policy/>`,
	`<?xml version="1.0" encoding="UTF-8"?>` + "\n<policy name=\"p\" version='1'>\n  <doc>a &lt; b &amp;&amp; c &gt; d &quot;e&quot; &apos;f&apos;</doc>\n</policy>\n",
	`<policy a="1"b="2" a="3"></policy>`,
	"<policy\n\ta = \"x &amp; y\"\n>t<!-- c -->u<![CDATA[<v> & ]]>w<x/>y</policy >",
	`<p:policy xmlns:p="urn:x" p:a="1"><p:s/></p:policy>`,
	`<:a/>`, `<a:/>`, `<a:b:c/>`, `<a.b-c_d/>`, `<-a/>`, `<1a/>`, `<a></b>`, `<a></a:a>`, `<a>`, `</a>`, `<a/><b/>`,
	`<a/>trailing text`, `text<a/>`, "\ufeff<a/>", `<a>é ☃ 𝄞</a>`, "<a>\x01</a>", "<a>\xff</a>", "<a>\r\n</a>",
	`<a>]]></a>`, `<a b="]]>"/>`, `<a b="<"/>`, `<a b=c/>`, `<a b/>`, `<a b="x/>`, `<a>&#65;</a>`, `<a>&#x41;</a>`,
	`<a>&nbsp;</a>`, `<a>&lt</a>`, `<a>& b</a>`, `<a><!-- a -- b --></a>`, `<a><!----></a>`, `<a><!---></a>`,
	`<a><!- x --></a>`, `<a><![CDATA[x</a>`, `<a><![CDAT[x]]></a>`, `<!DOCTYPE a><a/>`, `<a><?pi x?></a>`,
	`<?xml version="1.1"?><a/>`, `<?xml version="1.0" encoding="latin1"?><a/>`, `<?xml version="1.0"?><a>x<?xml version="1.0"?>y</a>`,
	`<a ä="1"/>`, `<ä/>`, `<a/ >`, `<a / >`, `<a b = 'x"y'/>`, `<a><b><c/></b></a>`, ``, ` `, `<`, `<a`, `<a b`, `<a b=`,
}

// TestScanReadsAsParse checks, on every seed and every CP-XML file of
// the shipped and test policies, that what scan reads, parse reads
// without a diagnostic to the same tree, and that scan reads the files
// policies are written as.
func TestScanReadsAsParse(t *testing.T) {
	for _, src := range xmlScanSeeds {
		t.Run(src, func(t *testing.T) {
			assertScansAsParse(t, []byte(src))
		})
	}
	for _, pattern := range []string{"../policies/*.xml", "../testdata/*/*.xml", "../testdata/*/*/*.xml"} {
		files, err := filepath.Glob(pattern)
		require.NoError(t, err)
		for _, file := range files {
			t.Run(file, func(t *testing.T) {
				src, err := os.ReadFile(file)
				require.NoError(t, err)
				assertScansAsParse(t, src)
			})
		}
	}
	shipped, err := filepath.Glob("../policies/*.xml")
	require.NoError(t, err)
	require.NotEmpty(t, shipped)
	for _, file := range shipped {
		src, err := os.ReadFile(file)
		require.NoError(t, err)
		_, ok := newScanLoader(src, DefaultLimits).scan()
		assert.True(t, ok, "scan reads %s", file)
	}
	tests := []struct {
		name, src string
		read      bool
	}{
		{"entities and CDATA", "<a b=\"&lt;\">&amp;<![CDATA[&]]></a>", true},
		{"a character reference", `<a>&#65;</a>`, false},
		{"a carriage return", "<a>\r\n</a>", false},
		{"a DOCTYPE", `<!DOCTYPE a><a/>`, false},
		{"a syntax error", `<a></b>`, false},
		{"a second root", `<a/><b/>`, false},
		{"deeper than the limit", strings.Repeat("<a>", DefaultLimits.MaxDepth+1) + strings.Repeat("</a>", DefaultLimits.MaxDepth+1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ok := newScanLoader([]byte(tt.src), DefaultLimits).scan()
			assert.Equal(t, tt.read, ok)
		})
	}
}

// FuzzScan checks that whatever scan reads, parse reads without a
// diagnostic to the same tree.
func FuzzScan(f *testing.F) {
	for _, src := range xmlScanSeeds {
		f.Add([]byte(src))
	}
	files, _ := filepath.Glob("../policies/*.xml")
	for _, file := range files {
		if src, err := os.ReadFile(file); err == nil {
			f.Add(src)
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		assertScansAsParse(t, src)
	})
}

func newScanLoader(src []byte, limits Limits) *xmlLoader {
	return &xmlLoader{file: "f.xml", src: src, limits: limits, lines: lineStarts(src)}
}

// assertScansAsParse checks that when scan reads src, parse reads it
// without a diagnostic to an equal tree.
func assertScansAsParse(t *testing.T, src []byte) {
	got, ok := newScanLoader(src, DefaultLimits).scan()
	if !ok {
		return
	}
	slow := newScanLoader(src, DefaultLimits)
	want := slow.parse()
	require.Empty(t, slow.d.list, "scan read %q", src)
	require.NotNil(t, want, "scan read %q", src)
	if !reflect.DeepEqual(want, got) {
		assert.Equal(t, want, got, "scan's tree differs from parse's for %q", src)
	}
}

package policy_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/policy"
)

// TestLoadXMLAttributePositions checks that each attribute is placed at
// its own value, wherever its name also appears in the tag: the loader
// once searched the tag's text for the name, so it was misled by a value
// holding the name, by an attribute with no space before it, and by a
// repeated attribute, and it took time quadratic in the attributes.
func TestLoadXMLAttributePositions(t *testing.T) {
	const head = `<policy name="p" version="1"><role name="A"/>`
	pos := func(col int) policy.Pos { return policy.Pos{File: "test.xml", Line: 1, Col: col} }
	col := func(src, marker string) int { return strings.Index(src, marker) + 1 }
	tests := []struct {
		name  string
		state string
		// marker is the text just before the position of the diagnostic or
		// the state's name.
		marker string
		code   policy.Code
	}{
		{name: "a value holding the name", state: `<state outcome=' name="x"' name="s"/>`, marker: `x"' name="`},
		{name: "no space before the attribute", state: `<state outcome="done"name="s"/>`, marker: `"name="`},
		{name: "an unknown attribute with no space before it", state: `<state name="s"uuu="done"/>`, marker: `uuu="`, code: policy.CodeUnknownField},
		{name: "the second of a repeated unknown attribute", state: `<state name="s" x="1" x="2"/>`, marker: ` x="1" x="`, code: policy.CodeUnknownField},
		{name: "the third of a repeated attribute", state: `<state name="s" name="s" name="s"/>`, marker: ` name="s" name="s" name="`, code: policy.CodeDuplicate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := head + tt.state + `</policy>`
			p, ds := policy.LoadXML("test.xml", []byte(src))
			require.NotNil(t, p)
			want := pos(col(src, tt.marker) + len(tt.marker))
			if tt.code == "" {
				require.Empty(t, ds)
				assert.Equal(t, want, p.States[0].Pos)
				return
			}
			var got []policy.Pos
			for _, d := range ds {
				if d.Code == tt.code {
					got = append(got, d.Pos)
				}
			}
			require.NotEmpty(t, got, "no %s diagnostic in %v", tt.code, ds)
			assert.Equal(t, want, got[len(got)-1])
		})
	}
}

// TestLoadXMLText checks the text the loader reads from an element: the
// character data before its first child, across comments and CDATA, and
// text between elements reported once per piece.
func TestLoadXMLText(t *testing.T) {
	src := `<policy name="p" version="1"><role name="A"/>
  <doc>one <!-- a comment --> two<![CDATA[ <three> ]]></doc>
  <state name="s" outcome="done">stray<!-- --><![CDATA[ ]]></state>
</policy>`
	p, ds := policy.LoadXML("test.xml", []byte(src))
	require.NotNil(t, p)
	assert.Equal(t, "one  two <three>", p.Doc)
	var stray []string
	for _, d := range ds {
		stray = append(stray, d.Message)
	}
	assert.Equal(t, []string{
		`<state> holds text "" outside any element`,
		`<state> holds text "stray" outside any element`,
	}, stray, "a blank CDATA section is text, a blank run between elements is not")
}

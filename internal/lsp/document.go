package lsp

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/parleyhq/parley/engine"
	"github.com/parleyhq/parley/policy"
)

// document is an open policy file: its text as the editor has it, and
// what loading and checking that text found.
type document struct {
	uri      string
	filename string // the path diagnostics name; from the URI
	xml      bool
	text     *text
	policy   *policy.Policy // nil when the text holds no policy
	// names is the last policy that loaded, kept for completion while
	// the file does not parse.
	names *policy.Policy
	diags policy.Diagnostics
	index *index
}

// filenameOf turns a file: URI into a path; any other URI is used as it
// is, so that its extension still tells the format.
func filenameOf(uri string) string {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" {
		return uri
	}
	return filepath.FromSlash(u.Path)
}

// isXML says whether a document is CP-XML: by its language, its
// extension, or else its first character, as policy.Load decides.
func isXML(filename, languageID string, src []byte) bool {
	switch languageID {
	case "xml":
		return true
	case "yaml":
		return false
	}
	if f, ok := policy.FormatOf(filename); ok {
		return f == policy.FormatXML
	}
	return strings.HasPrefix(strings.TrimLeft(string(src[:min(len(src), 512)]), " \t\r\n\ufeff"), "<")
}

// update replaces the document's text and checks it again, with child
// policies found by resolve.
func (d *document) update(src []byte, resolve func(string) *policy.Policy) {
	d.text = newText(src)
	if d.xml {
		d.policy, d.diags = policy.LoadXML(d.filename, src)
	} else {
		d.policy, d.diags = policy.LoadYAML(d.filename, src)
	}
	if d.policy != nil {
		// Exactly cpvalidate's step: the engine's check-then-compile,
		// whose diagnostics include the loader's.
		_, d.diags = engine.Check(d.policy, engine.WithPolicies(resolve))
		d.names = d.policy
	}
	for i := range d.diags {
		if d.diags[i].Pos.File == "" {
			d.diags[i].Pos.File = d.filename
		}
	}
	if d.policy == nil && !d.diags.HasErrors() {
		d.diags = append(d.diags, policy.Diagnostic{Severity: policy.SeverityError, Code: policy.CodeSyntax,
			Pos: policy.Pos{File: d.filename, Line: 1, Col: 1}, Message: "the file holds no policy"})
	}
	d.index = buildIndex(d.policy, d.text)
}

// place returns the cursor's place in the document.
func (d *document) place(off int) place {
	if d.xml {
		return xmlPlaceAt(d.text, off)
	}
	return yamlPlaceAt(d.text, off)
}

// span returns the byte span a diagnostic at pos covers: the name or
// word there, or one character.
func (d *document) span(pos policy.Pos) (int, int) {
	off, ok := d.text.offsetOfPos(pos)
	if !ok {
		return 0, 0
	}
	start := off
	if start < len(d.text.src) && (d.text.src[start] == '"' || d.text.src[start] == '\'') {
		start++
	}
	end := d.text.wordEnd(start)
	if end == start {
		return off, off
	}
	return off, end
}

// sameFile reports whether a diagnostic position is in this document.
func (d *document) sameFile(pos policy.Pos) bool { return pos.File == d.filename }

// relatedText renders a related position in another file, which the
// editor cannot show as a location of this document.
func relatedText(r policy.Related) string {
	return fmt.Sprintf("%s: %s", r.Pos, r.Message)
}

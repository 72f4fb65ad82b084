package lsp

import (
	"testing"

	protocol "github.com/tliron/glsp/protocol_3_16"

	"github.com/parleyhq/parley/policy"
)

// FuzzDocument checks that no text, and no cursor in it, makes the
// server's reading of a document panic: loading and indexing it, and
// the place, key and position of every offset.
func FuzzDocument(f *testing.F) {
	f.Add([]byte("policy: p\nversion: 1\nroles: [A, B]\nmessages: {m: inform}\nstates:\n  s:\n    - {send: m, from: A, to: B, next: e}\n  e: {terminal: e}\n"), false)
	f.Add([]byte(`<policy name="p" version="1"><role name="A"/><state name="s"><send-message message="m" next="`), true)
	f.Add([]byte("states:\n  - {send: [\"x: 'y\n\t- é😀: {"), false)
	f.Add([]byte("<a b='\"<c d=\"e"), true)
	f.Fuzz(func(t *testing.T, src []byte, xml bool) {
		if len(src) > 4096 {
			return
		}
		d := &document{filename: "f.yaml", xml: xml}
		if xml {
			d.filename = "f.xml"
		}
		d.update(src, func(string) *policy.Policy { return nil })
		for off := 0; off <= len(src); off++ {
			d.place(off)
			d.keyAt(off)
			d.index.at(off)
			p := d.text.position(off)
			d.text.offset(p)
			d.text.offset(protocol.Position{Line: p.Line, Character: p.Character + 3})
		}
		for _, dg := range d.diags {
			d.span(dg.Pos)
		}
	})
}

package lsp

import (
	"fmt"
	"maps"
	"regexp"
	"slices"

	"github.com/tliron/glsp"
	protocol "github.com/tliron/glsp/protocol_3_16"

	"github.com/parleyhq/parley/policy"
)

func (s *server) completion(_ *glsp.Context, p *protocol.CompletionParams) (any, error) {
	d, off := s.docAt(p.TextDocumentPositionParams)
	if d == nil {
		return nil, nil
	}
	pl := d.place(off)
	items := []protocol.CompletionItem{}
	replace := d.text.rng(pl.start, off)
	item := func(label string, kind protocol.CompletionItemKind, detail, doc string) {
		it := protocol.CompletionItem{Label: label, Kind: &kind, TextEdit: protocol.TextEdit{Range: replace, NewText: label}}
		if detail != "" {
			it.Detail = &detail
		}
		if doc != "" {
			it.Documentation = protocol.MarkupContent{Kind: protocol.MarkupKindMarkdown, Value: doc}
		}
		items = append(items, it)
	}
	docs := docsOnce()
	switch {
	case pl.ref != 0:
		for _, name := range names(d.names, pl.ref) {
			doc := ""
			if d.names != nil {
				doc = symbolHover(d.names, &occurrence{kind: pl.ref, name: name})
			}
			item(name, completionKind(pl.ref), pl.ref.String(), doc)
		}
	case pl.atElem:
		for _, name := range slices.Sorted(maps.Keys(docs.elems)) {
			item(name, protocol.CompletionItemKindClass, "element", docs.elems[name])
		}
	case pl.atKey && d.xml:
		for _, k := range docs.attrs[pl.ctx] {
			item(k.name, protocol.CompletionItemKindProperty, "attribute of <"+pl.ctx+">", k.doc)
		}
	case pl.atKey:
		for _, k := range docs.yaml[pl.ctx] {
			item(k.name, protocol.CompletionItemKindProperty, "key", k.doc)
		}
	}
	return protocol.CompletionList{IsIncomplete: false, Items: items}, nil
}

func completionKind(k Kind) protocol.CompletionItemKind {
	switch k {
	case KindState:
		return protocol.CompletionItemKindEnumMember
	case KindMessage:
		return protocol.CompletionItemKindEvent
	case KindTimer:
		return protocol.CompletionItemKindValue
	case KindRole:
		return protocol.CompletionItemKindInterface
	}
	return protocol.CompletionItemKindVariable
}

// renameable are the kinds rename changes throughout a file.
var renameable = []Kind{KindState, KindMessage, KindTimer, KindRole, KindCommitment, KindVar}

// validName is the name syntax of the schemas.
var validName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

func (s *server) prepareRename(_ *glsp.Context, p *protocol.PrepareRenameParams) (any, error) {
	d, off := s.docAt(p.TextDocumentPositionParams)
	if d == nil {
		return nil, nil
	}
	o := d.index.at(off)
	if o == nil || !slices.Contains(renameable, o.kind) {
		return nil, nil
	}
	return d.text.rng(o.start, o.end), nil
}

// rename renames a state, message type or other name at every place the
// file names it. It refuses a name that is not a valid name, one that is
// taken, and a rename after which the file has more errors than before
// (a decide expression that returns the old message name as a key).
func (s *server) rename(_ *glsp.Context, p *protocol.RenameParams) (*protocol.WorkspaceEdit, error) {
	d, off := s.docAt(p.TextDocumentPositionParams)
	if d == nil {
		return nil, nil
	}
	o := d.index.at(off)
	if o == nil || !slices.Contains(renameable, o.kind) {
		return nil, fmt.Errorf("there is no state, message type, timer, role, commitment or variable here to rename")
	}
	to := p.NewName
	switch {
	case to == o.name:
		return &protocol.WorkspaceEdit{Changes: map[protocol.DocumentUri][]protocol.TextEdit{}}, nil
	case len(to) > 128 || !validName.MatchString(to):
		return nil, fmt.Errorf("%s is not a name: a letter or underscore, then letters, digits, underscores and hyphens, at most 128 bytes", policy.Quote(to))
	case slices.Contains(names(d.policy, o.kind), to):
		return nil, fmt.Errorf("the policy already has a %s %s", o.kind, policy.Quote(to))
	}
	occs := d.index.all(o.kind, o.name)
	edits := make([]protocol.TextEdit, 0, len(occs))
	renamed := make([]byte, 0, len(d.text.src)+len(occs)*(len(to)-len(o.name)))
	last := 0
	for _, r := range occs {
		edits = append(edits, protocol.TextEdit{Range: d.text.rng(r.start, r.end), NewText: to})
		renamed = append(append(renamed, d.text.src[last:r.start]...), to...)
		last = r.end
	}
	renamed = append(renamed, d.text.src[last:]...)
	after := &document{filename: d.filename, xml: d.xml}
	after.update(renamed, s.resolver(d))
	if n, m := after.diags.Count(policy.SeverityError), d.diags.Count(policy.SeverityError); n > m {
		first := ""
		for _, dg := range after.diags {
			if dg.Severity == policy.SeverityError && !slices.ContainsFunc(d.diags, func(x policy.Diagnostic) bool { return x.Code == dg.Code && x.Message == dg.Message }) {
				first = dg.Error()
				break
			}
		}
		return nil, fmt.Errorf("renaming %s to %s would add %d error(s): %s", policy.Quote(o.name), policy.Quote(to), n-m, first)
	}
	return &protocol.WorkspaceEdit{Changes: map[protocol.DocumentUri][]protocol.TextEdit{d.uri: edits}}, nil
}

package lsp

import (
	"encoding/json"
	"encoding/xml"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/parleyhq/parley/schema"
)

// keyDoc is what a key (a YAML key, or a CP-XML element or attribute)
// means, from the schemas Parley ships.
type keyDoc struct {
	name string
	doc  string
}

// The YAML contexts a key can be in, named after the JSON Schema's
// definitions; ctxRoot is the policy itself.
const (
	ctxRoot       = ""
	ctxRole       = "role"
	ctxMessage    = "message"
	ctxTimer      = "timer"
	ctxCommitment = "commitment"
	ctxState      = "state"
	ctxChild      = "child"
	ctxTransition = "transition"
)

// schemaDocs holds the key documentation of both schemas, read once.
type schemaDocs struct {
	// yaml maps a context to its keys, sorted.
	yaml map[string][]keyDoc
	// elems documents each CP-XML element; attrs each element's
	// attributes, in the schema's order.
	elems map[string]string
	attrs map[string][]keyDoc
}

var docsOnce = sync.OnceValue(func() *schemaDocs {
	d := &schemaDocs{yaml: map[string][]keyDoc{}, elems: map[string]string{}, attrs: map[string][]keyDoc{}}
	d.readJSON(schema.JSON)
	d.readXSD(schema.XSD)
	return d
})

// yamlKey returns the documentation of key in context ctx.
func (d *schemaDocs) yamlKey(ctx, key string) (keyDoc, bool) {
	i := slices.IndexFunc(d.yaml[ctx], func(k keyDoc) bool { return k.name == key })
	if i < 0 {
		return keyDoc{}, false
	}
	return d.yaml[ctx][i], true
}

// xmlAttr returns the documentation of attribute attr of element elem.
func (d *schemaDocs) xmlAttr(elem, attr string) (keyDoc, bool) {
	i := slices.IndexFunc(d.attrs[elem], func(k keyDoc) bool { return k.name == attr })
	if i < 0 {
		return keyDoc{}, false
	}
	return d.attrs[elem][i], true
}

type jsonSchema struct {
	Ref         string                 `json:"$ref"`
	Title       string                 `json:"title"`
	Description string                 `json:"description"`
	Properties  map[string]*jsonSchema `json:"properties"`
	OneOf       []*jsonSchema          `json:"oneOf"`
	AnyOf       []*jsonSchema          `json:"anyOf"`
	AllOf       []*jsonSchema          `json:"allOf"`
	Defs        map[string]*jsonSchema `json:"$defs"`
}

// readJSON reads the keys of each context from the JSON Schema. A
// schema that does not parse (it is embedded and tested) leaves no keys.
func (d *schemaDocs) readJSON(src []byte) {
	var root jsonSchema
	if json.Unmarshal(src, &root) != nil {
		return
	}
	resolve := func(s *jsonSchema) *jsonSchema {
		for range 8 {
			if s == nil || s.Ref == "" {
				break
			}
			s = root.Defs[strings.TrimPrefix(s.Ref, "#/$defs/")]
		}
		return s
	}
	var collect func(s *jsonSchema, out *[]keyDoc, depth int)
	collect = func(s *jsonSchema, out *[]keyDoc, depth int) {
		s = resolve(s)
		if s == nil || depth > 8 {
			return
		}
		for _, k := range slices.Sorted(maps.Keys(s.Properties)) {
			if slices.ContainsFunc(*out, func(x keyDoc) bool { return x.name == k }) {
				continue
			}
			p := s.Properties[k]
			doc := p.Description
			if doc == "" {
				if r := resolve(p); r != nil {
					doc = r.Description
				}
			}
			*out = append(*out, keyDoc{name: k, doc: doc})
		}
		for _, alts := range [][]*jsonSchema{s.OneOf, s.AnyOf, s.AllOf} {
			for _, a := range alts {
				collect(a, out, depth+1)
			}
		}
	}
	var rootKeys []keyDoc
	collect(&root, &rootKeys, 0)
	slices.SortFunc(rootKeys, func(a, b keyDoc) int { return strings.Compare(a.name, b.name) })
	d.yaml[ctxRoot] = rootKeys
	for _, ctx := range []string{ctxRole, ctxMessage, ctxTimer, ctxCommitment, ctxState, ctxChild, ctxTransition} {
		var keys []keyDoc
		collect(root.Defs[ctx], &keys, 0)
		slices.SortFunc(keys, func(a, b keyDoc) int { return strings.Compare(a.name, b.name) })
		d.yaml[ctx] = keys
	}
}

type xsdNode struct {
	XMLName  xml.Name
	Name     string    `xml:"name,attr"`
	Type     string    `xml:"type,attr"`
	Doc      string    `xml:"annotation>documentation"`
	Children []xsdNode `xml:",any"`
}

// readXSD reads the documentation of each element and attribute from the
// XML Schema.
func (d *schemaDocs) readXSD(src []byte) {
	var root xsdNode
	if xml.Unmarshal(src, &root) != nil {
		return
	}
	typeDocs := map[string]string{}
	typeUsers := map[string][]string{} // complexType name -> element names
	var scan func(n *xsdNode)
	scan = func(n *xsdNode) {
		if n.XMLName.Local == "complexType" && n.Name != "" {
			typeDocs[n.Name] = clean(n.Doc)
		}
		if n.XMLName.Local == "element" && n.Name != "" && n.Type != "" {
			typeUsers[n.Type] = append(typeUsers[n.Type], n.Name)
		}
		for i := range n.Children {
			scan(&n.Children[i])
		}
	}
	scan(&root)
	var walk func(n *xsdNode, owners []string)
	walk = func(n *xsdNode, owners []string) {
		switch n.XMLName.Local {
		case "element":
			if n.Name != "" {
				doc := clean(n.Doc)
				if doc == "" {
					doc = typeDocs[n.Type]
				}
				if _, ok := d.elems[n.Name]; !ok || d.elems[n.Name] == "" {
					d.elems[n.Name] = doc
				}
				owners = []string{n.Name}
			}
		case "complexType":
			if n.Name != "" {
				owners = typeUsers[n.Name]
			}
		case "attribute":
			for _, o := range owners {
				if _, dup := d.xmlAttr(o, n.Name); !dup {
					d.attrs[o] = append(d.attrs[o], keyDoc{name: n.Name, doc: clean(n.Doc)})
				}
			}
		}
		for i := range n.Children {
			walk(&n.Children[i], owners)
		}
	}
	walk(&root, nil)
}

// clean joins a documentation text's lines.
func clean(s string) string { return strings.Join(strings.Fields(s), " ") }

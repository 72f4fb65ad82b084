// Package schema ships the schemas of Parley's two policy file syntaxes,
// so that editors can complete and check policy files and tools can serve
// the schemas:
//
//   - policy.schema.json, a JSON Schema (draft 2020-12) for the YAML syntax
//     that policy.LoadYAML reads;
//   - policy.xsd, an XML Schema (no target namespace, root element policy)
//     for the CP-XML syntax that policy.LoadXML reads.
//
// The schemas check the shape of a file: its keys, elements and
// attributes, names, performatives, field types and durations. They do not
// replace cpvalidate, which runs the static checks (references,
// reachability, timers, expressions, commitments) that no schema can
// express. The tests in this package keep the schemas and the loaders in
// step: every shipped policy validates, and the files that the schemas
// reject are files the loaders or the checks reject too.
//
// To have an editor with the YAML language server use the schema, start a
// policy file with
//
//	# yaml-language-server: $schema=https://raw.githubusercontent.com/parleyhq/parley/main/schema/policy.schema.json
//
// and point an XML editor at policy.xsd, for example with
// xsi:noNamespaceSchemaLocation on the policy element (the XML loader
// ignores xmlns and xsi attributes).
package schema

import _ "embed" // for the schema files

// JSON is the JSON Schema (draft 2020-12) of the YAML policy syntax, the
// content of policy.schema.json. Its $id is
// https://raw.githubusercontent.com/parleyhq/parley/main/schema/policy.schema.json.
// It is shared: treat it as read-only.
//
//go:embed policy.schema.json
var JSON []byte

// XSD is the XML Schema of the CP-XML policy syntax, the content of
// policy.xsd. It has no target namespace; its root element is policy. It
// is shared: treat it as read-only.
//
//go:embed policy.xsd
var XSD []byte

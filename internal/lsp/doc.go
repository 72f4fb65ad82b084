// Package lsp is cpvalidate's language server: it speaks the Language
// Server Protocol over a stream (cpvalidate lsp uses stdin and stdout)
// for policy files in YAML and CP-XML.
//
// For each open document it publishes exactly the diagnostics cpvalidate
// reports, from engine.Check, each with its code and related positions;
// child policies are resolved among the other open documents, then among
// the policies Parley ships. It answers hover (what a name declares, or
// what a key means, from the schemas), go to definition and find
// references for states, message types, timers, roles, commitments and
// variables, completion of names where a reference is expected and of
// keys, and rename of a name throughout the file.
//
// The names come from the loaded policy.Policy, whose every declaration
// and reference carries its position; the keys' contexts are read from
// the lines around the cursor, so completion works in a half-written
// file.
//
// Limits: a message body has at most MaxMessageBytes (a larger one, or a
// header line over 4 KiB, ends the session with an error); at most
// MaxDocuments documents are checked at once; at most MaxDiagnostics
// diagnostics are published for one document.
package lsp

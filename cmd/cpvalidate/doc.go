// Command cpvalidate checks conversation policy files, converts them
// between YAML and CP-XML, draws them as diagrams, checks traces against
// them and replays an agent's journal against its store.
//
// It runs the same load and check steps the engine uses, so a policy that
// cpvalidate accepts is one the engine accepts, and it prints every
// problem at once, each at its position with a stable code:
//
//	cpvalidate [-format text|json|sarif] [-max N] [-q] PATH...
//	cpvalidate convert -to yaml|xml [-o FILE] FILE
//	cpvalidate graph [-format mermaid|dot] [-role ROLE] FILE
//	cpvalidate explore [-format text|json|mermaid] [-max-states N] [-buffer N] [-instances N] PATH...
//	cpvalidate trace [-bind ROLE=agent[,agent...]]... [-format text|json] [-max N] POLICY TRACE
//	cpvalidate replay [-agent NAME] [-conversation ID] POLICY... JOURNAL STORE
//	cpvalidate lsp [-log FILE]
//	cpvalidate help [COMMAND]
//
// A PATH that is a directory stands for every .yaml, .yml and .xml file
// under it. Child policies are resolved among the files given, then among
// the policies Parley ships. Text output looks like this:
//
//	policies/order.yaml:25:55: error: state "acepted" is not declared; did you mean "accepted"? [CP010]
//
//	FAIL  order v1         sha256:2042b5381299  6 states, 2 roles   1 error  policies/order.yaml
//	ok    fipa-request v1  sha256:1a51306e7dcb  12 states, 2 roles           policies/fipa-request.yaml
//	2 policies checked: 1 ok, 1 failed (1 error)
//
// The exit status is 0 when no errors were found (warnings are allowed),
// 1 when some policy has an error, and 2 for a usage or I/O problem.
// Run "cpvalidate -h" for the complete usage.
package main

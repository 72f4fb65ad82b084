package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/policies"
)

// traces is the directory of the example traces, as the tests name it on
// the command line (and so as it appears in the output).
const traces = "../../testdata/traces"

// traceCases lists every example trace in traces: the -bind flags it
// needs (only where the binding cannot be inferred from the trace) and
// the exit code cpvalidate trace gives it. The policy comes from the file
// name's prefix (see tracePolicyFor).
var traceCases = []struct {
	name string
	bind []string
	code int
}{
	// FIPA Request.
	{name: "request-agree-result", code: exitOK},
	{name: "request-inform-done", code: exitOK},
	{name: "request-refuse", code: exitOK},
	{name: "request-agree-failure", code: exitOK}, // a commitment warning, no error
	{name: "request-cancel", code: exitOK},
	// An agree that crosses the cancel creates no commitment, so the
	// cancel-reply timeout leaves none open on either side.
	{name: "request-agree-crosses-cancel", code: exitOK},
	{name: "request-timeout", code: exitOK},
	{name: "request-late", code: exitErrors},
	{name: "request-after-end", code: exitErrors},
	{name: "request-duplicate", code: exitErrors},
	{name: "request-wrong-role", code: exitErrors},
	{name: "request-bad-content", code: exitErrors},
	{name: "request-wrong-reply", code: exitErrors},
	// Three agents and no many role: only -bind says mallory plays no part.
	{name: "request-unbound-agent", bind: []string{"-bind", "Initiator=alice", "-bind", "Participant=bob"}, code: exitErrors},
	{name: "request-interleaved", code: exitOK},
	{name: "request-incomplete", code: exitOK}, // incomplete, but nothing wrong
	{name: "request-format", code: exitErrors},
	// A repeated key (at the top and in content) and a time out of
	// range are errors; a time going back is a warning.
	{name: "request-strict", code: exitErrors},
	// Timer lines: a timeout the journal recorded after the last message
	// ends the conversation; a timer line the policy does not bear out is
	// an error.
	{name: "request-timer-timeout", code: exitOK},
	{name: "request-timer-wrong", code: exitErrors},
	// FIPA Query.
	{name: "query-if-holds", code: exitOK},
	{name: "query-ref-result", code: exitOK},
	{name: "query-holds-string", code: exitErrors},
	// FIPA Contract Net.
	{name: "cnet-award", code: exitOK},
	{name: "cnet-late-proposal", code: exitErrors},
	{name: "cnet-not-understood", code: exitOK},
	{name: "cnet-cancel", code: exitOK},
	// An accept-proposal before every Participant has answered and before
	// the deadline for proposals: the join was not released (PE016).
	{name: "cnet-early-accept", code: exitErrors},
	// The protocol library: traces named after their policy.
	{name: "fipa-iterated-contract-net-rounds", code: exitOK},
	{name: "fipa-iterated-contract-net-stale-accept", code: exitErrors},
	{name: "fipa-iterated-contract-net-early-accept", code: exitErrors},
	{name: "fipa-subscribe-cancel", code: exitOK},
	{name: "fipa-subscribe-after-lease", code: exitErrors},
	{name: "fipa-propose-accept", code: exitOK},
	{name: "fipa-propose-late-accept", code: exitErrors},
	{name: "fipa-request-when-result", code: exitOK},
	{name: "fipa-request-when-unagreed", code: exitErrors},
	{name: "fipa-brokering-refuse", code: exitOK},
	{name: "fipa-brokering-early-relay", code: exitErrors},
	// The brokered exchange, checked on its own (cpvalidate trace does not
	// run child policies): either side may speak first, so bind one.
	{name: "brokered-exchange-relay", bind: []string{"-bind", "Initiator=client"}, code: exitOK},
	{name: "brokered-exchange-after-done", bind: []string{"-bind", "Initiator=client"}, code: exitErrors},
	{name: "english-auction-sold", code: exitOK}, // unfinished: the winner's fipa-request is a child policy
	{name: "english-auction-low-bid", code: exitErrors},
	{name: "english-auction-early-accept", code: exitErrors},
	{name: "dutch-auction-sold", code: exitOK}, // unfinished: the winner's fipa-request is a child policy
	{name: "dutch-auction-rising-call", code: exitErrors},
	{name: "dutch-auction-early-accept", code: exitErrors},
	{name: "contract-net-negotiation-counter", code: exitOK},
	{name: "contract-net-negotiation-fourth-counter", code: exitErrors},
	// After the early accept, s1's session never returns to the join, so
	// the reject to s2 is early too.
	{name: "contract-net-negotiation-early-accept", code: exitErrors},
	// The bully algorithm: n2 takes the election over and names the
	// leader, n3 is silent; an alive after the election's reply_by is
	// late; the winner announces itself to every other member.
	{name: "leader-election-takeover", code: exitOK},
	{name: "leader-election-late-alive", code: exitErrors},
	{name: "leader-election-announce", code: exitOK},
}

// tracePolicyFor names the shipped policy a trace file is checked
// against, by the file name's prefix: request-*, query-* and cnet-* for
// the first FIPA policies, else the longest shipped policy name the file
// name starts with, followed by a hyphen.
func tracePolicyFor(t *testing.T, name string) string {
	t.Helper()
	prefix, _, _ := strings.Cut(name, "-")
	switch prefix {
	case "request":
		return "fipa-request"
	case "query":
		return "fipa-query"
	case "cnet":
		return "fipa-contract-net"
	}
	best := ""
	for _, p := range policies.Names() {
		if strings.HasPrefix(name, p+"-") && len(p) > len(best) {
			best = p
		}
	}
	require.NotEmpty(t, best, "%s: name traces request-*, query-*, cnet-* or after the shipped policy they follow (fipa-subscribe-*)", name)
	return best
}

// TestTraceCasesListEveryTrace keeps traceCases and the directory in step:
// a new trace gets its golden files and exit code.
func TestTraceCasesListEveryTrace(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(traces, "*.jsonl"))
	require.NoError(t, err)
	var onDisk, listed []string
	for _, f := range files {
		onDisk = append(onDisk, strings.TrimSuffix(filepath.Base(f), ".jsonl"))
	}
	for _, tc := range traceCases {
		listed = append(listed, tc.name)
	}
	slices.Sort(listed)
	assert.Equal(t, onDisk, listed, "every testdata/traces/*.jsonl needs an entry in traceCases, and every entry a file")
}

func TestTraceGolden(t *testing.T) {
	for _, tc := range traceCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(traces, tc.name+".jsonl")
			pol := tracePolicyFor(t, tc.name)

			args := append(append([]string{"trace"}, tc.bind...), pol, file)
			code, text, stderr := runCLI(t, args...)
			assert.Equal(t, tc.code, code, "exit code of the text output; stderr:\n%s", stderr)
			assert.Empty(t, stderr)
			goldenFile(t, filepath.Join(traces, tc.name+".txt.golden"), text)

			args = append(append([]string{"trace", "-format", "json"}, tc.bind...), pol, file)
			code, js, stderr := runCLI(t, args...)
			assert.Equal(t, tc.code, code, "exit code of the JSON output; stderr:\n%s", stderr)
			assert.Empty(t, stderr)
			goldenFile(t, filepath.Join(traces, tc.name+".json.golden"), js)

			// Both formats say the same: one text line per finding and
			// the summary line; the verdict matches the exit code.
			findings, sum := traceJSON(t, js)
			textLines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
			require.Len(t, textLines, len(findings)+1, text)
			for i, f := range findings {
				assert.True(t, strings.HasPrefix(textLines[i], file+":"), textLines[i])
				assert.True(t, strings.HasSuffix(textLines[i], "["+f.Code+"]"), "%q does not end in [%s]", textLines[i], f.Code)
			}
			assert.Equal(t, tc.code == exitOK, sum.Conforms)
			last := textLines[len(textLines)-1]
			assert.Equal(t, sum.Conforms, strings.HasPrefix(last, file+": conforms, "), last)
			assert.Equal(t, sum.Complete, strings.Contains(last, ", complete ("), last)
		})
	}
}

type traceFinding struct {
	Line     int    `json:"line"`
	Severity string `json:"severity"`
	Code     string `json:"code"`
	Message  string `json:"message"`
	Agent    string `json:"agent"`
	Role     string `json:"role"`
}

type traceSummary struct {
	Conforms bool              `json:"conforms"`
	Complete bool              `json:"complete"`
	Outcomes map[string]string `json:"outcomes"`
}

// traceJSON decodes the -format json output, checking it has exactly the
// shape cpvalidate trace promises: finding objects with six keys, then one
// summary object.
func traceJSON(t *testing.T, out string) ([]traceFinding, traceSummary) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.NotEmpty(t, lines)
	var findings []traceFinding
	for _, l := range lines[:len(lines)-1] {
		var keys map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(l), &keys), l)
		assert.ElementsMatch(t, []string{"line", "severity", "code", "message", "agent", "role"}, mapKeys(keys), l)
		var f traceFinding
		require.NoError(t, json.Unmarshal([]byte(l), &f), l)
		assert.Positive(t, f.Line, l)
		assert.Contains(t, []string{"error", "warning", "info"}, f.Severity, l)
		assert.NotEmpty(t, f.Code, l)
		assert.NotEmpty(t, f.Message, l)
		if f.Role != "" {
			assert.NotEmpty(t, f.Agent, "a finding with a role has an agent: %s", l)
		}
		findings = append(findings, f)
	}
	var last map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &last))
	require.Equal(t, []string{"summary"}, mapKeys(last), "the last line is the summary")
	var keys map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(last["summary"], &keys))
	assert.ElementsMatch(t, []string{"conforms", "complete", "outcomes"}, mapKeys(keys))
	var sum traceSummary
	require.NoError(t, json.Unmarshal(last["summary"], &sum))
	require.NotNil(t, sum.Outcomes, "outcomes is an object, never null")
	return findings, sum
}

func mapKeys(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestTraceSummary(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		conforms bool
		complete bool
		outcomes map[string]string
		codes    []string // the codes of the findings, in order
	}{
		{
			name:     "agree then result",
			args:     []string{"fipa-request", traces + "/request-agree-result.jsonl"},
			conforms: true, complete: true,
			outcomes: map[string]string{"alice": "result", "bob": "result"},
		},
		{
			name:     "timeout with nothing after it",
			args:     []string{"fipa-request", traces + "/request-timeout.jsonl"},
			conforms: true, complete: true,
			outcomes: map[string]string{"alice": "c1=timeout,c2=done", "bob": "c1=timeout,c2=done"},
		},
		{
			name:     "stops mid-conversation",
			args:     []string{"fipa-request", traces + "/request-incomplete.jsonl"},
			conforms: true, complete: false,
			outcomes: map[string]string{"alice": "", "bob": ""},
			codes:    []string{"TR006", "TR006"},
		},
		{
			name:     "a timeout after the last message, in the journal",
			args:     []string{"fipa-request", traces + "/request-timer-timeout.jsonl"},
			conforms: true, complete: true,
			outcomes: map[string]string{"alice": "timeout", "bob": "timeout"},
		},
		{
			name:     "timer lines the policy does not bear out",
			args:     []string{"fipa-request", traces + "/request-timer-wrong.jsonl"},
			conforms: false, complete: true,
			outcomes: map[string]string{"alice": "timeout", "bob": "timeout"},
			codes:    []string{"TR012", "TR012", "TR012", "TR001", "TR002"},
		},
		{
			name:     "late proposal",
			args:     []string{"fipa-contract-net", traces + "/cnet-late-proposal.jsonl"},
			conforms: false, complete: true,
			outcomes: map[string]string{"buyer": "done=1,no-bid=1,rejected=1", "s1": "rejected", "s2": "done", "s3": "no-bid"},
			codes:    []string{"PE004", "PE004"},
		},
		{
			name:     "format problems",
			args:     []string{"fipa-request", traces + "/request-format.jsonl"},
			conforms: false, complete: true,
			outcomes: map[string]string{"alice": "done", "bob": "done"},
			codes:    []string{"TR001", "TR002"},
		},
		{
			name:     "failure after agree is a warning",
			args:     []string{"fipa-request", traces + "/request-agree-failure.jsonl"},
			conforms: true, complete: true,
			outcomes: map[string]string{"alice": "failed", "bob": "failed"},
			codes:    []string{"TR005", "TR005"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runCLI(t, append([]string{"trace", "-format", "json"}, tt.args...)...)
			require.Empty(t, stderr)
			findings, sum := traceJSON(t, stdout)
			assert.Equal(t, tt.conforms, sum.Conforms)
			assert.Equal(t, tt.conforms, code == exitOK)
			assert.Equal(t, tt.complete, sum.Complete)
			assert.Equal(t, tt.outcomes, sum.Outcomes)
			var codes []string
			for _, f := range findings {
				codes = append(codes, f.Code)
			}
			assert.Equal(t, tt.codes, codes)
		})
	}
}

// TestTracePolicyArgument checks that a shipped policy named, its YAML
// file and its CP-XML file give the same report.
func TestTracePolicyArgument(t *testing.T) {
	file := traces + "/request-late.jsonl"
	code, want, stderr := runCLI(t, "trace", "fipa-request", file)
	require.Equal(t, exitErrors, code, stderr)
	for _, pol := range []string{shipped + "/fipa-request.yaml", shipped + "/fipa-request.xml"} {
		t.Run(filepath.Base(pol), func(t *testing.T) {
			code, got, stderr := runCLI(t, "trace", pol, file)
			assert.Equal(t, exitErrors, code, stderr)
			assert.Equal(t, want, got)
		})
	}
}

// TestTraceBind checks -bind where the default binding would do as well,
// and where it is the only way.
func TestTraceBind(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		same    []string // args giving the same output without the -bind flags
		code    int
		stdout  []string // substrings the output must hold
		without []string // substrings it must not hold
	}{
		{
			name: "explicit binding equal to the default",
			args: []string{"trace", "-bind", "Initiator=buyer", "-bind", "Participant=s1,s2,s3", "fipa-contract-net", traces + "/cnet-award.jsonl"},
			same: []string{"trace", "fipa-contract-net", traces + "/cnet-award.jsonl"},
			code: exitOK,
		},
		{
			name: "flags after the arguments",
			args: []string{"trace", "fipa-contract-net", traces + "/cnet-award.jsonl", "-bind", "Participant=s1,s2", "-bind", "Participant=s3", "-bind", "Initiator=buyer"},
			same: []string{"trace", "fipa-contract-net", traces + "/cnet-award.jsonl"},
			code: exitOK,
		},
		{
			name:   "no single initiating role",
			args:   []string{"trace", "-bind", "Left=ann", "testdata/trace/greeting.yaml", "testdata/trace/greeting.jsonl"},
			code:   exitOK,
			stdout: []string{"conforms, complete (ann: done; ben: done)"},
		},
		{
			name:   "the other side greets first",
			args:   []string{"trace", "-bind", "Right=ann", "-bind", "Left=ben", "testdata/trace/greeting.yaml", "testdata/trace/greeting.jsonl"},
			code:   exitOK,
			stdout: []string{"conforms, complete (ann: done; ben: done)"},
		},
		{
			name:   "a first line that opens nothing, bound",
			args:   []string{"trace", "-bind", "Initiator=alice", "fipa-request", "testdata/trace/starts-midway.jsonl"},
			code:   exitErrors,
			stdout: []string{`:1: error: bob (Participant): agree from "bob" is in conversation "c1" the trace never opened, and cannot open one (a conversation of "fipa-request" opens with request from Initiator) [PE001]`},
		},
		{
			name:    "several agents of a role that is not many",
			args:    []string{"trace", "-bind", "Participant=bob,mallory", "fipa-request", traces + "/request-unbound-agent.jsonl"},
			code:    exitErrors,
			stdout:  []string{`:3: error: mallory (Participant): "mallory" is not an agent of conversation "c1": "bob" plays Participant in it, and Participant is played by one agent in each conversation [PE003]`},
			without: []string{"mallory: unfinished", "TR006"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runCLI(t, tt.args...)
			assert.Equal(t, tt.code, code, "stderr:\n%s", stderr)
			assert.Empty(t, stderr)
			if tt.same != nil {
				_, want, _ := runCLI(t, tt.same...)
				assert.Equal(t, want, stdout)
			}
			for _, s := range tt.stdout {
				assert.Contains(t, stdout, s)
			}
			for _, s := range tt.without {
				assert.NotContains(t, stdout, s)
			}
		})
	}
}

func TestTraceUsageErrors(t *testing.T) {
	good := traces + "/request-agree-result.jsonl"
	tests := []struct {
		name   string
		args   []string
		stderr []string // substrings stderr must hold
	}{
		{name: "no arguments", args: []string{"trace"}, stderr: []string{"needs a policy and a trace, got 0 argument(s)", "cpvalidate trace -h"}},
		{name: "no trace", args: []string{"trace", "fipa-request"}, stderr: []string{"needs a policy and a trace, got 1 argument(s)"}},
		{name: "two traces", args: []string{"trace", "fipa-request", good, good}, stderr: []string{"got 3 argument(s)"}},
		{name: "bad format", args: []string{"trace", "-format", "sarif", "fipa-request", good}, stderr: []string{`invalid value "sarif" for flag -format: must be one of text, json`}},
		{name: "unknown flag", args: []string{"trace", "-role", "Initiator", "fipa-request", good}, stderr: []string{"flag provided but not defined: -role", "cpvalidate trace -h"}},
		{
			name:   "bind needed: first line not from the initiating role",
			args:   []string{"trace", "fipa-request", "testdata/trace/starts-midway.jsonl"},
			stderr: []string{`cannot tell who plays Initiator: the trace's first line (line 1, agree from "bob") is not a message Initiator opens "fipa-request" with (request); add -bind Initiator=AGENT`, "cpvalidate trace -h"},
		},
		{
			name:   "bind needed: three agents and no many role",
			args:   []string{"trace", "fipa-request", traces + "/request-unbound-agent.jsonl"},
			stderr: []string{`cannot tell who plays Participant: "bob" and "mallory" would both play it, but it is not a many role; add -bind Participant=AGENT[,AGENT...]`},
		},
		{
			name:   "bind needed: one role bound, two agents left for a role that is not many",
			args:   []string{"trace", "-bind", "Initiator=alice", "fipa-request", traces + "/request-unbound-agent.jsonl"},
			stderr: []string{`"bob" and "mallory" would both play it`, "add -bind Participant="},
		},
		{
			name:   "bind needed: no single initiating role",
			args:   []string{"trace", "testdata/trace/greeting.yaml", "testdata/trace/greeting.jsonl"},
			stderr: []string{`policy "greeting" has no single initiating role; add -bind ROLE=agent for "ann", "ben"`},
		},
		{
			name:   "bind with an unknown role",
			args:   []string{"trace", "-bind", "Initator=alice", "fipa-request", good},
			stderr: []string{`-bind Initator=...: policy "fipa-request" has no role "Initator"; did you mean "Initiator"? (roles: Initiator, Participant)`},
		},
		{
			name:   "bind an agent to two roles",
			args:   []string{"trace", "-bind", "Initiator=alice", "-bind", "Participant=alice", "fipa-request", good},
			stderr: []string{`-bind: agent "alice" is bound to both`},
		},
		{name: "bind without =", args: []string{"trace", "-bind", "Initiator", "fipa-request", good}, stderr: []string{`invalid value "Initiator" for flag -bind: must be ROLE=agent[,agent...]`}},
		{name: "bind an empty agent", args: []string{"trace", "-bind", "Participant=bob,,carol", "fipa-request", good}, stderr: []string{"empty agent name"}},
		{name: "missing trace file", args: []string{"trace", "fipa-request", "testdata/nosuch.jsonl"}, stderr: []string{"testdata/nosuch.jsonl: no such file or directory"}},
		{name: "trace is a directory", args: []string{"trace", "fipa-request", traces}, stderr: []string{"reading " + traces}},
		{name: "unknown shipped policy", args: []string{"trace", "fipa-requets", good}, stderr: []string{"fipa-requets is neither a file nor a shipped policy (" + strings.Join(policies.Names(), ", ") + ")"}},
		{name: "missing policy file", args: []string{"trace", "testdata/nosuch.yaml", good}, stderr: []string{"testdata/nosuch.yaml: no such file or directory"}},
		{
			name:   "policy file with errors",
			args:   []string{"trace", "testdata/broken/order.yaml", good},
			stderr: []string{`testdata/broken/order.yaml:7:12: error: unknown key "docs" in role "Seller"; did you mean "doc"? [CP002]`, "testdata/broken/order.yaml has 1 error"},
		},
		{
			name:   "policy file that fails its checks",
			args:   []string{"trace", "testdata/broken/choice.yaml", good},
			stderr: []string{"[CP029]", "testdata/broken/choice.yaml has errors; fix them before checking traces against it"},
		},
		{name: "policy file that does not parse", args: []string{"trace", "testdata/broken/unparsable.yaml", good}, stderr: []string{"testdata/broken/unparsable.yaml:3:1: error:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runCLI(t, tt.args...)
			assert.Equal(t, exitUsage, code, "stderr:\n%s", stderr)
			for _, s := range tt.stderr {
				assert.Contains(t, stderr, s)
			}
			assert.Empty(t, stdout)
		})
	}
}

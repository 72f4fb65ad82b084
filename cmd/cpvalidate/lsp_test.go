package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/textproto"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lspMessage is any message the server sends.
type lspMessage struct {
	ID     *int            `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// lspClient speaks LSP to a cpvalidate lsp process over its stdin and
// stdout, with Content-Length framing.
type lspClient struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	msgs   chan lspMessage
	queue  []lspMessage // notifications read while waiting for a reply
	nextID int
}

// buildCPValidate builds the cpvalidate binary into a temporary directory.
func buildCPValidate(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "cpvalidate")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

func startLSP(t *testing.T, bin string) *lspClient {
	t.Helper()
	cmd := exec.Command(bin, "lsp")
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	c := &lspClient{t: t, cmd: cmd, in: in, msgs: make(chan lspMessage, 64)}
	go c.read(out)
	t.Cleanup(func() {
		in.Close()
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return c
}

func (c *lspClient) read(out io.Reader) {
	defer close(c.msgs)
	r := textproto.NewReader(bufio.NewReader(out))
	for {
		h, err := r.ReadMIMEHeader()
		if err != nil {
			return
		}
		n, err := strconv.Atoi(h.Get("Content-Length"))
		if err != nil {
			c.t.Errorf("bad Content-Length %q", h.Get("Content-Length"))
			return
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(r.R, body); err != nil {
			return
		}
		var m lspMessage
		if err := json.Unmarshal(body, &m); err != nil {
			c.t.Errorf("bad message %s: %v", body, err)
			return
		}
		c.msgs <- m
	}
}

func (c *lspClient) send(v any) {
	c.t.Helper()
	data, err := json.Marshal(v)
	require.NoError(c.t, err)
	_, err = fmt.Fprintf(c.in, "Content-Length: %d\r\n\r\n%s", len(data), data)
	require.NoError(c.t, err)
}

func (c *lspClient) notify(method string, params any) {
	c.t.Helper()
	c.send(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

// next returns the next message the server sends, failing after a while.
func (c *lspClient) next() lspMessage {
	c.t.Helper()
	select {
	case m, ok := <-c.msgs:
		require.True(c.t, ok, "the server closed its output")
		return m
	case <-time.After(30 * time.Second):
		c.t.Fatal("no message from the server in 30s")
	}
	return lspMessage{}
}

// call sends a request and decodes its result into result; it returns
// the error message the server answered with, if any.
func (c *lspClient) call(method string, params, result any) string {
	c.t.Helper()
	c.nextID++
	id := c.nextID
	c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	for {
		m := c.next()
		if m.ID == nil || m.Method != "" {
			c.queue = append(c.queue, m)
			continue
		}
		require.Equal(c.t, id, *m.ID, "a reply to another request")
		if m.Error != nil {
			return m.Error.Message
		}
		if result != nil {
			require.NoError(c.t, json.Unmarshal(m.Result, result), "result of %s: %s", method, m.Result)
		}
		return ""
	}
}

type lspDiagnostic struct {
	Range    lspRange `json:"range"`
	Severity int      `json:"severity"`
	Code     string   `json:"code"`
	Source   string   `json:"source"`
	Message  string   `json:"message"`
	Related  []struct {
		Location lspLocation `json:"location"`
		Message  string      `json:"message"`
	} `json:"relatedInformation"`
}

type lspPosition struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

type lspRange struct {
	Start lspPosition `json:"start"`
	End   lspPosition `json:"end"`
}

type lspLocation struct {
	URI   string   `json:"uri"`
	Range lspRange `json:"range"`
}

// diagnostics waits for the diagnostics published for uri.
func (c *lspClient) diagnostics(uri string) []lspDiagnostic {
	c.t.Helper()
	for {
		var m lspMessage
		if len(c.queue) > 0 {
			m, c.queue = c.queue[0], c.queue[1:]
		} else {
			m = c.next()
		}
		if m.Method != "textDocument/publishDiagnostics" {
			continue
		}
		var p struct {
			URI         string          `json:"uri"`
			Diagnostics []lspDiagnostic `json:"diagnostics"`
		}
		require.NoError(c.t, json.Unmarshal(m.Params, &p))
		if p.URI == uri {
			return p.Diagnostics
		}
	}
}

// posOf returns the position of the n-th (0-based) occurrence of sub in
// src, plus offset bytes, as LSP counts it (the test texts are ASCII).
func posOf(t *testing.T, src, sub string, n, offset int) lspPosition {
	t.Helper()
	at := -1
	for i := 0; i <= n; i++ {
		j := strings.Index(src[at+1:], sub)
		require.GreaterOrEqual(t, j, 0, "%q occurs fewer than %d times", sub, n+1)
		at += 1 + j
	}
	at += offset
	line := strings.Count(src[:at], "\n")
	return lspPosition{Line: line, Character: at - (strings.LastIndex(src[:at], "\n") + 1)}
}

// errorsOf returns the diagnostics of error severity.
func errorsOf(ds []lspDiagnostic) []lspDiagnostic {
	var out []lspDiagnostic
	for _, d := range ds {
		if d.Severity == 1 {
			out = append(out, d)
		}
	}
	return out
}

func textDoc(uri string) map[string]any { return map[string]any{"uri": uri} }

func at(uri string, p lspPosition) map[string]any {
	return map[string]any{"textDocument": textDoc(uri), "position": p}
}

// TestLSPOverStdio starts the built binary and speaks LSP to it: the
// diagnostics of a broken policy and of its fix, hover, definition,
// references, completion and rename, in YAML and CP-XML.
func TestLSPOverStdio(t *testing.T) {
	bin := buildCPValidate(t)
	c := startLSP(t, bin)

	var init struct {
		Capabilities struct {
			HoverProvider      bool `json:"hoverProvider"`
			DefinitionProvider bool `json:"definitionProvider"`
			ReferencesProvider bool `json:"referencesProvider"`
			RenameProvider     struct {
				PrepareProvider bool `json:"prepareProvider"`
			} `json:"renameProvider"`
			CompletionProvider struct {
				TriggerCharacters []string `json:"triggerCharacters"`
			} `json:"completionProvider"`
		} `json:"capabilities"`
		ServerInfo struct {
			Name string `json:"name"`
		} `json:"serverInfo"`
	}
	require.Empty(t, c.call("initialize", map[string]any{"processId": nil, "rootUri": nil, "capabilities": map[string]any{}}, &init))
	assert.Equal(t, "cpvalidate", init.ServerInfo.Name)
	assert.True(t, init.Capabilities.HoverProvider)
	assert.True(t, init.Capabilities.DefinitionProvider)
	assert.True(t, init.Capabilities.ReferencesProvider)
	assert.True(t, init.Capabilities.RenameProvider.PrepareProvider)
	assert.Contains(t, init.Capabilities.CompletionProvider.TriggerCharacters, ":")
	c.notify("initialized", map[string]any{})

	fixedBytes, err := os.ReadFile("testdata/lsp/order.yaml")
	require.NoError(t, err)
	fixed := string(fixedBytes)
	broken := strings.Replace(fixed, "next: accepted}", "next: acepted}", 1)
	require.NotEqual(t, fixed, broken)
	uri := "file:///work/policies/order.yaml"

	t.Run("diagnostics of a broken policy", func(t *testing.T) {
		c.notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": uri, "languageId": "yaml", "version": 1, "text": broken}})
		ds := c.diagnostics(uri)
		errs := errorsOf(ds)
		require.Len(t, errs, 1, "%+v", ds)
		want := posOf(t, broken, "acepted", 0, 0)
		assert.Equal(t, "CP010", errs[0].Code)
		assert.Equal(t, "cpvalidate", errs[0].Source)
		assert.Equal(t, lspRange{Start: want, End: lspPosition{Line: want.Line, Character: want.Character + len("acepted")}}, errs[0].Range)
		assert.Contains(t, errs[0].Message, `did you mean "accepted"?`)
	})

	t.Run("fixing it clears them", func(t *testing.T) {
		c.notify("textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": uri, "version": 2}, "contentChanges": []any{map[string]any{"text": fixed}}})
		assert.Empty(t, c.diagnostics(uri))
	})

	hoverTests := []struct {
		name string
		pos  lspPosition
		want []string
	}{
		{name: "a state's doc", pos: posOf(t, fixed, "next: accepted", 0, 8), want: []string{"**state** `accepted`", "the Seller has agreed and owes the goods", "2 transitions"}},
		{name: "a message's declaration", pos: posOf(t, fixed, "send: ship", 0, 7), want: []string{"**message type** `ship`", "performative `inform`", "`tracking` string", "discharges commitment `deliver`"}},
		{name: "a timer's duration", pos: posOf(t, fixed, "timeout: answer", 0, 10), want: []string{"**timer** `answer`", "fires after 30s", "the Seller's answer"}},
		{name: "a role", pos: posOf(t, fixed, "debtor: Seller", 0, 9), want: []string{"**role** `Seller`", "ships goods"}},
		{name: "a commitment", pos: posOf(t, fixed, "deliver:", 0, 2), want: []string{"**commitment** `deliver`", "C(Seller, Buyer)", "deadline `delivery`"}},
		{name: "a key's meaning", pos: posOf(t, fixed, "performative: inform", 0, 3), want: []string{"**performative**", "FIPA"}},
		{name: "a state key", pos: posOf(t, fixed, "arm: delivery", 0, 1), want: []string{"**arm**"}},
	}
	for _, tt := range hoverTests {
		t.Run("hover on "+tt.name, func(t *testing.T) {
			var h struct {
				Contents struct {
					Kind  string `json:"kind"`
					Value string `json:"value"`
				} `json:"contents"`
			}
			require.Empty(t, c.call("textDocument/hover", at(uri, tt.pos), &h))
			assert.Equal(t, "markdown", h.Contents.Kind)
			for _, w := range tt.want {
				assert.Contains(t, h.Contents.Value, w)
			}
		})
	}

	t.Run("definition of a state", func(t *testing.T) {
		var loc lspLocation
		require.Empty(t, c.call("textDocument/definition", at(uri, posOf(t, fixed, "next: accepted", 0, 9)), &loc))
		assert.Equal(t, uri, loc.URI)
		assert.Equal(t, posOf(t, fixed, "  accepted:", 0, 2), loc.Range.Start)
	})

	referenceTests := []struct {
		name string
		pos  lspPosition
		want []lspPosition
	}{
		{name: "a message", pos: posOf(t, fixed, "accept: agree", 0, 0), want: []lspPosition{
			posOf(t, fixed, "accept: agree", 0, 0), posOf(t, fixed, "create: accept", 0, 8), posOf(t, fixed, "send: accept", 0, 6)}},
		{name: "a timer", pos: posOf(t, fixed, "arm: delivery", 0, 6), want: []lspPosition{
			posOf(t, fixed, "delivery: 1h", 0, 0), posOf(t, fixed, "deadline: delivery", 0, 10), posOf(t, fixed, "arm: delivery", 0, 5), posOf(t, fixed, "timeout: delivery", 0, 9)}},
		{name: "a role", pos: posOf(t, fixed, "Buyer: {doc", 0, 1), want: []lspPosition{
			posOf(t, fixed, "Buyer: {doc", 0, 0), posOf(t, fixed, "creditor: Buyer", 0, 10),
			posOf(t, fixed, "from: Buyer", 0, 6), posOf(t, fixed, "to: Buyer", 0, 4), posOf(t, fixed, "to: Buyer", 1, 4), posOf(t, fixed, "to: Buyer", 2, 4)}},
		{name: "a commitment", pos: posOf(t, fixed, "deliver:", 0, 0), want: []lspPosition{posOf(t, fixed, "deliver:", 0, 0)}},
	}
	for _, tt := range referenceTests {
		t.Run("references of "+tt.name, func(t *testing.T) {
			var locs []lspLocation
			require.Empty(t, c.call("textDocument/references", map[string]any{"textDocument": textDoc(uri), "position": tt.pos, "context": map[string]any{"includeDeclaration": true}}, &locs))
			got := make([]lspPosition, len(locs))
			for i, l := range locs {
				got[i] = l.Range.Start
			}
			assert.Equal(t, tt.want, got)
		})
	}

	type completionList struct {
		Items []struct {
			Label string `json:"label"`
		} `json:"items"`
	}
	labels := func(l completionList) []string {
		out := make([]string, len(l.Items))
		for i, it := range l.Items {
			out[i] = it.Label
		}
		return out
	}
	// A half-typed transition: the file does not parse, and completion
	// offers the names of the last version that did.
	typing := strings.Replace(fixed, "      - {timeout: delivery, next: timed-out}\n", "      - {timeout: delivery, next: timed-out}\n      - {send: ship, from: Sel\n", 1)
	completionTests := []struct {
		name string
		text string
		pos  lspPosition
		want []string
	}{
		{name: "states after next:", text: fixed, pos: posOf(t, fixed, "next: ordered", 0, 6), want: []string{"start", "ordered", "accepted", "shipped", "declined", "timed-out"}},
		{name: "roles after from: while typing", text: typing, pos: posOf(t, typing, "from: Sel\n", 0, 9), want: []string{"Buyer", "Seller"}},
		{name: "timers after arm:", text: fixed, pos: posOf(t, fixed, "arm: answer", 0, 5), want: []string{"answer", "delivery"}},
		{name: "messages after send:", text: fixed, pos: posOf(t, fixed, "send: order", 0, 6), want: []string{"order", "accept", "decline", "ship"}},
		{name: "state keys", text: fixed, pos: posOf(t, fixed, "    arm: answer", 0, 4), want: []string{"arm", "child", "decide", "doc", "join", "on", "terminal"}},
	}
	for _, tt := range completionTests {
		t.Run("completion of "+tt.name, func(t *testing.T) {
			c.notify("textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": uri, "version": 4}, "contentChanges": []any{map[string]any{"text": tt.text}}})
			c.diagnostics(uri)
			var l completionList
			require.Empty(t, c.call("textDocument/completion", at(uri, tt.pos), &l))
			assert.Equal(t, tt.want, labels(l))
		})
	}

	t.Run("rename of a state", func(t *testing.T) {
		c.notify("textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": uri, "version": 5}, "contentChanges": []any{map[string]any{"text": fixed}}})
		c.diagnostics(uri)
		var edit struct {
			Changes map[string][]struct {
				Range   lspRange `json:"range"`
				NewText string   `json:"newText"`
			} `json:"changes"`
		}
		require.Empty(t, c.call("textDocument/rename", map[string]any{"textDocument": textDoc(uri), "position": posOf(t, fixed, "next: timed-out", 0, 7), "newName": "expired"}, &edit))
		edits := edit.Changes[uri]
		want := []lspPosition{posOf(t, fixed, "next: timed-out", 0, 6), posOf(t, fixed, "next: timed-out", 1, 6), posOf(t, fixed, "timed-out: {", 0, 0)}
		require.Len(t, edits, len(want))
		for i, e := range edits {
			assert.Equal(t, "expired", e.NewText)
			assert.Equal(t, want[i], e.Range.Start)
			assert.Equal(t, want[i].Character+len("timed-out"), e.Range.End.Character)
		}
	})

	t.Run("rename to a name that is taken", func(t *testing.T) {
		msg := c.call("textDocument/rename", map[string]any{"textDocument": textDoc(uri), "position": posOf(t, fixed, "send: decline", 0, 6), "newName": "accept"}, nil)
		assert.Contains(t, msg, `already has a message type "accept"`)
	})

	xmlBytes, err := os.ReadFile("testdata/lsp/order.xml")
	require.NoError(t, err)
	xmlFixed := string(xmlBytes)
	xmlBroken := strings.Replace(xmlFixed, `timer="answer" next=`, `timer="anwser" next=`, 1)
	xmlURI := "file:///work/policies/order.xml"

	t.Run("diagnostics of a broken CP-XML policy", func(t *testing.T) {
		c.notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": xmlURI, "languageId": "xml", "version": 1, "text": xmlBroken}})
		ds := c.diagnostics(xmlURI)
		errs := errorsOf(ds)
		require.Len(t, errs, 1, "%+v", ds)
		assert.Equal(t, "CP010", errs[0].Code)
		assert.Equal(t, posOf(t, xmlBroken, "anwser", 0, 0), errs[0].Range.Start)
		c.notify("textDocument/didChange", map[string]any{"textDocument": map[string]any{"uri": xmlURI, "version": 2}, "contentChanges": []any{map[string]any{"text": xmlFixed}}})
		assert.Empty(t, c.diagnostics(xmlURI))
	})

	t.Run("CP-XML definition, completion and attribute hover", func(t *testing.T) {
		var loc lspLocation
		require.Empty(t, c.call("textDocument/definition", at(xmlURI, posOf(t, xmlFixed, `next="accepted"`, 0, 7)), &loc))
		assert.Equal(t, posOf(t, xmlFixed, `<state name="accepted"`, 0, 13), loc.Range.Start)
		var l completionList
		require.Empty(t, c.call("textDocument/completion", at(xmlURI, posOf(t, xmlFixed, `timer="answer" next=`, 0, 7)), &l))
		assert.Equal(t, []string{"answer", "delivery"}, labels(l))
		var h struct {
			Contents struct {
				Value string `json:"value"`
			} `json:"contents"`
		}
		require.Empty(t, c.call("textDocument/hover", at(xmlURI, posOf(t, xmlFixed, `after="30s"`, 0, 1)), &h))
		assert.Contains(t, h.Contents.Value, "**after**")
	})

	t.Run("related positions", func(t *testing.T) {
		src, err := os.ReadFile("testdata/broken/choice.yaml")
		require.NoError(t, err)
		choiceURI := "file:///work/policies/choice.yaml"
		c.notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{"uri": choiceURI, "languageId": "yaml", "version": 1, "text": string(src)}})
		ds := c.diagnostics(choiceURI)
		require.Len(t, ds, 1)
		assert.Equal(t, "CP029", ds[0].Code)
		require.Len(t, ds[0].Related, 3)
		assert.Equal(t, choiceURI, ds[0].Related[0].Location.URI)
		assert.Equal(t, lspPosition{Line: 14, Character: 6}, ds[0].Related[0].Location.Range.Start, "choice.yaml:15:7")
		assert.Equal(t, "the other branch", ds[0].Related[0].Message)
		assert.Equal(t, lspPosition{Line: 15, Character: 2}, ds[0].Related[1].Location.Range.Start, "choice.yaml:16:3")
		assert.Equal(t, `state "sold"`, ds[0].Related[1].Message)
		assert.Contains(t, ds[0].Message, "witness")
	})

	require.Empty(t, c.call("shutdown", nil, nil))
	c.notify("exit", nil)
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		assert.NoError(t, err, "exit after shutdown exits 0")
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not exit")
	}
}

func TestLSPUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		out  string // golden file of stdout; "" for none
		err  string // what stderr must contain
	}{
		{name: "usage", args: []string{"lsp", "-h"}, code: exitOK, out: "usage-lsp.txt"},
		{name: "help", args: []string{"help", "lsp"}, code: exitOK, out: "usage-lsp.txt"},
		{name: "arguments", args: []string{"lsp", "policy.yaml"}, code: exitUsage, err: "takes no arguments"},
		{name: "unwritable log", args: []string{"lsp", "-log", "/nonexistent/dir/lsp.log"}, code: exitUsage, err: "/nonexistent/dir/lsp.log"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tt.args...)
			assert.Equal(t, tt.code, code, stderr)
			if tt.out != "" {
				golden(t, tt.out, stdout)
			}
			assert.Contains(t, stderr, tt.err)
		})
	}
}

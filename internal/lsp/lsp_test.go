package lsp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	protocol "github.com/tliron/glsp/protocol_3_16"

	"github.com/parleyhq/parley/policy"
)

// cursor splits src at its "|" into the text and the cursor's offset.
func cursor(t *testing.T, src string) (*text, int) {
	t.Helper()
	i := strings.Index(src, "|")
	require.GreaterOrEqual(t, i, 0, "no cursor in %q", src)
	return newText([]byte(src[:i] + src[i+1:])), i
}

func TestYAMLPlace(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want place
	}{
		{name: "a top-level key", src: "policy: x\nver|", want: place{atKey: true, ctx: ctxRoot}},
		{name: "initial names a state", src: "policy: x\ninitial: st|", want: place{ref: KindState}},
		{name: "a state key", src: "states:\n  a:\n    ar|", want: place{atKey: true, ctx: ctxState}},
		{name: "arm names a timer", src: "states:\n  a:\n    arm: |", want: place{ref: KindTimer}},
		{name: "arm's list items name timers", src: "states:\n  a:\n    arm:\n      - |", want: place{ref: KindTimer}},
		{name: "next in a flow transition", src: "states:\n  a:\n    on:\n      - {send: m, next: |", want: place{ref: KindState}},
		{name: "send in a flow transition", src: "states:\n  a:\n    - {send: |", want: place{ref: KindMessage}},
		{name: "a key of a flow transition", src: "states:\n  a:\n    on:\n      - {send: m, |", want: place{atKey: true, ctx: ctxTransition}},
		{name: "a key of a block transition", src: "states:\n  a:\n    on:\n      - send: m\n        fr|", want: place{atKey: true, ctx: ctxTransition}},
		{name: "from in a block transition", src: "states:\n  a:\n    on:\n      - send: m\n        from: |", want: place{ref: KindRole}},
		// The list item's sibling above it was read as its parent, so
		// the item's path had two list levels and nothing matched.
		{name: "a list item below its sibling", src: "states:\n  a:\n    on:\n      - {timeout: t, next: b}\n      - {send: m, from: |", want: place{ref: KindRole}},
		{name: "a commitment's flow list of messages", src: "commitments:\n  c:\n    discharge: [a, |", want: place{ref: KindMessage}},
		{name: "a commitment's deadline is a timer", src: "commitments:\n  c:\n    deadline: |", want: place{ref: KindTimer}},
		{name: "a timer's deadline is a message", src: "timers:\n  t: {deadline: |", want: place{ref: KindMessage}},
		{name: "a message key in a flow mapping", src: "messages:\n  m: {perf|", want: place{atKey: true, ctx: ctxMessage}},
		{name: "a child's role binding", src: "states:\n  a:\n    child:\n      policy: p\n      roles:\n        A: |", want: place{ref: KindRole}},
		{name: "a comment", src: "states:\n  a:\n    # next: |", want: place{}},
		{name: "a quoted value", src: "states:\n  a:\n    doc: \"next: |", want: place{}},
		{name: "a field name", src: "messages:\n  m:\n    fields:\n      |", want: place{}},
		// A flow list that no key opened took a key off an empty path.
		{name: "a flow list opened by no key", src: "[0|", want: place{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tx, off := cursor(t, tt.src)
			got := yamlPlaceAt(tx, off)
			got.start = 0
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestXMLPlace(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want place
	}{
		{name: "an element name", src: "<policy>\n  <sta|", want: place{atElem: true}},
		{name: "an attribute name", src: "<policy>\n  <state na|", want: place{atKey: true, ctx: "state"}},
		{name: "next names a state", src: `<policy><state name="a"><send-message message="m" next="|`, want: place{ref: KindState}},
		{name: "a message attribute names a message", src: `<policy><send-message from="A" message="|`, want: place{ref: KindMessage}},
		{name: "arm's timer", src: `<policy><state><arm timer='|`, want: place{ref: KindTimer}},
		{name: "after an attribute value", src: `<policy><state name="a" |`, want: place{atKey: true, ctx: "state"}},
		{name: "text content", src: `<policy><doc>next="|`, want: place{}},
		{name: "a closing tag", src: `<policy></sta|`, want: place{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tx, off := cursor(t, tt.src)
			got := xmlPlaceAt(tx, off)
			got.start = 0
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestPositionsCountUTF16(t *testing.T) {
	tx := newText([]byte("doc: héllo 😀 x\nnext: b\n"))
	tests := []struct {
		name string
		off  int
		pos  protocol.Position
	}{
		{name: "start", off: 0, pos: protocol.Position{Line: 0, Character: 0}},
		{name: "after a two-byte rune", off: len("doc: hé"), pos: protocol.Position{Line: 0, Character: 7}},
		{name: "after an astral rune", off: len("doc: héllo 😀"), pos: protocol.Position{Line: 0, Character: 13}},
		{name: "second line", off: len("doc: héllo 😀 x\nnext"), pos: protocol.Position{Line: 1, Character: 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.pos, tx.position(tt.off))
			assert.Equal(t, tt.off, tx.offset(tt.pos))
		})
	}
}

func TestIndexXML(t *testing.T) {
	src := `<policy name="p" version="1">
  <role name="A"/><role name="B"/>
  <message name="m" performative="inform"/>
  <timer name="t" deadline="m.reply_by" default="1s"/>
  <state name="s">
    <arm timer="t"/>
    <send-message message="m" from="A" to="B" next="e"/>
    <on-timeout timer="t" next="e"/>
  </state>
  <state name="e" kind="terminal" outcome="done"/>
</policy>`
	p, ds := policy.LoadXML("p.xml", []byte(src))
	require.False(t, ds.HasErrors(), "%v", ds)
	tx := newText([]byte(src))
	x := buildIndex(p, tx)
	tests := []struct {
		name  string
		kind  Kind
		sym   string
		count int
	}{
		{name: "a message and the timer deadline that reads it", kind: KindMessage, sym: "m", count: 3},
		{name: "a timer", kind: KindTimer, sym: "t", count: 3},
		{name: "a state", kind: KindState, sym: "e", count: 3},
		{name: "the initial state, defaulted to the first", kind: KindState, sym: "s", count: 1},
		{name: "a role", kind: KindRole, sym: "B", count: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			occs := x.all(tt.kind, tt.sym)
			assert.Len(t, occs, tt.count)
			for _, o := range occs {
				assert.Equal(t, tt.sym, src[o.start:o.end])
			}
			require.NotNil(t, x.decl(tt.kind, tt.sym))
		})
	}
}

func TestSchemaDocs(t *testing.T) {
	d := docsOnce()
	tests := []struct {
		name string
		doc  func() (keyDoc, bool)
		want string
	}{
		{name: "a root key", doc: func() (keyDoc, bool) { return d.yamlKey(ctxRoot, "initial") }, want: "The state the conversation starts in"},
		{name: "a transition key behind a $ref", doc: func() (keyDoc, bool) { return d.yamlKey(ctxTransition, "next") }, want: "state"},
		{name: "a commitment key", doc: func() (keyDoc, bool) { return d.yamlKey(ctxCommitment, "deadline") }, want: "timer"},
		{name: "an XML attribute", doc: func() (keyDoc, bool) { return d.xmlAttr("timer", "after") }, want: "fires this long after"},
		{name: "an XML attribute of a shared type", doc: func() (keyDoc, bool) { return d.xmlAttr("discharge", "message") }, want: "message type"},
		{name: "an XML element", doc: func() (keyDoc, bool) { return keyDoc{doc: d.elems["arm"]}, d.elems["arm"] != "" }, want: "Starts a timer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, ok := tt.doc()
			require.True(t, ok)
			assert.Contains(t, k.doc, tt.want)
		})
	}
}

func TestMessageLimits(t *testing.T) {
	assert.GreaterOrEqual(t, MaxMessageBytes, 2*policy.DefaultLimits.MaxBytes, "room for the largest policy file, JSON-escaped")
	tests := []struct {
		name  string
		input string
		want  string
	}{
		{name: "a body over the limit", input: fmt.Sprintf("Content-Length: %d\r\n\r\n{}", MaxMessageBytes+1), want: "larger than the limit"},
		{name: "a header line over the limit", input: "X-Junk: " + strings.Repeat("x", maxHeaderBytes) + "\r\n\r\n", want: "header line is longer"},
		{name: "no length", input: "Content-Type: x\r\n\r\n{}", want: "no Content-Length"},
		{name: "a bad length", input: "Content-Length: -3\r\n\r\n", want: "bad Content-Length"},
		{name: "the input ends", input: "", want: "without exit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := Serve(context.Background(), strings.NewReader(tt.input), &out)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestExitWithoutShutdown(t *testing.T) {
	msg := func(s string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(s), s) }
	in := msg(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}`) + msg(`{"jsonrpc":"2.0","method":"exit"}`)
	pr, pw := io.Pipe()
	go func() {
		_, _ = io.WriteString(pw, in)
		// Keep the input open: the server must end on exit, not on EOF.
	}()
	var out bytes.Buffer
	err := Serve(context.Background(), pr, &out)
	assert.ErrorIs(t, err, errNoShutdown)
	assert.Contains(t, out.String(), `"name":"cpvalidate"`)
	pw.Close()
}

// session runs Serve in-process and speaks to it through pipes.
type session struct {
	t   *testing.T
	in  *io.PipeWriter
	out *bufio.Reader
	id  int
}

func newSession(t *testing.T, opts ...Option) *session {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- Serve(context.Background(), inR, outW, opts...) }()
	t.Cleanup(func() {
		inW.Close()
		outR.Close()
		<-done
	})
	s := &session{t: t, in: inW, out: bufio.NewReader(outR)}
	s.request("initialize", map[string]any{"capabilities": map[string]any{}})
	s.send(map[string]any{"jsonrpc": "2.0", "method": "initialized", "params": map[string]any{}})
	return s
}

func (s *session) send(v any) {
	s.t.Helper()
	b, err := json.Marshal(v)
	require.NoError(s.t, err)
	_, err = fmt.Fprintf(s.in, "Content-Length: %d\r\n\r\n%s", len(b), b)
	require.NoError(s.t, err)
}

// read returns the next message the server sends.
func (s *session) read() map[string]json.RawMessage {
	s.t.Helper()
	n := -1
	for {
		line, err := s.out.ReadString('\n')
		require.NoError(s.t, err)
		line = strings.TrimSpace(line)
		if line == "" {
			break
		}
		if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
			_, err := fmt.Sscan(v, &n)
			require.NoError(s.t, err)
		}
	}
	body := make([]byte, n)
	_, err := io.ReadFull(s.out, body)
	require.NoError(s.t, err)
	var m map[string]json.RawMessage
	require.NoError(s.t, json.Unmarshal(body, &m))
	return m
}

func (s *session) request(method string, params any) {
	s.t.Helper()
	s.id++
	s.send(map[string]any{"jsonrpc": "2.0", "id": s.id, "method": method, "params": params})
	for {
		if m := s.read(); m["id"] != nil {
			return
		}
	}
}

// open opens a document and returns the codes of the diagnostics
// published for it, skipping those published for others.
func (s *session) open(uri, text string) []string {
	s.t.Helper()
	s.send(map[string]any{"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": map[string]any{
		"textDocument": map[string]any{"uri": uri, "languageId": "yaml", "version": 1, "text": text}}})
	return s.diagnostics(uri)
}

func (s *session) diagnostics(uri string) []string {
	s.t.Helper()
	for {
		m := s.read()
		var p struct {
			URI         string `json:"uri"`
			Diagnostics []struct {
				Code string `json:"code"`
			} `json:"diagnostics"`
		}
		if string(m["method"]) != `"textDocument/publishDiagnostics"` {
			continue
		}
		require.NoError(s.t, json.Unmarshal(m["params"], &p))
		if p.URI == uri {
			codes := []string{}
			for _, d := range p.Diagnostics {
				codes = append(codes, d.Code)
			}
			return codes
		}
	}
}

const childPolicy = `policy: greet
version: 1
roles: [Caller, Callee]
messages: {hello: inform}
states:
  start:
    - {send: hello, from: Caller, to: Callee, next: greeted}
  greeted: {terminal: greeted}
`

const parentPolicy = `policy: visit
version: 1
roles: [Guest, Host]
states:
  start:
    child: {policy: greet, roles: {Caller: Guest, Callee: Host}}
    on:
      - {return: greeted, next: done}
  done: {terminal: done}
`

func TestChildPoliciesResolveAmongOpenDocuments(t *testing.T) {
	s := newSession(t)
	assert.Equal(t, []string{"CP010"}, s.open("file:///p/visit.yaml", parentPolicy), "greet is neither open nor shipped")
	// Opening the child checks the parent again, now resolved.
	s.send(map[string]any{"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": map[string]any{
		"textDocument": map[string]any{"uri": "file:///p/greet.yaml", "languageId": "yaml", "version": 1, "text": childPolicy}}})
	assert.Empty(t, s.diagnostics("file:///p/greet.yaml"))
	assert.Empty(t, s.diagnostics("file:///p/visit.yaml"))
}

// lockedBuffer is a log the server writes from its goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Editors send $/cancelRequest and the like all the time; each was
// logged as an unsupported method.
func TestUnknownNotificationsAreIgnoredQuietly(t *testing.T) {
	var log lockedBuffer
	s := newSession(t, WithLog(&log))
	s.send(map[string]any{"jsonrpc": "2.0", "method": "$/cancelRequest", "params": map[string]any{"id": 7}})
	s.send(map[string]any{"jsonrpc": "2.0", "method": "workspace/didChangeConfiguration", "params": map[string]any{"settings": nil}})
	assert.Empty(t, s.open("file:///p/greet.yaml", childPolicy), "the session goes on")
	assert.Empty(t, log.String())
}

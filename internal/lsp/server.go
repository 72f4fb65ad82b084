package lsp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"strconv"
	"strings"
	"sync"

	"github.com/sourcegraph/jsonrpc2"
	"github.com/tliron/glsp"
	protocol "github.com/tliron/glsp/protocol_3_16"

	"github.com/parleyhq/parley/policies"
	"github.com/parleyhq/parley/policy"
)

// Limits on what an editor can make the server spend.
const (
	// MaxMessageBytes is the largest message body the server reads (65
	// MiB): room for a policy file of policy.DefaultLimits.MaxBytes (32
	// MiB) in JSON. A larger one ends the session with an error.
	MaxMessageBytes = 65 << 20
	// maxHeaderBytes is the longest header line read.
	maxHeaderBytes = 4 << 10
	// MaxDocuments is the most documents open at once; the server does
	// not track (and says so) documents opened beyond it.
	MaxDocuments = 256
	// MaxDiagnostics is the most diagnostics published for a document;
	// an info diagnostic says how many more there are.
	MaxDiagnostics = 1000
)

// options configure Serve.
type options struct {
	version string
	logger  *log.Logger
}

// Option configures Serve.
type Option func(*options)

// WithVersion sets the version the server reports to the editor.
func WithVersion(v string) Option { return func(o *options) { o.version = v } }

// WithLog sends the server's own log (protocol errors, documents it
// will not track) to w; by default it is discarded.
func WithLog(w io.Writer) Option {
	return func(o *options) { o.logger = log.New(w, "cpvalidate lsp: ", 0) }
}

// errNoShutdown is what Serve returns for an exit without a shutdown
// request first, as the protocol asks.
var errNoShutdown = errors.New("exit without shutdown")

// Serve speaks the Language Server Protocol over in and out, with
// Content-Length framing, until the editor sends exit or closes in. It
// returns nil after shutdown and exit, and an error when the stream
// ends otherwise.
func Serve(ctx context.Context, in io.Reader, out io.Writer, opts ...Option) error {
	o := options{version: "devel", logger: log.New(io.Discard, "", 0)}
	for _, opt := range opts {
		opt(&o)
	}
	s := &server{docs: map[string]*document{}, opts: o}
	st := &stream{r: bufio.NewReaderSize(in, maxHeaderBytes), w: out}
	h := s.handler()
	conn := jsonrpc2.NewConn(ctx, st, jsonrpc2.HandlerWithError(func(ctx context.Context, c *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
		gc := &glsp.Context{
			Method: req.Method,
			Notify: func(method string, params any) {
				if err := c.Notify(ctx, method, params); err != nil {
					o.logger.Printf("notify %s: %v", method, err)
				}
			},
		}
		if req.Params != nil {
			gc.Params = *req.Params
		}
		r, validMethod, validParams, err := h.Handle(gc)
		if req.Method == protocol.MethodExit {
			s.exited = true
			return nil, c.Close()
		}
		switch {
		case !validMethod && req.Notif:
			// A notification the server has no use for ($/cancelRequest,
			// workspace/didChangeConfiguration...): the protocol says to
			// ignore it.
			return nil, nil
		case !validMethod:
			return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "method not supported: " + policy.Clip(req.Method)}
		case !validParams:
			msg := "invalid params"
			if err != nil {
				msg = err.Error()
			}
			return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidParams, Message: msg}
		case err != nil:
			return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeInvalidRequest, Message: err.Error()}
		}
		return r, nil
	}), jsonrpc2.SetLogger(o.logger))
	select {
	case <-conn.DisconnectNotify():
	case <-ctx.Done():
		conn.Close()
		return ctx.Err()
	}
	switch {
	case st.err != nil:
		return st.err
	case s.exited && !s.shutdown:
		return errNoShutdown
	case !s.exited:
		return errors.New("the editor closed the connection without exit")
	}
	return nil
}

// stream reads and writes LSP messages: headers, a blank line, and a
// JSON body of Content-Length bytes, at most MaxMessageBytes.
type stream struct {
	r   *bufio.Reader
	mu  sync.Mutex
	w   io.Writer
	err error // why reading stopped, when it was not the end of input
}

func (s *stream) ReadObject(v any) error {
	length := -1
	for {
		line, err := s.r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			s.err = fmt.Errorf("a header line is longer than %d bytes", maxHeaderBytes)
			return s.err
		}
		if err != nil {
			return err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if ok && strings.EqualFold(string(bytes.TrimSpace(name)), "Content-Length") {
			n, err := strconv.Atoi(string(bytes.TrimSpace(value)))
			if err != nil || n < 0 {
				s.err = fmt.Errorf("bad Content-Length %s", policy.Quote(string(value)))
				return s.err
			}
			length = n
		}
	}
	switch {
	case length < 0:
		s.err = errors.New("a message has no Content-Length header")
		return s.err
	case length > MaxMessageBytes:
		s.err = fmt.Errorf("a message of %d bytes is larger than the limit of %d", length, MaxMessageBytes)
		return s.err
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(s.r, body); err != nil {
		return err
	}
	return json.Unmarshal(body, v)
}

func (s *stream) WriteObject(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := fmt.Fprintf(s.w, "Content-Length: %d\r\n\r\n", len(data)); err != nil {
		return err
	}
	_, err = s.w.Write(data)
	return err
}

func (s *stream) Close() error {
	if c, ok := s.w.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// server holds the open documents. jsonrpc2 hands it one message at a
// time, in order, so it needs no lock.
type server struct {
	docs     map[string]*document
	opts     options
	shutdown bool
	exited   bool
}

func (s *server) handler() *protocol.Handler {
	return &protocol.Handler{
		Initialize: s.initialize,
		Initialized: func(*glsp.Context, *protocol.InitializedParams) error {
			return nil
		},
		Shutdown: func(*glsp.Context) error {
			s.shutdown = true
			return nil
		},
		Exit:                      func(*glsp.Context) error { return nil },
		SetTrace:                  func(*glsp.Context, *protocol.SetTraceParams) error { return nil },
		TextDocumentDidOpen:       s.didOpen,
		TextDocumentDidChange:     s.didChange,
		TextDocumentDidClose:      s.didClose,
		TextDocumentDidSave:       func(*glsp.Context, *protocol.DidSaveTextDocumentParams) error { return nil },
		TextDocumentHover:         s.hover,
		TextDocumentDefinition:    s.definition,
		TextDocumentReferences:    s.references,
		TextDocumentCompletion:    s.completion,
		TextDocumentPrepareRename: s.prepareRename,
		TextDocumentRename:        s.rename,
	}
}

func (s *server) initialize(_ *glsp.Context, _ *protocol.InitializeParams) (any, error) {
	full := protocol.TextDocumentSyncKindFull
	name := "cpvalidate"
	return protocol.InitializeResult{
		Capabilities: protocol.ServerCapabilities{
			TextDocumentSync: &protocol.TextDocumentSyncOptions{OpenClose: &protocol.True, Change: &full},
			HoverProvider:    true,
			CompletionProvider: &protocol.CompletionOptions{
				TriggerCharacters: []string{":", " ", "\"", "<", ","},
			},
			DefinitionProvider: true,
			ReferencesProvider: true,
			RenameProvider:     &protocol.RenameOptions{PrepareProvider: &protocol.True},
		},
		ServerInfo: &protocol.InitializeResultServerInfo{Name: name, Version: &s.opts.version},
	}, nil
}

func (s *server) didOpen(ctx *glsp.Context, p *protocol.DidOpenTextDocumentParams) error {
	uri := p.TextDocument.URI
	if _, open := s.docs[uri]; !open && len(s.docs) >= MaxDocuments {
		s.opts.logger.Printf("%d documents are open, the limit: not checking %s", len(s.docs), policy.Quote(uri))
		ctx.Notify(protocol.ServerWindowShowMessage, protocol.ShowMessageParams{Type: protocol.MessageTypeWarning,
			Message: fmt.Sprintf("cpvalidate: %d policy files are open, the most it checks at once; close some to check %s", MaxDocuments, policy.Quote(uri))})
		return nil
	}
	src := []byte(p.TextDocument.Text)
	filename := filenameOf(uri)
	d := &document{uri: uri, filename: filename, xml: isXML(filename, p.TextDocument.LanguageID, src)}
	s.docs[uri] = d
	s.check(ctx, d, src)
	return nil
}

func (s *server) didChange(ctx *glsp.Context, p *protocol.DidChangeTextDocumentParams) error {
	d := s.docs[p.TextDocument.URI]
	if d == nil || len(p.ContentChanges) == 0 {
		return nil
	}
	// The server asks for whole documents (TextDocumentSyncKindFull),
	// so the last change is the text.
	var src []byte
	switch c := p.ContentChanges[len(p.ContentChanges)-1].(type) {
	case protocol.TextDocumentContentChangeEventWhole:
		src = []byte(c.Text)
	case protocol.TextDocumentContentChangeEvent:
		return fmt.Errorf("the server syncs whole documents; got a ranged change")
	}
	s.check(ctx, d, src)
	return nil
}

func (s *server) didClose(ctx *glsp.Context, p *protocol.DidCloseTextDocumentParams) error {
	if _, ok := s.docs[p.TextDocument.URI]; !ok {
		return nil
	}
	delete(s.docs, p.TextDocument.URI)
	ctx.Notify(protocol.ServerTextDocumentPublishDiagnostics, protocol.PublishDiagnosticsParams{URI: p.TextDocument.URI, Diagnostics: []protocol.Diagnostic{}})
	return nil
}

// check checks d's new text and publishes its diagnostics, then checks
// again the other open documents that run child policies, since d may
// be one of them.
func (s *server) check(ctx *glsp.Context, d *document, src []byte) {
	d.update(src, s.resolver(d))
	s.publish(ctx, d)
	for _, other := range s.docs {
		if other == d || other.policy == nil || !hasChild(other.policy) {
			continue
		}
		other.update(other.text.src, s.resolver(other))
		s.publish(ctx, other)
	}
}

func hasChild(p *policy.Policy) bool {
	for _, st := range p.States {
		if st.Child != nil {
			return true
		}
	}
	return false
}

// resolver finds child policies among the other open documents, then
// among the policies Parley ships, as cpvalidate does among the files
// it is given.
func (s *server) resolver(self *document) func(string) *policy.Policy {
	return func(name string) *policy.Policy {
		for _, d := range s.docs {
			if d != self && d.policy != nil && d.policy.Name == name {
				return d.policy
			}
		}
		return policies.Resolve(name)
	}
}

func (s *server) publish(ctx *glsp.Context, d *document) {
	out := []protocol.Diagnostic{}
	ds, more := d.diags, 0
	if len(ds) > MaxDiagnostics {
		ds, more = ds[:MaxDiagnostics], len(ds)-MaxDiagnostics
	}
	source := "cpvalidate"
	for _, dg := range ds {
		start, end := d.span(dg.Pos)
		sev := severity(dg.Severity)
		msg := dg.Message
		var related []protocol.DiagnosticRelatedInformation
		for _, r := range dg.Related {
			if d.sameFile(r.Pos) {
				rs, re := d.span(r.Pos)
				related = append(related, protocol.DiagnosticRelatedInformation{
					Location: protocol.Location{URI: d.uri, Range: d.text.rng(rs, re)}, Message: r.Message})
			} else {
				msg += "\n" + relatedText(r)
			}
		}
		if len(dg.Trace) > 0 {
			msg += "\nwitness:"
			for i, step := range dg.Trace {
				msg += fmt.Sprintf("\n  %d. %s", i+1, step)
			}
		}
		out = append(out, protocol.Diagnostic{
			Range: d.text.rng(start, end), Severity: &sev, Source: &source, Message: msg,
			Code: &protocol.IntegerOrString{Value: string(dg.Code)}, RelatedInformation: related,
		})
	}
	if more > 0 {
		sev := protocol.DiagnosticSeverityInformation
		out = append(out, protocol.Diagnostic{Severity: &sev, Source: &source,
			Message: fmt.Sprintf("... and %d more diagnostics (cpvalidate -max 0 lists them all)", more)})
	}
	ctx.Notify(protocol.ServerTextDocumentPublishDiagnostics, protocol.PublishDiagnosticsParams{URI: d.uri, Diagnostics: out})
}

func severity(s policy.Severity) protocol.DiagnosticSeverity {
	switch s {
	case policy.SeverityError:
		return protocol.DiagnosticSeverityError
	case policy.SeverityWarning:
		return protocol.DiagnosticSeverityWarning
	}
	return protocol.DiagnosticSeverityInformation
}

// docAt returns the open document and the byte offset of a position in it.
func (s *server) docAt(p protocol.TextDocumentPositionParams) (*document, int) {
	d := s.docs[p.TextDocument.URI]
	if d == nil {
		return nil, 0
	}
	return d, d.text.offset(p.Position)
}

func (s *server) hover(_ *glsp.Context, p *protocol.HoverParams) (*protocol.Hover, error) {
	d, off := s.docAt(p.TextDocumentPositionParams)
	if d == nil {
		return nil, nil
	}
	if o := d.index.at(off); o != nil {
		r := d.text.rng(o.start, o.end)
		return &protocol.Hover{Contents: protocol.MarkupContent{Kind: protocol.MarkupKindMarkdown, Value: symbolHover(d.policy, o)}, Range: &r}, nil
	}
	if k, start, end, ok := d.keyAt(off); ok {
		r := d.text.rng(start, end)
		return &protocol.Hover{Contents: protocol.MarkupContent{Kind: protocol.MarkupKindMarkdown, Value: fmt.Sprintf("**%s**\n\n%s", k.name, k.doc)}, Range: &r}, nil
	}
	return nil, nil
}

func (s *server) definition(_ *glsp.Context, p *protocol.DefinitionParams) (any, error) {
	d, off := s.docAt(p.TextDocumentPositionParams)
	if d == nil {
		return nil, nil
	}
	o := d.index.at(off)
	if o == nil {
		return nil, nil
	}
	decl := d.index.decl(o.kind, o.name)
	if decl == nil {
		return nil, nil
	}
	return protocol.Location{URI: d.uri, Range: d.text.rng(decl.start, decl.end)}, nil
}

func (s *server) references(_ *glsp.Context, p *protocol.ReferenceParams) ([]protocol.Location, error) {
	d, off := s.docAt(p.TextDocumentPositionParams)
	if d == nil {
		return nil, nil
	}
	o := d.index.at(off)
	if o == nil {
		return nil, nil
	}
	out := []protocol.Location{}
	for _, r := range d.index.all(o.kind, o.name) {
		if r.decl && !p.Context.IncludeDeclaration {
			continue
		}
		out = append(out, protocol.Location{URI: d.uri, Range: d.text.rng(r.start, r.end)})
	}
	return out, nil
}

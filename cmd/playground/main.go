// Command playground serves the Parley playground: cpvalidate's checks
// compiled to WebAssembly behind a static page. Edit a policy and see
// its diagnostics inline, its diagram, a role's projection, and the
// findings for a pasted trace.
//
//	go run ./cmd/playground [-addr 127.0.0.1:8080]
//	go run ./cmd/playground -out DIR
//
// On start it builds the WebAssembly module (GOOS=js GOARCH=wasm go
// build ./cmd/playground/wasm, so it needs the Go toolchain, as go run
// does) and serves it with wasm_exec.js from the Go installation, the
// page, and mermaid.min.js when it is installed (npm install mermaid in
// cmd/playground: see docs/playground.md); without it the page shows
// the diagram as Mermaid text. With -out it writes those files to DIR
// and exits: they need no server beyond one for static files.
package main

import (
	"context"
	"embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

//go:embed static
var static embed.FS

// site is the playground's files: the embedded page and three files
// from disk.
type site struct {
	page     fs.FS
	wasm     string // playground.wasm, as built
	wasmExec string // wasm_exec.js of the Go that built it
	mermaid  string // mermaid.min.js; "" when it is not installed
}

// mermaidPath is where npm installs mermaid's browser bundle, under the
// playground's directory.
const mermaidPath = "node_modules/mermaid/dist/mermaid.min.js"

// goCommand runs the go command with env added to the environment and
// returns its standard output.
func goCommand(ctx context.Context, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// buildSite builds the WebAssembly module into dir and finds the files
// served beside it.
func buildSite(ctx context.Context, dir string) (*site, error) {
	page, err := fs.Sub(static, "static")
	if err != nil {
		return nil, err
	}
	s := &site{page: page, wasm: filepath.Join(dir, "playground.wasm")}
	if _, err := goCommand(ctx, []string{"GOOS=js", "GOARCH=wasm", "CGO_ENABLED=0"}, "build", "-trimpath", "-o", s.wasm, "github.com/parleyhq/parley/cmd/playground/wasm"); err != nil {
		return nil, err
	}
	goroot, err := goCommand(ctx, nil, "env", "GOROOT")
	if err != nil {
		return nil, err
	}
	// Go 1.24 moved wasm_exec.js from misc/wasm to lib/wasm.
	for _, p := range []string{"lib/wasm/wasm_exec.js", "misc/wasm/wasm_exec.js"} {
		if _, err := os.Stat(filepath.Join(goroot, p)); err == nil {
			s.wasmExec = filepath.Join(goroot, p)
			break
		}
	}
	if s.wasmExec == "" {
		return nil, fmt.Errorf("no wasm_exec.js under %s", goroot)
	}
	pkgDir, err := goCommand(ctx, nil, "list", "-f", "{{.Dir}}", "github.com/parleyhq/parley/cmd/playground")
	if err != nil {
		return nil, err
	}
	if m := filepath.Join(pkgDir, mermaidPath); fileExists(m) {
		s.mermaid = m
	}
	return s, nil
}

func fileExists(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular()
}

// files lists what the site serves: a name under the root and where its
// content comes from (a path on disk, or the embedded page when "").
func (s *site) files() map[string]string {
	m := map[string]string{"playground.wasm": s.wasm, "wasm_exec.js": s.wasmExec}
	if s.mermaid != "" {
		m["mermaid.min.js"] = s.mermaid
	}
	entries, _ := fs.ReadDir(s.page, ".") // embedded: cannot fail
	for _, e := range entries {
		m[e.Name()] = ""
	}
	return m
}

func (s *site) open(name string) (io.ReadSeekCloser, error) {
	path, ok := s.files()[name]
	switch {
	case !ok:
		return nil, fs.ErrNotExist
	case path != "":
		return os.Open(path)
	}
	f, err := s.page.Open(name)
	if err != nil {
		return nil, err
	}
	return f.(io.ReadSeekCloser), nil // embed's files seek
}

// ServeHTTP serves the site's files, read-only; / is index.html.
func (s *site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "the playground is static: GET only", http.StatusMethodNotAllowed)
		return
	}
	name := strings.TrimPrefix(r.URL.Path, "/")
	if name == "" {
		name = "index.html"
	}
	f, err := s.open(name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, name, time.Time{}, f)
}

// export writes the site's files to dir.
func (s *site) export(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name := range s.files() {
		f, err := s.open(name)
		if err != nil {
			return err
		}
		data, err := io.ReadAll(f)
		f.Close()
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func main() { os.Exit(run(context.Background(), os.Args[1:], os.Stderr)) }

func run(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("playground", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "serve on `ADDR` (host:port)")
	out := fs.String("out", "", "write the static site to `DIR` and exit instead of serving it")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "playground: takes no arguments, got %s\n", strings.Join(fs.Args(), " "))
		return 2
	}
	tmp, err := os.MkdirTemp("", "parley-playground-")
	if err != nil {
		fmt.Fprintf(stderr, "playground: %v\n", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	fmt.Fprintln(stderr, "playground: building the WebAssembly module...")
	s, err := buildSite(ctx, tmp)
	if err != nil {
		fmt.Fprintf(stderr, "playground: %v\n", err)
		return 1
	}
	if s.mermaid == "" {
		fmt.Fprintf(stderr, "playground: note: %s is not installed, so diagrams show as Mermaid text (see docs/playground.md)\n", mermaidPath)
	}
	if *out != "" {
		if err := s.export(*out); err != nil {
			fmt.Fprintf(stderr, "playground: %v\n", err)
			return 1
		}
		fmt.Fprintf(stderr, "playground: wrote the site to %s\n", *out)
		return 0
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "playground: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "playground: serving http://%s/\n", ln.Addr())
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "playground: %v\n", err)
		return 1
	}
	return 0
}

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var screenshot = flag.String("screenshot", "", "write a PNG of the playground, once it has checked a policy and a trace, to `FILE`")

// testSite builds the site once for the tests of this package.
func testSite(t *testing.T) *site {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, err := buildSite(ctx, t.TempDir())
	require.NoError(t, err)
	return s
}

func TestSiteServesItsFiles(t *testing.T) {
	srv := httptest.NewServer(testSite(t))
	defer srv.Close()
	tests := []struct {
		name   string
		method string
		path   string
		status int
		ctype  string
	}{
		{name: "the page", method: http.MethodGet, path: "/", status: http.StatusOK, ctype: "text/html"},
		{name: "the module", method: http.MethodGet, path: "/playground.wasm", status: http.StatusOK, ctype: "application/wasm"},
		{name: "Go's loader", method: http.MethodGet, path: "/wasm_exec.js", status: http.StatusOK, ctype: "javascript"},
		{name: "the script", method: http.MethodGet, path: "/app.js", status: http.StatusOK, ctype: "javascript"},
		{name: "nothing else", method: http.MethodGet, path: "/main.go", status: http.StatusNotFound},
		{name: "no climbing out", method: http.MethodGet, path: "/../go.mod", status: http.StatusNotFound},
		{name: "read-only", method: http.MethodPost, path: "/", status: http.StatusMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, srv.URL+tt.path, nil)
			require.NoError(t, err)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, tt.status, resp.StatusCode)
			assert.Contains(t, resp.Header.Get("Content-Type"), tt.ctype)
		})
	}
}

func TestExportWritesAStaticSite(t *testing.T) {
	dir := t.TempDir()
	s := testSite(t)
	require.NoError(t, s.export(dir))
	for name := range s.files() {
		info, err := os.Stat(dir + "/" + name)
		require.NoError(t, err, name)
		assert.Positive(t, info.Size(), name)
	}
}

// TestPlaygroundInChromium drives the page in headless Chromium: it
// types a broken policy, sees the diagnostic at its line, fixes it, and
// sees the diagram; then a role's projection and a trace's findings.
func TestPlaygroundInChromium(t *testing.T) {
	browser := startBrowser(t)
	step := func(t *testing.T, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		ctx, cancel := context.WithTimeout(browser, time.Minute)
		defer cancel()
		require.NoError(t, chromedp.Do(ctx, steps...))
	}
	get := func(t *testing.T, a chromedp.Action[string]) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(browser, time.Minute)
		defer cancel()
		v, err := chromedp.Run(ctx, a)
		require.NoError(t, err)
		return v
	}
	chooseRole := func(t *testing.T, role string) {
		step(t, setValue("#role", role), chromedp.WaitVisible(css(`#diagram[data-state="drawn"] svg`)))
	}

	fixedBytes, err := os.ReadFile("testdata/order.yaml")
	require.NoError(t, err)
	fixed := string(fixedBytes)
	broken := strings.Replace(fixed, "next: accepted}", "next: acepted}", 1)
	line := strconv.Itoa(strings.Count(broken[:strings.Index(broken, "acepted")], "\n") + 1)

	step(t, chromedp.WaitVisible(css(`body[data-ready="true"]`)), chromedp.WaitVisible(css(`#diagram[data-state="drawn"] svg`)))

	t.Run("a broken policy shows its diagnostic at its line", func(t *testing.T) {
		step(t, setValue("#src", ""), chromedp.SendKeys(css("#src"), broken),
			chromedp.WaitVisible(css(`#diagnostics li.error`)),
			chromedp.WaitVisible(css(`#gutter div.error[data-line="`+line+`"]`)),
			chromedp.WaitVisible(css(`#diagram[data-state="stale"] .stale-note`)))
		item := get(t, chromedp.Text(css(`#diagnostics li.error`)))
		assert.Contains(t, item, line+`:55: error: state "acepted" is not declared`)
		assert.Contains(t, item, "[CP010]")
		note := get(t, chromedp.TextContent(css(`#backdrop div.error[data-line="`+line+`"] .note`)))
		assert.Contains(t, note, "CP010", "the message is shown inline, after the line")
	})

	t.Run("fixing it draws the diagram", func(t *testing.T) {
		// Clicking the diagnostic puts the cursor on the typo.
		step(t, chromedp.Click(css(`#diagnostics li.error`)),
			chromedp.SendKeys(css("#src"), kb.ArrowRight+kb.ArrowRight+"c"),
			chromedp.WaitVisible(css(`#diagnostics li.clean`)),
			chromedp.WaitVisible(css(`#diagram[data-state="drawn"] svg`)))
		assert.Equal(t, fixed, get(t, chromedp.Value(css("#src"))))
		svg := get(t, chromedp.OuterHTML(css(`#diagram svg`)))
		for _, state := range []string{"ordered", "accepted", "shipped", "timed-out"} {
			assert.Contains(t, svg, ">"+state+"<", "the diagram draws state %s", state)
		}
	})

	t.Run("a role's projection", func(t *testing.T) {
		chooseRole(t, "Buyer")
		assert.Contains(t, get(t, chromedp.TextContent(css("#mermaid-text"))), "order v1, as Buyer")
		assert.Contains(t, get(t, chromedp.OuterHTML(css(`#diagram svg`))), "!order")
	})

	t.Run("the findings for a pasted trace", func(t *testing.T) {
		tr := `{"at": "2025-01-01T10:00:00Z", "performative": "request", "sender": "alice", "receiver": "bob", "conversation_id": "c1"}
{"at": "1s", "performative": "inform", "sender": "bob", "receiver": "alice", "conversation_id": "c1", "content": {"tracking": "T1"}}`
		step(t, setValue("#trace", tr), chromedp.Click(css("#check-trace")), chromedp.WaitVisible(css(`#findings li.error`)))
		assert.Contains(t, get(t, chromedp.Text(css("#findings"))), "line 2: error:")
		assert.Contains(t, get(t, chromedp.Text(css("#trace-summary"))), "does not conform")
	})

	t.Run("an error keeps the last diagram, marked out of date", func(t *testing.T) {
		chooseRole(t, "")
		step(t, setValue("#src", broken), chromedp.WaitVisible(css(`#diagnostics li.error`)),
			chromedp.WaitVisible(css(`#diagram[data-state="stale"] .stale-note`)))
		assert.Contains(t, get(t, chromedp.OuterHTML(css(`#diagram svg`))), ">accepted<")
	})

	if *screenshot != "" {
		// The page as docs/playground.png shows it: a warning inline,
		// the diagram, a trace's findings.
		step(t, setValue("#src", fixed+"  cancelled: {terminal: cancelled}\n"), chromedp.WaitVisible(css(`#diagnostics li.warning`)),
			chromedp.WaitVisible(css(`#diagram[data-state="drawn"] svg`)), chromedp.Click(css(`#diagnostics li.warning`)))
		ctx, cancel := context.WithTimeout(browser, time.Minute)
		defer cancel()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(*screenshot, png, 0o644))
	}
}

// startBrowser serves the site and opens it in headless Chromium,
// skipping the test when Chromium is not installed. The context it
// returns has started the browser; derive timeouts from it.
func startBrowser(t *testing.T) context.Context {
	t.Helper()
	chrome, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (Debian: apt-get install chromium; .ci/run installs it)")
	}
	s := testSite(t)
	require.NotEmpty(t, s.mermaid, "mermaid is not installed: run npm install --prefix cmd/playground --no-save --no-package-lock mermaid@11.14.0 (see docs/playground.md)")
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1400, 1000))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	browser, cancelBrowser := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelBrowser)
	// The first call starts the browser, and lives as long as it: no
	// timeout on it.
	require.NoError(t, chromedp.Do(browser, chromedp.Navigate(srv.URL)))
	return browser
}

// setValue sets the value of the element sel selects, as a paste does:
// with an input and a change event.
func setValue(sel, value string) chromedp.Action[chromedp.Void] {
	js := fmt.Sprintf(`(() => {
		const e = document.querySelector(%s);
		e.value = %s;
		e.dispatchEvent(new Event('input', {bubbles: true}));
		e.dispatchEvent(new Event('change', {bubbles: true}));
		return e.value === %[2]s;
	})()`, jsString(sel), jsString(value))
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		ok, err := chromedp.Evaluate[bool](js)(ctx, t)
		if err == nil && !ok {
			err = fmt.Errorf("could not set the value of %s", sel)
		}
		return err
	})
}

// jsString quotes s as a JavaScript string.
func jsString(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}

// css is a CSS selector.
func css(s string) chromedp.CSS { return chromedp.CSS(s) }

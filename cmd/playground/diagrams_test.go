package main

import (
	"context"
	"flag"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/parleyhq/parley/internal/diagram"
	"github.com/parleyhq/parley/policies"
	"github.com/parleyhq/parley/policy"
)

// collisionsJS draws a Mermaid text with the page's mermaid and lists
// the labels that overlap another label or a state.
const collisionsJS = `(async (text) => {
  const { svg } = await mermaid.render('check-' + Math.random().toString(36).slice(2), text);
  const div = document.createElement('div');
  div.innerHTML = svg;
  document.body.appendChild(div);
  try {
    const words = (e) => {
      const w = document.createTreeWalker(e, NodeFilter.SHOW_TEXT);
      const out = [];
      while (w.nextNode()) { const s = w.currentNode.textContent.trim(); if (s) out.push(s); }
      return out.join(' ');
    };
    const boxes = (sel) => [...div.querySelectorAll(sel)]
      .map((e) => ({ text: words(e), r: e.getBoundingClientRect() }))
      .filter((b) => b.text && b.r.width > 0 && b.r.height > 0);
    const labels = boxes('g.edgeLabel');
    const nodes = boxes('g.node');
    const hit = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
    const out = [];
    labels.forEach((a, i) => {
      labels.slice(i + 1).forEach((b) => { if (hit(a.r, b.r)) out.push('label "' + a.text + '" overlaps label "' + b.text + '"'); });
      nodes.forEach((n) => { if (hit(a.r, n.r)) out.push('label "' + a.text + '" overlaps state "' + n.text + '"'); });
    });
    return out;
  } finally {
    div.remove();
  }
})`

var update = flag.Bool("update", false, "rewrite testdata/overlaps.txt with the overlaps the shipped diagrams have now")

// overlapsFile lists the overlaps the shipped diagrams are known to have:
// ones Mermaid's layout makes however the diagram is written.
const overlapsFile = "testdata/overlaps.txt"

// TestShippedDiagramsAreReadable draws every shipped policy, and its
// projection onto each role, with mermaid in Chromium, as the playground
// and GitHub do, and looks for labels that sit on another label or on a
// state. Its budget is the overlaps in testdata/overlaps.txt: a diagram
// with any other fails, and -update rewrites the file.
func TestShippedDiagramsAreReadable(t *testing.T) {
	browser := startBrowser(t)
	ctx, cancel := context.WithTimeout(browser, time.Minute)
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(css(`body[data-ready="true"]`))))
	cancel()
	var found []string
	for _, name := range policies.Names() {
		p, err := policies.Load(name)
		require.NoError(t, err)
		diagrams := []struct{ name, text string }{{name, diagram.Global(p, name).Mermaid()}}
		for _, r := range p.Roles {
			proj, ds := policy.Project(p, r.Name)
			require.False(t, ds.HasErrors(), "%v", ds)
			diagrams = append(diagrams, struct{ name, text string }{name + " as " + r.Name, diagram.Local(proj, name).Mermaid()})
		}
		for _, d := range diagrams {
			ctx, cancel := context.WithTimeout(browser, time.Minute)
			got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](collisionsJS+"("+jsString(d.text)+")", chromedp.EvalAwaitPromise))
			cancel()
			require.NoError(t, err, "mermaid cannot draw %s:\n%s", d.name, d.text)
			for _, o := range got {
				found = append(found, d.name+": "+o)
			}
		}
	}
	slices.Sort(found)
	if *update {
		require.NoError(t, os.WriteFile(overlapsFile, []byte(strings.Join(found, "\n")+"\n"), 0o644))
		return
	}
	data, err := os.ReadFile(overlapsFile)
	require.NoError(t, err, "run go test ./cmd/playground -run TestShippedDiagramsAreReadable -update")
	known := strings.Split(strings.TrimSpace(string(data)), "\n")
	for _, o := range found {
		assert.Contains(t, known, o, "a new overlap; if it cannot be helped, run go test ./cmd/playground -run TestShippedDiagramsAreReadable -update")
	}
	for _, o := range known {
		if !slices.Contains(found, o) {
			t.Logf("gone: %s (run -update to drop it from %s)", o, overlapsFile)
		}
	}
	t.Logf("%d overlaps in the shipped diagrams", len(found))
}

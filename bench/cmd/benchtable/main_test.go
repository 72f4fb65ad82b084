package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.md from the current output")

// TestTable pins the table for a small canned benchmark output: medians
// of uneven run counts, a peer missing from a scenario, a Parley-only
// scenario with a custom metric, a comparison on B/instance, and lines
// that are skipped with a warning.
func TestTable(t *testing.T) {
	in := filepath.Join("testdata", "canned.txt")
	var out, errs bytes.Buffer
	if err := run([]string{in}, nil, &out, &errs); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "canned.md")
	if *update {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != string(want) {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
	if got := errs.String(); !strings.Contains(got, "skipping BenchmarkOddOneOut-2: not named Benchmark<Scenario>/<library>") {
		t.Errorf("warnings %q do not name the benchmark without a library", got)
	}
}

func TestNoResults(t *testing.T) {
	var out, errs bytes.Buffer
	err := run(nil, strings.NewReader("PASS\nok  \tx\t0.1s\n"), &out, &errs)
	if err == nil || !strings.Contains(err.Error(), "no benchmark results") {
		t.Fatalf("error %v, want no benchmark results", err)
	}
}

func TestFormatNumber(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0"}, {5, "5"}, {5.881, "5.88"}, {47.19, "47.2"}, {471.9, "472"},
		{1234567, "1,234,567"}, {100, "100"}, {999.5, "1,000"}, {-1234, "-1,234"},
	}
	for _, tt := range tests {
		if got := formatNumber(tt.in); got != tt.want {
			t.Errorf("formatNumber(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

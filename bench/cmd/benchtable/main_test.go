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
// scenario with a custom metric, a comparison on B/instance, the manager
// against the bare handlers in a table of their own, and lines that are
// skipped with a warning.
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

func TestOverBare(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  string
	}{
		{
			name: "on the custom metric both report",
			input: "BenchmarkM/manager-2 1 9000 ns/op 3000 ns/message\n" +
				"BenchmarkM/bare-2 1 3000 ns/op 1000 ns/message\n",
			want: "3.00× the bare handlers' ns/message",
		},
		{
			name: "on ns/op without a shared custom metric",
			input: "BenchmarkM/manager-2 1 9000 ns/op 3000 ns/message\n" +
				"BenchmarkM/bare-2 1 1000 ns/op\n",
			want: "9.00× the bare handlers' ns/op",
		},
		{
			name: "with the range of the runs taken pairwise",
			input: "BenchmarkM/manager-2 1 9000 ns/op\n" +
				"BenchmarkM/bare-2 1 1000 ns/op\n" +
				"BenchmarkM/manager-2 1 8000 ns/op\n" +
				"BenchmarkM/bare-2 1 4000 ns/op\n" +
				"BenchmarkM/manager-2 1 6000 ns/op\n" +
				"BenchmarkM/bare-2 1 2000 ns/op\n",
			want: "4.00× the bare handlers' ns/op (2.00–9.00× run by run)",
		},
		{
			name: "no range when the runs do not pair",
			input: "BenchmarkM/manager-2 1 9000 ns/op\n" +
				"BenchmarkM/bare-2 1 1000 ns/op\n" +
				"BenchmarkM/manager-2 1 8000 ns/op\n",
			want: "8.50× the bare handlers' ns/op",
		},
		{
			name:  "no bare handlers",
			input: "BenchmarkM/manager-2 1 9000 ns/op\n",
			want:  "—",
		},
		{
			name: "bare handlers at zero",
			input: "BenchmarkM/manager-2 1 9000 ns/op 3000 ns/message\n" +
				"BenchmarkM/bare-2 1 1000 ns/op 0 ns/message\n",
			want: "— (bare ns/message is 0)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errs bytes.Buffer
			if err := run(nil, strings.NewReader(tt.input), &out, &errs); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), "| "+tt.want+" |") {
				t.Errorf("table:\n%s\nwant a last column %q", out.String(), tt.want)
			}
			if strings.Contains(out.String(), "parley vs best peer") {
				t.Errorf("table:\n%s\nhas the peers' table without a peer", out.String())
			}
		})
	}
}

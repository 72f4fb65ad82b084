// Command benchtable turns `go test -bench` output of the bench module
// into a Markdown table comparing Parley with its peers.
//
// Usage:
//
//	go test -run XXX -bench . -benchmem -count 6 | go run ./cmd/benchtable
//	go run ./cmd/benchtable results.txt
//
// Benchmarks are named Benchmark<Scenario>/<library>: the last part of
// the name is the library, the rest the scenario. Each scenario is a row;
// each library has a column for every unit it reports (ns/op, B/op,
// allocs/op, then custom metrics such as B/instance), holding the median
// of the runs (-count). The last column is Parley's ratio to the best
// peer, on the scenario's custom metric if Parley and a peer both report
// one, else on ns/op.
//
// The libraries "manager" and "bare" are not peers but two ways of running
// Parley (through agent.Manager, and its bare handlers driven by hand):
// their scenarios get a second table, whose last column is the manager's
// cost over the bare handlers', on the custom metric both report (such
// as ns/message), else on ns/op: the ratio of the medians, and the lowest
// and highest ratio of the runs taken pairwise (the i-th run of each).
package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"
)

// parley is the library the others are compared with.
const parley = "parley"

// manager and bare are the two sides of the manager's table: the manager
// is compared with the bare handlers.
const (
	manager = "manager"
	bare    = "bare"
)

// isPair reports whether lib belongs in the manager's table.
func isPair(lib string) bool { return lib == manager || lib == bare }

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

// run reads the files named in args (standard input if none) and writes
// the table to stdout; problems with single lines go to stderr.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	s := newSet()
	if len(args) == 0 {
		if err := s.read(stdin, "<stdin>", stderr); err != nil {
			return err
		}
	}
	for _, name := range args {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		err = s.read(f, name, stderr)
		f.Close()
		if err != nil {
			return err
		}
	}
	if len(s.scenarios) == 0 {
		return errors.New("no benchmark results named Benchmark<Scenario>/<library> in the input")
	}
	return s.write(stdout)
}

// set collects the samples of every (scenario, library) pair.
type set struct {
	config    [][2]string // file configuration (goos, goarch, cpu...), first value of each key
	scenarios []string    // in the order of the input
	libs      []string    // parley first, then in the order of the input
	units     map[string][]string
	samples   map[cell]map[string][]float64
	procs     map[string]bool // GOMAXPROCS suffixes seen
}

type cell struct{ scenario, lib string }

func newSet() *set {
	return &set{units: map[string][]string{}, samples: map[cell]map[string][]float64{}, procs: map[string]bool{}}
}

// read adds the results of one benchmark output.
func (s *set) read(r io.Reader, name string, stderr io.Writer) error {
	br := benchfmt.NewReader(r, name)
	for br.Scan() {
		switch rec := br.Result().(type) {
		case *benchfmt.SyntaxError:
			fmt.Fprintln(stderr, "benchtable: skipping:", rec)
		case *benchfmt.Result:
			s.add(rec, stderr)
		}
	}
	return br.Err()
}

func (s *set) add(r *benchfmt.Result, stderr io.Writer) {
	for _, c := range r.Config {
		if c.File && !slices.ContainsFunc(s.config, func(kv [2]string) bool { return kv[0] == c.Key }) {
			s.config = append(s.config, [2]string{c.Key, strings.TrimSpace(string(c.Value))})
		}
	}
	scenario, lib, procs, ok := splitName(r.Name)
	if !ok {
		fmt.Fprintf(stderr, "benchtable: skipping Benchmark%s: not named Benchmark<Scenario>/<library>\n", r.Name)
		return
	}
	s.procs[procs] = true
	if !slices.Contains(s.scenarios, scenario) {
		s.scenarios = append(s.scenarios, scenario)
	}
	if !slices.Contains(s.libs, lib) {
		s.libs = append(s.libs, lib)
		if lib == parley {
			copy(s.libs[1:], s.libs)
			s.libs[0] = lib
		}
	}
	k := cell{scenario, lib}
	if s.samples[k] == nil {
		s.samples[k] = map[string][]float64{}
	}
	for _, v := range r.Values {
		value, unit := v.Value, v.Unit
		if v.OrigUnit != "" { // the reader tidies ns/op into sec/op; show what the benchmark said
			value, unit = v.OrigValue, v.OrigUnit
		}
		s.samples[k][unit] = append(s.samples[k][unit], value)
		if !slices.Contains(s.units[lib], unit) {
			s.units[lib] = append(s.units[lib], unit)
		}
	}
}

// splitName splits "Scenario/sub/library-8" into "Scenario/sub",
// "library" and "-8".
func splitName(n benchfmt.Name) (scenario, lib, procs string, ok bool) {
	base, parts := n.Parts()
	if len(parts) > 0 && strings.HasPrefix(string(parts[len(parts)-1]), "-") {
		procs = string(parts[len(parts)-1])
		parts = parts[:len(parts)-1]
	}
	if len(parts) == 0 {
		return "", "", "", false
	}
	var b strings.Builder
	b.Write(base)
	for _, p := range parts[:len(parts)-1] {
		b.Write(p)
	}
	return b.String(), strings.TrimPrefix(string(parts[len(parts)-1]), "/"), procs, true
}

// standard units come first in a library's columns, in this order.
var standard = []string{"ns/op", "B/op", "allocs/op"}

// columns returns lib's units: the standard ones, then its custom
// metrics in the order of the input.
func (s *set) columns(lib string) []string {
	var out []string
	for _, u := range standard {
		if slices.Contains(s.units[lib], u) {
			out = append(out, u)
		}
	}
	for _, u := range s.units[lib] {
		if !slices.Contains(standard, u) {
			out = append(out, u)
		}
	}
	return out
}

// median returns the median of the samples of unit, and whether there
// are any.
func (s *set) median(scenario, lib, unit string) (float64, bool) {
	xs := slices.Clone(s.samples[cell{scenario, lib}][unit])
	if len(xs) == 0 {
		return 0, false
	}
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2], true
	}
	return (xs[n/2-1] + xs[n/2]) / 2, true
}

// runs returns the smallest and largest number of samples per benchmark.
func (s *set) runs() (lo, hi int) {
	lo = math.MaxInt
	for _, units := range s.samples {
		for _, xs := range units {
			lo, hi = min(lo, len(xs)), max(hi, len(xs))
		}
	}
	return lo, hi
}

func (s *set) write(w io.Writer) error {
	var b strings.Builder
	var info []string
	for _, kv := range s.config {
		if kv[0] == "pkg" {
			continue
		}
		info = append(info, kv[0]+": "+kv[1])
	}
	lo, hi := s.runs()
	switch {
	case lo == 1 && hi == 1:
		info = append(info, "one run")
	case lo == hi:
		info = append(info, fmt.Sprintf("median of %d runs", lo))
	default:
		info = append(info, fmt.Sprintf("median of %d to %d runs", lo, hi))
	}
	b.WriteString(strings.Join(info, " · ") + "\n")

	peers := slices.DeleteFunc(slices.Clone(s.libs), isPair)
	pair := slices.DeleteFunc([]string{manager, bare}, func(lib string) bool { return !slices.Contains(s.libs, lib) })
	s.table(&b, peers, "parley vs best peer", s.ratio)
	s.table(&b, pair, "manager vs bare", s.overBare)
	_, err := io.WriteString(w, b.String())
	return err
}

// table writes the rows of the scenarios any of libs reports, with a
// column for each unit of each of libs and a last column of what ratio
// says of the scenario. It writes nothing when libs is empty.
func (s *set) table(b *strings.Builder, libs []string, last string, ratio func(scenario string) string) {
	var scenarios []string
	for _, sc := range s.scenarios {
		if slices.ContainsFunc(libs, func(lib string) bool { return s.samples[cell{sc, lib}] != nil }) {
			scenarios = append(scenarios, sc)
		}
	}
	if len(scenarios) == 0 {
		return
	}
	b.WriteString("\n")
	header := []string{"scenario"}
	for _, lib := range libs {
		for _, u := range s.columns(lib) {
			header = append(header, lib+" "+u)
		}
	}
	header = append(header, last)
	writeRow(b, header)
	align := make([]string, len(header))
	align[0] = ":--"
	for i := 1; i < len(align); i++ {
		align[i] = "--:"
	}
	writeRow(b, align)

	showProcs := len(s.procs) > 1
	for _, sc := range scenarios {
		row := []string{sc}
		for _, lib := range libs {
			for _, u := range s.columns(lib) {
				if v, ok := s.median(sc, lib, u); ok {
					row = append(row, formatNumber(v))
				} else {
					row = append(row, "")
				}
			}
		}
		row = append(row, ratio(sc))
		if showProcs {
			row[0] += " (GOMAXPROCS differs between runs)"
		}
		writeRow(b, row)
	}
}

// ratio describes Parley against the best peer of scenario: the peer
// with the lowest value of the scenario's primary unit.
func (s *set) ratio(scenario string) string {
	unit := s.primary(scenario, parley, func(lib string) bool { return lib != parley && !isPair(lib) })
	mine, ok := s.median(scenario, parley, unit)
	if !ok {
		return "—"
	}
	best, bestLib := math.Inf(1), ""
	for _, lib := range s.libs {
		if lib == parley || isPair(lib) {
			continue
		}
		if v, ok := s.median(scenario, lib, unit); ok && v < best {
			best, bestLib = v, lib
		}
	}
	if bestLib == "" {
		return "— (no peer)"
	}
	better, worse := "faster", "slower"
	if strings.HasPrefix(unit, "B/") {
		better, worse = "smaller", "larger"
	}
	if mine == 0 {
		return fmt.Sprintf("%s (%s 0 vs %s %s)", better, unit, bestLib, formatNumber(best))
	}
	r := best / mine
	on := ""
	if unit != "ns/op" {
		on = " (" + unit + ")"
	}
	if r >= 1 {
		return fmt.Sprintf("%s× %s than %s%s", formatRatio(r), better, bestLib, on)
	}
	return fmt.Sprintf("%s× (%s than %s)%s", formatRatio(r), worse, bestLib, on)
}

// overBare describes the manager's cost in scenario over the bare
// handlers': the ratio of their medians of the scenario's primary unit.
func (s *set) overBare(scenario string) string {
	unit := s.primary(scenario, manager, func(lib string) bool { return lib == bare })
	m, okM := s.median(scenario, manager, unit)
	h, okB := s.median(scenario, bare, unit)
	switch {
	case !okM || !okB:
		return "—"
	case h == 0:
		return fmt.Sprintf("— (bare %s is 0)", unit)
	}
	out := fmt.Sprintf("%s× the bare handlers' %s", formatRatio(m/h), unit)
	if lo, hi, ok := s.pairedRatios(scenario, manager, bare, unit); ok {
		out += fmt.Sprintf(" (%s–%s× run by run)", formatRatio(lo), formatRatio(hi))
	}
	return out
}

// pairedRatios returns the lowest and highest ratio of the i-th sample of
// lib over the i-th of base, when both have the same number of samples,
// at least two, none of base's zero. run.sh interleaves its runs, so the
// i-th samples are from the same pass of the binary and saw the same
// load.
func (s *set) pairedRatios(scenario, lib, base, unit string) (lo, hi float64, ok bool) {
	xs, ys := s.samples[cell{scenario, lib}][unit], s.samples[cell{scenario, base}][unit]
	if len(xs) < 2 || len(xs) != len(ys) || slices.Contains(ys, 0) {
		return 0, 0, false
	}
	lo, hi = math.Inf(1), math.Inf(-1)
	for i := range xs {
		r := xs[i] / ys[i]
		lo, hi = min(lo, r), max(hi, r)
	}
	return lo, hi, true
}

// primary returns the unit scenario compares lib on: a custom metric lib
// and some library other accepts both report, else ns/op.
func (s *set) primary(scenario, lib string, other func(lib string) bool) string {
	for _, u := range s.units[lib] {
		if slices.Contains(standard, u) {
			continue
		}
		if _, ok := s.median(scenario, lib, u); !ok {
			continue
		}
		for _, o := range s.libs {
			if _, ok := s.median(scenario, o, u); ok && other(o) {
				return u
			}
		}
	}
	return "ns/op"
}

func writeRow(b *strings.Builder, cells []string) {
	b.WriteString("|")
	for _, c := range cells {
		b.WriteString(" " + c + " |")
	}
	b.WriteString("\n")
}

// formatNumber prints v as a whole number with thousands separators from
// 100 up (or when it is whole), else with three significant digits.
func formatNumber(v float64) string {
	switch a := math.Abs(v); {
	case a == math.Trunc(a) || a >= 100:
		return groupThousands(strconv.FormatFloat(math.Round(v), 'f', 0, 64))
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

func groupThousands(digits string) string {
	sign := ""
	if strings.HasPrefix(digits, "-") {
		sign, digits = "-", digits[1:]
	}
	var b strings.Builder
	for i, d := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	return sign + b.String()
}

func formatRatio(r float64) string {
	if r >= 10 {
		return strconv.FormatFloat(r, 'f', 1, 64)
	}
	return strconv.FormatFloat(r, 'f', 2, 64)
}

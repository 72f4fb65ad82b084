package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/parleyhq/parley/explore"
	"github.com/parleyhq/parley/policy"
)

// SARIF 2.1.0 (https://docs.oasis-open.org/sarif/sarif/v2.1.0/), the
// subset GitHub code scanning reads.
const (
	sarifSchema   = "https://json.schemastore.org/sarif-2.1.0.json"
	sarifVersion  = "2.1.0"
	toolURI       = "https://github.com/parleyhq/parley"
	codesDocsURI  = "https://github.com/parleyhq/parley/blob/main/docs/diagnostics.md#"
	sarifToolName = "cpvalidate"
)

type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool        sarifTool         `json:"tool"`
	Invocations []sarifInvocation `json:"invocations,omitempty"`
	Artifacts   []sarifArtifact   `json:"artifacts,omitempty"`
	// ColumnKind says how startColumn counts: policy positions count
	// bytes, and writeSARIF converts them to UTF-16 code units.
	ColumnKind string        `json:"columnKind"`
	Results    []sarifResult `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	Version        string      `json:"version,omitempty"`
	InformationURI string      `json:"informationUri"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID                   string       `json:"id"`
	Name                 string       `json:"name"`
	ShortDescription     sarifMessage `json:"shortDescription"`
	FullDescription      sarifMessage `json:"fullDescription"`
	Help                 sarifMessage `json:"help"`
	HelpURI              string       `json:"helpUri"`
	DefaultConfiguration sarifConfig  `json:"defaultConfiguration"`
}

type sarifConfig struct {
	Level string `json:"level"`
}

type sarifMessage struct {
	Text string `json:"text"`
}

type sarifInvocation struct {
	ExecutionSuccessful        bool                `json:"executionSuccessful"`
	RuleConfigurationOverrides []sarifOverride     `json:"ruleConfigurationOverrides,omitempty"`
	ToolExecutionNotifications []sarifNotification `json:"toolExecutionNotifications,omitempty"`
}

// sarifOverride is a rule's configuration under -profile and -severity,
// where it differs from the rule's default.
type sarifOverride struct {
	Descriptor    sarifDescriptor     `json:"descriptor"`
	Configuration sarifOverrideConfig `json:"configuration"`
}

type sarifDescriptor struct {
	ID    string `json:"id"`
	Index int    `json:"index"`
}

type sarifOverrideConfig struct {
	Enabled bool   `json:"enabled"`
	Level   string `json:"level"`
}

type sarifNotification struct {
	Level   string       `json:"level"`
	Message sarifMessage `json:"message"`
}

type sarifArtifact struct {
	Location sarifArtifactLocation `json:"location"`
	Roles    []string              `json:"roles"`
}

type sarifResult struct {
	RuleID           string          `json:"ruleId"`
	RuleIndex        *int            `json:"ruleIndex,omitempty"`
	Level            string          `json:"level"`
	Message          sarifMessage    `json:"message"`
	Locations        []sarifLocation `json:"locations"`
	RelatedLocations []sarifLocation `json:"relatedLocations,omitempty"`
	Properties       *sarifProps     `json:"properties,omitempty"`
}

type sarifProps struct {
	// Witness is the diagnostic's trace, one step per entry.
	Witness []string `json:"witness,omitempty"`
}

type sarifLocation struct {
	ID               *int                  `json:"id,omitempty"`
	PhysicalLocation sarifPhysicalLocation `json:"physicalLocation"`
	Message          *sarifMessage         `json:"message,omitempty"`
}

type sarifPhysicalLocation struct {
	ArtifactLocation sarifArtifactLocation `json:"artifactLocation"`
	Region           *sarifRegion          `json:"region,omitempty"`
}

type sarifArtifactLocation struct {
	URI   string `json:"uri"`
	Index *int   `json:"index,omitempty"`
}

type sarifRegion struct {
	StartLine   int `json:"startLine"`
	StartColumn int `json:"startColumn,omitempty"`
}

// sarifLevel maps a severity to a SARIF level.
// allCodes lists every diagnostic code: the load and static checks'
// (policy.Codes), then the exploration's (explore.Codes).
func allCodes() []policy.CodeInfo {
	return append(slices.Clip(policy.Codes), explore.Codes...)
}

func sarifLevel(s policy.Severity) string {
	switch s {
	case policy.SeverityError:
		return "error"
	case policy.SeverityWarning:
		return "warning"
	}
	return "note"
}

func writeSARIF(w io.Writer, rep *report, max int) error {
	run := sarifRun{
		Tool: sarifTool{Driver: sarifDriver{
			Name:           sarifToolName,
			Version:        toolVersion(),
			InformationURI: toolURI,
			Rules:          make([]sarifRule, 0, len(allCodes())),
		}},
		ColumnKind: "utf16CodeUnits",
		Results:    []sarifResult{},
	}
	ruleIndex := map[policy.Code]int{}
	for i, c := range allCodes() {
		ruleIndex[c.Code] = i
		help := codesDocsURI + strings.ToLower(string(c.Code))
		run.Tool.Driver.Rules = append(run.Tool.Driver.Rules, sarifRule{
			ID:               string(c.Code),
			Name:             c.Name,
			ShortDescription: sarifMessage{Text: c.Summary},
			FullDescription: sarifMessage{Text: fmt.Sprintf("%s (%s, %s by default): %s.",
				c.Code, c.Name, c.Severity, c.Summary)},
			Help: sarifMessage{Text: fmt.Sprintf("%s: %s. What triggers it, an example and how to fix it: %s",
				c.Code, c.Summary, help)},
			HelpURI:              help,
			DefaultConfiguration: sarifConfig{Level: sarifLevel(c.Severity)},
		})
	}
	artifactIndex := map[string]int{}
	for i, f := range rep.files {
		artifactIndex[f.path] = i
		run.Artifacts = append(run.Artifacts, sarifArtifact{
			Location: sarifArtifactLocation{URI: fileURI(f.path)},
			Roles:    []string{"analysisTarget"},
		})
	}
	sources := map[string][]byte{}
	for _, f := range rep.files {
		sources[f.path] = f.src
	}
	cols := newColumnMapper(sources)
	loc := func(pos policy.Pos) sarifPhysicalLocation {
		pl := sarifPhysicalLocation{ArtifactLocation: sarifArtifactLocation{URI: fileURI(pos.File)}}
		if i, ok := artifactIndex[pos.File]; ok {
			pl.ArtifactLocation.Index = &i
		}
		// A region's lines are 1-based; a diagnostic without a line
		// points at the start of its file.
		pl.Region = &sarifRegion{StartLine: 1}
		if pos.IsValid() {
			pl.Region.StartLine = pos.Line
			if pos.Col > 0 {
				pl.Region.StartColumn = cols.utf16Col(pos)
			}
		}
		return pl
	}
	shown, more := capped(rep.diags, max)
	for _, d := range shown {
		res := sarifResult{
			RuleID:    string(d.Code),
			Level:     sarifLevel(d.Severity),
			Message:   sarifMessage{Text: sarifText(d)},
			Locations: []sarifLocation{{PhysicalLocation: loc(d.Pos)}},
		}
		if i, ok := ruleIndex[d.Code]; ok {
			res.RuleIndex = &i
		}
		for i, r := range d.Related {
			id := i + 1
			res.RelatedLocations = append(res.RelatedLocations, sarifLocation{
				ID:               &id,
				PhysicalLocation: loc(r.Pos),
				Message:          &sarifMessage{Text: r.Message},
			})
		}
		if len(d.Trace) > 0 {
			res.Properties = &sarifProps{Witness: d.Trace}
		}
		run.Results = append(run.Results, res)
	}
	inv := sarifInvocation{ExecutionSuccessful: len(rep.ioErrors) == 0}
	for i, c := range allCodes() {
		level, ok := rep.levels[c.Code]
		if !ok || level == c.Severity.String() {
			continue
		}
		conf := sarifOverrideConfig{Enabled: level != levelOff, Level: "none"}
		switch level {
		case "error":
			conf.Level = "error"
		case "warning":
			conf.Level = "warning"
		case "info":
			conf.Level = "note"
		}
		inv.RuleConfigurationOverrides = append(inv.RuleConfigurationOverrides, sarifOverride{Descriptor: sarifDescriptor{ID: string(c.Code), Index: i}, Configuration: conf})
	}
	for _, err := range rep.ioErrors {
		inv.ToolExecutionNotifications = append(inv.ToolExecutionNotifications, sarifNotification{Level: "error", Message: sarifMessage{Text: err.Error()}})
	}
	for _, n := range rep.notes {
		inv.ToolExecutionNotifications = append(inv.ToolExecutionNotifications, sarifNotification{Level: "note", Message: sarifMessage{Text: n}})
	}
	if more > 0 {
		inv.ToolExecutionNotifications = append(inv.ToolExecutionNotifications, sarifNotification{Level: "note",
			Message: sarifMessage{Text: fmt.Sprintf("... and %s (raise -max, or use -max 0, to report them)", plural(more, "more diagnostic", "more diagnostics"))}})
	}
	run.Invocations = []sarifInvocation{inv}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(sarifLog{Schema: sarifSchema, Version: sarifVersion, Runs: []sarifRun{run}})
}

// toolVersion is the module version cpvalidate was built from, or ""
// for a development build (and in tests).
func toolVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok || bi.Main.Version == "" || bi.Main.Version == "(devel)" {
		return ""
	}
	return bi.Main.Version
}

// sarifText is the result's message: the diagnostic's message and, when
// it has one, its witness trace as numbered lines.
func sarifText(d policy.Diagnostic) string {
	if len(d.Trace) == 0 {
		return d.Message
	}
	var b strings.Builder
	b.WriteString(d.Message)
	b.WriteString("\n\nwitness:")
	for i, step := range d.Trace {
		fmt.Fprintf(&b, "\n%d. %s", i+1, step)
	}
	return b.String()
}

// fileURI renders a path as a URI reference: relative paths stay
// relative (with forward slashes), absolute ones become file: URIs.
func fileURI(path string) string {
	slashed := filepath.ToSlash(path)
	if filepath.IsAbs(path) {
		if !strings.HasPrefix(slashed, "/") {
			slashed = "/" + slashed // a Windows drive letter
		}
		return (&url.URL{Scheme: "file", Path: slashed}).String()
	}
	return (&url.URL{Path: slashed}).String()
}

// columnMapper converts byte columns to UTF-16 code unit columns, which
// is what SARIF counts by default, from the files as validation read
// them: it reads no file itself (a file read again could have changed, or
// be a pipe that has nothing more to give).
type columnMapper struct {
	sources map[string][]byte
	lines   map[string][][]byte
}

// newColumnMapper maps columns in sources, the files' contents by path; a
// position in any other file keeps its byte column.
func newColumnMapper(sources map[string][]byte) *columnMapper {
	return &columnMapper{sources: sources, lines: map[string][][]byte{}}
}

func (m *columnMapper) utf16Col(pos policy.Pos) int {
	lines, ok := m.lines[pos.File]
	if !ok {
		for line := range strings.Lines(string(m.sources[pos.File])) {
			lines = append(lines, []byte(line))
		}
		m.lines[pos.File] = lines
	}
	if pos.Line > len(lines) || pos.Col-1 > len(lines[pos.Line-1]) {
		return pos.Col
	}
	prefix := lines[pos.Line-1][:pos.Col-1]
	col := 1
	for len(prefix) > 0 {
		r, size := utf8.DecodeRune(prefix)
		prefix = prefix[size:]
		col++
		if r >= 0x10000 {
			col++ // a surrogate pair
		}
	}
	return col
}

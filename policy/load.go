package policy

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Format is a policy file format.
type Format string

// Formats.
const (
	FormatYAML Format = "yaml"
	FormatXML  Format = "xml"
)

// FormatOf returns the format a file name's extension says (.yaml, .yml or
// .xml), and false for any other extension.
func FormatOf(filename string) (Format, bool) {
	switch strings.ToLower(filepath.Ext(filename)) {
	case ".yaml", ".yml":
		return FormatYAML, true
	case ".xml":
		return FormatXML, true
	}
	return "", false
}

// Load loads a policy in the format its file name says, or, for other
// names, the format its content looks like (XML when it starts with '<').
func Load(filename string, src []byte, opts ...LoadOption) (*Policy, Diagnostics) {
	f, ok := FormatOf(filename)
	if !ok {
		f = FormatYAML
		if bytes.HasPrefix(bytes.TrimLeft(src, " \t\r\n\ufeff"), []byte("<")) {
			f = FormatXML
		}
	}
	if f == FormatXML {
		return LoadXML(filename, src, opts...)
	}
	return LoadYAML(filename, src, opts...)
}

// LoadFile reads and loads the policy file at path, reading it with
// ReadFile. The error is for I/O only; problems in the file, its size
// included, are diagnostics.
func LoadFile(path string, opts ...LoadOption) (*Policy, Diagnostics, error) {
	src, ds, err := ReadFile(path, opts...)
	if err != nil || ds != nil {
		return nil, ds, err
	}
	p, ds := Load(path, src, opts...)
	return p, ds, nil
}

// ReadFile reads the policy file at path, and at most the limits'
// MaxBytes of it, from a regular file, a device or a pipe alike: a file
// that has more is not read further and is reported as a CP006
// diagnostic at its start, with no source. The error is for I/O only.
func ReadFile(path string, opts ...LoadOption) ([]byte, Diagnostics, error) {
	max := newLoadOptions(opts).limits.MaxBytes
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	tooLarge := func(msg string) Diagnostics {
		return Diagnostics{{Severity: SeverityError, Code: CodeLimit, Pos: Pos{File: path, Line: 1, Col: 1}, Message: msg}}
	}
	if info, err := f.Stat(); err == nil && info.Mode().IsRegular() && info.Size() > int64(max) {
		return nil, tooLarge(fmt.Sprintf("file is %d bytes, more than the limit of %d", info.Size(), max)), nil
	}
	// One byte more than the limit tells a file of exactly the limit from
	// a larger one, whatever Stat said (a device or a pipe has no size).
	src, err := io.ReadAll(io.LimitReader(f, int64(max)+1))
	if err != nil {
		return nil, nil, err
	}
	if len(src) > max {
		return nil, tooLarge(fmt.Sprintf("file is larger than the limit of %d bytes", max)), nil
	}
	return src, nil, nil
}

// Write renders p in format f.
func Write(p *Policy, f Format) []byte {
	if f == FormatXML {
		return WriteXML(p)
	}
	return WriteYAML(p)
}

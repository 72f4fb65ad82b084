package policy

import (
	"bytes"
	"fmt"
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

// LoadFile reads and loads the policy file at path. The error is for I/O
// only; problems in the file are diagnostics.
func LoadFile(path string, opts ...LoadOption) (*Policy, Diagnostics, error) {
	o := newLoadOptions(opts)
	info, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	if info.Size() > int64(o.limits.MaxBytes) {
		return nil, Diagnostics{{Severity: SeverityError, Code: CodeLimit, Pos: Pos{File: path, Line: 1, Col: 1},
			Message: fmt.Sprintf("file is %d bytes, more than the limit of %d", info.Size(), o.limits.MaxBytes)}}, nil
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	p, ds := Load(path, src, opts...)
	return p, ds, nil
}

// Write renders p in format f.
func Write(p *Policy, f Format) []byte {
	if f == FormatXML {
		return WriteXML(p)
	}
	return WriteYAML(p)
}

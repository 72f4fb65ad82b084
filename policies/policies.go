// Package policies holds the conversation policies Parley ships: FIPA
// Request, Query and Contract Net, and conversation-setup, each written in
// YAML and in CP-XML. They are embedded in the binary and loadable by name.
package policies

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/parleyhq/parley/policy"
)

//go:embed *.yaml *.xml
var files embed.FS

// FS returns the shipped policy files (name.yaml and name.xml for each).
func FS() fs.FS { return files }

// Names lists the shipped policies, sorted.
func Names() []string {
	entries, _ := fs.ReadDir(files, ".") // embedded: cannot fail
	var out []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

var (
	mu     sync.Mutex
	loaded = map[string]*policy.Policy{}
)

// Load returns the shipped policy called name, loaded from its YAML file
// and checked. The result is shared: treat it as read-only.
func Load(name string) (*policy.Policy, error) {
	mu.Lock()
	defer mu.Unlock()
	if p, ok := loaded[name]; ok {
		return p, nil
	}
	file := name + ".yaml"
	src, err := files.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("no shipped policy %q (have %s)", name, strings.Join(Names(), ", "))
	}
	p, ds := policy.LoadYAML(path.Join("policies", file), src)
	if err := ds.Err(); err != nil {
		return nil, err
	}
	if err := policy.CheckPolicy(p, policy.WithPolicies(loadUnchecked)).Err(); err != nil {
		return nil, err
	}
	loaded[name] = p
	return p, nil
}

// Resolve returns the shipped policy called name, or nil; it suits
// policy.WithPolicies.
func Resolve(name string) *policy.Policy {
	p, err := Load(name)
	if err != nil {
		return nil
	}
	return p
}

// loadUnchecked loads a shipped policy without checking it, to resolve
// child policy references while Load holds the lock.
func loadUnchecked(name string) *policy.Policy {
	src, err := files.ReadFile(name + ".yaml")
	if err != nil {
		return nil
	}
	p, ds := policy.LoadYAML(path.Join("policies", name+".yaml"), src)
	if ds.HasErrors() {
		return nil
	}
	return p
}

package agent

import (
	"slices"
	"sync"
)

// Directory lists which agents can play which role of which policy, such
// as every agent that can be a Participant of fipa-contract-net, so an
// initiator can address a call for proposals. It is safe for concurrent
// use.
type Directory struct {
	mu     sync.RWMutex
	agents map[[2]string][]string
}

// NewDirectory returns an empty directory.
func NewDirectory() *Directory { return &Directory{agents: map[[2]string][]string{}} }

// Register records that agent can play role of policy.
func (d *Directory) Register(agent, policy, role string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	k := [2]string{policy, role}
	if !slices.Contains(d.agents[k], agent) {
		d.agents[k] = append(d.agents[k], agent)
		slices.Sort(d.agents[k])
	}
}

// Unregister removes agent from every role.
func (d *Directory) Unregister(agent string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, list := range d.agents {
		d.agents[k] = slices.DeleteFunc(list, func(a string) bool { return a == agent })
	}
}

// Lookup returns the agents that can play role of policy, sorted.
func (d *Directory) Lookup(policy, role string) []string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return slices.Clone(d.agents[[2]string{policy, role}])
}

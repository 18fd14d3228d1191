package router

import (
	"sync"

	"github.com/fedrouter/fedrouter/topology"
)

// table holds the topology's latest shortest paths for readers outside the
// topology driver (routes, transit, the admin API), and tells waiters when
// they change: Paths hands out a channel that the next Store closes.
type table struct {
	mu      sync.Mutex
	paths   *topology.Paths // guarded by mu
	changed chan struct{}   // guarded by mu; closed and replaced by Store
}

func newTable() *table { return &table{changed: make(chan struct{})} }

// Store publishes new paths and wakes every waiter.
func (t *table) Store(p *topology.Paths) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.paths = p
	close(t.changed)
	t.changed = make(chan struct{})
}

// Load returns the latest paths (nil before any).
func (t *table) Load() *topology.Paths {
	p, _ := t.Paths()
	return p
}

// Paths returns the latest paths and a channel closed at the next change.
func (t *table) Paths() (*topology.Paths, <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.paths, t.changed
}

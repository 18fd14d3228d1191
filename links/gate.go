package links

import (
	"sync"
	"sync/atomic"
	"time"
)

// Gate holds back what is sent into one instance of a global destination
// with limits (docs/destinations.md, "Limits"): closed while the sum of
// the instances' depths is at the limit or this instance is near its
// share, and for RefusalPause after the instance refused a message. A
// forwarder held by a closed gate (engine.ForwardOptions.Hold) parks what
// it has for the gated destination and grants its source no more credit:
// nothing is sent or settled until the gate opens.
type Gate struct {
	closed  atomic.Bool
	refused atomic.Int64  // unix nanoseconds until which a refusal holds it
	count   atomic.Uint64 // refusals

	mu   sync.Mutex
	open chan struct{} // closed when the gate opens; guarded by mu
}

// RefusalPause is how long a gate stays closed after its instance refused
// a message: about a listing period, so that the shares can move first.
const RefusalPause = time.Second

// NewGate returns an open gate.
func NewGate() *Gate { return &Gate{open: make(chan struct{})} }

// Refusals counts the messages the instance refused (and the runs it
// ended) through this gate.
func (g *Gate) Refusals() uint64 { return g.count.Load() }

// refuse closes the gate for RefusalPause.
func (g *Gate) refuse() {
	g.count.Add(1)
	g.refused.Store(time.Now().Add(RefusalPause).UnixNano())
}

// Set closes (true) or opens the gate.
func (g *Gate) Set(closed bool) {
	if g.closed.Swap(closed) == closed {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !closed {
		close(g.open)
		g.open = make(chan struct{})
	}
}

// Closed says whether the gate holds messages back now.
func (g *Gate) Closed() bool {
	return g.closed.Load() || time.Now().UnixNano() < g.refused.Load()
}

// opened is closed when the gate, closed by Set now, opens; nil while
// Set has it open (a refusal's pause has no channel: wait polls it).
func (g *Gate) opened() <-chan struct{} {
	if !g.closed.Load() {
		return nil
	}
	g.mu.Lock()
	open := g.open
	g.mu.Unlock()
	if !g.closed.Load() {
		return nil // opened between the load and the lock
	}
	return open
}

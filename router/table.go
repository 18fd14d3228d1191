package router

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/fedrouter/fedrouter/routes"
	"github.com/fedrouter/fedrouter/topology"
)

// table holds the topology's latest shortest paths and the exchange
// routes other routers advertise, for readers outside the topology driver
// (routes, transit, the admin API), and tells waiters when they change:
// Paths hands out a channel that the next Store or StoreEdges closes. It
// is the routes.Table the routes see.
type table struct {
	mu      sync.Mutex
	paths   *topology.Paths // guarded by mu
	changed chan struct{}   // guarded by mu; closed and replaced by Store and StoreEdges
	edges   edgeState       // guarded by mu
	// named: every broker the link state has named since the start
	// (topology.Ready.Named); guarded by mu.
	named map[string]struct{}
	// consumers, flows: the global destinations' consumers and flows
	// other routers advertise (ConsumersExt, FlowsExt); their own locks.
	consumers, flows *remoteCounts
	// shares: the limited destinations' ads other routers advertise
	// (SharesExt); its own lock.
	shares remoteShares
}

func newTable() *table {
	return &table{changed: make(chan struct{}),
		consumers: &remoteCounts{ext: ConsumersExt, max: maxAdvertisedConsumers},
		flows:     &remoteCounts{ext: FlowsExt, max: maxAdvertisedFlows, changed: make(chan struct{}, 1)}}
}

// Store publishes new paths and wakes every waiter.
func (t *table) Store(p *topology.Paths) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.paths = p
	close(t.changed)
	t.changed = make(chan struct{})
}

// AddNamed remembers brokers the link state named (topology.Ready.Named).
func (t *table) AddNamed(brokers []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.named == nil {
		t.named = make(map[string]struct{}, len(brokers))
	}
	for _, b := range brokers {
		t.named[b] = struct{}{}
	}
}

// Known says whether any advertisement, or this router's own state, has
// named broker since the start (routes.Table).
func (t *table) Known(broker string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.named[broker]
	return ok
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

// NextHop returns the next hop from src towards dst on the latest paths;
// ok false before a path is known.
func (t *table) NextHop(src, dst string) (string, bool) {
	p := t.Load()
	if p == nil {
		return "", false
	}
	rt, ok := p.Route(src, dst)
	return rt.NextHop, ok
}

// ExchangeRoutesExt is the advertisement extension listing the router's
// exchange routes that take part in fan-out (routes.ExchangeEdge, JSON).
const ExchangeRoutesExt = "exchange_routes"

// edgeState is what the table keeps of the routers' advertised exchange
// routes: per router, as last advertised. A router whose advertisement
// expired keeps its routes here: its fan-out groups still reach the
// brokers behind them (copies wait in transit for a path) rather than
// dropping them while it is away; a router that advertises again replaces
// them (with none, if it has none).
type edgeState struct {
	raw  map[string]string                // router id → the value last parsed
	by   map[string][]routes.ExchangeEdge // router id → its edges
	flat []routes.ExchangeEdge            // all of them, sorted
}

// StoreEdges takes the other routers' ExchangeRoutesExt values (router id
// → value, nil: none) and wakes waiters if the edges changed. A value that
// does not decode is reported and the router's previous edges are kept.
func (t *table) StoreEdges(ext map[string]json.RawMessage) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.edges.raw == nil {
		t.edges.raw, t.edges.by = map[string]string{}, map[string][]routes.ExchangeEdge{}
	}
	var errs []error
	changed := false
	for id, v := range ext {
		if old, ok := t.edges.raw[id]; ok && old == string(v) {
			continue
		}
		var es []routes.ExchangeEdge
		if v != nil {
			if err := json.Unmarshal(v, &es); err != nil {
				errs = append(errs, fmt.Errorf("router %s: extension %s: %w", id, ExchangeRoutesExt, err))
				continue
			}
		}
		t.edges.raw[id], t.edges.by[id] = string(v), es
		changed = true
	}
	if changed {
		t.edges.flat = nil
		for _, es := range t.edges.by {
			t.edges.flat = append(t.edges.flat, es...)
		}
		slices.SortFunc(t.edges.flat, func(a, b routes.ExchangeEdge) int {
			return cmp.Or(cmp.Compare(a.Src, b.Src), cmp.Compare(a.Dest, b.Dest), cmp.Compare(a.Exchange, b.Exchange), cmp.Compare(a.Key, b.Key))
		})
		t.edges.flat = slices.Compact(t.edges.flat)
		close(t.changed)
		t.changed = make(chan struct{})
	}
	return errors.Join(errs...)
}

// Advertised returns the exchange routes the other routers advertise (or
// did, before their advertisement expired); callers must not change it.
func (t *table) Advertised() []routes.ExchangeEdge {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.edges.flat
}

package routes

import (
	"github.com/fedrouter/fedrouter/topology"
)

// Multi-hop transit as routes/ runs it: the table a router follows and
// which (broker, destination) pairs it carries (transitrun.go runs them).
// The message-level plumbing — annotations, the transit header, hop
// counts, refusal conditions, the dispatching sink — is links/transit.go.

// Table is the router's link-state table, the one view routes/ has of
// the mesh: its shortest paths (multi-hop transit, the reroute no-path
// action, the transit forwarders), the next hop a dynamic route follows
// demand along, and the exchange routes the other routers advertise
// (fan-out, fanout.go). Options.Table nil: no mesh.
type Table interface {
	// Paths returns the current shortest paths (nil before any is known)
	// and a channel closed when they, or Advertised, next change.
	Paths() (*topology.Paths, <-chan struct{})
	// Known says whether any link-state advertisement since the start
	// (the router's own included) has named broker: a runtime route
	// towards a broker never named is refused unless forced (Spec.Force).
	Known(broker string) bool
	// NextHop returns the next hop on the shortest path from src to dst;
	// ok false: no path known.
	NextHop(src, dst string) (next string, ok bool)
	// Advertised returns the exchange routes the other routers advertise
	// (ExchangeEdge); callers must not change it.
	Advertised() []ExchangeEdge
}

// nextHops is what the table says about transit from each of the
// router's brokers: for every (broker, destination) pair the router can
// carry, the next hop. A router carries B's transit for D when it is
// attached to B and to the next hop N, and both connections are up.
func nextHops(p *topology.Paths, up func(string) bool) map[[2]string]string {
	out := map[[2]string]string{}
	if p == nil {
		return out
	}
	brokers := p.Brokers()
	for _, b := range brokers {
		if !up(b) {
			continue
		}
		for _, d := range brokers {
			if d == b {
				continue
			}
			if rt, ok := p.Route(b, d); ok && up(rt.NextHop) {
				out[[2]string{b, d}] = rt.NextHop
			}
		}
	}
	return out
}

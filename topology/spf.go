// Package topology is fedrouter's link-state core: the broker graph and the
// shortest paths through it. It is a pure state machine: no goroutines, no
// I/O, no clock of its own — callers pass events and time in and take
// results out, so every behaviour is deterministic and testable.
//
// This file holds the path computation over one snapshot of the graph.
package topology

import (
	"fmt"
	"sort"

	"github.com/yourbasic/graph"
)

// Edge is a directed federation link from one broker to another.
type Edge struct {
	From, To string
	Cost     int64 // > 0
	Up       bool  // only links that are up carry traffic
}

// Route is how to reach one destination broker from a source broker.
type Route struct {
	Dest     string
	Cost     int64
	Hops     int
	NextHop  string   // the chosen next hop (smallest name among equal-cost ones)
	NextHops []string // every next hop on an equal-cost shortest path, sorted
}

// Paths holds the shortest paths of one graph snapshot from every broker.
type Paths struct {
	names []string       // sorted broker names; index = graph vertex
	index map[string]int // name → vertex
	cost  [][]int64      // cost[v][w] of the direct up edge, 0 if none
	dist  [][]int64      // dist[src][dst], -1 if unreachable
	hops  [][]int        // hops on the chosen path
	par   [][]int        // par[src][dst]: predecessor of dst on src's tree, -1 if none
}

// Compute builds the shortest paths of the up edges. Ties are broken by
// broker name, so every router holding the same graph computes the same
// trees — which the loop- and duplicate-free forwarding relies on.
func Compute(edges []Edge) (*Paths, error) {
	p := &Paths{index: map[string]int{}}
	for _, e := range edges {
		if e.From == "" || e.To == "" || e.From == e.To {
			return nil, fmt.Errorf("topology: bad edge %q→%q", e.From, e.To)
		}
		if e.Cost <= 0 {
			return nil, fmt.Errorf("topology: edge %s→%s: cost %d must be > 0", e.From, e.To, e.Cost)
		}
		p.index[e.From], p.index[e.To] = 0, 0
	}
	for n := range p.index {
		p.names = append(p.names, n)
	}
	sort.Strings(p.names)
	for i, n := range p.names {
		p.index[n] = i
	}
	n := len(p.names)
	g := graph.New(n)
	p.cost = make([][]int64, n)
	for i := range p.cost {
		p.cost[i] = make([]int64, n)
	}
	for _, e := range edges {
		if !e.Up {
			continue
		}
		v, w := p.index[e.From], p.index[e.To]
		if c := p.cost[v][w]; c == 0 || e.Cost < c { // parallel links: the cheapest counts
			p.cost[v][w] = e.Cost
			g.AddCost(v, w, e.Cost)
		}
	}
	sorted := graph.Sort(g)
	p.dist, p.par, p.hops = make([][]int64, n), make([][]int, n), make([][]int, n)
	for s := 0; s < n; s++ {
		_, p.dist[s] = graph.ShortestPaths(sorted, s)
	}
	for s := 0; s < n; s++ {
		p.par[s], p.hops[s] = p.tree(s)
	}
	return p, nil
}

// tree picks, for every destination, the predecessor with the smallest name
// among those on a shortest path (the library's own choice depends on heap
// order), and counts hops along the chosen path.
func (p *Paths) tree(s int) (par, hops []int) {
	n := len(p.names)
	par, hops = make([]int, n), make([]int, n)
	order := make([]int, 0, n)
	for v := 0; v < n; v++ {
		par[v], hops[v] = -1, -1
		if p.dist[s][v] >= 0 {
			order = append(order, v)
		}
	}
	// Visit in order of distance so a predecessor's hop count is known.
	sort.SliceStable(order, func(i, j int) bool { return p.dist[s][order[i]] < p.dist[s][order[j]] })
	hops[s] = 0
	for _, v := range order {
		if v == s {
			continue
		}
		for u := 0; u < n; u++ { // ascending: smallest name wins
			if c := p.cost[u][v]; c > 0 && p.dist[s][u] >= 0 && p.dist[s][u]+c == p.dist[s][v] {
				par[v], hops[v] = u, hops[u]+1
				break
			}
		}
	}
	return par, hops
}

// Brokers lists the brokers of the graph, sorted.
func (p *Paths) Brokers() []string { return append([]string(nil), p.names...) }

// Route returns how src reaches dst; ok is false if no live path exists.
func (p *Paths) Route(src, dst string) (r Route, ok bool) {
	s, ok1 := p.index[src]
	d, ok2 := p.index[dst]
	if !ok1 || !ok2 || s == d || p.dist[s][d] < 0 {
		return Route{}, false
	}
	r = Route{Dest: dst, Cost: p.dist[s][d], Hops: p.hops[s][d]}
	// The chosen next hop: walk dst's predecessors back to src.
	v := d
	for p.par[s][v] != s {
		v = p.par[s][v]
	}
	r.NextHop = p.names[v]
	for w := 0; w < len(p.names); w++ {
		if c := p.cost[s][w]; c > 0 && p.dist[w][d] >= 0 && c+p.dist[w][d] == p.dist[s][d] {
			r.NextHops = append(r.NextHops, p.names[w])
		}
	}
	return r, true
}

// Routes returns src's route to every reachable broker, sorted by name.
func (p *Paths) Routes(src string) []Route {
	var out []Route
	for _, dst := range p.names {
		if r, ok := p.Route(src, dst); ok {
			out = append(out, r)
		}
	}
	return out
}

// Radius is the largest hop count of any chosen shortest path: a message
// that has made more hops than Radius+1 is looping.
func (p *Paths) Radius() int {
	max := 0
	for s := range p.hops {
		for _, h := range p.hops[s] {
			if h > max {
				max = h
			}
		}
	}
	return max
}

// ValidOrigins returns the origins whose shortest-path tree uses the edge
// from→to, sorted. A multicast copy from origin O crosses from→to only if O
// is among them: every broker then gets one copy per origin, on a mesh too.
func (p *Paths) ValidOrigins(from, to string) []string {
	u, ok1 := p.index[from]
	v, ok2 := p.index[to]
	if !ok1 || !ok2 {
		return nil
	}
	var out []string
	for o := range p.names {
		if p.par[o][v] == u {
			out = append(out, p.names[o])
		}
	}
	return out
}

// Path returns the brokers on the chosen path from src to dst, both
// included; nil if there is none.
func (p *Paths) Path(src, dst string) []string {
	s, ok1 := p.index[src]
	d, ok2 := p.index[dst]
	if !ok1 || !ok2 || p.dist[s][d] < 0 {
		return nil
	}
	var rev []string
	for v := d; v != -1 && v != s; v = p.par[s][v] {
		rev = append(rev, p.names[v])
	}
	out := []string{src}
	for i := len(rev) - 1; i >= 0; i-- {
		out = append(out, rev[i])
	}
	return out
}

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
	out   [][]arc        // out[v]: up edges v→w, ascending w (cheapest of parallel links)
	in    [][]arc        // in[w]: up edges v→w, ascending v
	dist  [][]int64      // dist[src][dst], -1 if unreachable
	hops  [][]int        // hops on the chosen path
	par   [][]int        // par[src][dst]: predecessor of dst on src's tree, -1 if none
}

// arc is one up edge in an adjacency list: the far end and the cost.
type arc struct {
	to   int
	cost int64
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
		}
	}
	p.adjacency()
	p.dist, p.par, p.hops = make([][]int64, n), make([][]int, n), make([][]int, n)
	for s := 0; s < n; s++ {
		_, p.dist[s] = graph.ShortestPaths(adjacency{p.out, nil}, s)
		p.par[s], p.hops[s] = p.tree(s, p.dist[s], nil)
	}
	return p, nil
}

// adjacency derives the sparse edge lists from the cost matrix: Dijkstra
// and the tie-breaking walk then cost O(E) per source instead of O(n²),
// which is what makes 1,000 brokers affordable.
func (p *Paths) adjacency() {
	n := len(p.names)
	p.out, p.in = make([][]arc, n), make([][]arc, n)
	for v := 0; v < n; v++ {
		for w, c := range p.cost[v] {
			if c > 0 {
				p.out[v] = append(p.out[v], arc{w, c})
				p.in[w] = append(p.in[w], arc{v, c})
			}
		}
	}
}

// skipFunc reports whether the edge v→w is to be left out.
type skipFunc func(v, w int) bool

// adjacency is a graph.Iterator over edge lists, optionally leaving some
// edges out (Alternative's avoided links).
type adjacency struct {
	lists [][]arc
	skip  skipFunc
}

func (a adjacency) Order() int { return len(a.lists) }

func (a adjacency) Visit(v int, do func(w int, c int64) bool) bool {
	for _, e := range a.lists[v] {
		if a.skip != nil && a.skip(v, e.to) {
			continue
		}
		if do(e.to, e.cost) {
			return true
		}
	}
	return false
}

// tree picks, for every destination, the predecessor with the smallest name
// among those on a shortest path (the library's own choice depends on heap
// order), and counts hops along the chosen path.
func (p *Paths) tree(s int, dist []int64, skip skipFunc) (par, hops []int) {
	n := len(p.names)
	par, hops = make([]int, n), make([]int, n)
	for v := 0; v < n; v++ {
		par[v], hops[v] = -1, -1
		if v == s || dist[v] < 0 {
			continue
		}
		for _, e := range p.in[v] { // ascending: smallest name wins
			u := e.to
			if (skip == nil || !skip(u, v)) && dist[u] >= 0 && dist[u]+e.cost == dist[v] {
				par[v] = u
				break
			}
		}
	}
	hops[s] = 0
	var chain []int
	for v := 0; v < n; v++ {
		chain = countHops(v, par, hops, chain[:0])
	}
	return par, hops
}

// countHops fills in hops[v] by walking up the chosen tree to the first
// vertex whose count is known, then back down; every vertex is walked
// once, so a whole tree costs O(n). A predecessor is strictly closer to
// the source (costs are > 0), so the walk cannot loop.
func countHops(v int, par, hops, chain []int) []int {
	for ; v != -1 && hops[v] < 0; v = par[v] {
		chain = append(chain, v)
	}
	if v == -1 { // unreachable: no chain to the source
		return chain
	}
	for i := len(chain) - 1; i >= 0; i-- {
		hops[chain[i]] = hops[par[chain[i]]] + 1
	}
	return chain
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
	for _, e := range p.out[s] {
		if w := e.to; p.dist[w][d] >= 0 && e.cost+p.dist[w][d] == p.dist[s][d] {
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

// LinkUp says whether the graph has an up link from→to.
func (p *Paths) LinkUp(from, to string) bool {
	u, ok1 := p.index[from]
	v, ok2 := p.index[to]
	return ok1 && ok2 && p.cost[u][v] > 0
}

// OnTree says whether origin's shortest-path tree uses the edge from→to
// (ValidOrigins without the list); known is false when the table does not
// hold all three brokers.
func (p *Paths) OnTree(origin, from, to string) (on, known bool) {
	o, ok0 := p.index[origin]
	u, ok1 := p.index[from]
	v, ok2 := p.index[to]
	if !ok0 || !ok1 || !ok2 {
		return false, false
	}
	return p.par[o][v] == u, true
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

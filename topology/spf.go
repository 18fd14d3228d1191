// Package topology is fedrouter's link-state core: the broker graph and the
// shortest paths through it. It is a pure state machine: no goroutines, no
// I/O, no clock of its own — callers pass events and time in and take
// results out, so every behaviour is deterministic and testable.
//
// This file holds the path computation over one snapshot of the graph.
package topology

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"
	"sort"
	"sync/atomic"
)

// Edge is a directed federation link from one broker to another.
type Edge struct {
	From, To string
	Cost     int64 // > 0
	Up       bool  // only links that are up carry traffic
}

// Route is how to reach one destination broker from a source broker.
type Route struct {
	Dest    string
	Cost    int64
	Hops    int
	NextHop string // the chosen next hop (smallest name among equal-cost ones)
	// NextHops are every next hop on an equal-cost shortest path, sorted.
	// Read-only: it may share memory with the table (a single next hop, or
	// a run of consecutive neighbours, is a slice of the table's own list).
	NextHops []string
}

// Paths holds the shortest paths of one graph snapshot from every broker.
// It is immutable as far as its callers can tell, and safe for concurrent
// use: the driver hands one table to every route. Each source's tree is
// computed on the first question about that source and kept for the life
// of the table (a table is one graph version: a changed graph is a new
// Paths, which starts with the old trees the change cannot touch), so an
// update costs at most one Dijkstra per source a route asks about, not one
// per broker.
type Paths struct {
	names []string               // sorted broker names; index = graph vertex
	index map[string]int         // name → vertex
	off   []int32                // v's up edges are arcs[off[v]:off[v+1]]
	arcs  []arc                  // ascending (from, to); the cheapest of parallel links
	ends  []string               // ends[k] = names[arcs[k].to]: Route's next hops slice it
	trees []atomic.Pointer[tree] // by source; nil until asked (or carried over)
}

// arc is one up edge in an adjacency list: the far end and the cost.
type arc struct {
	to   int32
	cost int64
}

// Compute builds the shortest paths of the up edges. Ties are broken by
// broker name, so every router holding the same graph computes the same
// trees — which the loop- and duplicate-free forwarding relies on.
func Compute(edges []Edge) (*Paths, error) { return compute(edges, nil) }

// compute is Compute, sharing prev's broker names and index when the
// graph has the same brokers (the usual case: a link changed): they are
// read-only, and rebuilding the index is a large part of an update. With
// the index shared, prev's trees that the change cannot touch are carried
// over (carry.go).
func compute(edges []Edge, prev *Paths) (*Paths, error) {
	for _, e := range edges {
		if e.From == "" || e.To == "" || e.From == e.To {
			return nil, fmt.Errorf("topology: bad edge %q→%q", e.From, e.To)
		}
		if e.Cost <= 0 {
			return nil, fmt.Errorf("topology: edge %s→%s: cost %d must be > 0", e.From, e.To, e.Cost)
		}
	}
	p := &Paths{}
	var ts []triple
	shared := false
	if prev != nil {
		p.names, p.index = prev.names, prev.index
		ts, shared = p.triples(edges)
	}
	if !shared {
		p.names, p.index = brokerIndex(edges)
		ts, _ = p.triples(edges)
	}
	p.adjacency(ts)
	p.trees = make([]atomic.Pointer[tree], len(p.names))
	if shared {
		p.carry(prev)
	}
	return p, nil
}

// brokerIndex numbers the brokers the edges name, in name order.
func brokerIndex(edges []Edge) ([]string, map[string]int) {
	index := map[string]int{}
	for _, e := range edges {
		index[e.From], index[e.To] = 0, 0
	}
	names := make([]string, 0, len(index))
	for n := range index {
		names = append(names, n)
	}
	sort.Strings(names)
	for i, n := range names {
		index[n] = i
	}
	return names, index
}

// triple is an up edge by vertex numbers.
type triple struct {
	from, to int32
	cost     int64
}

// triples numbers the up edges by p's index; ok is false unless the edges
// name exactly the brokers of the index (each name looked up once: with
// 5,000 links that is most of what making a table costs).
func (p *Paths) triples(edges []Edge) (ts []triple, ok bool) {
	seen := make([]bool, len(p.names))
	left := len(p.names)
	ts = make([]triple, 0, len(edges))
	for _, e := range edges {
		v, ok1 := p.index[e.From]
		w, ok2 := p.index[e.To]
		if !ok1 || !ok2 {
			return nil, false
		}
		for _, x := range [2]int{v, w} {
			if !seen[x] {
				seen[x] = true
				left--
			}
		}
		if e.Up {
			ts = append(ts, triple{int32(v), int32(w), e.Cost})
		}
	}
	return ts, left == 0
}

// adjacency builds the sparse edge lists of the up edges: Dijkstra then
// costs O(E log n) per source instead of O(n²), which is what makes 1,000
// brokers affordable. Of parallel links, the cheapest counts.
func (p *Paths) adjacency(ts []triple) {
	order := func(a, b triple) int {
		return cmp.Or(cmp.Compare(a.from, b.from), cmp.Compare(a.to, b.to), cmp.Compare(a.cost, b.cost))
	}
	if !slices.IsSortedFunc(ts, order) { // the node's graph comes sorted
		slices.SortFunc(ts, order)
	}
	p.off = make([]int32, len(p.names)+1)
	p.arcs = make([]arc, 0, len(ts))
	for i, t := range ts {
		if i > 0 && ts[i-1].from == t.from && ts[i-1].to == t.to {
			continue // a dearer parallel link
		}
		p.arcs = append(p.arcs, arc{t.to, t.cost})
		p.off[t.from+1]++
	}
	for v := range p.names {
		p.off[v+1] += p.off[v]
	}
	p.ends = make([]string, len(p.arcs))
	for k, a := range p.arcs {
		p.ends[k] = p.names[a.to]
	}
}

// out returns v's up edges, ascending by far end.
func (p *Paths) out(v int) []arc { return p.arcs[p.off[v]:p.off[v+1]] }

// link returns the cost of the up edge v→w, 0 if there is none.
func (p *Paths) link(v, w int) int64 {
	as := p.out(v)
	i, found := slices.BinarySearchFunc(as, int32(w), func(a arc, w int32) int { return cmp.Compare(a.to, w) })
	if !found {
		return 0
	}
	return as[i].cost
}

// tree returns s's shortest-path tree, computing it on first use. Two
// callers asking at once may both compute it; the trees are identical and
// the first stored wins, so no lock is needed.
func (p *Paths) tree(s int) *tree {
	if t := p.trees[s].Load(); t != nil {
		return t
	}
	t := p.grow(s, nil)
	if p.trees[s].CompareAndSwap(nil, t) {
		return t
	}
	return p.trees[s].Load()
}

// Brokers lists the brokers of the graph, sorted.
func (p *Paths) Brokers() []string { return append([]string(nil), p.names...) }

// pair returns the vertices of two brokers; ok is false if either is
// unknown.
func (p *Paths) pair(a, b string) (u, v int, ok bool) {
	u, ok1 := p.index[a]
	v, ok2 := p.index[b]
	return u, v, ok1 && ok2
}

// Route returns how src reaches dst; ok is false if no live path exists.
func (p *Paths) Route(src, dst string) (r Route, ok bool) {
	s, d, ok := p.pair(src, dst)
	if !ok || s == d {
		return Route{}, false
	}
	t := p.tree(s)
	if t.dist[d] < 0 {
		return Route{}, false
	}
	return p.route(s, d, t), true
}

// route is the Route to a destination d that t reaches.
func (p *Paths) route(s, d int, t *tree) Route {
	r := Route{Dest: p.names[d], Cost: t.dist[d], Hops: int(t.hops[d]), NextHop: p.names[t.first[d]]}
	ends := p.ends[p.off[s]:p.off[s+1]]
	if i, j, ok := bitRun(t.nextHops(d)); ok { // the common case, without an allocation
		r.NextHops = ends[i:j:j]
		return r
	}
	for w, word := range t.nextHops(d) {
		for ; word != 0; word &= word - 1 {
			r.NextHops = append(r.NextHops, ends[w*64+bits.TrailingZeros64(word)])
		}
	}
	return r
}

// bitRun reports whether the set bits of ws are one run, bits i to j-1,
// as they are when there is a single next hop.
func bitRun(ws []uint64) (i, j int, ok bool) {
	for w, word := range ws {
		if word == 0 {
			continue
		}
		if ok { // bits in a second word
			return 0, 0, false
		}
		lo := bits.TrailingZeros64(word)
		run := word >> lo
		if run&(run+1) != 0 { // a gap
			return 0, 0, false
		}
		i, j, ok = w*64+lo, w*64+lo+bits.OnesCount64(run), true
	}
	return i, j, ok
}

// Routes returns src's route to every reachable broker, sorted by name.
func (p *Paths) Routes(src string) []Route {
	s, ok := p.index[src]
	if !ok {
		return nil
	}
	t := p.tree(s)
	var out []Route
	for d := range p.names {
		if d != s && t.dist[d] >= 0 {
			out = append(out, p.route(s, d, t))
		}
	}
	return out
}

// Reachable reports whether any live path leads from src to dst now.
func (p *Paths) Reachable(src, dst string) bool {
	s, d, ok := p.pair(src, dst)
	return ok && p.tree(s).dist[d] >= 0
}

// Radius is the largest hop count of any chosen shortest path: a message
// that has made more hops than Radius+1 is looping. It needs the tree of
// every broker: on a large graph, ask only when it is worth that.
func (p *Paths) Radius() int {
	max := 0
	for s := range p.names {
		if h := int(p.tree(s).radius); h > max {
			max = h
		}
	}
	return max
}

// ValidOrigins returns the origins whose shortest-path tree uses the edge
// from→to, sorted. A multicast copy from origin O crosses from→to only if O
// is among them: every broker then gets one copy per origin, on a mesh too.
// It needs the tree of every broker.
func (p *Paths) ValidOrigins(from, to string) []string {
	u, v, ok := p.pair(from, to)
	if !ok {
		return nil
	}
	var out []string
	for o := range p.names {
		if int(p.tree(o).par[v]) == u {
			out = append(out, p.names[o])
		}
	}
	return out
}

// LinkUp says whether the graph has an up link from→to.
func (p *Paths) LinkUp(from, to string) bool {
	u, v, ok := p.pair(from, to)
	return ok && p.link(u, v) > 0
}

// OnTree says whether origin's shortest-path tree uses the edge from→to
// (ValidOrigins without the list); known is false when the table does not
// hold all three brokers.
func (p *Paths) OnTree(origin, from, to string) (on, known bool) {
	o, ok0 := p.index[origin]
	u, v, ok := p.pair(from, to)
	if !ok0 || !ok {
		return false, false
	}
	return int(p.tree(o).par[v]) == u, true
}

// Path returns the brokers on the chosen path from src to dst, both
// included; nil if there is none.
func (p *Paths) Path(src, dst string) []string {
	s, d, ok := p.pair(src, dst)
	if !ok {
		return nil
	}
	return p.path(p.tree(s), d)
}

// path follows t's chosen predecessors back from d to the source (whose
// hop count is 0).
func (p *Paths) path(t *tree, d int) []string {
	if t.dist[d] < 0 {
		return nil
	}
	out := make([]string, t.hops[d]+1)
	for v, i := d, len(out)-1; i >= 0; v, i = int(t.par[v]), i-1 {
		out[i] = p.names[v]
	}
	return out
}

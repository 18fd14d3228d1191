package topology

import "github.com/yourbasic/graph"

// Reachable reports whether any live path leads from src to dst now.
func (p *Paths) Reachable(src, dst string) bool {
	s, ok1 := p.index[src]
	d, ok2 := p.index[dst]
	return ok1 && ok2 && p.dist[s][d] >= 0
}

// Alternative returns the best live path from src to dst that does not use
// the avoided links (matched by From and To; Cost and Up are ignored, and
// every parallel link between the pair is avoided). It answers "the shortest
// path is failing: where else can this go?" before the link-state
// database has caught up with the failure, e.g. Alternative(src, dst,
// Edge{From: src, To: route.NextHop}). The result follows the same rules as
// Route and Path: ties broken by broker name, every equal-cost next hop.
func (p *Paths) Alternative(src, dst string, avoid ...Edge) (r Route, path []string, ok bool) {
	s, ok1 := p.index[src]
	d, ok2 := p.index[dst]
	if !ok1 || !ok2 || s == d {
		return Route{}, nil, false
	}
	skip := p.avoiding(avoid)
	_, dist := graph.ShortestPaths(adjacency{p.out, skip}, s)
	if dist[d] < 0 {
		return Route{}, nil, false
	}
	par, hops := p.tree(s, dist, skip)
	for v := d; v != -1; v = par[v] {
		path = append(path, p.names[v])
	}
	reverse(path)
	r = Route{Dest: dst, Cost: dist[d], Hops: hops[d], NextHop: path[1]}
	r.NextHops = p.nextHops(s, d, dist[d], skip)
	return r, path, true
}

// nextHops lists src's neighbours on some shortest path of the given cost
// to dst once the skipped edges are gone: a Dijkstra from dst over the
// reversed edges gives every neighbour's remaining distance.
func (p *Paths) nextHops(s, d int, cost int64, skip skipFunc) []string {
	back := func(v, w int) bool { return skip(w, v) }
	_, rest := graph.ShortestPaths(adjacency{p.in, back}, d)
	var out []string
	for _, e := range p.out[s] {
		if !skip(s, e.to) && rest[e.to] >= 0 && e.cost+rest[e.to] == cost {
			out = append(out, p.names[e.to])
		}
	}
	return out
}

// avoiding turns the avoided links into a skip function over vertices;
// links between unknown brokers are ignored.
func (p *Paths) avoiding(avoid []Edge) skipFunc {
	set := map[[2]int]bool{}
	for _, e := range avoid {
		v, ok1 := p.index[e.From]
		w, ok2 := p.index[e.To]
		if ok1 && ok2 {
			set[[2]int{v, w}] = true
		}
	}
	return func(v, w int) bool { return set[[2]int{v, w}] }
}

func reverse(s []string) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}

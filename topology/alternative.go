package topology

// Alternative returns the best live path from src to dst that does not use
// the avoided links (matched by From and To; Cost and Up are ignored, and
// every parallel link between the pair is avoided). It answers "the shortest
// path is failing: where else can this go?" before the link-state
// database has caught up with the failure, e.g. Alternative(src, dst,
// Edge{From: src, To: route.NextHop}). The result follows the same rules as
// Route and Path: ties broken by broker name, every equal-cost next hop.
// The tree it grows is the graph without those links: it is not cached.
func (p *Paths) Alternative(src, dst string, avoid ...Edge) (r Route, path []string, ok bool) {
	s, d, ok := p.pair(src, dst)
	if !ok || s == d {
		return Route{}, nil, false
	}
	t := p.grow(s, p.avoiding(avoid))
	if t.dist[d] < 0 {
		return Route{}, nil, false
	}
	return p.route(s, d, t), p.path(t, d), true
}

// avoiding turns the avoided links into a skip function over vertices;
// links between unknown brokers are ignored.
func (p *Paths) avoiding(avoid []Edge) skipFunc {
	set := map[[2]int]bool{}
	for _, e := range avoid {
		if v, w, ok := p.pair(e.From, e.To); ok {
			set[[2]int{v, w}] = true
		}
	}
	return func(v, w int) bool { return set[[2]int{v, w}] }
}

package topology

// A new table starts with the trees of the last one that the graph change
// cannot have touched: most advertisements change one link, and most
// sources' trees do not use it. The test is exact, so a carried tree is
// the tree a fresh Dijkstra would grow, bit for bit.

// arcChange is one up edge that differs between two graphs over the same
// brokers: its cost before and after, 0 where it is absent.
type arcChange struct {
	from, to int
	old, new int64
}

// carry stores in p every tree prev has computed that no change between
// the graphs touches. Only for tables that share the broker index: a tree
// is indexed by vertex.
func (p *Paths) carry(prev *Paths) {
	changes := p.changedArcs(prev)
	for s := range prev.trees {
		if t := prev.trees[s].Load(); t != nil && !t.touchedBy(s, changes) {
			p.trees[s].Store(t)
		}
	}
}

// changedArcs lists the up edges that were added, removed or re-costed
// since prev, walking both sorted adjacency lists of every vertex.
func (p *Paths) changedArcs(prev *Paths) []arcChange {
	var out []arcChange
	for u := range p.names {
		a, b := prev.out(u), p.out(u)
		for len(a) > 0 || len(b) > 0 {
			switch {
			case len(b) == 0 || (len(a) > 0 && a[0].to < b[0].to):
				out = append(out, arcChange{u, int(a[0].to), a[0].cost, 0})
				a = a[1:]
			case len(a) == 0 || b[0].to < a[0].to:
				out = append(out, arcChange{u, int(b[0].to), 0, b[0].cost})
				b = b[1:]
			default:
				if a[0].cost != b[0].cost {
					out = append(out, arcChange{u, int(a[0].to), a[0].cost, b[0].cost})
				}
				a, b = a[1:], b[1:]
			}
		}
	}
	return out
}

// touchedBy reports whether s's tree may differ once the changes are
// made. It cannot when no change is at the source itself (the next-hop
// bits number the source's edges) and each change
//
//   - removes or raises an edge that was on no shortest path (not tight:
//     dist[u] + old > dist[v]), or leaves an unreachable vertex, and
//   - adds or lowers an edge to one that is still strictly longer than the
//     way v is reached (dist[u] + new > dist[v]), or leaves an
//     unreachable vertex.
//
// Then the reachable set is closed under the new edges, the old distances
// still satisfy every edge, and the tight edges — which decide the
// predecessors, hop counts and next hops — are exactly the old ones.
func (t *tree) touchedBy(s int, changes []arcChange) bool {
	for _, c := range changes {
		du := t.dist[c.from]
		switch {
		case c.from == s:
			return true
		case du < 0:
			continue
		case c.old > 0 && du+c.old == t.dist[c.to]:
			return true
		case c.new > 0 && (t.dist[c.to] < 0 || du+c.new <= t.dist[c.to]):
			return true
		}
	}
	return false
}

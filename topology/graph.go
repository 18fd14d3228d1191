package topology

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"time"
)

// recompute rebuilds the graph after an LSA or the local state changed and
// runs the shortest paths only if the edges really differ: most accepted
// LSAs are refreshes that change nothing.
func (n *Node) recompute(now time.Time, r *Ready) {
	if !n.graphDirty || n.holdBack(now) {
		return
	}
	n.graphDirty, n.spfDue = false, time.Time{}
	edges := n.graph()
	if slices.Equal(edges, n.edges) {
		return
	}
	p, err := compute(edges, n.paths)
	if err != nil { // validate keeps bad edges out; keep the old table if one slips through
		r.event(Event{Kind: EventRejected, Err: err})
		return
	}
	n.edges, n.paths = edges, p
	n.counters.Recomputed++
	r.TableChanged, r.Table = true, p
}

// holdBack reports whether SPFDelay still holds the recompute back,
// starting the delay at the first change.
func (n *Node) holdBack(now time.Time) bool {
	if n.cfg.SPFDelay == 0 {
		return false
	}
	if n.spfDue.IsZero() {
		n.spfDue = now.Add(n.cfg.SPFDelay)
	}
	return now.Before(n.spfDue)
}

// graph is the union of every fresh LSA's links and our own, sorted so two
// graphs compare equal whatever order the LSAs came in. Each LSA's share
// is worked out and sorted once (entry.graphEdges). When few shares
// changed since the last call, the last graph is patched: the old shares
// taken out and the new merged in, in one linear pass; otherwise all
// shares are merged.
func (n *Node) graph() []Edge {
	shares := make(map[string][]Edge, len(n.db)+1)
	shares[""] = sortedEdges(n.brokers, n.links) // "" is no router id: our own
	for id, e := range n.db {
		shares[id] = e.graphEdges()
	}
	es, ok := n.patchGraph(shares)
	if !ok {
		es = mergeEdges(slices.Collect(maps.Values(shares)))
	}
	n.lastGraph, n.lastShares = es, shares
	return es
}

// patchGraph derives the graph from the last one by the shares that
// changed (a share is an entry's cached slice, so an unchanged LSA gives
// the very same slice); ok is false when there is no last graph, or so
// much changed that a full merge costs no more.
func (n *Node) patchGraph(shares map[string][]Edge) (es []Edge, ok bool) {
	if n.lastShares == nil {
		return nil, false
	}
	var gone, come [][]Edge
	size := 0
	for id, old := range n.lastShares {
		if cur, held := shares[id]; !held || !sameSlice(old, cur) {
			gone, size = append(gone, old), size+len(old)
		}
	}
	for id, cur := range shares {
		if old, held := n.lastShares[id]; !held || !sameSlice(old, cur) {
			come, size = append(come, cur), size+len(cur)
		}
	}
	if size > len(n.lastGraph)/4 {
		return nil, false
	}
	return patchEdges(n.lastGraph, mergeEdges(gone), mergeEdges(come))
}

func sameSlice(a, b []Edge) bool { return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0]) }

// patchEdges returns the sorted base without the sorted gone and with the
// sorted come (as multisets), in one pass; ok is false if gone holds an
// edge base does not.
func patchEdges(base, gone, come []Edge) (out []Edge, ok bool) {
	out = make([]Edge, 0, max(len(base)-len(gone), 0)+len(come))
	j := 0
	for len(base) > 0 || len(come) > 0 {
		switch {
		case len(base) > 0 && j < len(gone) && base[0] == gone[j]:
			base, j = base[1:], j+1
		case len(come) > 0 && (len(base) == 0 || compareEdges(&come[0], &base[0]) < 0):
			out, come = append(out, come[0]), come[1:]
		default:
			out, base = append(out, base[0]), base[1:]
		}
	}
	return out, j == len(gone)
}

// graphEdges returns the entry's share of the graph, sorted; an entry's
// LSA never changes (a newer one is a new entry), so it is kept.
func (e *entry) graphEdges() []Edge {
	if !e.edgesDone {
		e.edges, e.edgesDone = sortedEdges(e.lsa.Brokers, e.lsa.Links), true
	}
	return e.edges
}

func sortedEdges(brokers []BrokerState, links []Link) []Edge {
	es := appendEdges(nil, brokers, links)
	slices.SortFunc(es, func(a, b Edge) int { return compareEdges(&a, &b) })
	return es
}

// mergeEdges merges sorted lists into one sorted list: a k-way merge over
// a min-heap of the lists' heads, O(E log k) comparisons.
func mergeEdges(lists [][]Edge) []Edge {
	total := 0
	h := lists[:0:0]
	for _, l := range lists {
		if len(l) > 0 {
			total += len(l)
			h = append(h, l)
		}
	}
	out := make([]Edge, 0, total)
	less := func(i, j int) bool { return compareEdges(&h[i][0], &h[j][0]) < 0 }
	for i := len(h)/2 - 1; i >= 0; i-- {
		siftDown(h, i, less)
	}
	for len(h) > 0 {
		out = append(out, h[0][0])
		if h[0] = h[0][1:]; len(h[0]) == 0 {
			h[0] = h[len(h)-1]
			h = h[:len(h)-1]
		}
		siftDown(h, 0, less)
	}
	return out
}

// siftDown moves h[i] down the binary heap h to its place.
func siftDown(h [][]Edge, i int, less func(i, j int) bool) {
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if r := c + 1; r < len(h) && less(r, c) {
			c = r
		}
		if !less(c, i) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// appendEdges adds one router's links: an edge is up only if the router
// says the link is up and reports both of its brokers Operational.
func appendEdges(es []Edge, brokers []BrokerState, links []Link) []Edge {
	for _, k := range links {
		up := k.Up && operational(brokers, k.From) && operational(brokers, k.To)
		es = append(es, Edge{From: k.From, To: k.To, Cost: k.Cost, Up: up})
	}
	return es
}

func operational(brokers []BrokerState, name string) bool {
	for _, b := range brokers {
		if b.Name == name {
			return b.Operational()
		}
	}
	return false
}

// compareEdges orders edges by from, to, cost, then down before up. It
// stops at the first difference: cmp.Or would compare every field, and
// merging the graph makes tens of thousands of these comparisons.
func compareEdges(a, b *Edge) int {
	if c := strings.Compare(a.From, b.From); c != 0 {
		return c
	}
	if c := strings.Compare(a.To, b.To); c != 0 {
		return c
	}
	return cmp.Or(cmp.Compare(a.Cost, b.Cost), boolCmp(a.Up, b.Up))
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

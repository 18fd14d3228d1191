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
	p, err := Compute(edges)
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
// graphs compare equal whatever order the LSAs came in.
func (n *Node) graph() []Edge {
	var es []Edge
	es = appendEdges(es, n.brokers, n.links)
	for _, e := range n.db {
		es = appendEdges(es, e.lsa.Brokers, e.lsa.Links)
	}
	slices.SortFunc(es, compareEdges)
	return es
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

func compareEdges(a, b Edge) int {
	return cmp.Or(strings.Compare(a.From, b.From), strings.Compare(a.To, b.To),
		cmp.Compare(a.Cost, b.Cost), boolCmp(a.Up, b.Up))
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

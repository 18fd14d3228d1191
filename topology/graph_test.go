package topology

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The node's graph, patched from the last one by the LSAs that changed,
// is always the sorted union of every share as a plain sort gives it:
// through random sequences of new, repeated, replaced and expired LSAs and
// local changes, with duplicate links across routers.
func TestGraphPatchMatchesFullSort(t *testing.T) {
	r := rand.New(rand.NewPCG(18, 5))
	for trial := 0; trial < 40; trial++ {
		n := newNode(t, "r0")
		now := t0
		seq := map[string]uint64{}
		for step := 0; step < 120; step++ {
			switch k := r.IntN(10); {
			case k == 0:
				brokers, links := randomShare(r)
				if _, err := n.SetLocal(brokers, links, now); err != nil {
					t.Fatal(err)
				}
			case k == 1: // time passes: some LSAs expire
				now = now.Add(time.Duration(r.IntN(60)) * time.Second)
				n.Tick(now)
			default:
				id := fmt.Sprintf("r%d", 1+r.IntN(16))
				seq[id]++
				l := LSA{Router: id, Instance: 1, Seq: seq[id], Time: now.UnixNano()}
				l.Brokers, l.Links = randomShare(r)
				n.Apply(l, "", now)
			}
			if got, want := n.graph(), sortedGraph(n); !slices.Equal(got, want) {
				t.Fatalf("trial %d step %d: graph\n%v\nwant\n%v", trial, step, got, want)
			}
		}
	}
}

// sortedGraph is the graph as the node made it before it was patched:
// every share appended, then sorted.
func sortedGraph(n *Node) []Edge {
	es := appendEdges(nil, n.brokers, n.links)
	for _, e := range n.db {
		es = appendEdges(es, e.lsa.Brokers, e.lsa.Links)
	}
	slices.SortFunc(es, func(a, b Edge) int { return compareEdges(&a, &b) })
	return es
}

// randomShare returns brokers (some not Operational) and links among
// six brokers, so that routers often advertise the same link.
func randomShare(r *rand.Rand) ([]BrokerState, []Link) {
	var bs []BrokerState
	var ls []Link
	for i := 0; i < 6; i++ {
		if r.IntN(3) > 0 {
			st := StateOperational
			if r.IntN(5) == 0 {
				st = "Failed"
			}
			bs = append(bs, BrokerState{Name: fmt.Sprintf("b%d", i), State: st})
		}
	}
	for k := r.IntN(6); k > 0 && len(bs) > 1; k-- {
		a, b := bs[r.IntN(len(bs))].Name, bs[r.IntN(len(bs))].Name
		if a != b {
			ls = append(ls, Link{From: a, To: b, Cost: 1 + r.Int64N(2), Up: r.IntN(4) > 0})
		}
	}
	return bs, ls
}

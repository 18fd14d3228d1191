package topology

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
)

// The scale the benchmarks run at (issue 18): 1,000 brokers and 5,000
// links, advertised by 100 routers of 50 links each.
const (
	benchBrokers = 1000
	benchLinks   = 5000
	benchRouters = 100
	benchOrigins = 20 // the origins whose next hops an update must refresh
)

func benchName(i int) string { return fmt.Sprintf("b%04d", i) }

// bigNode returns a node holding the LSAs of benchRouters routers (put
// straight into its database: Apply would recompute 100 times) and its
// table computed once. A ring covers every broker; four links in five go
// to a random broker. Costs 1..9 make equal-cost paths common.
func bigNode(b *testing.B) *Node {
	b.Helper()
	n := newNode(b, "r0")
	r := rand.New(rand.NewPCG(8, 9))
	per := benchLinks / benchRouters
	for k := 0; k < benchRouters; k++ {
		l := LSA{Router: fmt.Sprintf("r%d", k+1), Instance: 1, Seq: 1, Time: t0.UnixNano(), Version: ProtocolVersion}
		seen := map[string]bool{}
		for j := 0; j < per; j++ {
			from := (k*per + j) % benchBrokers
			to := (from + 1) % benchBrokers
			if j%5 > 0 {
				to = (from + 1 + r.IntN(benchBrokers-1)) % benchBrokers
			}
			for _, x := range []int{from, to} {
				if !seen[benchName(x)] {
					seen[benchName(x)] = true
					l.Brokers = append(l.Brokers, BrokerState{Name: benchName(x), State: StateOperational})
				}
			}
			l.Links = append(l.Links, Link{From: benchName(from), To: benchName(to), Cost: 1 + r.Int64N(9), Up: true})
		}
		if err := l.validate(); err != nil {
			b.Fatal(err)
		}
		n.db[l.Router] = &entry{lsa: l, at: t0}
	}
	n.graphDirty = true
	n.recompute(t0, &Ready{})
	if got := len(n.Paths().Brokers()); got != benchBrokers {
		b.Fatalf("%d brokers", got)
	}
	return n
}

// BenchmarkRecompute1000 measures one full recompute as the node does it
// (graph from every LSA, sorted, compared, shortest paths from every
// broker) on 1,000 brokers and 5,000 links held by 100 routers. The table
// is computed from scratch: nothing carried over from the last one.
func BenchmarkRecompute1000(b *testing.B) {
	n := bigNode(b)
	empty, _ := Compute(nil)
	b.ReportAllocs()
	for b.Loop() {
		n.graphDirty, n.edges, n.paths = true, nil, empty
		var rd Ready
		n.recompute(t0, &rd)
		if !rd.TableChanged {
			b.Fatal("no recompute")
		}
		allTrees(rd.Table)
	}
}

// allTrees makes sure the shortest paths from every broker are computed.
func allTrees(p *Paths) { _ = p.Radius() }

// BenchmarkAdvertisementToNextHop1000 measures what one changed
// advertisement costs a router at 1,000 brokers and 5,000 links: the
// signed LSA received (decoded, verified, stored, re-flooded), the graph
// rebuilt and the next hops from 20 origins to every broker read again
// from the new table, as routes/transit.go reads them. Each advertisement
// changes the cost of one of its router's links, so every one is a real
// graph change.
func BenchmarkAdvertisementToNextHop1000(b *testing.B) { benchAdvertisement(b, false) }

// BenchmarkAdvertisementToNextHop1000NoCarry is the same with no tree
// carried over from the last table, as when a change touches every
// origin's tree: the worst case, 20 Dijkstras per update.
func BenchmarkAdvertisementToNextHop1000NoCarry(b *testing.B) { benchAdvertisement(b, true) }

func benchAdvertisement(b *testing.B, noCarry bool) {
	n := bigNode(b)
	p := n.Paths()
	var origins []string
	for i := 0; i < benchOrigins; i++ {
		origins = append(origins, benchName(i*benchBrokers/benchOrigins))
	}
	brokers := p.Brokers()
	hops := make([]string, len(origins)*len(brokers))
	readNextHops(p, origins, brokers, hops)
	msgs := benchAdvertisements(b, n, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if noCarry {
			n.paths = withoutTrees(n.paths)
		}
		rd := n.Receive(msgs[i], "b0000", t0)
		if !rd.TableChanged {
			b.Fatalf("advertisement %d: no table change: %v", i, rd.Events)
		}
		readNextHops(rd.Table, origins, brokers, hops)
	}
}

// readNextHops reads every origin's next hop to every broker into hops.
func readNextHops(p *Paths, origins, brokers, hops []string) {
	for i, o := range origins {
		for j, d := range brokers {
			r, _ := p.Route(o, d)
			hops[i*len(brokers)+j] = r.NextHop
		}
	}
}

// benchAdvertisements encodes count advertisements in turn from each of
// the node's routers, with the next sequence number and the cost of one
// link raised or put back.
func benchAdvertisements(b *testing.B, n *Node, count int) [][]byte {
	b.Helper()
	out := make([][]byte, 0, count)
	for i := 0; i < count; i++ {
		id := fmt.Sprintf("r%d", i%benchRouters+1)
		l := n.db[id].lsa
		l.Seq += uint64(i/benchRouters + 1)
		l.Links = append([]Link(nil), l.Links...)
		k := (i / benchRouters) % len(l.Links)
		if (i/benchRouters)%2 == 0 {
			l.Links[k].Cost += 10
		}
		data, err := Encode(l, testSecret)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, data)
	}
	return out
}

// withoutTrees returns the table with none of its trees computed.
func withoutTrees(p *Paths) *Paths {
	q := *p
	q.trees = make([]atomic.Pointer[tree], len(p.trees))
	return &q
}

package topology

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/yourbasic/graph"
)

// both returns the two directed edges of a bidirectional link.
func both(a, b string, cost int64, up bool) []Edge {
	return []Edge{{From: a, To: b, Cost: cost, Up: up}, {From: b, To: a, Cost: cost, Up: up}}
}

func mesh(up map[string]bool) []Edge {
	// A square A-B-C-D-A with a costly diagonal A-C: two equal paths A→C.
	var es []Edge
	for _, l := range []struct {
		a, b string
		c    int64
	}{{"A", "B", 1}, {"B", "C", 1}, {"C", "D", 1}, {"D", "A", 1}, {"A", "C", 5}} {
		name := l.a + l.b
		u, set := up[name]
		es = append(es, both(l.a, l.b, l.c, !set || u)...)
	}
	return es
}

func mustCompute(t *testing.T, es []Edge) *Paths {
	t.Helper()
	p, err := Compute(es)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRoutesOnAMesh(t *testing.T) {
	p := mustCompute(t, mesh(nil))
	r, ok := p.Route("A", "C")
	if !ok || r.Cost != 2 || r.Hops != 2 || r.NextHop != "B" || fmt.Sprint(r.NextHops) != "[B D]" {
		t.Fatalf("A→C = %+v, %v; want cost 2, 2 hops, next hop B, equal-cost [B D]", r, ok)
	}
	if got := p.Path("A", "C"); fmt.Sprint(got) != "[A B C]" {
		t.Fatalf("path A→C %v", got)
	}
	if p.Radius() != 2 {
		t.Fatalf("radius %d", p.Radius())
	}
	// Cut A-B: the alternative through D takes over.
	p = mustCompute(t, mesh(map[string]bool{"AB": false}))
	if r, _ := p.Route("A", "C"); r.NextHop != "D" || r.Cost != 2 || fmt.Sprint(r.NextHops) != "[D]" {
		t.Fatalf("after cutting A-B: %+v", r)
	}
	if r, _ := p.Route("A", "B"); r.Cost != 3 || r.Hops != 3 {
		t.Fatalf("A→B after the cut: %+v (want the long way round, cost 3)", r)
	}
	// Cut A-B, D-A and the diagonal: A is isolated.
	p = mustCompute(t, mesh(map[string]bool{"AB": false, "DA": false, "AC": false}))
	if _, ok := p.Route("A", "C"); ok {
		t.Fatal("a route from an isolated broker")
	}
	if len(p.Routes("A")) != 0 || p.Path("A", "C") != nil {
		t.Fatal("isolated A still has routes")
	}
}

func TestComputeIsIndependentOfInputOrder(t *testing.T) {
	es := mesh(nil)
	es = append(es, both("C", "E", 1, true)...)
	es = append(es, both("D", "E", 1, true)...)
	want := snapshot(mustCompute(t, es))
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 50; i++ {
		r.Shuffle(len(es), func(i, j int) { es[i], es[j] = es[j], es[i] })
		if got := snapshot(mustCompute(t, es)); !reflect.DeepEqual(got, want) {
			t.Fatalf("shuffle %d changed the result:\n got %v\nwant %v", i, got, want)
		}
	}
}

func snapshot(p *Paths) map[string]any {
	out := map[string]any{}
	for _, s := range p.Brokers() {
		out["routes "+s] = p.Routes(s)
		for _, d := range p.Brokers() {
			out["origins "+s+d] = p.ValidOrigins(s, d)
		}
	}
	return out
}

// A multicast from every origin, forwarded only over edges whose valid
// origins include it, reaches every reachable broker exactly once.
func TestValidOriginsGiveOneCopyPerBroker(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 9))
	for trial := 0; trial < 200; trial++ {
		es := randomGraph(r, 3+r.IntN(6))
		p := mustCompute(t, es)
		for _, o := range p.Brokers() {
			copies := map[string]int{o: 1}
			queue := []string{o}
			for len(queue) > 0 {
				at := queue[0]
				queue = queue[1:]
				// One copy per neighbour: parallel links between a pair
				// count once (ValidOrigins is per broker pair).
				sent := map[string]bool{}
				for _, e := range es {
					if e.From == at && e.Up && !sent[e.To] && slices.Contains(p.ValidOrigins(e.From, e.To), o) {
						sent[e.To] = true
						copies[e.To]++
						queue = append(queue, e.To)
					}
				}
			}
			for _, b := range p.Brokers() {
				_, reachable := p.Route(o, b)
				want := 0
				if reachable || b == o {
					want = 1
				}
				if copies[b] != want {
					t.Fatalf("trial %d origin %s: broker %s got %d copies, want %d\nedges %v", trial, o, b, copies[b], want, es)
				}
			}
		}
	}
}

// Costs, hops, next hops, equal-cost next hops and paths agree with the
// reference (yourbasic/graph's distances) on random graphs of up to 30 brokers; the
// chosen path follows the tie rule (on a shortest path, the predecessor
// with the smallest name).
func TestCostsMatchReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 200; trial++ {
		es := randomGraph(r, 2+r.IntN(29))
		p := mustCompute(t, es)
		ref := shortestPaths(p.Brokers(), es)
		for _, s := range p.Brokers() {
			for _, d := range p.Brokers() {
				if s == d {
					continue
				}
				got, ok := p.Route(s, d)
				want, path, reach := ref.route(s, d)
				if ok != reach || !reflect.DeepEqual(got, want) {
					t.Fatalf("trial %d %s→%s: got %+v %v, reference %+v %v\nedges %v", trial, s, d, got, ok, want, reach, es)
				}
				if gp := p.Path(s, d); !reflect.DeepEqual(gp, path) || p.Reachable(s, d) != reach {
					t.Fatalf("trial %d %s→%s: path %v, reference %v", trial, s, d, gp, path)
				}
			}
		}
	}
}

// Alternative(src, dst, avoid) is what a recompute without the avoided
// link would give, and agrees with the reference.
func TestAlternativeMatchesRecompute(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for trial := 0; trial < 200; trial++ {
		es := randomGraph(r, 3+r.IntN(20))
		p := mustCompute(t, es)
		names := p.Brokers()
		s, d := names[r.IntN(len(names))], names[r.IntN(len(names))]
		route, ok := p.Route(s, d)
		if !ok {
			if _, _, alt := p.Alternative(s, d); alt {
				t.Fatalf("trial %d: an alternative %s→%s without any path", trial, s, d)
			}
			continue
		}
		avoid := Edge{From: s, To: route.NextHop}
		var rest []Edge
		for _, e := range es {
			if e.From != avoid.From || e.To != avoid.To {
				rest = append(rest, e)
			}
		}
		want, wantPath, wantOK := shortestPaths(names, rest).route(s, d)
		got, path, ok := p.Alternative(s, d, avoid)
		if ok != wantOK || !reflect.DeepEqual(got, want) || !reflect.DeepEqual(path, wantPath) {
			t.Fatalf("trial %d %s→%s avoiding %v: got %+v %v %v, want %+v %v %v", trial, s, d, avoid, got, path, ok, want, wantPath, wantOK)
		}
		if q := mustCompute(t, rest); ok && !reflect.DeepEqual(q.Path(s, d), path) {
			t.Fatalf("trial %d: recompute path %v, alternative %v", trial, q.Path(s, d), path)
		}
	}
}

func randomGraph(r *rand.Rand, n int) []Edge {
	var es []Edge
	name := func(i int) string { return fmt.Sprintf("b%d", i) }
	for i := 0; i < n; i++ {
		es = append(es, Edge{From: name(i), To: name((i + 1) % n), Cost: 1 + r.Int64N(3), Up: r.IntN(5) > 0})
	}
	for k := 0; k < n; k++ {
		a, b := r.IntN(n), r.IntN(n)
		if a != b {
			es = append(es, both(name(a), name(b), 1+r.Int64N(4), r.IntN(4) > 0)...)
		}
	}
	return es
}

// reference holds all-pairs distances over the up edges, computed by an
// implementation independent of ours (github.com/yourbasic/graph's
// Dijkstra, one source at a time), -1 where unreachable; names in
// Compute's (sorted) order. What Route, Path and NextHops must answer is
// derived from the distances alone (route, parent).
type reference struct {
	names []string
	index map[string]int
	cost  [][]int64 // cheapest direct up edge, 0 if none
	dist  [][]int64
}

func shortestPaths(names []string, es []Edge) *reference {
	n := len(names)
	b := &reference{names: names, index: map[string]int{}}
	for i, s := range names {
		b.index[s] = i
	}
	b.cost, b.dist = make([][]int64, n), make([][]int64, n)
	for i := range b.cost {
		b.cost[i] = make([]int64, n)
	}
	for _, e := range es {
		i, j := b.index[e.From], b.index[e.To]
		if c := b.cost[i][j]; e.Up && (c == 0 || e.Cost < c) {
			b.cost[i][j] = e.Cost
		}
	}
	g := graph.New(n)
	for i := range b.cost {
		for j, c := range b.cost[i] {
			if c > 0 {
				g.AddCost(i, j, c)
			}
		}
	}
	for i := range names {
		_, b.dist[i] = graph.ShortestPaths(g, i)
	}
	return b
}

// route derives what Route and Path must return from the distances alone.
func (b *reference) route(src, dst string) (Route, []string, bool) {
	s, d := b.index[src], b.index[dst]
	if b.dist[s][d] < 0 {
		return Route{}, nil, false
	}
	var path []string
	for v := d; v != s; v = b.parent(s, v) {
		path = append([]string{b.names[v]}, path...)
	}
	path = append([]string{src}, path...)
	r := Route{Dest: dst, Cost: b.dist[s][d], Hops: len(path) - 1, NextHop: path[1]}
	for w := range b.names {
		if c := b.cost[s][w]; c > 0 && b.dist[w][d] >= 0 && c+b.dist[w][d] == b.dist[s][d] {
			r.NextHops = append(r.NextHops, b.names[w])
		}
	}
	return r, path, true
}

// parent is v's predecessor on src's tree: the smallest-named u with a
// shortest path through the edge u→v.
func (b *reference) parent(s, v int) int {
	for u := range b.names {
		if c := b.cost[u][v]; c > 0 && b.dist[s][u] >= 0 && b.dist[s][u]+c == b.dist[s][v] {
			return u
		}
	}
	panic("no parent on a reachable vertex")
}

func TestComputeRejectsBadEdges(t *testing.T) {
	for _, es := range [][]Edge{
		{{From: "A", To: "A", Cost: 1}},
		{{From: "", To: "B", Cost: 1}},
		{{From: "A", To: "B", Cost: 0}},
	} {
		if _, err := Compute(es); err == nil {
			t.Errorf("Compute(%v) accepted a bad edge", es)
		}
	}
}

// BenchmarkCompute measures a full recompute on a 50-broker mesh (each
// broker linked to a ring neighbour and a few random peers).
func BenchmarkCompute(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	es := randomGraph(r, 50)
	for k := 0; k < 100; k++ {
		from := fmt.Sprintf("b%d", r.IntN(50))
		// One draw more, as r.IntN(1) made here before (always 0): the
		// graph stays the one earlier measurements were taken on.
		_ = r.Uint64()
		es = append(es, both(from, "b50", 2, true)...)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Compute(es); err != nil {
			b.Fatal(err)
		}
	}
}

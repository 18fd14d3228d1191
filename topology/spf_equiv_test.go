package topology

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"testing"
)

// The lazy shortest paths (a tree per source, computed on first use and
// kept for the table's life; the broker index shared with the previous
// table) must answer every question exactly as a straightforward
// all-pairs reference does: github.com/yourbasic/graph for the distances,
// then the tie rule applied by brute force (spf_test.go). The graphs are seeded and
// random, with many equal-cost ties (costs 1..3), parallel links, links
// that are down, disconnected parts and one-way bridges between them, and
// each is followed through versions that remove, cut, re-cost and add
// links and now and then add a broker, each version computed as the node
// computes it (from the previous table). Questions come in a random order
// so that no answer depends on which trees happen to be cached.
func TestLazySPFMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(18, 3))
	trials := 200
	if testing.Short() {
		trials = 40
	}
	for trial := 0; trial < trials; trial++ {
		es := equivGraph(r, 2+r.IntN(24))
		var prev *Paths
		for version := 0; version < 5; version++ {
			p, err := compute(es, prev)
			if err != nil {
				t.Fatal(err)
			}
			where := fmt.Sprintf("trial %d version %d", trial, version)
			checkAgainstReference(t, r, where, p, es)
			prev, es = p, mutateGraph(r, es)
		}
	}
}

// equivGraph returns a random graph of n brokers in one to three parts.
func equivGraph(r *rand.Rand, n int) []Edge {
	parts := 1 + r.IntN(3)
	part := func(i int) int { return i % parts }
	var es []Edge
	for k := 0; k < 2*n; k++ {
		a, b := r.IntN(n), r.IntN(n)
		if a == b {
			continue
		}
		cost, up := 1+r.Int64N(3), r.IntN(6) > 0
		switch {
		case part(a) == part(b):
			es = append(es, both(equivName(a), equivName(b), cost, up)...)
		case r.IntN(4) == 0: // a one-way bridge between parts
			es = append(es, Edge{From: equivName(a), To: equivName(b), Cost: cost, Up: up})
		}
		if r.IntN(8) == 0 { // a parallel link, maybe cheaper
			es = append(es, Edge{From: equivName(a), To: equivName(b), Cost: 1 + r.Int64N(3), Up: true})
		}
	}
	if len(es) == 0 {
		es = both(equivName(0), equivName(1), 1, r.IntN(2) == 0)
	}
	return es
}

func equivName(i int) string { return fmt.Sprintf("b%02d", i) }

// mutateGraph returns the next version of a graph: a few links removed,
// cut or brought up, re-costed, or added, and sometimes a new broker.
func mutateGraph(r *rand.Rand, es []Edge) []Edge {
	es = slices.Clone(es)
	for k := 1 + r.IntN(4); k > 0 && len(es) > 1; k-- {
		i := r.IntN(len(es))
		switch r.IntN(4) {
		case 0:
			es = slices.Delete(es, i, i+1)
		case 1:
			es[i].Up = !es[i].Up
		case 2:
			es[i].Cost = 1 + r.Int64N(3)
		default:
			es = append(es, Edge{From: es[i].To, To: es[r.IntN(len(es))].From, Cost: 1 + r.Int64N(3), Up: true})
			if last := es[len(es)-1]; last.From == last.To {
				es = es[:len(es)-1]
			}
		}
	}
	if r.IntN(5) == 0 {
		es = append(es, both(es[0].From, equivName(50+r.IntN(10)), 1+r.Int64N(3), true)...)
	}
	return es
}

// checkAgainstReference asks p every question, sources in a random order,
// and compares each answer with the reference's.
func checkAgainstReference(t *testing.T, r *rand.Rand, where string, p *Paths, es []Edge) {
	t.Helper()
	names := p.Brokers()
	ref := shortestPaths(names, es)
	radius := 0
	for _, si := range r.Perm(len(names)) {
		s := names[si]
		var routes []Route
		for _, d := range names {
			got, ok := p.Route(s, d)
			want, path, reach := Route{}, []string(nil), false
			if s != d {
				want, path, reach = ref.route(s, d)
			}
			if ok != reach || !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: Route(%s, %s) = %+v %v, reference %+v %v\nedges %v", where, s, d, got, ok, want, reach, es)
			}
			if s == d {
				path, reach = []string{s}, true
			}
			if gp := p.Path(s, d); !reflect.DeepEqual(gp, path) || p.Reachable(s, d) != reach {
				t.Fatalf("%s: Path(%s, %s) = %v, reference %v\nedges %v", where, s, d, gp, path, es)
			}
			if ok {
				routes, radius = append(routes, got), max(radius, got.Hops)
			}
			checkTreeEdge(t, where, p, ref, s, d)
		}
		if got := p.Routes(s); !reflect.DeepEqual(got, routes) {
			t.Fatalf("%s: Routes(%s) = %v, reference %v", where, s, got, routes)
		}
		checkAlternative(t, r, where, p, es, s)
	}
	if p.Radius() != radius {
		t.Fatalf("%s: radius %d, reference %d", where, p.Radius(), radius)
	}
}

// checkTreeEdge compares LinkUp, OnTree and ValidOrigins for the link
// from→to with the reference's chosen parents.
func checkTreeEdge(t *testing.T, where string, p *Paths, ref *reference, from, to string) {
	t.Helper()
	u, v := ref.index[from], ref.index[to]
	if got := p.LinkUp(from, to); got != (ref.cost[u][v] > 0) {
		t.Fatalf("%s: LinkUp(%s, %s) = %v", where, from, to, got)
	}
	var origins []string
	for o, name := range ref.names {
		on := o != v && ref.dist[o][v] >= 0 && ref.parent(o, v) == u
		if on {
			origins = append(origins, name)
		}
		if got, known := p.OnTree(name, from, to); got != on || !known {
			t.Fatalf("%s: OnTree(%s, %s, %s) = %v %v, reference %v", where, name, from, to, got, known, on)
		}
	}
	if got := p.ValidOrigins(from, to); !reflect.DeepEqual(got, origins) {
		t.Fatalf("%s: ValidOrigins(%s, %s) = %v, reference %v", where, from, to, got, origins)
	}
}

// checkAlternative avoids one to three random links out of s (or
// anywhere) and compares with the reference on the graph without them.
func checkAlternative(t *testing.T, r *rand.Rand, where string, p *Paths, es []Edge, s string) {
	t.Helper()
	names := p.Brokers()
	d := names[r.IntN(len(names))]
	var avoid []Edge
	for k := 1 + r.IntN(3); k > 0; k-- {
		e := es[r.IntN(len(es))]
		if k == 1 {
			if rt, ok := p.Route(s, d); ok {
				e = Edge{From: s, To: rt.NextHop}
			}
		}
		avoid = append(avoid, Edge{From: e.From, To: e.To})
	}
	rest := slices.DeleteFunc(slices.Clone(es), func(e Edge) bool {
		return slices.ContainsFunc(avoid, func(a Edge) bool { return a.From == e.From && a.To == e.To })
	})
	want, wantPath, wantOK := Route{}, []string(nil), false
	if s != d {
		want, wantPath, wantOK = shortestPaths(names, rest).route(s, d)
	}
	got, path, ok := p.Alternative(s, d, avoid...)
	if ok != wantOK || !reflect.DeepEqual(got, want) || !reflect.DeepEqual(path, wantPath) {
		t.Fatalf("%s: Alternative(%s, %s, %v) = %+v %v %v, reference %+v %v %v", where, s, d, avoid, got, path, ok, want, wantPath, wantOK)
	}
}

// Routes sharing one table ask it at once: every reader gets the answers
// a table of its own would give (and -race sees no unsynchronised
// access to the lazily filled cache).
func TestPathsConcurrentReaders(t *testing.T) {
	r := rand.New(rand.NewPCG(18, 4))
	es := equivGraph(r, 60)
	shared, err := Compute(es)
	if err != nil {
		t.Fatal(err)
	}
	names := shared.Brokers()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		order := rand.New(rand.NewPCG(uint64(g), 5)).Perm(len(names))
		wg.Go(func() {
			own, _ := Compute(es)
			for _, i := range order {
				s := names[i]
				for _, d := range names {
					a, _ := shared.Route(s, d)
					b, _ := own.Route(s, d)
					oa, _ := shared.OnTree(s, d, s)
					ob, _ := own.OnTree(s, d, s)
					if !reflect.DeepEqual(a, b) || oa != ob {
						errs <- fmt.Errorf("%s→%s: shared %+v, own %+v", s, d, a, b)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

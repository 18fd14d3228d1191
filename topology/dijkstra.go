package topology

import "sync"

// tree is one source's shortest-path tree. Everything a question about the
// source needs is worked out in the one Dijkstra pass that builds it, so
// that the answers need no further search: in particular the equal-cost
// next hops, which would otherwise take the distances from every
// neighbour (a tree each) or a second Dijkstra towards the destination.
type tree struct {
	dist  []int64 // from the source; -1 if unreachable
	par   []int32 // the chosen predecessor: smallest vertex on a shortest path; -1 for the source and the unreachable
	hops  []int32 // edges on the chosen path; -1 if unreachable
	first []int32 // the chosen next hop: the vertex after the source on the chosen path; -1 for the source and the unreachable
	// nh holds, per vertex v, words bits: bit i is set when the source's
	// i-th up edge starts some shortest path to v — the equal-cost next hops.
	nh     []uint64
	words  int
	radius int32 // the largest hop count
}

// nextHops returns v's equal-cost next hop bits.
func (t *tree) nextHops(v int) []uint64 { return t.nh[v*t.words : (v+1)*t.words] }

// skipFunc reports whether the edge v→w is to be left out.
type skipFunc func(v, w int) bool

// grow runs Dijkstra from s over the up edges that skip (nil: none)
// leaves in. Costs are > 0, so when a vertex leaves the heap every
// vertex on a shortest path to it has left before, having offered itself
// as predecessor: the smallest of them is then its chosen predecessor, its
// hop count follows, and its next-hop bits are the union of theirs. The
// result depends only on the graph, never on the heap's order.
func (p *Paths) grow(s int, skip skipFunc) *tree {
	n := len(p.names)
	out := p.out(s)
	t := &tree{dist: make([]int64, n), par: make([]int32, n), hops: make([]int32, n), first: make([]int32, n),
		words: (len(out) + 63) / 64}
	t.nh = make([]uint64, n*t.words)
	for v := range n {
		t.dist[v], t.par[v], t.hops[v], t.first[v] = -1, -1, -1, -1
	}
	h := heaps.Get().(*heap)
	defer heaps.Put(h)
	h.reset(n)
	t.dist[s], t.hops[s] = 0, 0
	h.push(s, 0)
	for h.len() > 0 {
		u := h.pop()
		t.settle(s, u)
		for i, a := range p.out(u) {
			if skip != nil && skip(u, int(a.to)) {
				continue
			}
			t.offer(h, s, u, i, a)
		}
	}
	return t
}

// settle finishes u as it leaves the heap: its predecessor is final.
func (t *tree) settle(s, u int) {
	pu := t.par[u]
	switch {
	case u == s:
		return
	case int(pu) == s:
		t.first[u] = int32(u)
	default:
		t.first[u] = t.first[pu]
	}
	t.hops[u] = t.hops[pu] + 1
	t.radius = max(t.radius, t.hops[u])
}

// offer relaxes the edge a from the settled u, the i-th of u's edges.
func (t *tree) offer(h *heap, s, u, i int, a arc) {
	v, d := int(a.to), t.dist[u]+a.cost
	switch old := t.dist[v]; {
	case old >= 0 && d > old:
		return
	case old < 0 || d < old:
		t.dist[v], t.par[v] = d, int32(u)
		clear(t.nextHops(v))
		h.push(v, d)
	case u < int(t.par[v]): // d == old: another shortest path; the smaller predecessor wins
		t.par[v] = int32(u)
	}
	into := t.nextHops(v)
	if u == s { // an edge of the source's own: it is the next hop
		into[i/64] |= 1 << (i % 64)
		return
	}
	for w, bits := range t.nextHops(u) {
		into[w] |= bits
	}
}

// heap is a min-heap of vertices by distance (then vertex, so its
// order is fixed too), with each vertex's position for decrease-key. The
// keys sit in the heap itself: comparing them is then no cache miss. The
// buffers are reused from one Dijkstra to the next through a sync.Pool:
// several routes may ask the same table at once.
type heap struct {
	items []item
	pos   []int32 // vertex → index in items, -1 if not in it
}

type item struct {
	dist int64
	v    int32
}

var heaps = sync.Pool{New: func() any { return new(heap) }}

func (h *heap) reset(n int) {
	h.items = h.items[:0]
	if cap(h.pos) < n {
		h.pos = make([]int32, n)
	}
	h.pos = h.pos[:n]
	for i := range h.pos {
		h.pos[i] = -1
	}
}

func (h *heap) len() int { return len(h.items) }

func (a item) less(b item) bool { return a.dist < b.dist || (a.dist == b.dist && a.v < b.v) }

// push adds v at distance d, or lowers v's distance to d.
func (h *heap) push(v int, d int64) {
	i := int(h.pos[v])
	if i < 0 {
		i = len(h.items)
		h.items = append(h.items, item{})
	}
	h.up(i, item{d, int32(v)})
}

func (h *heap) pop() int {
	top := h.items[0]
	h.pos[top.v] = -1
	last := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	if len(h.items) > 0 {
		h.down(0, last)
	}
	return int(top.v)
}

// The heap is 4-ary: half as deep as a binary one, and a vertex's four
// children share a cache line or two, so a pop costs fewer misses.
const arity = 4

// up moves x from the hole at i towards the root to its place.
func (h *heap) up(i int, x item) {
	for i > 0 {
		parent := (i - 1) / arity
		if !x.less(h.items[parent]) {
			break
		}
		h.place(i, h.items[parent])
		i = parent
	}
	h.place(i, x)
}

// down moves x from the hole at i towards the leaves to its place.
func (h *heap) down(i int, x item) {
	n := len(h.items)
	for {
		c := arity*i + 1
		if c >= n {
			break
		}
		for k, end := c+1, min(c+arity, n); k < end; k++ {
			if h.items[k].less(h.items[c]) {
				c = k
			}
		}
		if !h.items[c].less(x) {
			break
		}
		h.place(i, h.items[c])
		i = c
	}
	h.place(i, x)
}

func (h *heap) place(i int, x item) {
	h.items[i] = x
	h.pos[x.v] = int32(i)
}

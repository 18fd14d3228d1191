package routes

import (
	"slices"
	"strings"
	"testing"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/engine"
	"github.com/fedrouter/fedrouter/amqp/wire"
	"github.com/fedrouter/fedrouter/links"
	"github.com/fedrouter/fedrouter/topology"
)

// staticTable is a link-state table that never changes (only Paths is
// asked by the hooks).
type staticTable struct {
	namedTable
	paths *topology.Paths
}

func (s staticTable) Paths() (*topology.Paths, <-chan struct{}) { return s.paths, nil }

// squarePaths: a - b - c - d - a, each link both ways, cost 1.
func squarePaths(t testing.TB) *topology.Paths {
	t.Helper()
	var edges []topology.Edge
	for _, l := range [][2]string{{"a", "b"}, {"b", "c"}, {"c", "d"}, {"d", "a"}} {
		edges = append(edges, topology.Edge{From: l[0], To: l[1], Cost: 1, Up: true}, topology.Edge{From: l[1], To: l[0], Cost: 1, Up: true})
	}
	p, err := topology.Compute(edges)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// hookCase is a message's routers' annotations (Go values as go-amqp
// decodes them; absent when nil).
type hookCase struct {
	name          string
	origin, trace any
}

func hookCases() []hookCase {
	return []hookCase{
		{name: "new"},
		{name: "own origin", origin: "b"},
		{name: "empty origin", origin: ""},
		{name: "origin on the tree", origin: "a", trace: "a"},
		{name: "origin off the tree", origin: "d", trace: "d"},
		{name: "unknown origin", origin: "zz", trace: "zz"},
		{name: "been at the destination", origin: "b", trace: "c,d,b"},
		{name: "trace has the source", origin: "b", trace: "b"},
		{name: "long trace", trace: "x1,x2,x3,x4,x5,x6"},
		{name: "empty trace", trace: ""},
		{name: "null origin", origin: nil, trace: "a"},
	}
}

// encodeHookMessage is a message with those annotations, one data section.
func encodeHookMessage(t testing.TB, c hookCase) []byte {
	t.Helper()
	var m wire.Map
	if c.origin != nil {
		m = append(m, wire.Pair{Key: wire.Symbol(links.AnnotationOrigin), Value: c.origin})
	}
	if c.trace != nil {
		m = append(m, wire.Pair{Key: wire.Symbol(links.AnnotationTrace), Value: c.trace})
	}
	m = append(m, wire.Pair{Key: wire.Symbol("x-app"), Value: "kept"})
	b := wire.AppendDescriptor(nil, wire.DescMessageAnnotations)
	b, err := wire.AppendValue(b, m)
	if err != nil {
		t.Fatal(err)
	}
	b = wire.AppendDescriptor(b, wire.DescData)
	return wire.AppendBinary(b, []byte("body"))
}

// engineHop runs h's dispatch on payload: sent (with the annotations
// it ends with) or not, and the refusal.
func engineHop(t testing.TB, h *hopRewriter, payload []byte) (sent bool, ann map[string]any, refused *wire.Error) {
	t.Helper()
	s, err := wire.ScanSections(payload)
	if err != nil {
		t.Fatal(err)
	}
	var c engine.Choice
	h.dispatch(payload, &s, &c)
	if c.Refuse != nil || len(c.Copies) == 0 {
		return false, nil, c.Refuse
	}
	if len(c.Copies) != 1 || c.Copies[0].To != "" {
		t.Fatalf("copies %+v: want one, to the route's destination", c.Copies)
	}
	out := wire.AppendRewritten(nil, payload, &s, true, c.Copies[0].Set...)
	os, err := wire.ScanSections(out)
	if err != nil {
		t.Fatalf("rewritten: %v", err)
	}
	ann = map[string]any{}
	for _, k := range []string{links.AnnotationOrigin, links.AnnotationTrace, "x-app"} {
		if v, ok := os.Annotation(out, k); ok {
			d := wire.NewDecoder(v)
			ann[k] = d.Value()
		}
	}
	return true, ann, nil
}

// goamqpHop runs the go-amqp prepare (meshHop or traceHop) on the same
// message: sent or not, and the annotations it ends with.
func goamqpHop(c hookCase, prepare func(amqp.Message) bool) (bool, map[string]any) {
	msg := amqp.NewMessage([]byte("body"))
	for k, v := range map[string]any{links.AnnotationOrigin: c.origin, links.AnnotationTrace: c.trace, "x-app": "kept"} {
		if v != nil {
			msg.SetAnnotation(k, v)
		}
	}
	if !prepare(msg) {
		return false, nil
	}
	ann := map[string]any{}
	for _, k := range []string{links.AnnotationOrigin, links.AnnotationTrace, "x-app"} {
		if v := msg.Annotation(k); v != nil {
			ann[k] = v
		}
	}
	return true, ann
}

// The hook on bytes decides as go-amqp's meshHop and traceHop do, and
// leaves the same origin and trace: every case, on a mesh route b > c
// of the square a-b-c-d (a's tree reaches c through b or d; c's never
// crosses b > c) and on a dynamic route (no table).
func TestEngineHookMatchesGoAMQP(t *testing.T) {
	table := staticTable{paths: squarePaths(t)}
	base := &routeBase{spec: Spec{Kind: KindExchange, Src: "b", Dest: "c"}, env: &modeEnv{table: table}}
	d := &directMode{routeBase: base}
	for _, mesh := range []bool{true, false} {
		prepare, tbl := refMeshHop(d), Table(table)
		if !mesh {
			prepare, tbl = refTraceHop(base), nil
		}
		dropped := 0
		for _, c := range hookCases() {
			wantSent, want := goamqpHop(c, prepare)
			if !wantSent {
				dropped++
			}
			sent, got, refused := engineHop(t, newHopRewriter(base, tbl), encodeHookMessage(t, c))
			if refused != nil {
				t.Fatalf("mesh %v, %s: refused %v", mesh, c.name, refused)
			}
			if sent != wantSent || sent && !sameAnnotations(got, want) {
				t.Errorf("mesh %v, %s: engine sent %v %v, go-amqp sent %v %v", mesh, c.name, sent, got, wantSent, want)
			}
		}
		if wantDropped := map[bool]int{true: 2, false: 1}[mesh]; dropped != wantDropped {
			t.Errorf("mesh %v: go-amqp dropped %d of the cases, want %d (the cases no longer test both ways)", mesh, dropped, wantDropped)
		}
	}
}

func sameAnnotations(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// What go-amqp's hooks read with AnnotationString (a wrong type is read
// as absent) the hook on bytes refuses, as links.CheckAnnotations
// would: amqp:invalid-field naming the annotation. So do values past
// the bounds.
func TestEngineHookRefusesBadAnnotations(t *testing.T) {
	base := &routeBase{spec: Spec{Kind: KindExchange, Src: "b", Dest: "c"}, env: &modeEnv{}}
	names := make([]string, links.MaxTraceLen+1)
	for i := range names {
		names[i] = "x"
	}
	for _, c := range []struct {
		hookCase
		field string
	}{
		{hookCase{name: "origin not a string", origin: int64(7)}, links.AnnotationOrigin},
		{hookCase{name: "origin a symbol", origin: wire.Symbol("a")}, links.AnnotationOrigin},
		{hookCase{name: "trace a list", trace: []any{"a"}}, links.AnnotationTrace},
		{hookCase{name: "origin too long", origin: strings.Repeat("o", links.MaxAnnotationLen+1)}, links.AnnotationOrigin},
		{hookCase{name: "trace too long", trace: strings.Repeat("t", links.MaxAnnotationLen+1)}, links.AnnotationTrace},
		{hookCase{name: "trace names too many", trace: strings.Join(names, ",")}, links.AnnotationTrace},
	} {
		_, _, refused := engineHop(t, newHopRewriter(base, nil), encodeHookMessage(t, c.hookCase))
		if refused == nil || refused.Condition != links.CondInvalidField || !strings.HasPrefix(refused.Description, "annotation "+c.field+":") {
			t.Errorf("%s: refused %v, want %s naming annotation %s", c.name, refused, links.CondInvalidField, c.field)
		}
	}
	// At the bounds: accepted.
	names = names[:links.MaxTraceLen]
	if sent, _, refused := engineHop(t, newHopRewriter(base, nil), encodeHookMessage(t, hookCase{trace: strings.Join(names, ",")})); !sent || refused != nil {
		t.Errorf("a trace of %d names: %v", links.MaxTraceLen, refused)
	}
}

// BenchmarkEngineHook: the mesh hook on one 256-byte message that
// carries an origin and a trace: what each forwarded message costs the
// route on the engine (its allocations should be 0).
func BenchmarkEngineHook(b *testing.B) {
	table := staticTable{paths: squarePaths(b)}
	base := &routeBase{spec: Spec{Kind: KindExchange, Src: "b", Dest: "c"}, env: &modeEnv{table: table}}
	h := newHopRewriter(base, table)
	payload := encodeHookMessage(b, hookCase{origin: "a", trace: "a"})
	payload = append(payload[:len(payload)-4-2], wire.AppendBinary(nil, make([]byte, 256))...)
	s, err := wire.ScanSections(payload)
	if err != nil {
		b.Fatal(err)
	}
	out := make([]byte, 0, 1024)
	var c engine.Choice
	b.ReportAllocs()
	for b.Loop() {
		c.Copies, c.Refuse = c.Copies[:0], nil // as the forwarder resets it
		h.dispatch(payload, &s, &c)
		if len(c.Copies) != 1 {
			b.Fatalf("choice %+v", c)
		}
		out = wire.AppendRewritten(out[:0], payload, &s, true, c.Copies[0].Set...)
	}
}

// refTraceHop is the reference the hook on bytes is checked against (the
// go-amqp data path's prepare of dynamic routes, before the engine was
// the only data path): the source broker recorded in the message's
// trace, the message dropped if the destination is already in it.
func refTraceHop(b *routeBase) func(amqp.Message) bool {
	return func(out amqp.Message) bool {
		var trace []string
		if s := out.AnnotationString(links.AnnotationTrace); s != "" {
			trace = strings.Split(s, ",")
		}
		if slices.Contains(trace, b.spec.Dest) {
			return false
		}
		if !slices.Contains(trace, b.spec.Src) {
			trace = append(trace, b.spec.Src)
		}
		out.SetAnnotation(links.AnnotationTrace, strings.Join(trace, ","))
		return true
	}
}

// refMeshHop is the reference for an exchange route on a link-state
// mesh: a message crosses the route's link only if the link is on the
// shortest-path tree of its origin (set where absent), never to a broker
// in its trace (refTraceHop).
func refMeshHop(d *directMode) func(amqp.Message) bool {
	return func(out amqp.Message) bool {
		origin := out.AnnotationString(links.AnnotationOrigin)
		if origin == "" {
			origin = d.spec.Src
			out.SetAnnotation(links.AnnotationOrigin, origin)
		}
		if origin != d.spec.Src {
			if p, _ := d.env.table.Paths(); p != nil {
				if on, known := p.OnTree(origin, d.spec.Src, d.spec.Dest); known && !on {
					return false
				}
			}
		}
		return refTraceHop(d.routeBase)(out)
	}
}

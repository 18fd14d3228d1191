package routes

import (
	"context"

	"github.com/fedrouter/fedrouter/amqp/engine"
	"github.com/fedrouter/fedrouter/amqp/wire"
	"github.com/fedrouter/fedrouter/links"
)

// A route's per-message hook on the engine data path: what its go-amqp
// wiring's prepare does (meshHop, traceHop), done on the message's bytes
// as an engine.ForwardOptions.Rewrite. The origin and trace are read
// with the wire package's section scanner, checked as links.ReadHop
// says (a bad one refuses the message: rejected at the source with
// amqp:invalid-field, or dead-lettered), and written back as message
// annotations; a message that would loop is dropped (engine.ErrDrop:
// accepted at the source, counted looped).

// engineHook is what an engine run of the route does besides forwarding:
// the per-message rewrite (nil: none) and, for a dynamic route, the
// demand follower run beside it (nil: none).
type engineHook struct {
	rewrite func(payload []byte, s *wire.Sections) ([]wire.Annotated, error)
	follow  func(ctx context.Context)
}

// engineHook returns the route's hook for an engine run (direct path
// only: onEngine runs nothing else there). An exchange route on a
// link-state mesh first waits for its link in the table, as its go-amqp
// wiring does.
func (r *route) engineHook(ctx context.Context) (engineHook, error) {
	switch m := r.mode.(type) {
	case *dynamicMode:
		return engineHook{rewrite: newHopRewriter(m.routeBase, nil).rewrite, follow: m.followDemand}, nil
	case *directMode:
		if m.spec.Kind != KindExchange || m.env.table == nil {
			return engineHook{}, nil
		}
		if err := m.waitLinkInTable(ctx); err != nil {
			return engineHook{}, err
		}
		return engineHook{rewrite: newHopRewriter(m.routeBase, m.env.table).rewrite}, nil
	}
	return engineHook{}, nil
}

// hopRewriter is one engine run's meshHop (table set) or traceHop
// (table nil) on bytes. It is called by one forwarder, one message at
// a time (with the forwarder's lock held), so it reuses its buffers: no
// allocation per message once they have grown.
type hopRewriter struct {
	src, dest string
	table     Table
	originVal []byte // src as an encoded string: the origin set where absent
	set       [2]wire.Annotated
	scratch   []byte // the new trace being built
	traceVal  []byte // its encoded value
	// origins interns the origins seen, for the table's lookups: a
	// string made from bytes once per broker, not once per message.
	origins map[string]string
}

// maxInterned bounds hopRewriter.origins; past it an origin is made into
// a string per message (correct, only slower).
const maxInterned = 256

func newHopRewriter(b *routeBase, table Table) *hopRewriter {
	return &hopRewriter{src: b.spec.Src, dest: b.spec.Dest, table: table,
		originVal: wire.AppendString(nil, b.spec.Src), origins: map[string]string{}}
}

// rewrite is meshHop (with a table) and traceHop on payload.
func (h *hopRewriter) rewrite(payload []byte, s *wire.Sections) ([]wire.Annotated, error) {
	hop, err := links.ReadHop(payload, s)
	if err != nil {
		return nil, err
	}
	set := h.set[:0]
	if h.table != nil {
		switch {
		case hop.Origin == nil:
			set = append(set, wire.Annotated{Key: links.AnnotationOrigin, Value: h.originVal})
		case string(hop.Origin) != h.src:
			if p, _ := h.table.Paths(); p != nil {
				if on, known := p.OnTree(h.intern(hop.Origin), h.src, h.dest); known && !on {
					return nil, engine.ErrDrop
				}
			}
		}
	}
	if links.TraceHas(hop.Trace, h.dest) {
		return nil, engine.ErrDrop
	}
	if !links.TraceHas(hop.Trace, h.src) {
		h.traceVal, h.scratch = links.AppendTraceValue(h.traceVal[:0], h.scratch, hop.Trace, h.src)
		set = append(set, wire.Annotated{Key: links.AnnotationTrace, Value: h.traceVal})
	}
	return set, nil
}

// intern returns origin as a string, made once per broker.
func (h *hopRewriter) intern(origin []byte) string {
	if s, ok := h.origins[string(origin)]; ok {
		return s
	}
	s := string(origin)
	if len(h.origins) < maxInterned {
		h.origins[s] = s
	}
	return s
}

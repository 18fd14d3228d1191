package routes

import (
	"context"

	"github.com/fedrouter/fedrouter/amqp/engine"
	"github.com/fedrouter/fedrouter/amqp/wire"
	"github.com/fedrouter/fedrouter/links"
)

// A route's per-message hook on the engine: an exchange route's on a
// link-state mesh (the message crosses the route's link only if it is on
// the shortest-path tree of the message's origin, never to a broker in
// its trace) and a dynamic route's (its trace), done on the message's
// bytes as an engine.ForwardOptions.Dispatch with one destination. The origin
// and trace are read with the wire package's section scanner, checked
// as links.ReadHop says (a bad one refuses the message: rejected at the
// source with amqp:invalid-field, or dead-lettered), and written back as
// message annotations; a message that would loop gets no copy (dropped:
// accepted at the source, counted looped).

// engineHook is what an engine run of the route does besides forwarding:
// the per-message dispatch (nil: none) and, for a dynamic route, the
// demand follower run beside it (nil: none).
type engineHook struct {
	dispatch func(payload []byte, s *wire.Sections, c *engine.Choice)
	follow   func(ctx context.Context)
}

// engineHook returns the route's hook for an engine run (direct path
// only: through transit, entering transit is the dispatch). An exchange
// route on a link-state mesh first waits for its link in the table
// (waitLinkInTable).
func (r *route) engineHook(ctx context.Context) (engineHook, error) {
	switch m := r.mode.(type) {
	case *dynamicMode:
		return engineHook{dispatch: newHopRewriter(m.routeBase, nil).dispatch, follow: m.followDemand}, nil
	case *directMode:
		if m.spec.Kind != KindExchange || m.env.table == nil {
			return engineHook{}, nil
		}
		if err := m.waitLinkInTable(ctx); err != nil {
			return engineHook{}, err
		}
		return engineHook{dispatch: newHopRewriter(m.routeBase, m.env.table).dispatch}, nil
	}
	return engineHook{}, nil
}

// hopRewriter is one engine run's meshHop (table set) or traceHop
// (table nil) on bytes. It is called by one forwarder, one message at
// a time (with the forwarder's lock held), and what it sets is written
// into the copy before its next call, so it reuses its buffers: no
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

// dispatch is rewrite as the forwarder's Dispatch: one copy to the
// route's destination, none for a message that would loop, a refusal
// for one whose hop annotations are not what a router writes.
func (h *hopRewriter) dispatch(payload []byte, s *wire.Sections, c *engine.Choice) {
	set, send, err := h.rewrite(payload, s)
	switch {
	case err != nil:
		c.Refuse = &wire.Error{Condition: links.CondInvalidField, Description: err.Error()}
	case send:
		c.Copies = append(c.Copies, engine.Copy{Set: set})
	}
}

// rewrite is meshHop (with a table) and traceHop on payload: the
// annotations to set and whether to send it at all; the error is a
// *links.FieldError.
func (h *hopRewriter) rewrite(payload []byte, s *wire.Sections) ([]wire.Annotated, bool, error) {
	hop, err := links.ReadHop(payload, s)
	if err != nil {
		return nil, false, err
	}
	set := h.set[:0]
	if h.table != nil {
		switch {
		case hop.Origin == nil:
			set = append(set, wire.Annotated{Key: links.AnnotationOrigin, Value: h.originVal})
		case string(hop.Origin) != h.src:
			if p, _ := h.table.Paths(); p != nil {
				if on, known := p.OnTree(h.intern(hop.Origin), h.src, h.dest); known && !on {
					return nil, false, nil
				}
			}
		}
	}
	if links.TraceHas(hop.Trace, h.dest) {
		return nil, false, nil
	}
	if !links.TraceHas(hop.Trace, h.src) {
		h.traceVal, h.scratch = links.AppendTraceValue(h.traceVal[:0], h.scratch, hop.Trace, h.src)
		set = append(set, wire.Annotated{Key: links.AnnotationTrace, Value: h.traceVal})
	}
	return set, true, nil
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

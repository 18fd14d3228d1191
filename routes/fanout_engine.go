package routes

import (
	"context"
	"strings"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/engine"
	"github.com/fedrouter/fedrouter/amqp/wire"
	"github.com/fedrouter/fedrouter/links"
)

// Fan-out on the engine: a fan-out route's copies as one
// engine.Forwarder's (links/engine.go, Dispatch): each message taken
// once from the group's shared queue, one copy per broker the group
// reaches — straight into the exchange there when this router is
// attached to that broker and its sender attached before the run's
// first message ("direct:" keys), else into the source broker's transit
// queue for it, entering transit — and the source settled once every
// copy has its outcome: accepted when all are, else the first other
// outcome (the source message is then dead-lettered or rejected as the
// route says; the copies accepted stay delivered). What the group need
// not copy (a copy it made elsewhere, a message nobody else wants) is
// dropped, counted looped. A broker whose direct sender could not be
// attached at the start of a run gets its copies through transit for
// that run.

// fanoutRun is one engine run's dispatch.
type fanoutRun struct {
	f      *fanoutMode
	node   amqp.Node       // the exchange at each destination
	direct map[string]bool // brokers with a direct sender this run
}

const directPrefix = "direct:"

// dispatch chooses a message's copies (the source's reader goroutine).
func (r *fanoutRun) dispatch(payload []byte, s *wire.Sections, c *engine.Choice) {
	f := r.f
	group := f.edge.Group()
	marks := links.EngineString(payload, s, links.AnnotationFanned)
	if fanned(marks, group) {
		return // copied by the group already: dropped, looped
	}
	var trace []string
	traceS := links.EngineString(payload, s, links.AnnotationTrace)
	if traceS != "" {
		trace = strings.Split(traceS, ",")
	}
	targets := f.targetsAfter(trace)
	if len(targets) == 0 {
		return // nobody else wants it
	}
	if marks != "" {
		marks += ","
	}
	fanned := wire.Annotated{Key: links.AnnotationFanned, Value: wire.AppendString(nil, marks+group)}
	viaTransit := 0
	for _, d := range targets {
		var cp engine.Copy
		if r.direct[d] {
			// Delivered as transit would deliver it: the trace shows
			// where it came from.
			t := traceS
			if t != "" {
				t += ","
			}
			cp = engine.Copy{To: directPrefix + d, Set: []wire.Annotated{{Key: links.AnnotationTrace, Value: wire.AppendString(nil, t+f.spec.Src)}, fanned}}
		} else {
			cp = engine.Copy{To: links.TransitKey(d), Set: append(links.EngineEnterTransitSet(payload, s, f.spec.Src, d, r.node), fanned)}
			viaTransit++
		}
		c.Copies = append(c.Copies, cp)
	}
	f.copies.Add(uint64(len(targets)))
	f.copiesTransit.Add(uint64(viaTransit))
}

// engineLinks are a fan-out run's links on the engine: the group's
// shared queue, the direct senders of the brokers it reaches that this
// router is attached to (each on a session of its own at that broker,
// ended with the run: sessions), and the transit queues at the source,
// attached when a copy first needs one.
func (f *fanoutMode) engineLinks(setup context.Context, src *engine.Session) (l links.EngineLinks, sessions []*engine.Session, err error) {
	_, _, node := f.nodes()
	run := &fanoutRun{f: f, node: node, direct: map[string]bool{}}
	srcSpec, err := f.source(setup)
	if err != nil {
		return l, nil, err
	}
	if l.Source, err = srcSpec.EngineReceiver(f.src.Profile); err != nil {
		return l, nil, err
	}
	for _, d := range reach(f.spec.Src, f.env.groupEdges(f.edge), nil) {
		dest, sess, ok := f.directDest(setup, d, node)
		if ok {
			l.Early = append(l.Early, dest)
			sessions = append(sessions, sess)
		}
	}
	l.Src, l.Dispatch, l.AttachTimeout = src, run.dispatch, f.env.setupTimeout
	l.Attached = func(keys []string) {
		for _, k := range keys {
			run.direct[strings.TrimPrefix(k, directPrefix)] = true
		}
	}
	l.Resolve = links.EngineResolver(f.spec.Src, src, f.src.Profile)
	return l, sessions, nil
}

// directDest is the direct sender of d's copies, when this router is
// attached to d, its connection is up and the exchange is there; ok
// false sends them through transit this run.
func (f *fanoutMode) directDest(setup context.Context, d string, node amqp.Node) (links.EngineDest, *engine.Session, bool) {
	var dest links.EngineDest
	b, ok := f.env.brokers[d]
	if !ok {
		return dest, nil, false
	}
	if st, _ := b.Conn.Status(); st.State != amqp.Operational {
		return dest, nil, false
	}
	if err := b.Profile.CheckTarget(setup, node); err != nil {
		f.log.Debug().Err(err).Str("broker", d).Msg("fan-out copies for this broker go through transit on this run")
		return dest, nil, false
	}
	spec, err := b.Profile.Target(node)
	if err != nil {
		return dest, nil, false
	}
	so, err := spec.EngineSender()
	if err != nil {
		return dest, nil, false
	}
	sess, err := engineSession(setup, b.Conn)
	if err != nil {
		f.log.Debug().Err(err).Str("broker", d).Msg("fan-out copies for this broker go through transit on this run")
		return dest, nil, false
	}
	return links.EngineDest{Key: directPrefix + d, Sess: sess, Target: so}, sess, true
}

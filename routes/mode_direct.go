package routes

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/links"
	"github.com/fedrouter/fedrouter/routes/pathpolicy"
)

// transitMode is a route to a broker this router is not attached to: its
// runs always go through transit (multi-hop), along the link-state
// table's path.
type transitMode struct{ *routeBase }

func (t *transitMode) source(ctx context.Context) (amqp.LinkSpec, error) {
	_, sub, _ := t.nodes()
	return t.sourceAt(ctx, sub)
}

func (t *transitMode) wire(_, _ context.Context, _ pathpolicy.Path, srcSess *amqp.Session) (wiring, error) {
	_, _, dstNode := t.nodes()
	return wiring{sink: t.transitSink(srcSess), prepare: t.enterTransit(dstNode, nil)}, nil
}

func (t *transitMode) detail(pathpolicy.Path) string { return t.transitDetail("multi-hop") }

func (t *transitMode) unsubscribe(ctx context.Context) {
	_, sub, _ := t.nodes()
	t.unsubscribeAt(ctx, sub)
}

func (t *transitMode) addStatus(*Status) {}

// enterTransit is the prepare of a run through transit: each message is
// addressed to the destination broker and node; count, when set, counts
// it.
func (b *routeBase) enterTransit(node amqp.Node, count *atomic.Uint64) func(amqp.Message) bool {
	return func(out amqp.Message) bool {
		links.EnterTransit(out, b.spec.Src, b.spec.Dest, node)
		if count != nil {
			count.Add(1)
		}
		return true
	}
}

// directMode is a queue or exchange route to one of this router's
// brokers: a sender there; through transit while its no_path chain
// reroutes around a direct link that is down.
type directMode struct {
	*routeBase
	rerouted atomic.Uint64 // messages sent over an alternative path
}

func (d *directMode) source(ctx context.Context) (amqp.LinkSpec, error) {
	_, sub, _ := d.nodes()
	return d.sourceAt(ctx, sub)
}

func (d *directMode) wire(ctx, setup context.Context, path pathpolicy.Path, srcSess *amqp.Session) (wiring, error) {
	_, _, dstNode := d.nodes()
	if path == pathpolicy.Transit {
		return wiring{sink: d.transitSink(srcSess), prepare: d.enterTransit(dstNode, &d.rerouted)}, nil
	}
	w, err := d.directSink(setup)
	if err != nil {
		return w, err
	}
	if d.spec.Kind == KindExchange && d.env.table != nil {
		w.prepare = d.meshHop
		if err := d.waitLinkInTable(ctx); err != nil {
			w.close()
			return wiring{}, err
		}
	}
	return w, nil
}

func (d *directMode) detail(path pathpolicy.Path) string {
	if path != pathpolicy.Transit {
		return ""
	}
	return d.transitDetail(fmt.Sprintf("rerouting (the direct link to %s is down)", d.spec.Dest))
}

func (d *directMode) unsubscribe(ctx context.Context) {
	_, sub, _ := d.nodes()
	d.unsubscribeAt(ctx, sub)
}

func (d *directMode) addStatus(st *Status) { st.Rerouted = d.rerouted.Load() }

// linkWait bounds waitLinkInTable: a table that does not show the link
// by then (flooding broken) is not waited for any longer.
const linkWait = 10 * time.Second

// waitLinkInTable waits until the link-state table shows this route's
// link up. An exchange route on a mesh judges each message by the trees
// of the table (meshHop); judged by a table from before its link came
// back, a copy the other routers leave to this link would be dropped here
// too — lost. Waiting means such copies cross, at worst twice.
func (d *directMode) waitLinkInTable(ctx context.Context) error {
	deadline := time.NewTimer(linkWait)
	defer deadline.Stop()
	for {
		p, changed := d.env.table.Paths()
		if p != nil && p.LinkUp(d.spec.Src, d.spec.Dest) {
			return nil
		}
		d.state.setWaiting(fmt.Sprintf("waiting for the link-state table to show the link %s > %s up", d.spec.Src, d.spec.Dest))
		select {
		case <-changed:
		case <-deadline.C:
			d.log.Warn().Dur("waited", linkWait).Msg("the link-state table does not show this route's link; forwarding anyway")
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// meshHop is an exchange route's prepare on a link-state network: a
// message published at one broker must reach every other once, however
// many paths the routes make. It crosses this route's link only if the
// link is on the shortest-path tree of the broker it was first published
// at (its origin; valid origins), never to a broker in its trace, and it
// records both.
func (d *directMode) meshHop(out amqp.Message) bool {
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
	return d.traceHop(out)
}

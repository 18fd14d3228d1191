package routes

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/fedrouter/fedrouter/amqp"
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

func (t *transitMode) detail(pathpolicy.Path) string { return t.transitDetail("multi-hop") }

func (t *transitMode) unsubscribe(ctx context.Context) {
	_, sub, _ := t.nodes()
	t.unsubscribeAt(ctx, sub)
}

func (t *transitMode) addStatus(*Status) {}

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

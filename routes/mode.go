package routes

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/routes/pathpolicy"
)

// A route runs in one of four modes, chosen once when it is made
// (newRoute): direct (mode_direct.go: to one of this router's brokers,
// through transit while it reroutes), transit (mode_direct.go: to a
// broker known only from the link-state network, always through transit),
// fan-out (fanout.go: an exchange route copied at its source to every
// broker its group reaches) and dynamic (dynamic.go: a direct route whose
// bindings follow the destination's demand). The route's life — waiting
// for a path, running, retrying, corrective action — is the same for all
// (route.go, routepath.go); a mode says what differs.

// mode is what differs between route modes.
type mode interface {
	// source resolves (and for exchange and dynamic routes, creates)
	// what the run's receiver attaches to at the source broker.
	source(ctx context.Context) (amqp.LinkSpec, error)
	// detail says, for route list, how an Operational run on path goes;
	// "" for nothing to say.
	detail(path pathpolicy.Path) string
	// unsubscribe removes what the route made at its source (the route is
	// deleted): its subscription, unless shared.
	unsubscribe(ctx context.Context)
	// addStatus adds the mode's own counts and facts to st.
	addStatus(st *Status)
}

// modeEnv is what the modes need of the router around them, the same for
// every route of a Manager (newModeEnv): options they read, and the
// fan-out edges the Manager keeps.
type modeEnv struct {
	routerID     string
	maxHops      int
	table        Table // nil without link-state flooding
	brokers      map[string]amqp.Broker
	setupTimeout time.Duration
	// demandInterval, demandReconcile: a dynamic route's demand
	// (Options).
	demandInterval, demandReconcile time.Duration
	// exchangeEdges, advertised, groupEdges: fan-out's edges (fanout.go).
	exchangeEdges, advertised func() []ExchangeEdge
	groupEdges                func(ExchangeEdge) []ExchangeEdge
}

func newModeEnv(m *Manager) *modeEnv {
	o := m.opts
	return &modeEnv{routerID: o.RouterID, maxHops: o.MaxHops, table: o.Table, brokers: o.Brokers, setupTimeout: o.SetupTimeout,
		demandInterval: o.DemandInterval, demandReconcile: o.DemandReconcile,
		exchangeEdges: m.ExchangeEdges, advertised: m.advertised, groupEdges: m.groupEdges}
}

// routeBase is what every mode shares: the route's identity, its pair of
// brokers, its counters and its state, and what it needs of the router
// around it (env) — given explicitly: no mode reaches the Manager.
type routeBase struct {
	env      *modeEnv
	id       string
	spec     Spec
	src, dst amqp.Broker // dst is zero for a destination not attached here
	log      zerolog.Logger
	// state is the route's state as its runs leave it (routestate.go).
	state runState
}

// nodes maps the route to the profile layer's nodes.
func (b *routeBase) nodes() (src amqp.Node, sub amqp.Subscription, dst amqp.Node) {
	switch b.spec.Kind {
	case KindQueue:
		dst = amqp.Node{Kind: amqp.Exchange, Name: b.spec.Exchange}
		if b.spec.DestQueue != "" {
			dst = amqp.Node{Kind: amqp.Queue, Name: b.spec.DestQueue}
		}
		return amqp.Node{Kind: amqp.Queue, Name: b.spec.Queue}, amqp.Subscription{}, dst
	case KindDynamic: // bindings follow demand; messages route by subject
		n := amqp.Node{Kind: amqp.Exchange, Name: b.spec.Exchange}
		return n, b.subscription(), n
	}
	src = amqp.Node{Kind: amqp.Exchange, Name: b.spec.Exchange, Key: b.spec.Key}
	sub = b.subscription()
	dst = amqp.Node{Kind: amqp.Exchange, Name: b.spec.DestNode()}
	if b.spec.Key != "" && !strings.ContainsAny(b.spec.Key, "*#") {
		// A literal key is the routing key of every message it matches:
		// publish with it. Wildcard keys route by the message's subject.
		dst.Key = b.spec.Key
	}
	return src, sub, dst
}

// subscription names the route's private subscription at the source; the
// name derives from the route's identity, so it survives restarts.
func (b *routeBase) subscription() amqp.Subscription {
	return amqp.Subscription{Name: "fedrouter." + b.env.routerID + "." + b.id, Durable: b.spec.Durable}
}

// sourceAt resolves the route's source node at its broker with sub.
func (b *routeBase) sourceAt(ctx context.Context, sub amqp.Subscription) (amqp.LinkSpec, error) {
	srcNode, _, _ := b.nodes()
	spec, err := b.src.Profile.Source(ctx, srcNode, sub)
	if err != nil {
		return spec, missing(fmt.Errorf("source %s on %s: %w", srcNode, b.spec.Src, err), srcNode, b.spec.Src)
	}
	return spec, nil
}

// unsubscribeAt removes sub (an exchange route's subscription) at the
// source; a queue route has none.
func (b *routeBase) unsubscribeAt(ctx context.Context, sub amqp.Subscription) {
	if b.spec.Kind == KindQueue {
		return
	}
	src, _, _ := b.nodes()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := b.src.Profile.Unsubscribe(ctx, src, sub); err != nil {
		b.log.Warn().Err(err).Msg("could not remove the route's subscription at the source; remove it by hand")
	}
}

// transitDetail says, for route list, which path a transit run takes;
// how says why it goes through transit.
func (b *routeBase) transitDetail(how string) string {
	if p, _ := b.env.table.Paths(); p != nil {
		if path := p.Path(b.spec.Src, b.spec.Dest); path != nil {
			return fmt.Sprintf("%s via %s", how, strings.Join(path, " > "))
		}
	}
	return how
}

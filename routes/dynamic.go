package routes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/routes/pathpolicy"
)

// Dynamic routes: the route's subscription at the source carries one
// binding per binding with demand at the destination exchange, kept in
// step by polling the destination (DemandInterval). Demand that came
// through the route's own source is not followed (its origins say so), and
// messages carry a trace of the brokers they visited: a message is never
// sent to a broker it has been at. Together they keep A<->B pairs, rings
// and meshes of dynamic routes from looping.

// errNoDemandSupport: a broker whose profile cannot tell its bindings.
var errNoDemandSupport = errors.New("dynamic routes need brokers whose profile can read and manage bindings (rabbitmq)")

// dynamicMode is a dynamic route: a direct route whose subscription's
// bindings follow the destination's demand. Each run subscribes and
// reconciles before it attaches, follows demand while it forwards
// (engineHook.follow, beside runEngine) and stops following when it ends.
type dynamicMode struct {
	directMode

	demandMu     sync.Mutex // guards the fields below
	demand       []string   // the bindings held, as text
	demandSource string     // how demand is followed
	localDemand  []string   // keys of consumers at the destination
}

func (d *dynamicMode) source(ctx context.Context) (amqp.LinkSpec, error) {
	return d.subscribeDynamic(ctx)
}

func (d *dynamicMode) detail(pathpolicy.Path) string { return "" }

// unsubscribe removes the subscription at the source and the queue of
// binding events at the destination.
func (d *dynamicMode) unsubscribe(ctx context.Context) {
	d.unsubscribeAt(ctx, d.subscription())
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	events := amqp.Node{Kind: amqp.Exchange, Name: "binding events"}
	if err := d.dst.Profile.Unsubscribe(ctx, events, d.eventsSubscription()); err != nil {
		d.log.Warn().Err(err).Msg("could not remove the route's binding-event queue at the destination; it expires by itself")
	}
}

func (d *dynamicMode) addStatus(st *Status) {
	d.demandMu.Lock()
	defer d.demandMu.Unlock()
	st.Demand, st.DemandSource = slices.Clone(d.demand), d.demandSource
}

// demandReader is what a dynamic route reads the destination's demand
// from: the broker itself (amqp.Demand) or the bindings the configuration
// declares for a broker that cannot be asked (staticDemand).
type demandReader interface {
	ExchangeDemand(ctx context.Context, exchange string, divert bool) ([]amqp.DemandBinding, error)
}

// staticDemand is a broker's configured bindings: exchange → keys.
type staticDemand map[string][]string

func (s staticDemand) ExchangeDemand(_ context.Context, exchange string, _ bool) ([]amqp.DemandBinding, error) {
	out := make([]amqp.DemandBinding, 0, len(s[exchange]))
	for _, k := range s[exchange] {
		out = append(out, amqp.DemandBinding{Key: k})
	}
	return out, nil
}

// demandProfiles returns the source's subscription manager and where to
// read the destination's demand: the configured bindings when the
// destination broker has any, else the broker itself.
func (d *dynamicMode) demandProfiles() (src amqp.Demand, dst demandReader, err error) {
	return demandOf(d.spec, d.src, d.dst)
}

// demandOf is demandProfiles for a dynamic route spec from broker
// srcB to dstB: the manager asks it before it adds one, so that a route
// that could never follow demand is refused at add, not left failing.
func demandOf(spec Spec, srcB, dstB amqp.Broker) (src amqp.Demand, dst demandReader, err error) {
	src, okSrc := srcB.Profile.(amqp.Demand)
	dst, okDst := demandReader(staticDemand(dstB.StaticDemand)), len(dstB.StaticDemand) > 0
	if !okDst {
		// Only the demand is read at the destination: a profile that can
		// list bindings (qpidd) need not manage subscriptions.
		dst, okDst = dstB.Profile.(demandReader)
	}
	if !okSrc || !okDst {
		return nil, nil, fmt.Errorf("%w: %s is %s, %s is %s (declare its bindings in the configuration if it cannot be asked)", errNoDemandSupport,
			spec.Src, profileName(srcB), spec.Dest, profileName(dstB))
	}
	return src, dst, nil
}

// profileName is b's profile's name, "no profile" when it has none.
func profileName(b amqp.Broker) string {
	if b.Profile == nil {
		return "no profile"
	}
	return b.Profile.Name()
}

// subscribeDynamic declares the route's subscription, brings its bindings
// in step with the destination's demand and returns where to receive.
func (d *dynamicMode) subscribeDynamic(ctx context.Context) (amqp.LinkSpec, error) {
	src, dst, err := d.demandProfiles()
	if err != nil {
		return amqp.LinkSpec{}, err
	}
	spec, err := src.Subscribe(ctx, d.spec.Exchange, d.subscription())
	if err != nil {
		return amqp.LinkSpec{}, fmt.Errorf("subscription on %s: %w", d.spec.Src, err)
	}
	if err := d.reconcile(ctx, src, dst); err != nil {
		return amqp.LinkSpec{}, err
	}
	return spec, nil
}

// followDemand reconciles until ctx ends: on every binding event of the
// destination broker when it publishes them (RabbitMQ's event exchange),
// and every DemandReconcile then (a missed event heals); every
// DemandInterval otherwise. A failure (the management API away) is
// logged once and retried: forwarding goes on with the bindings as they
// are.
func (d *dynamicMode) followDemand(ctx context.Context) {
	src, dst, err := d.demandProfiles()
	if err != nil {
		return
	}
	kick := make(chan struct{}, 1)
	events := d.watchBindings(ctx, dst, kick) // nil: no events, poll
	every := d.env.demandInterval
	if events != nil {
		every = d.env.demandReconcile
		// The watcher's own channel: events is set to nil below when the
		// link fails, and a receive from nil would never return.
		defer func(done <-chan struct{}) { <-done }(events)
	}
	d.setDemandSource(events != nil, every)
	t := time.NewTicker(every)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-t.C:
		case <-kick:
		case <-events: // the event link failed: poll
			events = nil
			t.Reset(d.env.demandInterval)
			d.setDemandSource(false, d.env.demandInterval)
		case <-ctx.Done():
			return
		}
		err := d.reconcile(ctx, src, dst)
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			d.log.Warn().Err(err).Msg("cannot follow the destination's demand; keeping the current bindings")
		case err == nil && failing:
			d.log.Info().Msg("following the destination's demand again")
		}
		failing = err != nil
	}
}

// eventsSubscription names the queue of the destination's binding events.
func (d *dynamicMode) eventsSubscription() amqp.Subscription {
	return amqp.Subscription{Name: d.subscription().Name + ".events"}
}

// watchBindings receives the destination's binding events in a goroutine
// that signals kick for each change to the route's exchange (any change
// with divert_bindings: downstream exchanges count). It returns a channel
// closed when that goroutine ends, or nil when there are no events.
func (d *dynamicMode) watchBindings(ctx context.Context, dst demandReader, kick chan<- struct{}) <-chan struct{} {
	ev, ok := dst.(amqp.DemandEvents)
	if !ok {
		return nil
	}
	setup, cancel := context.WithTimeout(ctx, d.env.setupTimeout)
	defer cancel()
	spec, err := ev.BindingEvents(setup, d.eventsSubscription())
	if err != nil {
		d.log.Debug().Err(err).Msg("no binding events: polling the destination's bindings")
		return nil
	}
	sess, _, err := d.dst.Conn.NewSession(setup)
	if err != nil {
		return nil
	}
	rcv, err := amqp.NewReceiver(setup, sess, spec, amqp.ReceiverConfig{Window: 50})
	if err != nil {
		amqp.CloseSession(sess)
		return nil
	}
	// A binding made between the first reconcile and this attach sent its
	// event to no one: reconcile once now that events are heard.
	select {
	case kick <- struct{}{}:
	default:
	}
	done := make(chan struct{})
	go func() { // owned by followDemand, which waits for done; ends with ctx or the link
		defer close(done)
		defer amqp.CloseSession(sess)
		for {
			msg, err := rcv.Receive(ctx)
			if err != nil {
				return
			}
			_ = rcv.Accept(ctx, msg)
			if src := msg.PropertyString("source_name"); src != "" && src != d.spec.Exchange && !d.spec.DivertBindings {
				continue
			}
			select {
			case kick <- struct{}{}:
			default: // a reconcile is already due
			}
		}
	}()
	return done
}

func (d *dynamicMode) setDemandSource(events bool, every time.Duration) {
	src := "poll every " + every.String()
	if events {
		src = "binding events, reconciled every " + every.String()
	}
	d.demandMu.Lock()
	d.demandSource = src
	d.demandMu.Unlock()
}

// reconcile makes the subscription's bindings equal the demand at the
// destination that did not come through the source, each recorded with
// its origins plus the destination.
func (d *dynamicMode) reconcile(ctx context.Context, src amqp.Demand, dst demandReader) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	want, err := dst.ExchangeDemand(ctx, d.spec.Exchange, d.spec.DivertBindings)
	if err != nil {
		return fmt.Errorf("demand at %s: %w", d.spec.Dest, err)
	}
	desired := map[string]amqp.DemandBinding{}
	var local []string // keys of consumers at the destination itself
	for _, b := range want {
		if len(b.Origins) == 0 {
			local = append(local, b.Key)
		}
		if slices.Contains(b.Origins, d.spec.Src) {
			continue // demand that came from our source: following it would loop
		}
		if !d.onShortestPath(b.Origins) {
			continue // another way from the source to that consumer is shorter
		}
		o := amqp.DemandBinding{Key: b.Key, Origins: withBroker(b.Origins, d.spec.Dest)}
		desired[o.ID()] = o
	}
	sub := d.subscription()
	have, err := src.SubscribedDemand(ctx, d.spec.Exchange, sub)
	if err != nil {
		return fmt.Errorf("subscription bindings at %s: %w", d.spec.Src, err)
	}
	held := map[string]bool{}
	for _, b := range have {
		if _, ok := desired[b.ID()]; !ok {
			if err := src.UnbindDemand(ctx, d.spec.Exchange, sub, b); err != nil {
				return fmt.Errorf("unbind %s at %s: %w", b, d.spec.Src, err)
			}
			d.log.Info().Str("binding", b.String()).Msg("demand gone: unbound")
			continue
		}
		held[b.ID()] = true
	}
	for id, b := range desired {
		if held[id] {
			continue
		}
		if err := src.BindDemand(ctx, d.spec.Exchange, sub, b); err != nil {
			return fmt.Errorf("bind %s at %s: %w", b, d.spec.Src, err)
		}
		d.log.Info().Str("binding", b.String()).Msg("demand seen: bound")
	}
	d.setDemand(desired, local)
	return nil
}

func (d *dynamicMode) setDemand(desired map[string]amqp.DemandBinding, local []string) {
	keys := make([]string, 0, len(desired))
	for _, b := range desired {
		keys = append(keys, b.String())
	}
	slices.Sort(keys)
	slices.Sort(local)
	d.demandMu.Lock()
	d.demand, d.localDemand = keys, slices.Compact(local)
	d.demandMu.Unlock()
}

// LocalDemand is the demand of consumers at the destinations of the
// dynamic routes (not demand propagated by other routes): destination
// broker → exchange → binding keys, sorted. The router advertises it in
// its link-state advertisement, so every router knows where demand is.
func (m *Manager) LocalDemand() map[string]map[string][]string {
	m.mu.Lock()
	rs := make([]*dynamicMode, 0, len(m.routes))
	for _, r := range m.routes {
		if d, ok := r.mode.(*dynamicMode); ok {
			rs = append(rs, d)
		}
	}
	m.mu.Unlock()
	out := map[string]map[string][]string{}
	for _, r := range rs {
		r.demandMu.Lock()
		keys := slices.Clone(r.localDemand)
		r.demandMu.Unlock()
		if len(keys) == 0 {
			continue
		}
		if out[r.spec.Dest] == nil {
			out[r.spec.Dest] = map[string][]string{}
		}
		merged := append(out[r.spec.Dest][r.spec.Exchange], keys...)
		slices.Sort(merged)
		out[r.spec.Dest][r.spec.Exchange] = slices.Compact(merged)
	}
	return out
}

// withBroker returns the demand path origins extended by b.
func withBroker(origins []string, b string) []string {
	return append(slices.Clone(origins), b)
}

// onShortestPath says whether this route's destination is the next hop on
// the source's shortest path to the consumer behind demand with path
// origins (its first broker; the destination itself for local demand). On
// a mesh of dynamic routes that is what keeps each consumer from getting a
// message once per path: only one route from the source follows its
// demand. Without link state (Options.Table nil, or no path known yet)
// every route follows it.
func (d *dynamicMode) onShortestPath(origins []string) bool {
	if d.env.table == nil {
		return true
	}
	consumer := d.spec.Dest
	if len(origins) > 0 {
		consumer = origins[0]
	}
	next, ok := d.env.table.NextHop(d.spec.Src, consumer)
	return !ok || next == d.spec.Dest
}

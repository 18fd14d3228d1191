package routes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	goamqp "github.com/Azure/go-amqp"

	famqp "github.com/fedrouter/fedrouter/amqp"
)

// Dynamic routes: the route's subscription at the source carries one
// binding per binding with demand at the destination exchange, kept in
// step by polling the destination (DemandInterval). Demand that came
// through the route's own source is not followed (its origins say so), and
// messages carry a trace of the brokers they visited: a message is never
// sent to a broker it has been at. Together they keep A<->B pairs, rings
// and meshes of dynamic routes from looping.

// TraceAnnotation lists, comma-separated, the brokers a message crossed
// on dynamic routes.
const TraceAnnotation = "x-fedrouter-trace"

// errNoDemandSupport: a broker whose profile cannot tell its bindings.
var errNoDemandSupport = errors.New("dynamic routes need brokers whose profile can read and manage bindings (rabbitmq)")

// demandReader is what a dynamic route reads the destination's demand
// from: the broker itself (famqp.Demand) or the bindings the configuration
// declares for a broker that cannot be asked (staticDemand).
type demandReader interface {
	ExchangeDemand(ctx context.Context, exchange string, divert bool) ([]famqp.DemandBinding, error)
}

// staticDemand is a broker's configured bindings: exchange → keys.
type staticDemand map[string][]string

func (s staticDemand) ExchangeDemand(_ context.Context, exchange string, _ bool) ([]famqp.DemandBinding, error) {
	out := make([]famqp.DemandBinding, 0, len(s[exchange]))
	for _, k := range s[exchange] {
		out = append(out, famqp.DemandBinding{Key: k})
	}
	return out, nil
}

// demandProfiles returns the source's subscription manager and where to
// read the destination's demand: the configured bindings when the
// destination broker has any, else the broker itself.
func (r *route) demandProfiles() (src famqp.Demand, dst demandReader, err error) {
	src, okSrc := r.src.Profile.(famqp.Demand)
	dst, okDst := demandReader(staticDemand(r.dst.StaticDemand)), len(r.dst.StaticDemand) > 0
	if !okDst {
		dst, okDst = r.dst.Profile.(famqp.Demand)
	}
	if !okSrc || !okDst {
		return nil, nil, fmt.Errorf("%w: %s is %s, %s is %s (declare its bindings in the configuration if it cannot be asked)", errNoDemandSupport,
			r.spec.Src, r.src.Profile.Name(), r.spec.Dest, r.dst.Profile.Name())
	}
	return src, dst, nil
}

// subscribeDynamic declares the route's subscription, brings its bindings
// in step with the destination's demand and returns where to receive.
func (r *route) subscribeDynamic(ctx context.Context) (famqp.LinkSpec, error) {
	src, dst, err := r.demandProfiles()
	if err != nil {
		return famqp.LinkSpec{}, err
	}
	spec, err := src.Subscribe(ctx, r.spec.Exchange, r.subscription())
	if err != nil {
		return famqp.LinkSpec{}, fmt.Errorf("subscription on %s: %w", r.spec.Src, err)
	}
	if err := r.reconcile(ctx, src, dst); err != nil {
		return famqp.LinkSpec{}, err
	}
	return spec, nil
}

// followDemand reconciles until ctx ends: on every binding event of the
// destination broker when it publishes them (RabbitMQ's event exchange),
// and every DemandReconcile then (a missed event heals); every
// DemandInterval otherwise. A failure (the management API away) is
// logged once and retried: forwarding goes on with the bindings as they
// are.
func (r *route) followDemand(ctx context.Context) {
	src, dst, err := r.demandProfiles()
	if err != nil {
		return
	}
	kick := make(chan struct{}, 1)
	events := r.watchBindings(ctx, dst, kick) // nil: no events, poll
	every := r.m.opts.DemandInterval
	if events != nil {
		every = r.m.opts.DemandReconcile
		defer func() { <-events }()
	}
	r.setDemandSource(events != nil, every)
	t := time.NewTicker(every)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-t.C:
		case <-kick:
		case <-events: // the event link failed: poll
			events = nil
			t.Reset(r.m.opts.DemandInterval)
			r.setDemandSource(false, r.m.opts.DemandInterval)
		case <-ctx.Done():
			return
		}
		err := r.reconcile(ctx, src, dst)
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			r.log.Warn().Err(err).Msg("cannot follow the destination's demand; keeping the current bindings")
		case err == nil && failing:
			r.log.Info().Msg("following the destination's demand again")
		}
		failing = err != nil
	}
}

// eventsSubscription names the queue of the destination's binding events.
func (r *route) eventsSubscription() famqp.Subscription {
	return famqp.Subscription{Name: r.subscription().Name + ".events"}
}

// watchBindings receives the destination's binding events in a goroutine
// that signals kick for each change to the route's exchange (any change
// with divert_bindings: downstream exchanges count). It returns a channel
// closed when that goroutine ends, or nil when there are no events.
func (r *route) watchBindings(ctx context.Context, dst demandReader, kick chan<- struct{}) <-chan struct{} {
	ev, ok := dst.(famqp.DemandEvents)
	if !ok {
		return nil
	}
	setup, cancel := context.WithTimeout(ctx, r.m.opts.SetupTimeout)
	defer cancel()
	spec, err := ev.BindingEvents(setup, r.eventsSubscription())
	if err != nil {
		r.log.Debug().Err(err).Msg("no binding events: polling the destination's bindings")
		return nil
	}
	sess, _, err := r.dst.Conn.NewSession(setup)
	if err != nil {
		return nil
	}
	rcv, err := famqp.NewReceiver(setup, sess, spec, famqp.ReceiverConfig{Window: 50})
	if err != nil {
		famqp.CloseSession(sess)
		return nil
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer famqp.CloseSession(sess)
		for {
			msg, err := rcv.Receive(ctx)
			if err != nil {
				return
			}
			_ = rcv.Accept(ctx, msg)
			if src, ok := msg.ApplicationProperties["source_name"].(string); ok && src != r.spec.Exchange && !r.spec.DivertBindings {
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

func (r *route) setDemandSource(events bool, every time.Duration) {
	src := "poll every " + every.String()
	if events {
		src = "binding events, reconciled every " + every.String()
	}
	r.mu.Lock()
	r.demandSource = src
	r.mu.Unlock()
}

// reconcile makes the subscription's bindings equal the demand at the
// destination that did not come through the source, each recorded with
// its origins plus the destination.
func (r *route) reconcile(ctx context.Context, src famqp.Demand, dst demandReader) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	want, err := dst.ExchangeDemand(ctx, r.spec.Exchange, r.spec.DivertBindings)
	if err != nil {
		return fmt.Errorf("demand at %s: %w", r.spec.Dest, err)
	}
	desired := map[string]famqp.DemandBinding{}
	var local []string // keys of consumers at the destination itself
	for _, b := range want {
		if len(b.Origins) == 0 {
			local = append(local, b.Key)
		}
		if slices.Contains(b.Origins, r.spec.Src) {
			continue // demand that came from our source: following it would loop
		}
		if !r.onShortestPath(b.Origins) {
			continue // another way from the source to that consumer is shorter
		}
		o := famqp.DemandBinding{Key: b.Key, Origins: withBroker(b.Origins, r.spec.Dest)}
		desired[o.ID()] = o
	}
	sub := r.subscription()
	have, err := src.SubscribedDemand(ctx, r.spec.Exchange, sub)
	if err != nil {
		return fmt.Errorf("subscription bindings at %s: %w", r.spec.Src, err)
	}
	held := map[string]bool{}
	for _, b := range have {
		if _, ok := desired[b.ID()]; !ok {
			if err := src.UnbindDemand(ctx, r.spec.Exchange, sub, b); err != nil {
				return fmt.Errorf("unbind %s at %s: %w", b, r.spec.Src, err)
			}
			r.log.Info().Str("binding", b.String()).Msg("demand gone: unbound")
			continue
		}
		held[b.ID()] = true
	}
	for id, b := range desired {
		if held[id] {
			continue
		}
		if err := src.BindDemand(ctx, r.spec.Exchange, sub, b); err != nil {
			return fmt.Errorf("bind %s at %s: %w", b, r.spec.Src, err)
		}
		r.log.Info().Str("binding", b.String()).Msg("demand seen: bound")
	}
	r.setDemand(desired, local)
	return nil
}

func (r *route) setDemand(desired map[string]famqp.DemandBinding, local []string) {
	keys := make([]string, 0, len(desired))
	for _, b := range desired {
		keys = append(keys, b.String())
	}
	slices.Sort(keys)
	slices.Sort(local)
	r.mu.Lock()
	r.demand, r.localDemand = keys, slices.Compact(local)
	r.mu.Unlock()
}

// LocalDemand is the demand of consumers at the destinations of the
// dynamic routes (not demand propagated by other routes): destination
// broker → exchange → binding keys, sorted. The router advertises it in
// its link-state advertisement, so every router knows where demand is.
func (m *Manager) LocalDemand() map[string]map[string][]string {
	m.mu.Lock()
	rs := make([]*route, 0, len(m.routes))
	for _, r := range m.routes {
		if r.spec.Kind == KindDynamic {
			rs = append(rs, r)
		}
	}
	m.mu.Unlock()
	out := map[string]map[string][]string{}
	for _, r := range rs {
		r.mu.Lock()
		keys := slices.Clone(r.localDemand)
		r.mu.Unlock()
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
// demand. Without link state (Options.NextHop nil, or no path known yet)
// every route follows it.
func (r *route) onShortestPath(origins []string) bool {
	if r.m.opts.NextHop == nil {
		return true
	}
	consumer := r.spec.Dest
	if len(origins) > 0 {
		consumer = origins[0]
	}
	next, ok := r.m.opts.NextHop(r.spec.Src, consumer)
	return !ok || next == r.spec.Dest
}

// traceHop is a dynamic route's links.Config.Prepare: it records the
// source broker in the message's trace and drops the message if the
// destination is already in it.
func (r *route) traceHop(out *goamqp.Message) bool {
	var trace []string
	if s, ok := out.Annotations[TraceAnnotation].(string); ok && s != "" {
		trace = strings.Split(s, ",")
	}
	if slices.Contains(trace, r.spec.Dest) {
		return false
	}
	if !slices.Contains(trace, r.spec.Src) {
		trace = append(trace, r.spec.Src)
	}
	if out.Annotations == nil {
		out.Annotations = goamqp.Annotations{}
	}
	out.Annotations[TraceAnnotation] = strings.Join(trace, ",")
	return true
}

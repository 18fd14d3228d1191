package router

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/api"
	"github.com/fedrouter/fedrouter/globaldest"
	"github.com/fedrouter/fedrouter/internal/group"
	"github.com/fedrouter/fedrouter/links"
	"github.com/fedrouter/fedrouter/routes"
)

// globalDestPoll is how often the brokers of the destinations: spans are
// listed: a queue created at one broker exists at the others within about
// two of these.
const globalDestPoll = 2 * time.Second

// globalDestCall bounds one management call (a listing, a create, a
// delete): a loaded broker answers a listing in seconds.
const globalDestCall = 10 * time.Second

// globalDests carries the global destinations' core out
// (docs/destinations.md): one goroutine (run, in a group it owns) lists
// every broker of the spans through its management API, feeds the core
// and creates and deletes queues as the core says. The admin API reads
// the status it publishes after each round.
type globalDests struct {
	core   *globaldest.Core // owned by run
	mgrs   map[string]amqp.QueueManager
	routes *routes.Manager // runs the flows (messages following consumers)
	// flowsOut: the flows this router runs or ran out of each (broker,
	// queue): zero while running, else when stopped (owned by run).
	flowsOut map[[2]string]time.Time
	remote   *remoteCounts // other routers' consumers; nil without link state
	// others: other routers' flows at this router's brokers (FlowsExt);
	// nil without link state. flowsTruncOnce: FlowsExt's bound was hit.
	others         *remoteCounts
	flowsTruncOnce sync.Once
	flowsChanged   chan struct{} // publishFlows → the topology driver: advertise now
	// shares: other routers' ads of the limited destinations (nil
	// without link state); started, grace: sharesGrace.
	shares          *remoteShares
	started         time.Time
	grace           time.Duration
	sharesTruncOnce sync.Once
	// truncatedOnce: the advertisement's bound was hit (logged once).
	truncatedOnce sync.Once
	listings      listings // each broker's last listing, shared with the advertised destinations
	brokers       []string // listed, sorted
	control       string   // the control address: never a global destination
	entries       []globaldest.Entry
	limits        *destLimits // nil: no entry has limits the brokers enforce
	// Events (globaldest_events.go): the brokers, for their connections
	// and profiles; wake carries a broker's name when it announced a
	// queue or a consumer; consumerEvents (owned by run) what consumer
	// events said.
	conns          map[string]amqp.Broker
	routerID       string
	wake           chan string
	consumerEvents map[[2]string]consumerEvents
	log            zerolog.Logger
	g              *group.Group

	mu      sync.Mutex
	status  []globaldest.Status      // guarded by mu
	counts  api.DestCounts           // guarded by mu
	listErr map[string]string        // guarded by mu: brokers whose last listing failed
	ads     map[string]globaldest.Ad // guarded by mu: this router's, for SharesExt
	flowsAd map[[2]string]time.Time  // guarded by mu: flowsOut's copy, for FlowsExt
}

// ErrNoDestinations: the router has no destinations: section.
var ErrNoDestinations = errors.New("router: no global destinations configured (destinations: section)")

// newGlobalDests makes the global destinations (r.gdests) when the
// configuration has entries; every broker of their spans must manage
// queues (config checks the profiles). start runs them.
func (r *Router) newGlobalDests(brokers map[string]amqp.Broker) error {
	entries := r.cfg.GlobalDestinations()
	if len(entries) == 0 {
		return nil
	}
	g := &globalDests{core: globaldest.New(entries), mgrs: map[string]amqp.QueueManager{}, routes: r.routes, flowsOut: map[[2]string]time.Time{}, control: r.cfg.Topology.ControlAddress,
		log: r.log.With().Str("subsystem", "destinations").Logger(), listErr: map[string]string{}}
	for _, e := range entries {
		for _, b := range e.Brokers {
			if _, done := g.mgrs[b]; done {
				continue
			}
			qm, ok := brokers[b].Profile.(amqp.QueueManager)
			if !ok {
				return fmt.Errorf("router: destinations: broker %s cannot list or create queues (profile %s)", b, brokers[b].Profile.Name())
			}
			g.mgrs[b] = qm
			g.brokers = append(g.brokers, b)
		}
	}
	sort.Strings(g.brokers)
	g.entries, g.limits = entries, newDestLimits(entries, brokers, r.limitGates)
	g.conns, g.routerID, g.wake, g.consumerEvents = brokers, r.cfg.RouterID, make(chan string, len(g.brokers)), map[[2]string]consumerEvents{}
	g.flowsChanged = make(chan struct{}, 1)
	r.gdests = g
	return nil
}

// start runs the global destinations under ctx; remote and others, when
// link state is on, hold the consumers and the flows other routers
// advertise.
func (g *globalDests) start(ctx context.Context, remote, others *remoteCounts) {
	g.remote, g.others = remote, others
	g.started = time.Now()
	g.g = group.New(ctx)
	g.g.Go(g.run)
	for _, b := range g.brokers {
		g.g.Go(func(ctx context.Context) { g.watchEvents(ctx, b) })
	}
}

func (g *globalDests) stop() {
	if g.g != nil {
		g.g.Stop()
	}
}

func (g *globalDests) run(ctx context.Context) {
	t := time.NewTicker(globalDestPoll)
	defer t.Stop()
	var othersChanged chan struct{} // nil without link state: never ready
	if g.others != nil {
		othersChanged = g.others.changed
	}
	for {
		g.round(ctx)
		select {
		case <-t.C:
		case <-othersChanged: // subtracted at once: it may be a flow's receiver taken for a consumer
		case b := <-g.wake:
			g.woken(ctx, b)
			for more := true; more; { // every broker that woke meanwhile
				select {
				case b := <-g.wake:
					g.woken(ctx, b)
				default:
					more = false
				}
			}
		case <-ctx.Done():
			return
		}
	}
}

// round lists every broker in turn and acts on what the core says after
// each listing, so that the next broker's listing sees what was created.
func (g *globalDests) round(ctx context.Context) {
	if g.others != nil {
		g.core.Others(g.others.others(g.brokers), time.Now())
	}
	for _, b := range g.brokers {
		call, cancel := context.WithTimeout(ctx, globalDestCall)
		qs, err := g.mgrs[b].ListQueues(call)
		cancel()
		if ctx.Err() != nil {
			return
		}
		now := time.Now()
		if err != nil {
			g.core.Failed(b, now)
			g.listFailed(b, err)
			continue
		}
		g.listings.put(b, qs, now)
		g.listed(b)
		g.apply(ctx, g.core.Observe(b, g.observed(b, qs, now), now))
	}
	if g.remote != nil {
		g.core.Remote(g.remote.merged(g.brokers), time.Now())
	}
	g.apply(ctx, g.core.Tick(time.Now()))
	g.publishFlows() // the listings forgot the flows stopped long enough ago
	st := g.core.Status()
	g.enforce(ctx, st)
	g.mu.Lock()
	g.status = st
	g.mu.Unlock()
}

// observed turns a listing into the core's terms: the routers' own queues
// are never global destinations.
func (g *globalDests) observed(b string, qs []amqp.QueueInfo, now time.Time) []globaldest.Queue {
	out := make([]globaldest.Queue, 0, len(qs))
	for _, q := range qs {
		if links.RouterOwned(amqp.Node{Kind: amqp.Queue, Name: q.Name}, g.control) {
			continue
		}
		if g.ownConsumer(b, q.Name, now) {
			// The router's own flow out of this instance is no consumer.
			q.Consumers = max(0, q.Consumers-1)
		}
		q.Consumers = g.eventConsumers(b, q.Name, q.Consumers, now)
		kind := globaldest.AutoCreated
		switch {
		case q.Exclusive || q.AutoDelete:
			kind = globaldest.Temporary
		case q.Durable:
			kind = globaldest.Configured
		}
		// The listing's arguments are JSON already (numbers as float64).
		out = append(out, globaldest.Queue{Name: q.Name, Kind: kind, Props: globaldest.Props{Durable: q.Durable, Args: q.Arguments},
			Messages: q.Messages, Consumers: q.Consumers, Bytes: q.MessageBytes})
	}
	return out
}

// apply carries the core's actions out, one call at a time (no lock held).
func (g *globalDests) apply(ctx context.Context, acts []globaldest.Action) {
	for _, a := range acts {
		switch a.Kind {
		case globaldest.Create:
			call, cancel := context.WithTimeout(ctx, globalDestCall)
			err := g.mgrs[a.Broker].DeclareQueue(call, a.Name, amqp.QueueArgs{Durable: a.Props.Durable, Arguments: a.Props.Args})
			cancel()
			g.core.Result(a, err)
			g.done(a, err, &g.counts.Created)
		case globaldest.Delete:
			call, cancel := context.WithTimeout(ctx, globalDestCall)
			err := g.mgrs[a.Broker].DeleteQueue(call, a.Name, amqp.DeleteCond{IfEmpty: a.IfEmpty, IfUnused: a.IfUnused})
			cancel()
			g.core.Result(a, err)
			g.done(a, err, &g.counts.Deleted)
		case globaldest.Move:
			g.move(a)
		case globaldest.Stop:
			g.stopFlow(ctx, a)
		case globaldest.Report:
			ev := g.log.Info()
			if strings.HasPrefix(a.Msg, "conflict") || strings.HasPrefix(a.Msg, "orphaned") {
				ev = g.log.Warn()
			}
			ev.Str("destination", a.Name).Msg(a.Msg)
		}
	}
}

// done logs an action's result and counts it.
func (g *globalDests) done(a globaldest.Action, err error, ok *uint64) {
	g.mu.Lock()
	switch {
	case err == nil:
		*ok++
	case errors.Is(err, amqp.ErrQueueNotEmpty), errors.Is(err, amqp.ErrQueueInUse):
		g.counts.Kept++
	default:
		g.counts.Failed++
	}
	g.mu.Unlock()
	what := "created"
	if a.Kind == globaldest.Delete {
		what = "deleted"
	}
	ev := g.log.Info()
	switch {
	case errors.Is(err, amqp.ErrQueueNotEmpty):
		ev, what = g.log.Warn().Err(err), "kept: it holds messages"
	case errors.Is(err, amqp.ErrQueueInUse):
		ev, what = g.log.Info().Err(err), "kept: a consumer has it"
	case err != nil:
		// Tried again after the next listing.
		ev, what = g.log.Warn().Err(err), "not "+what
	}
	ev.Str("destination", a.Name).Str("broker", a.Broker).Str("properties", a.Props.String()).Str("why", a.Msg).Msg("global destination " + what)
}

// listFailed logs a broker's listing failure once, until it answers again.
func (g *globalDests) listFailed(b string, err error) {
	g.mu.Lock()
	_, said := g.listErr[b]
	g.listErr[b] = err.Error()
	g.mu.Unlock()
	if !said {
		g.log.Warn().Err(err).Str("broker", b).Msg("cannot list queues: nothing is concluded from this broker until it answers")
	}
}

func (g *globalDests) listed(b string) {
	g.mu.Lock()
	_, was := g.listErr[b]
	delete(g.listErr, b)
	g.mu.Unlock()
	if was {
		g.log.Info().Str("broker", b).Msg("queues listed again")
	}
}

// GlobalDestinations returns the global destinations as last decided.
func (r *Router) GlobalDestinations(context.Context) (api.Destinations, error) {
	g := r.gdests
	if g == nil {
		return api.Destinations{}, ErrNoDestinations
	}
	g.mu.Lock()
	out := api.Destinations{Destinations: append([]globaldest.Status{}, g.status...), Counts: g.counts, Unlisted: map[string]string{}}
	for b, e := range g.listErr {
		out.Unlisted[b] = e
	}
	g.mu.Unlock()
	g.flowStatus(out.Destinations) // the flows' counts now, not at the last round
	if r.limitGates != nil {
		out.Counts.LimitRefusals = r.limitGates.refusals()
	}
	if g.shares != nil {
		out.Counts.SharesRefused = g.shares.refusals()
	}
	for _, d := range out.Destinations {
		for _, f := range d.Flows {
			out.Counts.Moved += f.Moved
			out.Counts.Parked += f.Parked
		}
	}
	return out, nil
}

// destinations serves GET /api/v1/destinations.
func (a *AdminServer) destinations(w http.ResponseWriter, r *http.Request) {
	serveView(w, func() (api.Destinations, error) { return a.svc.GlobalDestinations(r.Context()) })
}

// flowSpec is the route that moves a's destination's messages from
// a.Broker to a.To: into the same queue there, each message at most
// a.MaxHops times; while no path leads there it holds (the core moves
// the flow elsewhere, or stops it, once the target is gone).
func flowSpec(a globaldest.Action) routes.Spec {
	return routes.Spec{Kind: routes.KindQueue, Src: a.Broker, Queue: a.Name, Dest: a.To, DestQueue: a.Name,
		MaxMoves: a.MaxHops, NoPath: []string{"hold"}}
}

// ownConsumerLag is how long a flow's receiver may still be counted
// among an instance's consumers after the flow stopped: RabbitMQ's
// statistics interval (5 s) and a listing period, with a margin.
const ownConsumerLag = 10 * time.Second

// ownConsumer says whether a listing of broker's queue made at now may
// count this router's own flow receiver as a consumer.
func (g *globalDests) ownConsumer(broker, queue string, now time.Time) bool {
	stopped, ok := g.flowsOut[[2]string{broker, queue}]
	switch {
	case !ok:
		return false
	case stopped.IsZero() || now.Sub(stopped) < ownConsumerLag:
		return true
	}
	delete(g.flowsOut, [2]string{broker, queue})
	return false
}

// move starts a flow.
func (g *globalDests) move(a globaldest.Action) {
	_, err := g.routes.Start(flowSpec(a), routes.OriginDestination)
	if errors.Is(err, routes.ErrDuplicate) {
		err = nil
	}
	if err == nil {
		g.flowsOut[[2]string{a.Broker, a.Name}] = time.Time{}
		g.publishFlows()
	}
	g.core.Result(a, err)
	ev := g.log.Info()
	if err != nil {
		ev = g.log.Warn().Err(err) // asked again at the next round
	} else {
		g.mu.Lock()
		g.counts.FlowsStarted++
		g.mu.Unlock()
	}
	ev.Str("destination", a.Name).Str("from", a.Broker).Str("to", a.To).Int("max_hops", a.MaxHops).Str("why", a.Msg).
		Msg("messages follow consumers: moving")
}

// stopFlow stops a flow gracefully: what it has in flight is settled
// first, so nothing comes back to the source as a duplicate.
func (g *globalDests) stopFlow(ctx context.Context, a globaldest.Action) {
	st, _ := g.routes.Halt(ctx, flowSpec(a).ID(), routes.HaltMode{Drain: true})
	g.flowsOut[[2]string{a.Broker, a.Name}] = time.Now()
	g.publishFlows()
	g.mu.Lock()
	g.counts.FlowsStopped++
	g.counts.Moved += st.Moved
	g.counts.Parked += st.Parked
	g.mu.Unlock()
	g.log.Info().Str("destination", a.Name).Str("from", a.Broker).Str("to", a.To).Uint64("moved", st.Moved).Uint64("parked", st.Parked).
		Str("why", a.Msg).Msg("messages follow consumers: stopped moving")
}

// flowStatus adds each flow's route, state and counts to st, on copies
// of its flows (st's elements share them with the published status).
func (g *globalDests) flowStatus(st []globaldest.Status) {
	for i := range st {
		st[i].Flows = append([]globaldest.Flow(nil), st[i].Flows...)
		for j := range st[i].Flows {
			f := &st[i].Flows[j]
			f.Route = flowSpec(globaldest.Action{Name: st[i].Name, Broker: f.From, To: f.To}).ID()
			if rs, ok := g.routes.Get(f.Route); ok {
				f.State, f.Moved, f.Parked = string(rs.State), rs.Moved, rs.Parked
			}
		}
	}
}

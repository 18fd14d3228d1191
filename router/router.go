// Package router is the fedrouter daemon: it owns the broker connections,
// the route manager and (in cmd) the admin API, and their goroutines.
package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/config"
	"github.com/fedrouter/fedrouter/routes"
	"github.com/fedrouter/fedrouter/topology"
)

// Router holds one resilient connection per configured broker.
//
// Goroutines: the router starts none itself. Its parts own theirs, each
// started by Start under the owner's context and stopped (and waited for)
// by Stop, in this order: the topology driver and the destination watcher,
// the control links, the routes, then the connections.
type Router struct {
	cfg *config.Config
	log zerolog.Logger
	// ctx is the owner's, given to Start: the parent of every part's
	// goroutines. Its end stops them all at once; Stop is the orderly way
	// and must be called either way, to wait for them.
	ctx context.Context

	mu         sync.Mutex
	pools      map[string][]*amqp.Conn // every connection per broker (brokers[].connections); the first is the broker's main one; guarded by mu
	profiles   map[string]amqp.Profile // by broker name; guarded by mu
	routes     *routes.Manager         // set by Start
	control    *Control                // set by Start when flooding is on
	topo       *topoDriver             // set by Start when flooding is on
	dests      *destWatcher            // set by Start when flooding is on
	gdests     *globalDests            // set by Start when destinations: has entries
	limitGates *limitGates             // the gates of the limited destinations; nil without limits
	table      *table                  // the topology's latest shortest paths
	cluster    *clusterPart            // set by Start in a router cluster (cluster.go)
	// routeCtl changes and lists the routes: the manager's (localRoutes)
	// or, in a cluster, the cluster's (cluster). Set by Start.
	routeCtl routeControl
	// reload is the configuration in force and the one-at-a-time slot of
	// Reload (reload.go).
	reload reloader
	// links are the links added at runtime (links.go).
	links runtimeLinks
	// progress logs the restored routes coming up (startprogress.go);
	// nil in a cluster, where the store gives the routes.
	progress *progressLogger
}

// ErrTopologyOff: the router floods no link state (no topology secret).
var ErrTopologyOff = errors.New("router: link-state flooding is off (no topology.secret in the configuration)")

// New builds a router from a validated configuration. It does not connect.
func New(cfg *config.Config, log zerolog.Logger) *Router {
	return &Router{cfg: cfg, log: log.With().Str("router", cfg.RouterID).Logger(), pools: map[string][]*amqp.Conn{}, profiles: map[string]amqp.Profile{},
		table: newTable(), reload: newReloader()}
}

// Start dials every broker in the background and starts the configured
// routes and the durable routes of the state file. ctx is the owner's (main
// gives its root, not the signal context: a signal makes main call Stop,
// which shuts the parts down in order). Call Start once.
func (r *Router) Start(ctx context.Context) error {
	r.ctx = ctx
	if err := r.dialAll(); err != nil {
		return err
	}
	brokers := map[string]amqp.Broker{}
	r.mu.Lock()
	static := r.cfg.StaticDemand()
	for name, pool := range r.pools {
		brokers[name] = amqp.Broker{Conn: pool[0], Pool: pool, Profile: r.profiles[name], StaticDemand: static[name]}
	}
	r.mu.Unlock()
	opts := routes.Options{
		RouterID: r.cfg.RouterID, Brokers: brokers, StatePath: r.cfg.StatePath(),
		Log: r.log, Backoff: r.cfg.Backoff(), DefaultNoPath: r.cfg.DefaultNoPath(),
		StallAfter: time.Duration(r.cfg.StallAfter),
		DataPath:   r.cfg.DataPath,
	}
	if r.cfg.Flooding() { // multi-hop transit rides on the link-state table
		opts.Table, opts.MaxHops = r.table, r.cfg.Topology.MaxHops
		opts.Ingress, opts.ControlAddress = r.cfg.IngressRules(), r.cfg.Topology.ControlAddress
		if opts.Ingress == nil {
			r.log.Info().Msg("the ingress is off: nothing is taken from fedrouter.ingress (ingress.enabled, ingress.allow)")
		}
		// Two refreshes: by then every live router has advertised.
		opts.TableGrace = min(max(2*time.Duration(r.cfg.Topology.Refresh), 3*time.Second), 30*time.Second)
		opts.Links = pairList(r.cfg.LinkPairs())
	}
	if r.cfg.Cluster != nil {
		opts.StatePath = "" // a member's routes live in the cluster's store
	}
	if r.limitGates = newLimitGates(r.cfg.GlobalDestinations()); r.limitGates != nil {
		opts.Gates = r.limitGates // not a typed nil: routes asks it only when set
	}
	r.routes = routes.NewManager(r.ctx, opts)
	r.routeCtl = localRoutes{r.routes}
	if r.cfg.Cluster != nil {
		if err := r.startCluster(brokers); err != nil {
			r.Stop()
			return err
		}
		r.routeCtl = r.cluster
	} else if err := r.routes.Restore(r.cfg.RouteSpecs()); err != nil {
		r.Stop()
		return err
	} else {
		r.progress = startProgressLogger(r.log, restoredIDs(r.routes.List()), r.routes.List, time.Now)
	}
	if err := r.newGlobalDests(brokers); err != nil {
		r.Stop()
		return err
	}
	if err := r.startTopology(brokers); err != nil {
		r.Stop()
		return err
	}
	if r.gdests != nil {
		var remote, others *remoteCounts
		if r.topo != nil {
			remote, others = r.table.consumers, r.table.flows
			r.gdests.shares, r.gdests.grace = &r.table.shares, sharesGrace(time.Duration(r.cfg.Topology.Refresh))
		} else if r.cfg.Cluster != nil {
			r.gdests.warnSharesAlone()
		}
		r.gdests.start(r.ctx, remote, others)
	}
	r.startReload()
	return nil
}

// startTopology starts link-state flooding over every broker, unless the
// configuration has no secret (then the router runs alone, and says so).
func (r *Router) startTopology(brokers map[string]amqp.Broker) error {
	secret, err := r.cfg.TopologySecret()
	if err != nil {
		return err
	}
	if secret == "" {
		r.log.Warn().Msg("no topology.secret: link-state flooding is off; this router neither sends nor accepts advertisements")
		return nil
	}
	r.control = NewControl(brokers, ControlOptions{RouterID: r.cfg.RouterID, Address: r.cfg.Topology.ControlAddress,
		Backoff: r.cfg.Backoff(), Log: r.log})
	listers := map[string]amqp.DestinationLister{}
	for name, b := range brokers {
		if l, ok := b.Profile.(amqp.DestinationLister); ok {
			listers[name] = l
		}
	}
	var shared *listings
	if r.gdests != nil {
		shared = &r.gdests.listings
	}
	r.dests = newDestWatcher(listers, time.Duration(r.cfg.Topology.DestinationIdle), shared, r.log)
	exts := map[string]func() json.RawMessage{DemandExt: r.localDemand, DestinationsExt: r.dests.current, ExchangeRoutesExt: r.localExchangeRoutes}
	if r.gdests != nil {
		exts[ConsumersExt] = r.gdests.advertised
		exts[FlowsExt] = func() json.RawMessage { return r.gdests.advertisedFlows(r.table.flows.sharedNow(), time.Now()) }
		exts[SharesExt] = r.gdests.advertisedShares
	}
	r.topo, err = newTopoDriver(r.cfg, secret, r.control, r.localTopology, exts, r.table, r.log)
	if err != nil {
		return fmt.Errorf("router: topology: %w", err)
	}
	if r.gdests != nil {
		r.topo.advertise = r.gdests.flowsChanged
	}
	r.control.Start(r.ctx)
	r.dests.start(r.ctx)
	r.topo.start(r.ctx)
	return nil
}

// Topology returns the link-state view of the network.
func (r *Router) Topology(ctx context.Context) (topology.Snapshot, error) {
	if r.topo == nil {
		return topology.Snapshot{}, ErrTopologyOff
	}
	return r.topo.snapshot(ctx)
}

func (r *Router) dialAll() error {
	brokers, err := r.cfg.BrokerConfigs()
	if err != nil {
		return err
	}
	conns := r.cfg.Connections()
	for _, bc := range brokers {
		if bc.TLS.InsecureSkipVerify {
			r.log.Warn().Str("broker", bc.Name).Msg("TLS certificate verification is OFF for this broker")
		}
		for _, u := range bc.PlaintextCredentials() {
			r.log.Warn().Str("broker", bc.Name).Str("url", u).Msg("the broker password crosses the network in clear (SASL PLAIN over amqp://, or the management API over http://, to a remote host): use amqps:// and https://, or set require_tls: true to refuse this")
		}
		if tested, _ := amqp.LookupProfile(bc.Profile); !tested {
			r.log.Warn().Str("broker", bc.Name).Str("profile", bc.Profile).Msg("this broker profile follows the broker's documentation and is not tested against a real broker")
		}
		prof, err := amqp.NewProfile(bc)
		if err != nil {
			r.Stop()
			return fmt.Errorf("router: broker %s: %w", bc.Name, err)
		}
		r.mu.Lock()
		r.profiles[bc.Name] = prof
		r.mu.Unlock()
		for i := range conns[bc.Name] {
			id, log := "fedrouter-"+r.cfg.RouterID+"-"+bc.Name, r.log.With().Str("broker", bc.Name).Logger()
			if i > 0 {
				id, log = fmt.Sprintf("%s-%d", id, i+1), log.With().Int("connection", i+1).Logger()
			}
			c, err := amqp.Dial(r.ctx, bc, amqp.ConnOptions{
				ContainerID:    id,
				Backoff:        r.cfg.Backoff(),
				ConnectTimeout: time.Duration(r.cfg.Reconnect.ConnectTimeout),
				OnState:        stateLogger(log),
			})
			if err != nil {
				r.Stop()
				return err
			}
			r.mu.Lock()
			r.pools[bc.Name] = append(r.pools[bc.Name], c)
			r.mu.Unlock()
		}
	}
	return nil
}

// stateLogger logs each change of state once; retries while Waiting are
// logged at debug after the first, so an outage does not flood the log.
func stateLogger(log zerolog.Logger) func(amqp.Status) {
	var last amqp.State = -1
	return func(st amqp.Status) {
		if st.State == last && st.State != amqp.Waiting {
			return
		}
		ev := log.Info()
		switch {
		case st.State == amqp.Failed:
			ev = log.Error()
		case st.State == amqp.Waiting && last == amqp.Operational:
			ev = log.Warn()
		case st.State == last || (st.State == amqp.Connecting && st.Attempt > 0) || (st.State == amqp.Waiting && st.Attempt > 1):
			ev = log.Debug()
		}
		last = st.State
		ev = ev.Str("state", st.State.String()).Str("url", st.URL)
		if st.LastError != nil && st.State != amqp.Operational {
			ev = ev.AnErr("last_error", st.LastError)
		}
		if st.RetryIn > 0 {
			ev = ev.Dur("retry_in", st.RetryIn).Int("attempt", st.Attempt)
		}
		ev.Msg("broker connection")
	}
}

// Status returns every broker connection's status, sorted by broker name.
func (r *Router) Status() []amqp.Status {
	conns := r.snapshot()
	out := make([]amqp.Status, 0, len(conns))
	for _, c := range conns {
		st, _ := c.Status()
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Broker < out[j].Broker })
	return out
}

// WaitOperational waits until every broker is Operational or ctx ends.
func (r *Router) WaitOperational(ctx context.Context) error {
	conns := r.snapshot()
	for _, c := range conns {
		if _, _, err := c.WaitOperational(ctx); err != nil {
			return fmt.Errorf("router: %w", err)
		}
	}
	return nil
}

// Stop stops the routes, then closes every connection and waits for their
// goroutines. The closed connections stay listed (state Closed) in Status.
func (r *Router) Stop() {
	r.progress.stop()
	if r.gdests != nil {
		r.gdests.stop()
	}
	if r.topo != nil {
		r.topo.stop()
		r.dests.stop()
	}
	if r.control != nil {
		r.control.Stop()
	}
	if r.cluster != nil { // hands its routes off and leaves first
		r.cluster.stop()
	}
	if r.routes != nil { // set only by Start, so r.ctx is too
		// The routes' graceful stop has a deadline of its own and keeps
		// it when the owner's context has already ended.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), routesStopTimeout)
		r.routes.Stop(ctx)
		cancel()
	}
	r.mu.Lock()
	for _, p := range r.profiles {
		p.Close()
	}
	var all []*amqp.Conn
	for _, pool := range r.pools {
		all = append(all, pool...)
	}
	r.mu.Unlock()
	for _, c := range all { // Close waits for network teardown: not under mu
		_ = c.Close() // always nil
	}
}

// routesStopTimeout bounds Stop's wait for the routes to stop gracefully.
const routesStopTimeout = 30 * time.Second

// snapshot copies the brokers' main connections so callers can do I/O
// without mu.
func (r *Router) snapshot() []*amqp.Conn {
	r.mu.Lock()
	defer r.mu.Unlock()
	conns := make([]*amqp.Conn, 0, len(r.pools))
	for _, pool := range r.pools {
		conns = append(conns, pool[0])
	}
	return conns
}

// Service implementation (the admin API's view of the router).

// RouterID names this router.
func (r *Router) RouterID() string { return r.cfg.RouterID }

// AddRoute adds a runtime route.
func (r *Router) AddRoute(ctx context.Context, spec routes.Spec) (routes.Status, error) {
	if err := refuseOwned(spec, r.cfg.Topology.ControlAddress); err != nil {
		return routes.Status{}, err
	}
	return r.routeCtl.add(ctx, spec)
}

// DeleteRoute deletes the route with spec's identity.
func (r *Router) DeleteRoute(ctx context.Context, spec routes.Spec) error {
	return r.routeCtl.deleteSpec(ctx, spec)
}

// DeleteRouteID deletes the route with id.
func (r *Router) DeleteRouteID(ctx context.Context, id string) error {
	return r.routeCtl.deleteID(ctx, id)
}

// FlushRoutes deletes the runtime routes (to dest, if given).
func (r *Router) FlushRoutes(ctx context.Context, dest string) (int, error) {
	return r.routeCtl.flush(ctx, dest)
}

// Routes lists the routes. In a cluster: every route of the cluster, with
// its holder; only this member's own when the store cannot be read.
func (r *Router) Routes() []routes.Status { return r.routeCtl.list() }

// RoutesPage is a page of Routes (routes.Page): a single router computes
// the page's statuses only; a cluster member pages the cluster's list,
// and says why it is partial when its store cannot be read.
func (r *Router) RoutesPage(after string, limit int) ([]routes.Status, string, string, error) {
	return r.routeCtl.page(after, limit)
}

// OwnRoutes lists the routes this router runs (in a cluster, Routes lists
// the whole cluster's: per-route series would repeat on every member).
func (r *Router) OwnRoutes() []routes.Status { return r.routeCtl.own() }

// Links lists the links.
func (r *Router) Links() []routes.LinkStatus { return r.routes.Links() }

// Brokers lists the broker connections.
func (r *Router) Brokers() []amqp.Status { return r.Status() }

var _ Service = (*Router)(nil)

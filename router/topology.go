package router

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"sort"
	"time"

	"github.com/rs/zerolog"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/config"
	"github.com/fedrouter/fedrouter/internal/group"
	"github.com/fedrouter/fedrouter/internal/ratelog"
	"github.com/fedrouter/fedrouter/routes"
	"github.com/fedrouter/fedrouter/topology"
)

// topoDriver runs the link-state core (topology.Node, a pure state
// machine) against the world: it feeds it control messages from the
// brokers, the router's own brokers and links, and the clock, and carries
// out what it returns (floods through Control). One goroutine (run) owns
// the node; views are asked for through snapReq. run is in a group owned
// by the driver, started by start under the router's context and stopped
// (and waited for) by stop.
type topoDriver struct {
	node  *topology.Node // owned by run
	ctl   *Control
	local func() ([]topology.BrokerState, []topology.Link)
	// exts return the extensions to advertise (DemandExt, DestinationsExt)
	// by key; nil removes one.
	exts  map[string]func() json.RawMessage
	peers []string // configured peers: inboxes on queue-only brokers
	self  string
	log   zerolog.Logger

	// table is the latest shortest-path table, for readers outside the
	// driver's goroutine (dynamic routes); a *Paths is never changed once
	// published.
	table        *table
	edgesErr     string           // the last advertised-edges error logged (owned by run)
	consumersErr string           // the last advertised-consumers error logged (owned by run)
	flowsErr     string           // the last advertised-flows error logged (owned by run)
	sharesErr    string           // the last advertised-shares error logged (owned by run)
	limit        *ratelog.Limiter // warnings about the node's events, by kind
	brokers      []string         // this router's, by name
	// advertise, when set (before start), asks for the extensions to be
	// read and advertised now rather than at the next localEvery.
	advertise <-chan struct{}

	snapReq chan chan topology.Snapshot
	g       *group.Group  // run's; set by start
	done    chan struct{} // closed when run returns: snapshots fail after
}

// localEvery is how often the router's own brokers and links are compared
// with what it last advertised (a change is advertised at once after), and
// the counted drops and events reported.
const localEvery = 500 * time.Millisecond

// receiveBatch is how many received advertisements the driver applies
// before it looks at its timers and snapshot requests again.
const receiveBatch = 64

// eventLogEvery: warnings about refused advertisements (which a replay or
// a router with a bad clock can repeat at the rate of the control
// messages) are logged at most once per kind and interval, with counts.
const eventLogEvery = 10 * time.Second

// DemandExt is the advertisement extension holding the demand at this
// router's brokers: {"<broker>": {"<exchange>": ["<key>", ...]}}.
const DemandExt = "demand"

// topoConfig is the link-state node's configuration from the router's.
func topoConfig(cfg *config.Config, secret string) topology.Config {
	tc := topology.DefaultConfig()
	tc.RouterID, tc.Secret = cfg.RouterID, []byte(secret)
	tc.Instance = time.Now().UnixNano()
	tc.Refresh, tc.MaxAge = time.Duration(cfg.Topology.Refresh), time.Duration(cfg.Topology.MaxAge)
	tc.Rand = rand.Float64
	return tc
}

func newTopoDriver(cfg *config.Config, secret string, ctl *Control, local func() ([]topology.BrokerState, []topology.Link), exts map[string]func() json.RawMessage, table *table, log zerolog.Logger) (*topoDriver, error) {
	tc := topoConfig(cfg, secret)
	node, err := topology.New(tc)
	if err != nil {
		return nil, err
	}
	// The transport checks signatures before it queues anything.
	ctl.SetSecret(tc.Secret)
	brokers := make([]string, 0, len(cfg.Brokers))
	for _, b := range cfg.Brokers {
		brokers = append(brokers, b.Name)
	}
	return &topoDriver{node: node, ctl: ctl, local: local, exts: exts, table: table, peers: cfg.Topology.Peers, self: cfg.RouterID, brokers: brokers,
		log: log.With().Str("subsystem", "topology").Logger(), limit: ratelog.New(eventLogEvery),
		snapReq: make(chan chan topology.Snapshot), done: make(chan struct{})}, nil
}

// start runs the driver under ctx (the router's). Call it once.
func (d *topoDriver) start(ctx context.Context) {
	d.g = group.New(ctx)
	d.g.Go(d.run)
}

// stop stops run and waits for it.
func (d *topoDriver) stop() {
	d.g.Stop()
}

// snapshot asks the driver's goroutine for the current view.
func (d *topoDriver) snapshot(ctx context.Context) (topology.Snapshot, error) {
	ch := make(chan topology.Snapshot, 1)
	select {
	case d.snapReq <- ch:
	case <-d.done:
		return topology.Snapshot{}, routes.ErrStopped
	case <-ctx.Done():
		return topology.Snapshot{}, ctx.Err()
	}
	select {
	case s := <-ch:
		return s, nil
	case <-ctx.Done():
		return topology.Snapshot{}, ctx.Err()
	}
}

func (d *topoDriver) run(ctx context.Context) {
	defer close(d.done)
	timer := time.NewTimer(0)
	defer timer.Stop()
	local := time.NewTicker(localEvery)
	defer local.Stop()
	d.setLocal(time.Now())
	for {
		var ready topology.Ready
		select {
		case <-d.ctl.Ready():
			d.receive()
		case <-timer.C:
			ready = d.node.Tick(time.Now())
		case <-d.advertise:
			d.setLocal(time.Now())
		case <-local.C:
			now := time.Now()
			d.setLocal(now)
			d.ctl.ReportDrops(now)
			d.reportEvents(now)
		case ch := <-d.snapReq:
			ch <- d.snapshotNow(time.Now())
		case <-ctx.Done():
			return
		}
		d.carryOut(ready)
		d.storeEdges()
		d.storeConsumers()
		d.storeFlows()
		d.storeShares()
		timer.Reset(time.Until(d.node.NextTick(time.Now())))
	}
}

// receive applies the advertisements waiting in the transport, at most
// receiveBatch (Take signals again when more wait).
func (d *topoDriver) receive() {
	for range receiveBatch {
		in, ok := d.ctl.Take()
		if !ok {
			return
		}
		d.carryOut(d.node.Receive(in.Data, in.Broker, time.Now()))
	}
}

// snapshotNow is the node's view with what the transport dropped before
// the node saw it: by reason, and folded into the node's counters of the
// same reasons, so that bad_signature (say) counts every forgery.
func (d *topoDriver) snapshotNow(now time.Time) topology.Snapshot {
	s := d.node.Snapshot(now)
	s.ControlDropped = d.ctl.Stats().Dropped
	for reason, n := range s.ControlDropped {
		s.Counters.Add(reason, n)
	}
	return s
}

func (d *topoDriver) setLocal(now time.Time) {
	brokers, links := d.local()
	ready, err := d.node.SetLocal(brokers, links, now)
	if err != nil {
		d.log.Error().Err(err).Msg("local state refused")
		return
	}
	d.carryOut(ready)
	for key, get := range d.exts {
		d.carryOut(d.node.SetExt(key, get(), now))
	}
}

// carryOut floods what the node asks for and logs its events.
func (d *topoDriver) carryOut(r topology.Ready) {
	for _, out := range r.Flood {
		for _, b := range out.To {
			if !d.ctl.Send(b, out.Data, d.inboxes(b)) {
				d.log.Debug().Str("broker", b).Msg("control queue full: advertisement dropped (a refresh follows)")
			}
		}
	}
	for _, e := range r.Events {
		d.logEvent(e)
	}
	if len(r.Named) > 0 {
		d.table.AddNamed(r.Named)
	}
	if r.TableChanged && r.Table != nil {
		d.table.Store(r.Table)
	}
	if r.TableChanged {
		// The radius needs every broker's shortest-path tree, which the
		// table computes only on demand: said for small federations only
		// (at 1,000 brokers it would cost ~0.16 s of CPU per change here).
		bs := r.Table.Brokers()
		ev := d.log.Info().Int("broker_count", len(bs))
		if len(bs) <= logRadiusMax {
			ev = ev.Strs("brokers", bs).Int("radius", r.Table.Radius())
		}
		ev.Msg("shortest-path table changed")
	}
}

// logRadiusMax is the largest federation whose table change is logged
// with its broker list and radius.
const logRadiusMax = 64

// inboxes are the routers to publish to on a queue-only broker: those the
// node knows on it, and the configured peers.
func (d *topoDriver) inboxes(broker string) []string {
	if d.ctl.Multicast(broker) {
		return nil
	}
	set := map[string]bool{}
	for _, p := range append(d.node.Peers(broker), d.peers...) {
		if p != d.self {
			set[p] = true
		}
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// logEvent logs one of the node's events. Warnings are rate-limited by
// kind (reportEvents gives the counts): a replay, or a router with a bad
// clock, can repeat them at the rate of the control messages.
func (d *topoDriver) logEvent(e topology.Event) {
	ev := d.log.Debug()
	switch e.Kind {
	case topology.EventRejected, topology.EventDuplicateID, topology.EventVersionUnknown, topology.EventOriginateFailed,
		topology.EventTooOld, topology.EventFuture:
		if !d.limit.Allow(e.Kind.String(), time.Now()) {
			return
		}
		ev = d.log.Warn().Dur("report_every", eventLogEvery)
	case topology.EventReplayed: // a replay, or a late copy (a sync from a router that held it longer)
		if !d.limit.Allow(e.Kind.String(), time.Now()) {
			return
		}
		ev = d.log.Info().Dur("report_every", eventLogEvery)
	case topology.EventExpired, topology.EventRestart:
		ev = d.log.Info()
	}
	ev.Str("event", e.String()).Msg("link state")
}

// reportEvents logs the warnings logEvent held back, with their counts.
func (d *topoDriver) reportEvents(now time.Time) {
	for _, s := range d.limit.Due(now) {
		ev := d.log.Warn()
		if s.Key == topology.EventReplayed.String() {
			ev = d.log.Info()
		}
		ev.Str("event", s.Key).Uint64("count", s.Count).Dur("over", s.Over).Msg("link state: events not logged one by one")
	}
}

// storeEdges hands the other routers' exchange routes to the table (fan-
// out reads them there); a bad value is logged once per change of errors.
func (d *topoDriver) storeEdges() {
	err := d.table.StoreEdges(d.node.Ext(ExchangeRoutesExt))
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if msg != d.edgesErr {
		if err != nil {
			d.log.Warn().Err(err).Msg("advertised exchange routes refused; the router's previous ones are kept")
		}
		d.edgesErr = msg
	}
}

// storeConsumers hands the other routers' ConsumersExt to the table (the
// global destinations read it there); a bad value is logged once per
// change of errors.
func (d *topoDriver) storeConsumers() {
	d.storeExt(d.table.consumers, ConsumersExt, &d.consumersErr,
		"advertised consumers refused: that router's brokers are no flow targets until it advertises them again")
}

// storeFlows hands the other routers' FlowsExt to the table, with which
// of this router's brokers another router is attached to (the global
// destinations subtract those routers' flows from the consumers there).
func (d *topoDriver) storeFlows() {
	shared := map[string]bool{}
	for _, b := range d.brokers {
		if slices.ContainsFunc(d.node.Peers(b), func(id string) bool { return id != d.self }) {
			shared[b] = true
		}
	}
	d.table.flows.setShared(shared)
	d.storeExt(d.table.flows, FlowsExt, &d.flowsErr,
		"advertised flows refused: that router's flows count as consumers until it advertises sound ones")
}

// extStore takes every other router's value of one extension, refusing
// unsound ones (remoteCounts, remoteShares).
type extStore interface {
	store(self string, ext map[string]json.RawMessage, attached func(router, broker string) bool) error
}

// storeExt stores extension ext's values in rc, logging a refusal once
// per change of errors (last).
func (d *topoDriver) storeExt(rc extStore, ext string, last *string, refused string) {
	err := rc.store(d.self, d.node.Ext(ext), func(router, broker string) bool {
		return slices.Contains(d.node.Peers(broker), router)
	})
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if msg != *last {
		if err != nil {
			d.log.Warn().Err(err).Msg(refused)
		}
		*last = msg
	}
}

// storeShares hands the other routers' SharesExt to the table (the
// global destinations' limits read it there); a refused value is logged
// once per change of errors, and counted.
func (d *topoDriver) storeShares() {
	d.storeExt(&d.table.shares, SharesExt, &d.sharesErr,
		"advertised shares of limited destinations refused: that router takes no part in deciding them until it advertises sound ones")
}

// localExchangeRoutes encodes the routes taking part in fan-out for
// ExchangeRoutesExt.
func (r *Router) localExchangeRoutes() json.RawMessage {
	es := r.routes.ExchangeEdges()
	return extValue(es, len(es))
}

// localDemand encodes the dynamic routes' local demand for DemandExt.
func (r *Router) localDemand() json.RawMessage {
	d := r.routes.LocalDemand()
	return extValue(d, len(d))
}

// extValue encodes an extension's value; nil (the extension is not
// advertised) when it has no entries.
func extValue(v any, entries int) json.RawMessage {
	if entries == 0 {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil { // plain maps and structs of strings: cannot fail
		return nil
	}
	return b
}

// localTopology reports the router's brokers and links for its LSA: every
// connection with its state, the configured links (both ways), and one
// link per (src, dest) pair of routes between its own brokers, with the
// lowest cost among them; each up while both ends are Operational.
func (r *Router) localTopology() ([]topology.BrokerState, []topology.Link) {
	sts := r.Status()
	state := map[string]amqp.State{}
	brokers := make([]topology.BrokerState, 0, len(sts))
	for _, st := range sts {
		state[st.Broker] = st.State
		brokers = append(brokers, topology.BrokerState{Name: st.Broker, State: st.State.String()})
	}
	cost := r.linkPairs()
	for _, rt := range r.routes.List() {
		if _, attached := state[rt.Spec.Dest]; !attached {
			continue // a multi-hop route: the links on its way are other routers'
		}
		k := [2]string{rt.Spec.Src, rt.Spec.Dest}
		if c, ok := cost[k]; !ok || int64(rt.Spec.Cost) < c {
			cost[k] = int64(rt.Spec.Cost)
		}
	}
	links := make([]topology.Link, 0, len(cost))
	for k, c := range cost {
		up := state[k[0]] == amqp.Operational && state[k[1]] == amqp.Operational
		links = append(links, topology.Link{From: k[0], To: k[1], Cost: c, Up: up})
	}
	return brokers, links
}

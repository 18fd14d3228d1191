package routes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/internal/group"
	"github.com/fedrouter/fedrouter/internal/ownfile"
	"github.com/fedrouter/fedrouter/links"
	"github.com/fedrouter/fedrouter/routes/pathpolicy"
)

// Options configure a Manager; zero values take the defaults.
type Options struct {
	RouterID string
	Brokers  map[string]amqp.Broker // by configured name
	// StatePath is the state file of durable runtime routes; "" keeps
	// them in memory only (tests).
	StatePath string
	Log       zerolog.Logger
	Backoff   amqp.Backoff // retry delays of a route; default DefaultBackoff
	// DataPath is what routes forward on: DataPathEngine, the only one
	// ("" too; CheckDataPath).
	DataPath string
	// PoisonRuns: consecutive runs that died on the message at the head
	// of the source (sent, nothing settled) before the route is set
	// Failed. Default 3.
	PoisonRuns int
	// FailedRetry: how often a Failed route tries again (the operator may
	// have removed the poison message or created the exchange). Default 5m.
	FailedRetry time.Duration
	// SetupTimeout bounds attaching a route's links. Default 30s.
	SetupTimeout time.Duration
	// SetupParallel bounds the routes attaching their links at once; the
	// others wait their turn before their SetupTimeout starts. Default
	// DefaultSetupParallel.
	SetupParallel int
	// DemandInterval: how often a dynamic route compares its bindings with
	// the destination's demand when the destination publishes no binding
	// events. Default 1s.
	DemandInterval time.Duration
	// DefaultNoPath is the corrective action of routes without their own
	// no_path; empty: hold.
	DefaultNoPath []pathpolicy.Step
	// DemandReconcile: how often it does so when it follows binding events
	// (so that a missed event heals). Default 10s.
	DemandReconcile time.Duration
	// Table, when set, is the link-state table (transit.go): it turns on
	// multi-hop transit (routes to brokers this router is not attached
	// to, the reroute no-path action, the ingress, and the transit
	// forwarders between this router's brokers), fan-out for exchange
	// routes (fanout.go), and dynamic routes following demand only along
	// shortest paths (dynamic.go). Nil: no mesh.
	Table Table
	// Links are the configured links (broker pairs, both ways), listed
	// with the routes' own; SetLinks replaces them (guarded by mu then).
	Links [][2]string
	// TableGrace: for this long after the manager starts, a destination the
	// table has no path to is not yet taken as unreachable (the other
	// routers' advertisements are still coming in): routes hold instead of
	// starting their no-path chain. Default 10s.
	TableGrace time.Duration
	// MaxHops bounds a message's transit hops. Default links.DefaultMaxHops.
	MaxHops int
	// TransitWindow is each transit forwarder's window. Default
	// DefaultCredit.
	TransitWindow int
	// TransitOutcomeTimeout bounds the wait for an outcome in transit.
	// Default DefaultOutcomeTimeout.
	TransitOutcomeTimeout time.Duration
	// Ingress, with Table, lists the brokers whose ingress this router
	// serves and what each lets through (transitrun.go); a broker not
	// listed has none: nothing is taken from its fedrouter.ingress.
	Ingress map[string][]links.IngressRule
	// ControlAddress is the control node (topology.control_address):
	// router-owned, never a destination of transit or the ingress.
	ControlAddress string
	// Gates, when set, holds back routes into a global destination with
	// limits (gate.go).
	Gates Gates
	// StallAfter: an attached route holding messages that forwards none
	// for this long is Stalled (stall.go). Default DefaultStallAfter;
	// negative: never.
	StallAfter time.Duration
}

// Manager runs the routes: one goroutine per route, owned here and
// stopped by Delete or Stop. mu is taken before stateLog.mu and the
// group's (docs/architecture.md, Lock order); no I/O under it.
type Manager struct {
	opts Options
	log  zerolog.Logger
	// state writes the durable runtime routes (journal.go); nil without
	// a state file. A change is queued for it under mu, so the journal
	// has the changes in their order, and acknowledged once synced.
	state *stateLog

	// group owns every route's goroutine and the transit reconciler: its
	// context, from NewManager's caller, is their parent; Stop waits for
	// them all.
	group *group.Group
	// env is what the routes' modes need of the manager (newModeEnv).
	env *modeEnv

	mu     sync.Mutex
	routes map[string]*route // by Spec.ID(); guarded by mu
	// syncing are the routes Add has journaled and not started yet, by
	// id: their ids are taken (a second add is a duplicate) until their
	// line is durable, and a fold's snapshot holds them (the journal it
	// empties may hold their lines). Guarded by mu.
	syncing map[string]Spec
	spread  map[string]int // next pool connection per broker; guarded by mu
	stopped bool           // guarded by mu
	transit []*forwarder   // the running transit forwarders; guarded by mu
	// edges are the routes taking part in fan-out (fanout.go), sorted;
	// replaced, never changed, whenever routes changes. Guarded by mu.
	edges []ExchangeEdge

	started time.Time // when NewManager ran: the table fills from then

	// setupSlots holds a token per route attaching its links
	// (setupSlot).
	setupSlots chan struct{}
}

// NewManager builds a manager; it runs nothing until routes are added.
// Its routes and transit forwarders run under ctx, the owner's: its end
// stops them, and Stop (which the owner calls either way) waits for them.
func NewManager(ctx context.Context, opts Options) *Manager {
	if opts.DataPath == "" {
		opts.DataPath = DataPathEngine
	}
	if opts.Backoff.Min == 0 {
		opts.Backoff = amqp.DefaultBackoff()
	}
	if opts.PoisonRuns <= 0 {
		opts.PoisonRuns = 3
	}
	if opts.FailedRetry <= 0 {
		opts.FailedRetry = 5 * time.Minute
	}
	if opts.SetupTimeout <= 0 {
		opts.SetupTimeout = 30 * time.Second
	}
	if opts.SetupParallel <= 0 {
		opts.SetupParallel = DefaultSetupParallel
	}
	if opts.DemandInterval <= 0 {
		opts.DemandInterval = time.Second
	}
	if opts.DemandReconcile <= 0 {
		opts.DemandReconcile = 10 * time.Second
	}
	if opts.MaxHops <= 0 {
		opts.MaxHops = links.DefaultMaxHops
	}
	if opts.TableGrace <= 0 {
		opts.TableGrace = 10 * time.Second
	}
	if opts.TransitWindow <= 0 {
		opts.TransitWindow = DefaultCredit
	}
	if opts.TransitOutcomeTimeout <= 0 {
		opts.TransitOutcomeTimeout = DefaultOutcomeTimeout
	}
	if opts.StallAfter == 0 {
		opts.StallAfter = DefaultStallAfter
	}
	m := &Manager{opts: opts, log: opts.Log, group: group.New(ctx), routes: map[string]*route{}, syncing: map[string]Spec{}, started: time.Now(),
		setupSlots: make(chan struct{}, opts.SetupParallel)}
	m.env = newModeEnv(m)
	if opts.StatePath != "" {
		m.state = newStateLog(opts.StatePath, m.durableSpecs)
	}
	if opts.Table != nil {
		m.group.Go(m.runTransit)
	}
	if opts.StallAfter > 0 {
		m.group.Go(m.watchStalls)
	}
	return m
}

// Restore starts the configured routes and the durable runtime routes of
// the state file. A configured route also found in the state file is
// started once, as configured.
func (m *Manager) Restore(configured []Spec) error {
	for _, s := range configured {
		if _, err := m.run(s, OriginConfig, nil); err != nil {
			return err
		}
	}
	if m.opts.StatePath == "" {
		return nil
	}
	// Before anything in it is read: a directory others may write to
	// would let them plant the routes this router runs.
	if err := ownfile.PrepareDir(filepath.Dir(m.opts.StatePath)); err != nil {
		return fmt.Errorf("routes: state directory: %w", err)
	}
	if n, err := RemoveStateTemp(m.opts.StatePath); err != nil {
		return err
	} else if n > 0 {
		m.log.Info().Int("files", n).Str("state_file", m.opts.StatePath).Msg("removed the temporary state files an interrupted save left behind")
	}
	saved, torn, err := LoadJournaled(m.opts.StatePath)
	if err != nil {
		return err
	}
	if torn {
		m.log.Warn().Str("state_file", m.opts.StatePath).Msg("the state journal ended in a torn line (a crash while it was written; that change was never acknowledged): dropped")
	}
	for _, s := range saved {
		if _, err := m.run(s, OriginRuntime, nil); err != nil && !errors.Is(err, ErrDuplicate) {
			return fmt.Errorf("routes: restore %s: %w", s, err)
		}
	}
	// A journal left with lines is folded now: it then starts empty,
	// with nothing torn to append after. Without one, nothing is written
	// before the first durable change.
	if j, err := os.Lstat(m.opts.StatePath + JournalSuffix); err == nil && j.Size() > 0 {
		if err := m.state.enqueueCompact(true)(); err != nil {
			return err
		}
	}
	m.log.Info().Int("configured", len(configured)).Int("restored", len(saved)).Msg("routes started")
	return nil
}

// Add adds a runtime route. A durable one is in the state file before it
// starts, so a route that ever ran is never forgotten by a restart; Add
// returns once it has started. A ctx that ended before the change was
// made changes nothing.
func (m *Manager) Add(ctx context.Context, spec Spec) (Status, error) {
	if err := ctx.Err(); err != nil {
		return Status{}, fmt.Errorf("routes: add: %w", err)
	}
	spec, steps, err := m.admit(spec)
	if err != nil {
		return Status{}, err
	}
	id := spec.ID()
	m.mu.Lock()
	if err := m.refuseLocked(id); err != nil {
		m.mu.Unlock()
		return Status{}, err
	}
	durable := noWait
	if m.state != nil && spec.Durable {
		// Queued under mu: the journal has the changes in their order.
		durable = m.state.enqueue(journalLine{Add: &spec})
		m.syncing[id] = spec
	}
	m.mu.Unlock()
	err = durable() // the sync is not cut short: the line may be on disk already
	m.mu.Lock()
	delete(m.syncing, id)
	var r *route
	if err == nil {
		r, err = m.runLocked(spec, steps, OriginRuntime, nil)
	}
	m.mu.Unlock()
	if err != nil {
		return Status{}, err
	}
	m.log.Info().Str("route", r.id).Str("spec", r.spec.String()).Bool("durable", r.spec.Durable).Msg("route added")
	return r.status(), nil
}

// Start runs spec as a route another part of the router owns, not
// journaled and not deletable through Delete: a global destination's flow
// (OriginDestination; Halt stops it), or a configured route a reload adds
// or changes (OriginConfig; StopConfigured stops it).
func (m *Manager) Start(spec Spec, origin Origin) (Status, error) {
	r, err := m.run(spec, origin, nil)
	if err != nil {
		return Status{}, err
	}
	m.log.Info().Str("route", r.id).Str("spec", r.spec.String()).Str("origin", string(origin)).Msg("route started")
	return r.status(), nil
}

// run starts a route that is not journaled: configured and restored
// routes are on disk already, a cluster's are in its store, a flow is the
// global destinations'. fence, when set, is asked before each message (a
// route held in a cluster: held.go).
func (m *Manager) run(spec Spec, origin Origin, fence func() bool) (*route, error) {
	spec, steps, err := m.normalize(spec, nil)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.refuseLocked(spec.ID()); err != nil {
		return nil, err
	}
	return m.runLocked(spec, steps, origin, fence)
}

// refuseLocked says why a route with id cannot be added now: the manager
// stopped, or the id is taken. The caller holds mu.
func (m *Manager) refuseLocked(id string) error {
	if m.stopped {
		return ErrStopped
	}
	if _, syncing := m.syncing[id]; syncing {
		return ErrDuplicate
	}
	if _, dup := m.routes[id]; dup {
		return ErrDuplicate
	}
	return nil
}

// runLocked is every route's start, once its spec is normalized: into
// the map and running, together under mu (no route in the map that does
// not run). The caller holds mu.
func (m *Manager) runLocked(spec Spec, steps []pathpolicy.Step, origin Origin, fence func() bool) (*route, error) {
	if m.stopped {
		return nil, ErrStopped
	}
	id := spec.ID()
	if _, dup := m.routes[id]; dup {
		return nil, ErrDuplicate
	}
	r := newRoute(m, spec, steps, origin, m.nextConn)
	r.fence = fence
	m.routes[id] = r
	m.edgesAfterLocked(r)
	if !r.start(m.group) {
		delete(m.routes, id)
		m.edgesAfterLocked(r)
		return nil, ErrStopped
	}
	return r, nil
}

// noWait is the durable wait of a change that is not journaled.
func noWait() error { return nil }

// journalLocked queues lines for r's changes when r is a durable runtime
// route and there is a state file; the caller holds mu.
func (m *Manager) journalLocked(line journalLine, r *route) func() error {
	if m.state == nil || r.origin != OriginRuntime || !r.spec.Durable {
		return noWait
	}
	return m.state.enqueue(line)
}

// DefaultSetupParallel: routes attaching at once. A router started with
// 10,000 durable routes sent 20,000 session begins to two RabbitMQ nodes
// at once; most timed out half done, were retried and timed out again.
// Taking turns, each attach is quick and none is wasted.
const DefaultSetupParallel = 32

// setupSlot waits for a turn to attach a route's links, until ctx ends;
// release gives it back (more than once is fine).
func (m *Manager) setupSlot(ctx context.Context) (release func(), err error) {
	select {
	case m.setupSlots <- struct{}{}:
		var once sync.Once
		return func() { once.Do(func() { <-m.setupSlots }) }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// nextConn picks the pool connection for a new route on a broker, round
// robin; the caller holds mu.
func (m *Manager) nextConn(b amqp.Broker, name string) *amqp.Conn {
	if len(b.Pool) < 2 {
		return b.Conn
	}
	if m.spread == nil {
		m.spread = map[string]int{}
	}
	c := b.Pool[m.spread[name]%len(b.Pool)]
	m.spread[name]++
	return c
}

// Normalize resolves spec's brokers to configured names, applies the
// defaults and checks it (Spec.Check).
func (m *Manager) Normalize(spec Spec) (Spec, error) {
	spec, _, err := m.normalize(spec, nil)
	return spec, err
}

// Admit is Normalize for a route added at runtime: besides, it refuses
// what the route could never do once running — a dynamic route between
// brokers whose profiles cannot follow demand — rather than add a route
// that fails for ever — and a multi-hop route towards a broker no
// advertisement has named, unless forced (Network.Known). (Routes of the
// file and of the state file start as they always did, and fail so.)
// The spec it returns has no Force: that is the request's, not the
// route's.
func (m *Manager) Admit(spec Spec) (Spec, error) {
	spec, _, err := m.admit(spec)
	return spec, err
}

func (m *Manager) admit(spec Spec) (Spec, []pathpolicy.Step, error) {
	var known func(string) bool
	if m.opts.Table != nil {
		known = m.opts.Table.Known
	}
	spec, steps, err := m.normalize(spec, known)
	spec.Force = false
	if err != nil || spec.Kind != KindDynamic {
		return spec, steps, err
	}
	if _, _, err := demandOf(spec, m.opts.Brokers[spec.Src], m.opts.Brokers[spec.Dest]); err != nil {
		return spec, nil, &SpecError{Problems: []string{strings.TrimPrefix(err.Error(), "routes: ")}}
	}
	return spec, steps, nil
}

// normalize is Normalize, and returns the route's no_path chain (its own,
// else the manager's default); known, when set, is Network.Known.
func (m *Manager) normalize(spec Spec, known func(string) bool) (Spec, []pathpolicy.Step, error) {
	var err error
	if spec.Src, err = m.Resolve(spec.Src); err != nil {
		return spec, nil, err
	}
	if spec.Dest, err = m.resolveDest(spec.Dest); err != nil {
		return spec, nil, err
	}
	if _, attached := m.opts.Brokers[spec.Dest]; !attached && spec.Dest != "" && spec.Kind == KindDynamic {
		// A broker known only from the link-state network: routes to it
		// deliver through transit, which dynamic routes do not.
		return spec, nil, fmt.Errorf("%w: dynamic route to %s: dynamic routes need both brokers attached to this router", ErrUnknownBroker, spec.Dest)
	}
	spec = spec.WithDefaults()
	steps, err := spec.Check(Network{Flooding: m.opts.Table != nil, Attached: m.attached, Known: known})
	if err != nil {
		return spec, nil, err
	}
	if len(spec.NoPath) == 0 {
		steps = m.opts.DefaultNoPath
		if spec.Kind == KindDynamic && pathpolicy.Rerouting(steps) {
			// A dynamic route follows demand along shortest paths
			// already: the router's default reroute is not for it.
			steps = steps[1:]
		}
	}
	return spec, steps, nil
}

// attached says whether broker is one of this router's.
func (m *Manager) attached(broker string) bool {
	_, ok := m.opts.Brokers[broker]
	return ok
}

// resolveDest resolves a route's destination: a configured broker, or a
// remote one (remoteBroker).
func (m *Manager) resolveDest(s string) (string, error) {
	name, err := m.Resolve(s)
	if err != nil && m.remoteBroker(s) {
		return s, nil
	}
	return name, err
}

// remoteBroker says whether name can be a route's remote destination: a
// plain broker name (not host:port) with link state on. Whether the
// network has it is for the table to say, now or later: until then the
// route holds (its no-path chain).
func (m *Manager) remoteBroker(name string) bool {
	return m.opts.Table != nil && name != "" && !strings.ContainsAny(name, ":@/ ")
}

// Delete deletes the route with id: stops it and, for an exchange route,
// removes its subscription at the source (messages queued there for this
// route are dropped with it).
func (m *Manager) Delete(ctx context.Context, id string) error {
	m.mu.Lock()
	r, ok := m.routes[id]
	if !ok {
		m.mu.Unlock()
		return fmt.Errorf("%w: id %s", ErrNotFound, id)
	}
	switch r.origin {
	case OriginConfig:
		m.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrConfigRoute, r.spec)
	case OriginDestination:
		m.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrDestinationRoute, r.spec)
	}
	delete(m.routes, id)
	m.edgesAfterLocked(r)
	durable := m.journalLocked(journalLine{Del: id}, r)
	m.mu.Unlock()
	err := durable()
	r.stop()
	r.unsubscribe(ctx)
	m.log.Info().Str("route", id).Str("spec", r.spec.String()).Msg("route deleted")
	return err
}

// DeleteSpec deletes the route with spec's identity.
func (m *Manager) DeleteSpec(ctx context.Context, spec Spec) error {
	var err error
	if spec.Src, err = m.Resolve(spec.Src); err != nil {
		return err
	}
	if spec.Dest, err = m.resolveDest(spec.Dest); err != nil {
		return err
	}
	return m.Delete(ctx, spec.ID())
}

// Flush deletes every runtime route, or those to dest when dest != "",
// as one change: one journal write, then the routes stop together and
// the subscriptions of exchange and dynamic routes are removed
// (flushParallel at a time) while ctx lasts. Once ctx has ended nothing
// is deleted; a subscription not removed by then is left at its source,
// and logged.
func (m *Manager) Flush(ctx context.Context, dest string) (int, error) {
	if dest != "" {
		var err error
		if dest, err = m.resolveDest(dest); err != nil {
			return 0, err
		}
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("routes: flush: %w", err)
	}
	m.mu.Lock()
	var gone []*route
	var lines []journalLine
	for id, r := range m.routes {
		if r.origin != OriginRuntime || (dest != "" && r.spec.Dest != dest) {
			continue
		}
		delete(m.routes, id)
		gone = append(gone, r)
		if r.spec.Durable {
			lines = append(lines, journalLine{Del: id})
		}
	}
	m.edgesAfterLocked(gone...)
	durable := noWait
	if m.state != nil && len(lines) > 0 {
		durable = m.state.enqueue(lines...)
	}
	m.mu.Unlock()
	err := durable()
	var subscribed []*route
	var inFlight int64
	for _, r := range gone {
		inFlight += r.c.InFlight.Load() + r.cNoPath.InFlight.Load()
		r.cancel() // all at once: each takes no new message from now
		if r.spec.Kind != KindQueue {
			subscribed = append(subscribed, r)
		}
	}
	// A route with a subscription at its source is waited for, then its
	// subscription removed (not while it still consumes, nor after a
	// route added again has taken it over). A queue route has nothing to
	// remove: its sessions end in the background, in the manager's group
	// (Stop waits for them) — 20,000 session ends take RabbitMQ seconds.
	for _, r := range subscribed {
		<-r.done
	}
	m.unsubscribeAll(ctx, subscribed)
	m.log.Info().Int("deleted", len(gone)).Int64("in_flight", inFlight).Str("dest", dest).Msg(flushLine(len(gone), inFlight, dest))
	return len(gone), err
}

// flushLine is a flush's summary in words: how many routes went, and the
// messages they had in flight (sent, their outcome pending) when they
// stopped.
func flushLine(deleted int, inFlight int64, dest string) string {
	s := fmt.Sprintf("routes flushed: %d deleted", deleted)
	if dest != "" {
		s += " (to " + dest + ")"
	}
	return s + fmt.Sprintf("; %d messages were in flight (not yet settled at their sources)", inFlight)
}

// flushParallel bounds the subscriptions a flush removes at once (each
// is a management API call at the source).
const flushParallel = 8

// unsubscribeAll removes the routes' subscriptions, flushParallel at a
// time, until ctx ends.
func (m *Manager) unsubscribeAll(ctx context.Context, rs []*route) {
	work := make(chan *route)
	var wg sync.WaitGroup
	for range min(flushParallel, len(rs)) {
		wg.Add(1)
		go func() { // owned by this call, which waits for it
			defer wg.Done()
			for r := range work {
				r.unsubscribe(ctx)
			}
		}()
	}
	left := 0
	for i, r := range rs {
		if ctx.Err() != nil {
			left = len(rs) - i
			break
		}
		work <- r
	}
	close(work)
	wg.Wait()
	if left > 0 {
		m.log.Warn().Int("routes", left).Msg("flush cancelled: the subscriptions of some deleted exchange routes were not removed at their source; remove the fedrouter.* queues there by hand")
	}
}

// durableSpecs are the durable runtime routes, for a snapshot of the
// state file, sorted by id.
func (m *Manager) durableSpecs() []Spec {
	m.mu.Lock()
	var specs []Spec
	for _, r := range m.routes {
		if r.origin == OriginRuntime && r.spec.Durable {
			specs = append(specs, r.spec)
		}
	}
	for _, spec := range m.syncing {
		specs = append(specs, spec)
	}
	m.mu.Unlock()
	sort.Slice(specs, func(i, j int) bool { return specs[i].ID() < specs[j].ID() })
	return specs
}

// List returns every route's status, sorted by dest, src, exchange, id.
func (m *Manager) List() []Status {
	m.mu.Lock()
	rs := make([]*route, 0, len(m.routes))
	for _, r := range m.routes {
		rs = append(rs, r)
	}
	m.mu.Unlock()
	// Sorted before the statuses are made: swapping pointers, not
	// statuses of a few hundred bytes each; each key made once.
	out := make([]Status, 0, len(rs))
	for _, kr := range sortedAfter(rs, routeKey, cursorKey{}, false) {
		out = append(out, kr.it.status())
	}
	return out
}

// Get returns one route's status.
func (m *Manager) Get(id string) (Status, bool) {
	m.mu.Lock()
	r, ok := m.routes[id]
	m.mu.Unlock()
	if !ok {
		return Status{}, false
	}
	return r.status(), true
}

// Stop stops every route and waits for them. Transient exchange routes'
// subscriptions are removed; durable ones stay and keep collecting.
func (m *Manager) Stop(ctx context.Context) {
	m.mu.Lock()
	m.stopped = true
	rs := make([]*route, 0, len(m.routes))
	for _, r := range m.routes {
		rs = append(rs, r)
	}
	m.mu.Unlock()
	m.group.Stop() // every route and the transit reconciler, cancelled and waited for
	for _, r := range rs {
		if _, fanout := r.mode.(*fanoutMode); !r.spec.Durable && !fanout { // a fan-out queue is shared and durable: kept
			r.unsubscribe(ctx)
		}
	}
	if m.state != nil {
		// Folded into the snapshot: an older fedrouter reads only that.
		if err := m.state.close(); err != nil {
			m.log.Error().Err(err).Str("state_file", m.opts.StatePath).Msg("could not fold the state journal into the state file at stop; the next start replays it")
		}
	}
}

// Resolve turns a broker named by its configured name or as
// [user/pass@]host[:port] (qpid-route's form) into the configured name.
func (m *Manager) Resolve(s string) (string, error) {
	if _, ok := m.opts.Brokers[s]; ok {
		return s, nil
	}
	if s == "" {
		return "", nil // Validate reports the missing broker
	}
	host, port := Endpoint(s)
	names := make([]string, 0, len(m.opts.Brokers))
	for n := range m.opts.Brokers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		for _, raw := range m.opts.Brokers[n].Conn.Config().URLs {
			if SameEndpoint(raw, host, port) {
				return n, nil
			}
		}
	}
	return "", fmt.Errorf("%w %q: not a configured broker name or host:port (configured: %s)", ErrUnknownBroker, amqp.Redact(s), strings.Join(names, ", "))
}

// Endpoint is the host and port a broker address names, as the CLI
// and qpid-route take it: [user/pass@]host[:port], port 5672 when absent.
func Endpoint(s string) (host, port string) {
	addr := s
	if i := strings.LastIndex(addr, "@"); i >= 0 {
		addr = addr[i+1:]
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, "5672"
	}
	return host, port
}

// SameEndpoint says whether the broker URL raw reaches host:port
// (localhost and ::1 are 127.0.0.1).
func SameEndpoint(raw, host, port string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	p := u.Port()
	if p == "" {
		p = "5672"
		if u.Scheme == "amqps" {
			p = "5671"
		}
	}
	return p == port && canonicalHost(u.Hostname()) == canonicalHost(host)
}

func canonicalHost(h string) string {
	if h == "localhost" || h == "::1" {
		return "127.0.0.1"
	}
	return strings.ToLower(h)
}

package routes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	famqp "github.com/fedrouter/fedrouter/amqp"
)

// Broker is what the manager needs of one configured broker.
type Broker struct {
	Conn    *famqp.Conn
	Profile famqp.Profile
	// StaticDemand declares the broker's bindings (exchange → keys) for
	// dynamic routes to it, when its profile cannot tell them.
	StaticDemand map[string][]string
}

// Options configure a Manager; zero values take the defaults.
type Options struct {
	RouterID string
	Brokers  map[string]Broker // by configured name
	// StatePath is the state file of durable runtime routes; "" keeps
	// them in memory only (tests).
	StatePath string
	Log       zerolog.Logger
	Backoff   famqp.Backoff // retry delays of a route; default DefaultBackoff
	// PoisonRuns: consecutive runs ended by an undecodable message before
	// the route is set Failed. Default 3.
	PoisonRuns int
	// FailedRetry: how often a Failed route tries again (the operator may
	// have removed the poison message or created the exchange). Default 5m.
	FailedRetry time.Duration
	// SetupTimeout bounds attaching a route's links. Default 30s.
	SetupTimeout time.Duration
	// DemandInterval: how often a dynamic route compares its bindings with
	// the destination's demand when the destination publishes no binding
	// events. Default 1s.
	DemandInterval time.Duration
	// DefaultNoPath is the corrective action of routes without their own
	// no_path; empty: hold.
	DefaultNoPath []NoPathStep
	// NextHop, when set, returns the next hop on the shortest path from one
	// broker to another (from link state); dynamic routes follow demand
	// only along it. ok false: no path known.
	NextHop func(src, dst string) (next string, ok bool)
	// DemandReconcile: how often it does so when it follows binding events
	// (so that a missed event heals). Default 10s.
	DemandReconcile time.Duration
}

// Manager runs the routes: one goroutine per route, owned here and
// stopped by Delete or Stop. Lock order: Manager.saveMu, then Manager.mu,
// then route.mu; no I/O under mu or route.mu.
type Manager struct {
	opts Options
	log  zerolog.Logger

	ctx    context.Context // parent of every route's context; ends at Stop
	cancel context.CancelFunc

	saveMu sync.Mutex // serialises state-file writes

	mu      sync.Mutex
	routes  map[string]*route // by Spec.ID(); guarded by mu
	stopped bool              // guarded by mu
}

// NewManager builds a manager; it runs nothing until routes are added.
func NewManager(opts Options) *Manager {
	if opts.Backoff.Min == 0 {
		opts.Backoff = famqp.DefaultBackoff()
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
	if opts.DemandInterval <= 0 {
		opts.DemandInterval = time.Second
	}
	if opts.DemandReconcile <= 0 {
		opts.DemandReconcile = 10 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Manager{opts: opts, log: opts.Log, ctx: ctx, cancel: cancel, routes: map[string]*route{}}
}

// Restore starts the configured routes and the durable runtime routes of
// the state file. A configured route also found in the state file is
// started once, as configured.
func (m *Manager) Restore(configured []Spec) error {
	for _, s := range configured {
		if _, err := m.add(s, OriginConfig); err != nil {
			return err
		}
	}
	if m.opts.StatePath == "" {
		return nil
	}
	saved, err := LoadState(m.opts.StatePath)
	if err != nil {
		return err
	}
	for _, s := range saved {
		if _, err := m.add(s, OriginRuntime); err != nil && !errors.Is(err, ErrDuplicate) {
			return fmt.Errorf("routes: restore %s: %w", s, err)
		}
	}
	m.log.Info().Int("configured", len(configured)).Int("restored", len(saved)).Msg("routes started")
	return nil
}

// Add adds a runtime route; durable ones are in the state file when Add
// returns.
func (m *Manager) Add(spec Spec) (Status, error) {
	m.saveMu.Lock()
	defer m.saveMu.Unlock()
	r, err := m.add(spec, OriginRuntime)
	if err != nil {
		return Status{}, err
	}
	if r.spec.Durable {
		if err := m.save(); err != nil {
			m.remove(r.id)
			r.stop()
			return Status{}, err
		}
	}
	m.log.Info().Str("route", r.id).Str("spec", r.spec.String()).Bool("durable", r.spec.Durable).Msg("route added")
	return r.status(), nil
}

func (m *Manager) add(spec Spec, origin Origin) (*route, error) {
	spec, err := m.Normalize(spec)
	if err != nil {
		return nil, err
	}
	id := spec.ID()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return nil, ErrStopped
	}
	if _, dup := m.routes[id]; dup {
		return nil, ErrDuplicate
	}
	r := newRoute(m, spec, origin)
	m.routes[id] = r
	r.start(m.ctx)
	return r, nil
}

// Normalize resolves spec's brokers to configured names, applies the
// defaults and validates it.
func (m *Manager) Normalize(spec Spec) (Spec, error) {
	var err error
	if spec.Src, err = m.Resolve(spec.Src); err != nil {
		return spec, err
	}
	if spec.Dest, err = m.Resolve(spec.Dest); err != nil {
		return spec, err
	}
	spec = spec.WithDefaults()
	return spec, spec.Validate()
}

// Delete deletes the route with id: stops it and, for an exchange route,
// removes its subscription at the source (messages queued there for this
// route are dropped with it).
func (m *Manager) Delete(ctx context.Context, id string) error {
	m.saveMu.Lock()
	defer m.saveMu.Unlock()
	m.mu.Lock()
	r, ok := m.routes[id]
	if ok && r.origin == OriginConfig {
		m.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrConfigRoute, r.spec)
	}
	delete(m.routes, id)
	m.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: id %s", ErrNotFound, id)
	}
	r.stop()
	r.unsubscribe(ctx)
	m.log.Info().Str("route", id).Str("spec", r.spec.String()).Msg("route deleted")
	if r.spec.Durable {
		return m.save()
	}
	return nil
}

// DeleteSpec deletes the route with spec's identity.
func (m *Manager) DeleteSpec(ctx context.Context, spec Spec) error {
	var err error
	if spec.Src, err = m.Resolve(spec.Src); err != nil {
		return err
	}
	if spec.Dest, err = m.Resolve(spec.Dest); err != nil {
		return err
	}
	return m.Delete(ctx, spec.ID())
}

// Flush deletes every runtime route, or those to dest when dest != "".
func (m *Manager) Flush(ctx context.Context, dest string) (int, error) {
	if dest != "" {
		var err error
		if dest, err = m.Resolve(dest); err != nil {
			return 0, err
		}
	}
	n := 0
	for _, st := range m.List() {
		if st.Origin != OriginRuntime || (dest != "" && st.Spec.Dest != dest) {
			continue
		}
		if err := m.Delete(ctx, st.ID); err != nil && !errors.Is(err, ErrNotFound) {
			return n, err
		}
		n++
	}
	return n, nil
}

func (m *Manager) remove(id string) {
	m.mu.Lock()
	delete(m.routes, id)
	m.mu.Unlock()
}

// save writes the durable runtime routes; the caller holds saveMu.
func (m *Manager) save() error {
	if m.opts.StatePath == "" {
		return nil
	}
	var specs []Spec
	for _, st := range m.List() {
		if st.Origin == OriginRuntime && st.Spec.Durable {
			specs = append(specs, st.Spec)
		}
	}
	return SaveState(m.opts.StatePath, specs)
}

// List returns every route's status, sorted by dest, src, exchange, id.
func (m *Manager) List() []Status {
	m.mu.Lock()
	rs := make([]*route, 0, len(m.routes))
	for _, r := range m.routes {
		rs = append(rs, r)
	}
	m.mu.Unlock()
	out := make([]Status, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.status())
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Spec, out[j].Spec
		if a.Dest != b.Dest {
			return a.Dest < b.Dest
		}
		if a.Src != b.Src {
			return a.Src < b.Src
		}
		if a.Exchange != b.Exchange {
			return a.Exchange < b.Exchange
		}
		return out[i].ID < out[j].ID
	})
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

// Links returns the links the routes run over, one per (src, dest) pair:
// Operational only while both brokers' connections are.
func (m *Manager) Links() []LinkStatus {
	count := map[[2]string]int{}
	for _, st := range m.List() {
		count[[2]string{st.Spec.Src, st.Spec.Dest}]++
	}
	out := make([]LinkStatus, 0, len(count))
	for pair, n := range count {
		ls := LinkStatus{Src: pair[0], Dest: pair[1], Routes: n, State: StateOperational}
		for _, name := range pair {
			st, _ := m.opts.Brokers[name].Conn.Status()
			if st.State != famqp.Operational {
				ls.State = State(st.State.String())
				if st.LastError != nil {
					ls.LastError = name + ": " + st.LastError.Error()
				}
				break
			}
		}
		out = append(out, ls)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Src != out[j].Src {
			return out[i].Src < out[j].Src
		}
		return out[i].Dest < out[j].Dest
	})
	return out
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
	m.cancel()
	for _, r := range rs {
		<-r.done
	}
	for _, r := range rs {
		if !r.spec.Durable {
			r.unsubscribe(ctx)
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
	addr := s
	if i := strings.LastIndex(addr, "@"); i >= 0 {
		addr = addr[i+1:]
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		host, port = addr, "5672"
	}
	names := make([]string, 0, len(m.opts.Brokers))
	for n := range m.opts.Brokers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		for _, raw := range m.opts.Brokers[n].Conn.Config().URLs {
			if sameEndpoint(raw, host, port) {
				return n, nil
			}
		}
	}
	return "", fmt.Errorf("%w %q: not a configured broker name or host:port (configured: %s)", ErrUnknownBroker, s, strings.Join(names, ", "))
}

func sameEndpoint(raw, host, port string) bool {
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

package cluster

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/fedrouter/fedrouter/internal/ratelog"
	"github.com/fedrouter/fedrouter/store"
)

// Runner runs the routes the member holds: the router's route manager.
type Runner interface {
	// Place reads what placement needs of a route's spec (store JSON).
	Place(spec []byte) (src, dest string, push, remote bool, err error)
	// Run starts route id, held with epoch; fence says, at each message,
	// whether the lease still covers this member.
	Run(id string, spec []byte, epoch int64, fence func() bool) error
	// Halt stops route id as how says.
	Halt(ctx context.Context, id string, how HaltMode)
}

// HaltMode says how a Runner stops a route.
type HaltMode struct {
	// Drain (a handoff): stop taking messages and settle what is in
	// flight first, so the next holder gets neither a loss nor a
	// duplicate. Without it the route stops at once (its lease is lost).
	Drain bool
	// Deleted: the route is gone from the store: remove what it made at
	// its source.
	Deleted bool
}

// Member is this router's membership: one goroutine (Run) beats, reads the
// cluster, feeds the core and carries its actions out. The core is used
// under mu only, which is never held across I/O.
type Member struct {
	p      Params
	info   store.Member
	st     store.Store
	runner Runner
	log    zerolog.Logger
	now    func() time.Time

	mu      sync.Mutex
	core    *Core             // guarded by mu
	specs   map[string][]byte // the specs of the last view, by route id; guarded by mu
	last    View              // the last view, for status; guarded by mu
	metrics Metrics           // guarded by mu
	// storeLog and supersededLog keep the store's error lines and the
	// superseded member's down to one per storeErrorLogEvery, with counts.
	storeLog, supersededLog *ratelog.Limiter

	// report, when set (Publish), gives the statuses of the routes this
	// member runs, sent with a beat (store.Member.Routes; nil: the last
	// ones stand).
	report func() []byte

	// handoffs are the handoffs under way, each in a goroutine of its own
	// (a drain can take seconds: the beats must go on meanwhile); Run
	// waits for them before it returns.
	handoffs sync.WaitGroup
}

// storeErrorLogEvery: at most one store error line per this.
const storeErrorLogEvery = 10 * time.Second

// logLimited logs a failure at once, then at most one line per lim's
// interval, saying how many failures came since the last line.
func logLimited(lim *ratelog.Limiter, now time.Time, level func() *zerolog.Event, err error, msg string) {
	if lim.Allow("", now) {
		level().Err(err).Msg(msg)
		return
	}
	for _, s := range lim.Due(now) {
		level().Err(err).Uint64("failures", s.Count).Str("over", s.Over.Round(time.Second).String()).Msg(msg)
	}
}

// Metrics are the member's counters.
type Metrics struct {
	Held        int
	Takeovers   uint64 // leases won that another member held before (epoch > 1)
	StoreErrors uint64
	LastRenewal time.Duration // the last beat's round trip
}

// NewMember builds a member; Run runs it.
func NewMember(p Params, info store.Member, st store.Store, runner Runner, log zerolog.Logger) *Member {
	return &Member{p: p, info: info, st: st, runner: runner, log: log.With().Str("member", p.Self).Logger(),
		now: time.Now, core: NewCore(p), specs: map[string][]byte{},
		storeLog: ratelog.New(storeErrorLogEvery), supersededLog: ratelog.New(storeErrorLogEvery)}
}

// Publish has every beat carry report's answer: the statuses of the
// routes this member runs, for the others to list (store.Member.Routes);
// nil leaves what the member published last. Call it before Run.
func (m *Member) Publish(report func() []byte) { m.report = report }

// Run beats every heartbeat until ctx ends, then hands its routes off and
// leaves (SIGTERM: the routes move without loss or duplicates).
func (m *Member) Run(ctx context.Context) {
	beat := time.NewTicker(m.p.Heartbeat)
	defer beat.Stop()
	// The fence is also checked between beats: a lease's deadline falls
	// between them.
	fence := time.NewTicker(max(m.p.Heartbeat/4, 50*time.Millisecond))
	defer fence.Stop()
	m.round(ctx)
	defer m.handoffs.Wait()
	for {
		select {
		case <-ctx.Done():
			m.leave(ctx)
			return
		case <-beat.C:
			m.round(ctx)
		case <-fence.C:
			m.apply(ctx, m.locked(func(c *Core) []Action { return c.Tick(m.now()) }))
		}
	}
}

// round is one heartbeat: beat (renew), read the cluster, decide, claim.
func (m *Member) round(ctx context.Context) {
	m.apply(ctx, m.locked(func(c *Core) []Action { return c.Tick(m.now()) }))
	m.mu.Lock()
	leases := m.core.Held()
	m.mu.Unlock()
	info := m.info
	if m.report != nil {
		info.Routes = m.report()
	}
	sent := m.now()
	call, cancel := context.WithTimeout(ctx, m.p.Heartbeat)
	ren, err := m.st.Beat(call, info, leases, m.p.Lease)
	cancel()
	if errors.Is(err, store.ErrSuperseded) {
		// Another process runs as this member: hold nothing (every route
		// stops as if its lease were lost), claim nothing, and beat again:
		// once the other stops beating for a lease, this one takes over.
		m.superseded(ctx, sent, err)
		return
	}
	if err != nil {
		m.storeError(ctx, "heartbeat", err)
		return
	}
	m.mu.Lock()
	m.metrics.LastRenewal = m.now().Sub(sent)
	m.mu.Unlock()
	m.apply(ctx, m.locked(func(c *Core) []Action { return c.Beaten(sent, ren) }))
	call, cancel = context.WithTimeout(ctx, m.p.Heartbeat)
	snap, err := m.st.Snapshot(call)
	cancel()
	if err != nil {
		m.storeError(ctx, "reading the cluster", err)
		return
	}
	view := m.view(snap)
	m.apply(ctx, m.locked(func(c *Core) []Action { return c.Observe(m.now(), view) }))
}

// superseded stops every route this member runs: its beat renewed nothing.
func (m *Member) superseded(ctx context.Context, sent time.Time, err error) {
	logLimited(m.supersededLog, m.now(), m.log.Error, err, "cluster: another process is this member: running no route until it stops beating for a lease")
	m.apply(ctx, m.locked(func(c *Core) []Action { return c.Beaten(sent, store.Renewal{}) }))
}

func (m *Member) storeError(ctx context.Context, what string, err error) {
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return
	}
	m.mu.Lock()
	m.metrics.StoreErrors++
	m.mu.Unlock()
	// A store down for an hour must not fill the disk.
	logLimited(m.storeLog, m.now(), m.log.Warn, err, "cluster store: "+what+" failed")
	m.apply(ctx, m.locked(func(c *Core) []Action { return c.BeatFailed(m.now(), err) }))
}

// view turns a snapshot into the core's view; a route whose spec cannot
// be read is left out (and said, once per view: a newer member's spec?).
func (m *Member) view(snap store.Snapshot) View {
	v := View{Now: snap.Now, Members: snap.Members}
	specs := make(map[string][]byte, len(snap.Routes))
	for _, r := range snap.Routes {
		src, dest, push, remote, err := m.runner.Place(r.Spec)
		if err != nil {
			m.log.Warn().Err(err).Str("route", r.ID).Msg("cluster: route definition in the store not understood: left alone")
			continue
		}
		specs[r.ID] = r.Spec
		v.Routes = append(v.Routes, RouteView{RouteRow: r, Src: src, Dest: dest, Push: push, Remote: remote})
	}
	m.mu.Lock()
	m.specs, m.last = specs, v
	m.mu.Unlock()
	return v
}

func (m *Member) locked(f func(*Core) []Action) []Action {
	m.mu.Lock()
	defer m.mu.Unlock()
	return f(m.core)
}

// apply carries actions out, in order, outside the lock.
func (m *Member) apply(ctx context.Context, acts []Action) {
	var batch []Action
	for _, a := range acts {
		switch a.Kind {
		case Start:
			m.start(a)
		case Stop:
			m.log.Warn().Str("route", a.Route).Msg("cluster: stopping route: " + a.Msg)
			m.runner.Halt(ctx, a.Route, HaltMode{Deleted: a.Msg == msgDeleted})
		case HandOff:
			batch = append(batch, a)
		case Claim:
			m.claim(ctx, a.Routes)
		case Note:
			m.log.Warn().Msg("cluster: " + a.Msg)
		}
	}
	if len(batch) > 0 {
		m.handoffs.Add(1)
		go func() { // owned by Run, which waits for handoffs
			defer m.handoffs.Done()
			m.handoff(ctx, batch)
		}()
	}
}

func (m *Member) start(a Action) {
	m.mu.Lock()
	spec := m.specs[a.Route]
	m.mu.Unlock()
	route := a.Route
	fence := func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.core.Holds(route, m.now())
	}
	if err := m.runner.Run(route, spec, a.Epoch, fence); err != nil {
		m.log.Error().Err(err).Str("route", route).Int64("epoch", a.Epoch).Msg("cluster: cannot run a route it holds")
		return
	}
	m.log.Info().Str("route", route).Int64("epoch", a.Epoch).Msg("cluster: route held")
}

func (m *Member) claim(ctx context.Context, ids []string) {
	sent := m.now()
	// Not cancelled with the member: a claim cut off mid-statement may have
	// won leases the member would never learn of, nor release on leaving.
	call, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.p.Heartbeat)
	won, err := m.st.Claim(call, m.p.Self, ids, m.p.Lease)
	cancel()
	if err != nil {
		m.storeError(ctx, "claiming routes", err)
		return
	}
	m.mu.Lock()
	for _, l := range won {
		if l.Epoch > 1 {
			m.metrics.Takeovers++
			m.log.Warn().Str("route", l.Route).Int64("epoch", l.Epoch).Msg("cluster: takeover: route taken over from a member whose lease expired")
		}
	}
	m.mu.Unlock()
	m.apply(ctx, m.locked(func(c *Core) []Action { return c.Claimed(sent, won) }))
}

// handoff stops the routes gracefully (their drains overlap), then gives
// their leases back in one call.
func (m *Member) handoff(ctx context.Context, acts []Action) {
	var wg sync.WaitGroup
	var leases []store.Lease
	for _, a := range acts {
		leases = append(leases, a.Leases...)
		wg.Add(1)
		go func() { // joined below
			defer wg.Done()
			m.runner.Halt(ctx, a.Route, HaltMode{Drain: true})
		}()
	}
	wg.Wait()
	call, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeCallTimeout)
	n, err := m.st.Release(call, m.p.Self, leases)
	cancel()
	m.mu.Lock()
	for _, a := range acts {
		m.core.Released(a.Route)
	}
	m.mu.Unlock()
	if err != nil {
		m.log.Warn().Err(err).Int("routes", len(acts)).Msg("cluster: handoff: release failed; the leases will expire")
		return
	}
	for _, a := range acts {
		m.log.Info().Str("route", a.Route).Int64("epoch", a.Epoch).Msg("cluster: handoff: route released")
	}
	m.log.Info().Int("released", n).Msg("cluster: handoff done")
}

// storeCallTimeout bounds a release: longer than a heartbeat, since a
// failed release leaves routes idle until their leases expire.
const storeCallTimeout = 5 * time.Second

// leave hands every route off and marks the member as left.
//
// owner is Run's context, ended: the handoffs and the store call run under
// it without its cancel (its values kept), each bounded by its own timeout.
func (m *Member) leave(owner context.Context) {
	ctx := context.WithoutCancel(owner)
	m.handoffs.Wait() // those under way first: Leaving skips their routes
	if acts := m.locked(func(c *Core) []Action { return c.Leaving() }); len(acts) > 0 {
		m.handoff(ctx, acts)
	}
	call, cancel := context.WithTimeout(ctx, m.p.Heartbeat)
	defer cancel()
	if err := m.st.Leave(call, m.p.Self); err != nil {
		m.log.Warn().Err(err).Msg("cluster: leaving: the store did not hear it; the others will see this member fail")
		return
	}
	m.log.Info().Msg("cluster: left the cluster")
}

// Status is the member's view for the admin API.
func (m *Member) Status() (View, Metrics, []store.Lease) {
	m.mu.Lock()
	defer m.mu.Unlock()
	met := m.metrics
	met.Held = len(m.core.held)
	return m.last, met, m.core.Held()
}

// Params returns the member's settings.
func (m *Member) Params() Params { return m.p }

const msgDeleted = "route deleted"

package routes

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/internal/group"
	"github.com/fedrouter/fedrouter/links"
	"github.com/fedrouter/fedrouter/routes/pathpolicy"
)

// route is one running route: a goroutine that waits for a path
// (routepath.go), attaches the route's links on the engine — each run
// begins a session of its own at each broker, on the broker's engine
// connection, whose end hands the run's unsettled messages back to the
// source (enginerun.go) —, forwards until something fails, and retries
// with backoff. What differs by mode — where the messages go — is its
// mode (mode.go).
type route struct {
	*routeBase
	m       *Manager // the route's own life (backoff, setup slots): not its mode's
	origin  Origin   // where the route came from: the manager's, not its mode's
	mode    mode
	policy  pathpolicy.Policy // what the route does about its path
	c       links.Counters    // what its runs did
	noPath  atomic.Uint64     // messages handled by a no-path action
	cNoPath links.Counters    // what the no-path runs did (kept apart: nothing was sent)

	cancel context.CancelFunc
	done   chan struct{} // closed when run returns
	// fence, when set (a route held in a cluster), is asked before each
	// message: links.Config.Fence.
	fence func() bool
	// halt, closed by handOff, ends the route as a path change does: no
	// more messages taken, those in flight settled, then the run returns.
	halt     chan struct{}
	haltOnce sync.Once
	moves    moveCounts // a global destination's flow (move.go)

	// runs counts the runs that attached; holding
	// reads the current run's source link (nil between runs): what the
	// stall watcher reads (stallwatch.go).
	runs    atomic.Uint64
	holding atomic.Pointer[holdingFunc]
	// reattach, signalled by the stall watcher, ends the run numbered
	// reattachRun as a path change does, and the route attaches again.
	reattach    chan struct{}
	reattachRun atomic.Uint64
	// forwarding: the current run attached its links and forwards
	// (runDetail says so).
	forwarding atomic.Bool
}

// runDetail is an Operational run's detail in route list: the mode's
// (the path through transit) and, once its links are attached, that it
// forwards on the engine.
func (r *route) runDetail(path pathpolicy.Path) string {
	d := r.mode.detail(path)
	if r.forwarding.Load() {
		if d != "" {
			d += "; "
		}
		d += engineDetail
	}
	return d
}

// holdingFunc says how many messages a run's source link holds unsettled
// and how much credit it has granted and not yet received against.
type holdingFunc func() (held, credit int64)

// attached counts a run that attached its source link, which holding
// reads from now on; the function it returns is called when the run ends.
func (r *route) attached(holding holdingFunc) (ended func()) {
	r.runs.Add(1)
	r.holding.Store(&holding)
	return func() { r.holding.Store(nil) }
}

// stableRun: a run that forwarded for this long resets the backoff.
const stableRun = 30 * time.Second

// newRoute makes a route of spec, checked by Manager.normalize, with its
// no_path chain steps, on connections chosen by pick.
func newRoute(m *Manager, spec Spec, steps []pathpolicy.Step, origin Origin, pick func(amqp.Broker, string) *amqp.Conn) *route {
	id := spec.ID()
	src, dst := m.opts.Brokers[spec.Src], m.opts.Brokers[spec.Dest]
	src.Conn = pick(src, spec.Src) // this route's connections
	if dst.Conn != nil {
		dst.Conn = pick(dst, spec.Dest)
	}
	log := m.log.With().Str("route", id).Str("src", spec.Src).Str("dest", spec.Dest).Logger()
	b := &routeBase{env: m.env, id: id, spec: spec, src: src, dst: dst, log: log,
		state: runState{log: log, name: spec.String(), state: StateWaiting, since: time.Now()}}
	r := &route{m: m, routeBase: b, origin: origin, done: make(chan struct{}), halt: make(chan struct{}), reattach: make(chan struct{}, 1),
		policy: pathpolicy.Policy{Src: spec.Src, Dest: spec.Dest, Mode: pathpolicy.Direct, Steps: steps, Table: m.opts.Table != nil,
			Started: m.started, Grace: m.opts.TableGrace, DeadLetterQueue: spec.DeadLetterQueue}}
	_, attached := m.opts.Brokers[spec.Dest]
	edge, edgeOK := fanoutEdge(spec)
	switch {
	case spec.Kind == KindDynamic:
		r.mode = &dynamicMode{directMode: directMode{routeBase: b}}
	case edgeOK && m.opts.Table != nil && sharesSubscriptions(src.Profile):
		r.mode, r.policy.Mode = &fanoutMode{routeBase: b, edge: edge}, pathpolicy.Fanout
	case !attached:
		r.mode, r.policy.Mode = &transitMode{routeBase: b}, pathpolicy.Transit
	default:
		r.mode = &directMode{routeBase: b}
	}
	return r
}

// start runs the route in g, the manager's group, under a context of its
// own (Delete stops one route); false if g is stopped.
func (r *route) start(g *group.Group) bool {
	ctx, cancel := context.WithCancel(g.Context())
	r.cancel = cancel
	if !g.Go(func(context.Context) { r.run(ctx) }) {
		cancel()
		close(r.done)
		return false
	}
	return true
}

func (r *route) stop() {
	r.cancel()
	<-r.done
}

func (r *route) run(ctx context.Context) {
	defer close(r.done)
	defer r.state.setState(StateClosed, nil, 0)
	attempt, suspect := 0, 0
	for {
		path, ok := r.waitPath(ctx)
		if !ok {
			return
		}
		r.state.setState(StateConnecting, nil, 0)
		began, sent, settled := time.Now(), r.c.Sent.Load(), r.c.Settled()
		// After a run that died on the message at the head of the source
		// (the destination failing on it), probe one
		// message at a time: the messages before it are settled before it
		// is even fetched (otherwise its failure strands them too), and
		// once more than a full window has passed, it is gone and the
		// route runs at full speed again.
		credit, limit := r.spec.Credit, 0
		if suspect > 0 {
			credit, limit = 1, r.spec.Credit+1
		}
		err := r.runOnce(ctx, path, credit, limit)
		if ctx.Err() != nil || errors.Is(err, errHalted) {
			return
		}
		if errors.Is(err, errLapped) {
			if !r.rest(ctx) {
				return
			}
			attempt, suspect = 0, 0
			continue
		}
		if err == nil { // a probe passed the suspect's position
			suspect, attempt = 0, 0
			continue
		}
		if time.Since(began) >= stableRun {
			attempt = 0
		}
		if errors.Is(err, errPathChanged) {
			r.state.setState(StateWaiting, err, 0)
			continue
		}
		if errors.Is(err, errReattach) {
			continue // the stall watcher asked: attach again at once
		}
		f := r.failed(err, r.m.opts.Backoff.Delay(attempt), suspect, r.c.Sent.Load() > sent && r.c.Settled() == settled)
		attempt, suspect = attempt+1, f.suspect
		r.state.setStateWhy(f.state, f.err, f.delay, f.why)
		select {
		case <-time.After(f.delay):
		case <-ctx.Done():
			return
		}
	}
}

// failure is what a run's end makes of the route: its state, the error
// shown, when it tries again and why it waits (route list's detail), and
// the runs in a row that died on the message at the head of the source.
type failure struct {
	state   State
	err     error
	delay   time.Duration
	why     string
	suspect int
}

// failed judges a run that ended with err, after suspect runs in a row
// that died on the head message; stuck: it sent and settled nothing.
func (r *route) failed(err error, delay time.Duration, suspect int, stuck bool) failure {
	f := failure{state: StateWaiting, err: err, delay: delay, suspect: suspect}
	var miss *missingError
	switch {
	case errors.As(err, &miss):
		// Not a failure of the route's: it starts by itself once the
		// object appears, looked for again every few seconds.
		f.suspect, f.delay, f.why = 0, min(delay, missingRetry), miss.waiting()
	case stuck:
		f.suspect++
		if f.suspect >= r.m.opts.PoisonRuns {
			f.state, f.delay = StateFailed, r.m.opts.FailedRetry
			f.err = poisonError(err, f.suspect, f.delay)
			f.suspect = r.m.opts.PoisonRuns - 1 // one more failure after the retry: Failed again
		}
	default:
		f.suspect = 0
		if setupFailure(err) {
			f.state = StateFailed
		}
	}
	return f
}

// poisonError says what blocks a route whose runs keep dying on the same
// message, and what the operator can do.
// (A message the engine cannot decode is no poison: it is refused alone,
// links.AnnotationUndecodable.)
func poisonError(err error, times int, retry time.Duration) error {
	return fmt.Errorf("poison message: the route fails on the message at the head of the source (%d times in a row, nothing settled): %w; remove or fix it at the source — the route retries every %s", times, err, retry)
}

// setupFailure says whether err means the route cannot work as configured
// (a missing queue or exchange, no permission) rather than a passing
// failure.
func setupFailure(err error) bool {
	return errors.Is(err, errNoDemandSupport) || amqp.Refusal(err)
}

// runOnce runs the route's links until they fail, or the source or the
// path changes (a broker connection went, a direct destination came back
// while rerouting, the table lost the path).
func (r *route) runOnce(ctx context.Context, path pathpolicy.Path, credit, limit int) error {
	// The run ends as soon as its path does: a receiver idle at the source
	// would not notice a dead destination until its next message, and the
	// route would look Operational without a path. It ends by draining
	// (what is in flight is settled first: no duplicates from a path
	// change), bounded by drainTimeout.
	ctx, stop := context.WithCancelCause(ctx)
	drain := make(chan struct{})
	var changed error // set before drain is closed
	watched := make(chan struct{})
	lap := make(chan struct{}) // closed once by a flow's EngineMove
	go func() {                // owned by runOnce, which waits for it
		defer close(watched)
		if changed = r.watchPathOrHalt(ctx, path, lap); changed == nil {
			return
		}
		close(drain)
		select {
		case <-time.After(drainTimeout):
			stop(changed)
		case <-ctx.Done():
		}
	}()
	err := r.runEngine(ctx, path, drain, func() { close(lap) }, credit, limit)
	stop(nil)
	<-watched
	if changed != nil {
		return changed
	}
	return err
}

// routeAnnotation is what a message dead-lettered by the route's runs
// says of the route, besides the reason.
func (r *route) routeAnnotation() map[string]string {
	return map[string]string{links.AnnotationRoute: r.id + " " + r.spec.String()}
}

// status is the route as route list shows it.
func (r *route) status() Status {
	st := Status{ID: r.id, Spec: r.spec, Origin: r.origin}
	r.state.fill(&st)
	st.Counters = Counters{
		NoPath: r.noPath.Load(), Sent: r.c.Sent.Load(), Forwarded: r.c.Forwarded.Load(),
		Redelivered:  r.c.Redelivered.Load() + r.cNoPath.Redelivered.Load(),
		Lost:         r.c.Lost.Load() + r.cNoPath.Lost.Load(),
		Rejected:     r.c.Rejected.Load() + r.cNoPath.Rejected.Load(),
		DeadLettered: r.c.DeadLettered.Load() + r.cNoPath.DeadLettered.Load(),
		NoOutcome:    r.c.NoOutcome.Load(), Looped: r.c.Looped.Load(),
		InFlight: r.c.InFlight.Load() + r.cNoPath.InFlight.Load(),
	}
	r.mode.addStatus(&st)
	st.Moved, st.Parked = r.moves.moved.Load(), r.moves.parked.Load()
	return st
}

// unsubscribe removes what the route made at its source (it is deleted).
func (r *route) unsubscribe(ctx context.Context) { r.mode.unsubscribe(ctx) }

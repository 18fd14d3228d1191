package routes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goamqp "github.com/Azure/go-amqp"
	"github.com/rs/zerolog"

	famqp "github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/links"
)

// route is one running route: a goroutine that waits for both brokers,
// attaches the route's links on sessions of its own (a refused attach ends
// the session on RabbitMQ, so routes never share one), forwards until
// something fails, and retries with backoff.
type route struct {
	m        *Manager
	id       string
	spec     Spec
	origin   Origin
	src, dst Broker
	log      zerolog.Logger
	c        links.Counters
	noPath   atomic.Uint64  // messages handled by a no-path action
	cNoPath  links.Counters // what the no-path runs did (kept apart: nothing was sent)
	policy   PathPolicy     // what the route does about its path (policy.go)
	rerouted atomic.Uint64  // messages sent over an alternative path (reroute)
	// fanout: an exchange route judged once at its source (fanout.go);
	// edge is the route as its group sees it, copies counts the copies.
	fanout        bool
	edge          ExchangeEdge
	copies        atomic.Uint64
	copiesTransit atomic.Uint64 // of copies, those sent through transit
	reach         reachCache    // the send loop's

	cancel context.CancelFunc
	done   chan struct{} // closed when run returns

	mu           sync.Mutex // guards the fields below
	state        State
	since        time.Time
	lastErr      string
	lastErrAt    time.Time
	retryAt      time.Time
	detail       string   // why the route is in its state (what it waits for)
	demand       []string // dynamic routes: the bindings held, as text
	demandSource string   // dynamic routes: how demand is followed
	localDemand  []string // dynamic routes: keys of consumers at the destination
	loggedErr    string   // the error last logged at warn/error; "" once Operational
}

// stableRun: a run that forwarded for this long resets the backoff.
const stableRun = 30 * time.Second

func newRoute(m *Manager, spec Spec, origin Origin, pick func(Broker, string) *famqp.Conn) *route {
	id := spec.ID()
	src, dst := m.opts.Brokers[spec.Src], m.opts.Brokers[spec.Dest]
	src.Conn = pick(src, spec.Src) // this route's connections
	if dst.Conn != nil {
		dst.Conn = pick(dst, spec.Dest)
	}
	steps, _ := ParseNoPath(spec.NoPath) // validated by Normalize
	if len(spec.NoPath) == 0 {
		steps = m.opts.DefaultNoPath
	}
	_, attached := m.opts.Brokers[spec.Dest]
	edge, edgeOK := spec.fanoutEdge()
	fanout := edgeOK && m.opts.Table != nil && m.opts.Advertised != nil && sharesSubscriptions(src.Profile)
	policy := PathPolicy{Src: spec.Src, Dest: spec.Dest, Mode: ModeDirect, Steps: steps, Table: m.opts.Table != nil,
		Started: m.started, Grace: m.opts.TableGrace, DeadLetterQueue: spec.DeadLetterQueue}
	switch {
	case fanout:
		policy.Mode = ModeFanout
	case !attached:
		policy.Mode = ModeRemote
	}
	return &route{policy: policy, fanout: fanout, edge: edge,
		m: m, id: id, spec: spec, origin: origin,
		src: src, dst: dst,
		log:   m.log.With().Str("route", id).Str("src", spec.Src).Str("dest", spec.Dest).Logger(),
		done:  make(chan struct{}),
		state: StateWaiting, since: time.Now(),
	}
}

func (r *route) start(parent context.Context) {
	ctx, cancel := context.WithCancel(parent)
	r.cancel = cancel
	go r.run(ctx)
}

func (r *route) stop() {
	r.cancel()
	<-r.done
}

func (r *route) run(ctx context.Context) {
	defer close(r.done)
	defer r.setState(StateClosed, nil, 0)
	attempt, suspect := 0, 0
	for {
		path, ok := r.waitPath(ctx)
		if !ok {
			return
		}
		r.setState(StateConnecting, nil, 0)
		began, sent, settled := time.Now(), r.c.Sent.Load(), r.c.Settled()
		// After a run that died on the message at the head of the source
		// (undecodable, or the destination failing on it), probe one
		// message at a time: the messages before it are settled before it
		// is even fetched (otherwise its failure strands them too), and
		// once more than a full window has passed, it is gone and the
		// route runs at full speed again.
		credit, limit := r.spec.Credit, 0
		if suspect > 0 {
			credit, limit = 1, r.spec.Credit+1
		}
		err := r.runOnce(ctx, path, credit, limit)
		if ctx.Err() != nil {
			return
		}
		if err == nil { // a probe passed the suspect's position
			suspect, attempt = 0, 0
			continue
		}
		if time.Since(began) >= stableRun {
			attempt = 0
		}
		if errors.Is(err, errConnLost) {
			r.setState(StateWaiting, err, 0)
			continue
		}
		state, delay := StateWaiting, r.m.opts.Backoff.Delay(attempt)
		attempt++
		detail, undecodable := links.Undecodable(err)
		stuck := r.c.Sent.Load() > sent && r.c.Settled() == settled
		switch {
		case undecodable || stuck:
			suspect++
			if suspect >= r.m.opts.PoisonRuns {
				state, delay = StateFailed, r.m.opts.FailedRetry
				err = poisonError(err, detail, undecodable, suspect, delay)
				suspect = r.m.opts.PoisonRuns - 1 // one more failure after the retry: Failed again
			}
		default:
			suspect = 0
			if setupFailure(err) {
				state = StateFailed
			}
		}
		r.setState(state, err, delay)
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return
		}
	}
}

// poisonError says what blocks a route whose runs keep dying on the same
// message, and what the operator can do.
func poisonError(err error, detail string, undecodable bool, times int, retry time.Duration) error {
	if undecodable {
		return fmt.Errorf("poison message: the next message at the source cannot be decoded (%s); it came back %d times; remove it from the source queue — the route retries every %s", detail, times, retry)
	}
	return fmt.Errorf("poison message: the route fails on the message at the head of the source (%d times in a row, nothing settled): %w; remove or fix it at the source — the route retries every %s", times, err, retry)
}

// setupFailure says whether err means the route cannot work as configured
// (a missing queue or exchange, no permission) rather than a passing
// failure.
func setupFailure(err error) bool {
	if errors.Is(err, famqp.ErrNotFound) || errors.Is(err, errNoDemandSupport) {
		return true
	}
	switch famqp.Condition(err) {
	case string(goamqp.ErrCondNotFound), string(goamqp.ErrCondUnauthorizedAccess), string(goamqp.ErrCondNotAllowed):
		return true
	}
	return false
}

// pathKind is how a route reaches its destination on one run.
type pathKind int

const (
	pathNone    pathKind = iota
	pathDirect           // the destination is one of the router's brokers and up
	pathTransit          // through other brokers (a remote destination, or a reroute)
	pathFanout           // copies through the source's transit queues, one per broker the group reaches
)

// observe reads what the route's path policy depends on (policy.go), and
// the channels that signal a change of any of it.
func (r *route) observe() (PathObs, []<-chan struct{}) {
	src, srcCh := r.src.Conn.Status()
	obs := PathObs{SrcUp: src.State == famqp.Operational, SrcState: src.State.String()}
	changed := []<-chan struct{}{srcCh}
	if r.policy.Mode == ModeDirect {
		dst, dstCh := r.dst.Conn.Status()
		obs.DestUp, obs.DestState = dst.State == famqp.Operational, dst.State.String()
		changed = append(changed, dstCh)
	}
	// The table matters to transit and fan-out runs (fan-out watches it
	// for route list's detail), and to a direct route that reroutes.
	if r.m.opts.Table != nil && (r.policy.Mode != ModeDirect || rerouting(r.policy.Steps)) {
		paths, tableCh := r.m.opts.Table.Paths()
		changed = append(changed, tableCh)
		if paths != nil && r.policy.Mode != ModeFanout {
			_, obs.TablePath = paths.Route(r.spec.Src, r.spec.Dest)
		}
	}
	return obs, changed
}

// waitPath waits until the path policy says forward (the source is up
// and the destination reachable, directly or through transit), and says
// how; false if ctx ended. Meanwhile it carries out the policy's other
// decisions: wait, hold, or correct (dead-letter or reject what the
// source has). The policy's state lives in st, owned by the route's run
// goroutine.
func (r *route) waitPath(ctx context.Context) (pathKind, bool) {
	var st PathState
	for {
		obs, changed := r.observe()
		var d Decision
		d, st = Decide(r.policy, obs, st, time.Now())
		if d.Report != "" {
			r.log.Warn().Str("action", d.Report).Str("why", d.Why).Msg("no path: corrective action " + d.Report)
		}
		switch d.Action {
		case ActForward:
			return d.Path, true
		case ActDeadLetter, ActReject:
			r.correct(ctx, d, st)
			if ctx.Err() != nil {
				return pathNone, false
			}
			continue
		}
		r.setWaiting(d.Detail)
		if !waitFor(ctx, d.Timer, changed) {
			return pathNone, false
		}
	}
}

// waitFor waits until ctx ends (false), d passes (if > 0) or one of the
// channels is closed (true).
func waitFor(ctx context.Context, d time.Duration, changed []<-chan struct{}) bool {
	if d <= 0 {
		return waitAny(ctx, nil, changed)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	return waitAny(ctx, t.C, changed)
}

// correct carries out a corrective decision (dead-letter or reject) until
// the policy decides otherwise: the destination is reachable again, the
// source goes, the chain's next step is due, or the route stops.
func (r *route) correct(ctx context.Context, d Decision, st PathState) {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	watched := make(chan struct{})
	go func() { // owned by correct, which waits for it; ends with actx
		defer close(watched)
		for {
			obs, changed := r.observe()
			now, _ := Decide(r.policy, obs, st, time.Now())
			if !now.Same(d) {
				cancel()
				return
			}
			if !waitFor(actx, now.Timer, changed) {
				return
			}
		}
	}()
	defer func() { cancel(); <-watched }()
	r.setWaiting(d.Detail)
	err := r.runNoPath(actx, d.Action)
	if err != nil && actx.Err() == nil {
		r.setState(StateWaiting, fmt.Errorf("no-path %s: %w", d.Action, err), time.Second)
		select { // a short pause before trying again
		case <-time.After(time.Second):
		case <-ctx.Done():
		}
	}
}

// runOnce runs the route's links until they fail, or the source or the
// path changes (a broker connection went, a direct destination came back
// while rerouting, the table lost the path).
func (r *route) runOnce(ctx context.Context, path pathKind, credit, limit int) error {
	// The run ends as soon as its path does: a receiver idle at the source
	// would not notice a dead destination until its next message, and the
	// route would look Operational without a path. It ends by draining
	// (what is in flight is settled first: no duplicates from a path
	// change), bounded by drainTimeout.
	ctx, stop := context.WithCancelCause(ctx)
	drain := make(chan struct{})
	var changed error // set before drain is closed
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		if changed = r.watchPath(ctx, path); changed == nil {
			return
		}
		close(drain)
		select {
		case <-time.After(drainTimeout):
			stop(changed)
		case <-ctx.Done():
		}
	}()
	err := r.runLinks(ctx, path, drain, credit, limit)
	stop(nil)
	<-watched
	if changed != nil {
		return changed
	}
	return err
}

// errConnLost ends a run whose path went away (a broker connection, or
// the table's path) or changed: the route waits for a path (and applies
// its no-path chain) at once, with no backoff of its own — the
// connection has one.
var errConnLost = errors.New("path changed")

// watchPath returns why, once the path policy no longer decides to
// forward on the run's path; nil when ctx ends first. A run's policy
// state is the zero one: forwarding stops the no-path clock.
func (r *route) watchPath(ctx context.Context, path pathKind) error {
	for {
		obs, changed := r.observe()
		d, _ := Decide(r.policy, obs, PathState{}, time.Now())
		if d.Action != ActForward || d.Path != path {
			why := d.Why
			if why == "" {
				why = fmt.Sprintf("broker %s is reachable directly again", r.spec.Dest)
			}
			return fmt.Errorf("%w: %s", errConnLost, why)
		}
		switch path {
		case pathTransit:
			r.setDetail(r.transitDetail()) // the path may have changed
		case pathFanout:
			r.setDetail(r.fanoutDetail()) // the routes advertised may have changed
		}
		if !waitFor(ctx, d.Timer, changed) {
			return nil
		}
	}
}

// runLinks attaches the route's links and forwards until one fails.
func (r *route) runLinks(ctx context.Context, path pathKind, drain <-chan struct{}, credit, limit int) error {
	setup, cancel := context.WithTimeout(ctx, r.m.opts.SetupTimeout)
	defer cancel()
	srcSess, _, err := r.src.Conn.NewSession(setup)
	if err != nil {
		return err
	}
	defer famqp.CloseSession(srcSess)
	_, _, dstNode := r.nodes()
	cfg := links.Config{Window: credit, Limit: limit, OutcomeTimeout: r.spec.OutcomeTimeout, Drain: drain}
	var sink links.Sink
	switch {
	case path == pathFanout:
		dispatch := &dispatchSink{at: r.spec.Src, maxHops: int64(r.m.opts.MaxHops), sess: srcSess, prof: r.src.Profile}
		fs := &fanoutSink{r: r, dispatch: dispatch, node: dstNode}
		defer fs.close()
		sink = fs
		cfg.Prepare = r.fanoutPrepare
	case path == pathTransit:
		// Into the source broker's transit queue for the destination; the
		// transit forwarders take it from there (transit.go).
		sink = &dispatchSink{at: r.spec.Src, maxHops: int64(r.m.opts.MaxHops), sess: srcSess, prof: r.src.Profile}
		cfg.Prepare = r.enterTransit(dstNode)
	default:
		dstSess, _, err := r.dst.Conn.NewSession(setup)
		if err != nil {
			return err
		}
		defer famqp.CloseSession(dstSess)
		// RabbitMQ accepts and drops sends to a missing node: look first.
		if err := r.dst.Profile.CheckTarget(setup, dstNode); err != nil {
			return fmt.Errorf("destination %s on %s: %w", dstNode, r.spec.Dest, err)
		}
		dstSpec, err := r.dst.Profile.Target(dstNode)
		if err != nil {
			return err
		}
		snd, err := dstSess.NewSender(setup, dstSpec.Address, dstSpec.SenderOptions())
		if err != nil {
			return fmt.Errorf("attach sender to %s on %s: %w", dstSpec.Address, r.spec.Dest, err)
		}
		sink = links.SenderSink{S: snd}
		if r.spec.Kind == KindExchange && r.m.opts.Table != nil {
			cfg.Prepare = r.meshHop
			if err := r.waitLinkInTable(ctx); err != nil {
				return err
			}
		}
	}
	if r.spec.OnReject == DeadLetter {
		if cfg.DeadLetter, err = r.deadLetterSink(setup, srcSess); err != nil {
			return err
		}
		cfg.DeadLetterAnnotations = map[string]string{links.AnnotationRoute: r.id + " " + r.spec.String()}
	}
	srcSpec, err := r.sourceSpec(setup)
	if err != nil {
		return err
	}
	if r.spec.Kind == KindDynamic {
		cfg.Prepare = r.traceHop
		follow, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); r.followDemand(follow) }()
		defer func() { stop(); <-done }()
	}
	window := max(1, credit/2)
	rcv, err := famqp.NewReceiver(setup, srcSess, srcSpec, famqp.ReceiverConfig{Window: window, MaxUnsettled: credit})
	if err != nil {
		return fmt.Errorf("attach receiver to %s on %s: %w", srcSpec.Address, r.spec.Src, err)
	}
	r.setState(StateOperational, nil, 0)
	switch path {
	case pathTransit:
		detail := r.transitDetail()
		r.setDetail(detail)
		r.log.Info().Str("path", detail).Msg("route runs through transit")
	case pathFanout:
		r.setDetail(r.fanoutDetail())
	}
	return links.Forward(ctx, rcv, sink, cfg, &r.c)
}

// sourceSpec resolves (and for exchange and dynamic routes, creates) the
// route's source at its broker: what its receiver attaches to.
func (r *route) sourceSpec(ctx context.Context) (famqp.LinkSpec, error) {
	if r.spec.Kind == KindDynamic {
		return r.subscribeDynamic(ctx)
	}
	srcNode, sub, _ := r.nodes()
	if r.fanout {
		sub = fanoutSubscription(r.edge)
	}
	spec, err := r.src.Profile.Source(ctx, srcNode, sub)
	if err != nil {
		return spec, fmt.Errorf("source %s on %s: %w", srcNode, r.spec.Src, err)
	}
	return spec, nil
}

// enterTransit is the Prepare of a run through transit: each message is
// addressed to the destination broker and node.
func (r *route) enterTransit(node famqp.Node) func(*goamqp.Message) bool {
	return func(out *goamqp.Message) bool {
		setEntry(out, r.spec.Src, r.spec.Dest, node)
		if r.policy.Mode == ModeDirect {
			r.rerouted.Add(1)
		}
		return true
	}
}

// transitDetail says, for route list, which path a transit run takes.
func (r *route) transitDetail() string {
	how := "multi-hop"
	if r.policy.Mode == ModeDirect {
		how = fmt.Sprintf("rerouting (the direct link to %s is down)", r.spec.Dest)
	}
	if p, _ := r.m.opts.Table.Paths(); p != nil {
		if path := p.Path(r.spec.Src, r.spec.Dest); path != nil {
			return fmt.Sprintf("%s via %s", how, strings.Join(path, " > "))
		}
	}
	return how
}

// linkWait bounds waitLinkInTable: a table that does not show the link
// by then (flooding broken) is not waited for any longer.
const linkWait = 10 * time.Second

// waitLinkInTable waits until the link-state table shows this route's
// link up. An exchange route on a mesh judges each message by the trees
// of the table (meshHop); judged by a table from before its link came
// back, a copy the other routers leave to this link would be dropped here
// too — lost. Waiting means such copies cross, at worst twice.
func (r *route) waitLinkInTable(ctx context.Context) error {
	deadline := time.NewTimer(linkWait)
	defer deadline.Stop()
	for {
		p, changed := r.m.opts.Table.Paths()
		if p != nil && p.LinkUp(r.spec.Src, r.spec.Dest) {
			return nil
		}
		r.setWaiting(fmt.Sprintf("waiting for the link-state table to show the link %s > %s up", r.spec.Src, r.spec.Dest))
		select {
		case <-changed:
		case <-deadline.C:
			r.log.Warn().Dur("waited", linkWait).Msg("the link-state table does not show this route's link; forwarding anyway")
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// meshHop is an exchange route's Prepare on a link-state network: a
// message published at one broker must reach every other once, however
// many paths the routes make. It crosses this route's link only if the
// link is on the shortest-path tree of the broker it was first published
// at (its origin; valid origins), never to a broker in its trace, and it
// records both.
func (r *route) meshHop(out *goamqp.Message) bool {
	if out.Annotations == nil {
		out.Annotations = goamqp.Annotations{}
	}
	origin, _ := out.Annotations[AnnotationOrigin].(string)
	if origin == "" {
		origin = r.spec.Src
		out.Annotations[AnnotationOrigin] = origin
	}
	if origin != r.spec.Src {
		if p, _ := r.m.opts.Table.Paths(); p != nil {
			if on, known := p.OnTree(origin, r.spec.Src, r.spec.Dest); known && !on {
				return false
			}
		}
	}
	return r.traceHop(out)
}

// deadLetterSink attaches a sender to the dead-letter queue on the source.
func (r *route) deadLetterSink(ctx context.Context, sess *goamqp.Session) (links.Sink, error) {
	return senderTo(ctx, sess, r.src.Profile, r.spec.Src, famqp.Node{Kind: famqp.Queue, Name: r.spec.DeadLetterQueue}, "dead-letter queue")
}

// nodes maps the route to the profile layer's nodes.
func (r *route) nodes() (src famqp.Node, sub famqp.Subscription, dst famqp.Node) {
	switch r.spec.Kind {
	case KindQueue:
		return famqp.Node{Kind: famqp.Queue, Name: r.spec.Queue}, famqp.Subscription{},
			famqp.Node{Kind: famqp.Exchange, Name: r.spec.Exchange}
	case KindDynamic: // bindings follow demand; messages route by subject
		n := famqp.Node{Kind: famqp.Exchange, Name: r.spec.Exchange}
		return n, r.subscription(), n
	}
	src = famqp.Node{Kind: famqp.Exchange, Name: r.spec.Exchange, Key: r.spec.Key}
	sub = r.subscription()
	dst = famqp.Node{Kind: famqp.Exchange, Name: r.spec.DestNode()}
	if r.spec.Key != "" && !strings.ContainsAny(r.spec.Key, "*#") {
		// A literal key is the routing key of every message it matches:
		// publish with it. Wildcard keys route by the message's subject.
		dst.Key = r.spec.Key
	}
	return src, sub, dst
}

// subscription names the route's private subscription at the source; the
// name derives from the route's identity, so it survives restarts.
func (r *route) subscription() famqp.Subscription {
	return famqp.Subscription{Name: "fedrouter." + r.m.opts.RouterID + "." + r.id, Durable: r.spec.Durable}
}

// unsubscribe removes an exchange or dynamic route's subscription at the
// source.
func (r *route) unsubscribe(ctx context.Context) {
	if r.spec.Kind == KindQueue {
		return
	}
	src, _, _ := r.nodes()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	sub := r.subscription()
	if r.fanout {
		// The group's queue at the source serves every route of the group
		// from there, on any router: it goes with the last of them.
		for _, e := range r.m.groupEdges(r.edge) {
			if e.Src == r.spec.Src {
				r.log.Info().Str("queue", fanoutSubscription(r.edge).Name).Str("kept_for", e.Src+" > "+e.Dest).Msg("the fan-out queue stays: another route of the group uses it")
				return
			}
		}
		sub = fanoutSubscription(r.edge)
	}
	if err := r.src.Profile.Unsubscribe(ctx, src, sub); err != nil {
		r.log.Warn().Err(err).Msg("could not remove the route's subscription at the source; remove it by hand")
	}
	if r.spec.Kind == KindDynamic {
		events := famqp.Node{Kind: famqp.Exchange, Name: "binding events"}
		if err := r.dst.Profile.Unsubscribe(ctx, events, r.eventsSubscription()); err != nil {
			r.log.Warn().Err(err).Msg("could not remove the route's binding-event queue at the destination; it expires by itself")
		}
	}
}

// setDetail says how an Operational route runs (its path).
func (r *route) setDetail(detail string) {
	r.mu.Lock()
	if r.state == StateOperational {
		r.detail = detail
	}
	r.mu.Unlock()
}

func (r *route) setWaiting(reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state != StateWaiting {
		r.state, r.since = StateWaiting, time.Now()
	}
	r.detail = reason
	r.retryAt = time.Time{}
}

func (r *route) setState(s State, err error, retry time.Duration) {
	r.mu.Lock()
	changed := r.state != s
	if changed {
		r.state, r.since, r.detail = s, time.Now(), ""
	}
	if err != nil {
		r.lastErr, r.lastErrAt = err.Error(), time.Now()
	}
	r.retryAt = time.Time{}
	if retry > 0 {
		r.retryAt = time.Now().Add(retry)
	}
	// Retries that fail the same way again (a broker refusing every
	// attempt) and the Connecting steps between them are logged at debug:
	// an outage must not flood the log. Operational ends the outage.
	repeat := r.loggedErr != "" && (s == StateConnecting || (err != nil && err.Error() == r.loggedErr))
	switch {
	case s == StateOperational:
		r.loggedErr = ""
	case err != nil:
		r.loggedErr = err.Error()
	}
	r.mu.Unlock()
	if !changed && err == nil {
		return
	}
	ev := r.log.Info()
	switch {
	case repeat:
		ev = r.log.Debug()
	case s == StateFailed:
		ev = r.log.Error()
	case err != nil:
		ev = r.log.Warn()
	}
	if err != nil {
		ev = ev.AnErr("error", err).Dur("retry_in", retry)
	}
	ev.Str("state", string(s)).Msg("route " + r.spec.String())
}

func (r *route) status() Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := Status{ID: r.id, Spec: r.spec, Origin: r.origin, State: r.state, Since: r.since,
		Detail: r.detail, LastError: r.lastErr, LastErrorAt: r.lastErrAt, Demand: slices.Clone(r.demand), DemandSource: r.demandSource}
	if !r.retryAt.IsZero() {
		st.RetryIn = time.Until(r.retryAt).Round(time.Second).String()
	}
	st.Counters = Counters{
		NoPath: r.noPath.Load(), Sent: r.c.Sent.Load(), Forwarded: r.c.Forwarded.Load(),
		Redelivered:  r.c.Redelivered.Load() + r.cNoPath.Redelivered.Load(),
		Rejected:     r.c.Rejected.Load() + r.cNoPath.Rejected.Load(),
		DeadLettered: r.c.DeadLettered.Load() + r.cNoPath.DeadLettered.Load(),
		NoOutcome:    r.c.NoOutcome.Load(), Looped: r.c.Looped.Load(), Rerouted: r.rerouted.Load(), Copies: r.copies.Load(), CopiesViaTransit: r.copiesTransit.Load(),
		InFlight: r.c.InFlight.Load() + r.cNoPath.InFlight.Load(),
	}
	return st
}

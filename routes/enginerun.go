package routes

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/engine"
	"github.com/fedrouter/fedrouter/amqp/wire"
	"github.com/fedrouter/fedrouter/links"
	"github.com/fedrouter/fedrouter/routes/pathpolicy"
)

// DataPathEngine is the one data path (Options.DataPath, the
// configuration's data_path): fedrouter's own engine (amqp/engine).
// go-amqp left the data path (issue 25); it still carries the control
// plane's clients.
const DataPathEngine = "engine"

// dataPathGoAMQP is the data path that was removed; naming it is an error
// that says so.
const dataPathGoAMQP = "go-amqp"

// CheckDataPath says whether p names a data path ("" is the default, the
// engine).
func CheckDataPath(p string) error {
	switch p {
	case "", DataPathEngine:
		return nil
	case dataPathGoAMQP:
		return fmt.Errorf("data_path %q: go-amqp is no longer a data path (every route runs on the engine); remove data_path or say %s", p, DataPathEngine)
	}
	return fmt.Errorf("data_path %q: want %s", p, DataPathEngine)
}

// engineDetail is an Operational engine run's detail in route list.
const engineDetail = "forwarding on the engine data path"

// engineClose bounds detaching a run's links and ending its sessions.
const engineClose = 5 * time.Second

// runEngine attaches a run's links on the engine and forwards until one
// fails: a session at each broker on its engine connection (dialled on first use, again after it ended), the
// source's queue forwarded to the destination as bytes, the source
// settled in ranges (spec.Ack).
func (r *route) runEngine(ctx context.Context, path pathpolicy.Path, drain <-chan struct{}, lapped func(), credit, limit int) error {
	var hook engineHook // direct runs only: through transit, enterTransit is the dispatch
	if path != pathpolicy.Transit {
		h, err := r.engineHook(ctx)
		if err != nil {
			return err
		}
		hook = h
	}
	release, err := r.m.setupSlot(ctx)
	if err != nil {
		return err
	}
	defer release()
	setup, cancel := context.WithTimeout(ctx, r.m.opts.SetupTimeout)
	defer cancel()
	l, sessions, err := r.engineLinks(setup, path)
	if err != nil {
		return err
	}
	defer endSessions(sessions...)
	if hook.dispatch != nil && l.Dispatch == nil {
		l.Dispatch = hook.dispatch
	}
	if hook.follow != nil { // once subscribed (engineLinks)
		fctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); hook.follow(fctx) }() // owned by this run: stopped and waited for below
		defer func() { stop(); <-done }()
	}
	if r.spec.MaxMoves > 0 {
		if err := r.engineMoves(setup, &l, lapped); err != nil {
			return err
		}
	}
	cfg := links.Config{Window: credit, Limit: limit, Drain: drain, OutcomeTimeout: r.spec.OutcomeTimeout, Fence: r.fence}
	if l.DeadLetter != nil {
		cfg.DeadLetterAnnotations = r.routeAnnotation()
	}
	fw, err := links.AttachEngine(setup, l, cfg, r.spec.Ack)
	if err != nil {
		return r.attachRefused(fmt.Errorf("route %s > %s on the engine: %w", r.spec.Src, r.spec.Dest, err), l)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), engineClose) // the run's ctx may be over: close anyway
		defer cancel()
		fw.Close(cctx)
	}()
	release()
	defer r.attached(fw.Holding)()
	r.forwarding.Store(true)
	defer r.forwarding.Store(false)
	r.state.setState(StateOperational, nil, 0)
	r.state.setDetail(r.runDetail(path))
	return fw.Run(ctx, cfg, &r.c)
}

// attachRefused makes an attach the broker refused with amqp:not-found a
// wait for that node (waitfor.go): the link's
// address says whether the source or the destination is missing.
func (r *route) attachRefused(err error, l links.EngineLinks) error {
	var le *engine.LinkError
	if !errors.As(err, &le) {
		return err
	}
	srcNode, _, dstNode := r.nodes()
	switch le.Address {
	case l.Target.Address:
		return missing(err, dstNode, r.spec.Dest)
	case l.Source.Address:
		return missing(err, srcNode, r.spec.Src)
	}
	return err
}

// engineLinks resolves the run's termini and begins its sessions (all
// returned, to end after the run). Through transit (path, or a
// transitMode route), the destination is the source broker's transit
// queue for the destination broker, and each message enters transit on
// the way (links.EngineEnterTransit); fan-out has links of its own
// (fanout_engine.go).
func (r *route) engineLinks(setup context.Context, path pathpolicy.Path) (links.EngineLinks, []*engine.Session, error) {
	if fm, ok := r.mode.(*fanoutMode); ok {
		return r.fanoutEngineLinks(setup, fm)
	}
	var l links.EngineLinks
	_, _, dstNode := r.nodes()
	target, at := dstNode, r.dst
	if _, transit := r.mode.(*transitMode); transit || path == pathpolicy.Transit {
		var count *atomic.Uint64
		if d, ok := r.mode.(*directMode); ok {
			count = &d.rerouted
		}
		l.Dispatch = links.EngineEnterTransit(r.spec.Src, r.spec.Dest, dstNode, count)
		target, at = links.TransitNode(r.spec.Dest), r.src
	}
	// RabbitMQ accepts and drops sends to a missing node: look first (a
	// transit queue is created).
	if err := at.Profile.CheckTarget(setup, target); err != nil {
		return l, nil, missing(fmt.Errorf("destination %s on %s: %w", target, at.Conn.Name(), err), target, r.spec.Dest)
	}
	dstSpec, err := at.Profile.Target(target)
	if err != nil {
		return l, nil, err
	}
	srcSpec, err := r.mode.source(setup)
	if err != nil {
		return l, nil, err
	}
	if l.Source, err = srcSpec.EngineReceiver(r.src.Profile); err != nil {
		return l, nil, err
	}
	if l.Target, err = dstSpec.EngineSender(); err != nil {
		return l, nil, err
	}
	if l.DeadLetter, err = r.engineDeadLetter(setup); err != nil {
		return l, nil, err
	}
	l.Gate = r.destGate()
	if l.Src, err = engineSession(setup, r.src.Conn); err != nil {
		return l, nil, err
	}
	if l.Dst, err = engineSession(setup, at.Conn); err != nil {
		endSessions(l.Src)
		return links.EngineLinks{}, nil, err
	}
	return l, []*engine.Session{l.Src, l.Dst}, nil
}

// engineMoves makes l a global destination's flow on the engine
// (links.EngineMove): each message moved, its
// moves counted, or parked back at the tail of the source queue, by a
// sender on the source's session attached when first needed.
func (r *route) engineMoves(setup context.Context, l *links.EngineLinks, lapped func()) error {
	srcNode, _, _ := r.nodes()
	if err := r.src.Profile.CheckTarget(setup, srcNode); err != nil {
		return fmt.Errorf("park on %s: %w", r.spec.Src, err)
	}
	spec, err := r.src.Profile.Target(srcNode)
	if err != nil {
		return err
	}
	park, err := spec.EngineSender()
	if err != nil {
		return err
	}
	mv := &links.EngineMove{Inner: l.Dispatch, Max: int64(r.spec.MaxMoves), Run: runStamp(), Lapped: lapped,
		Moved: &r.moves.moved, Parked: &r.moves.parked}
	src := l.Src
	l.Dispatch = mv.Dispatch
	l.Resolve = func(_ context.Context, key string) (*engine.Session, engine.SenderOptions, *wire.Error, error) {
		if key != links.ParkKey {
			return nil, engine.SenderOptions{}, nil, fmt.Errorf("a message for %s in a flow that moves or parks", key)
		}
		return src, park, nil, nil
	}
	return nil
}

// fanoutEngineLinks are a fan-out route's links on the engine.
func (r *route) fanoutEngineLinks(setup context.Context, fm *fanoutMode) (links.EngineLinks, []*engine.Session, error) {
	dl, err := r.engineDeadLetter(setup)
	if err != nil {
		return links.EngineLinks{}, nil, err
	}
	src, err := engineSession(setup, r.src.Conn)
	if err != nil {
		return links.EngineLinks{}, nil, err
	}
	l, sessions, err := fm.engineLinks(setup, src)
	sessions = append(sessions, src)
	if err != nil {
		endSessions(sessions...)
		return links.EngineLinks{}, nil, err
	}
	l.DeadLetter = dl
	return l, sessions, nil
}

// engineDeadLetter resolves the route's dead-letter queue on the source
// broker; nil when the route rejects
// at the source.
func (r *route) engineDeadLetter(setup context.Context) (*engine.SenderOptions, error) {
	if r.spec.OnReject != DeadLetter {
		return nil, nil
	}
	return r.engineDeadLetterQueue(setup)
}

// engineDeadLetterQueue is the sender's options for the route's
// dead-letter queue on the source broker, which must exist.
func (r *route) engineDeadLetterQueue(setup context.Context) (*engine.SenderOptions, error) {
	n := amqp.Node{Kind: amqp.Queue, Name: r.spec.DeadLetterQueue}
	if err := r.src.Profile.CheckTarget(setup, n); err != nil {
		return nil, fmt.Errorf("dead-letter queue on %s: %w", r.spec.Src, err)
	}
	spec, err := r.src.Profile.Target(n)
	if err != nil {
		return nil, err
	}
	o, err := spec.EngineSender()
	if err != nil {
		return nil, err
	}
	return &o, nil
}

// engineSession begins a session on c's engine connection.
func engineSession(ctx context.Context, c *amqp.Conn) (*engine.Session, error) {
	ec, err := c.Engine(ctx)
	if err != nil {
		return nil, err
	}
	s, err := ec.NewSession(ctx, engine.SessionOptions{})
	if err != nil {
		return nil, fmt.Errorf("begin session on %s (engine): %w", c.Name(), err)
	}
	return s, nil
}

// endSessions ends ss (bounded by engineClose); their links' unsettled
// deliveries go back to the brokers.
func endSessions(ss ...*engine.Session) {
	ctx, cancel := context.WithTimeout(context.Background(), engineClose)
	defer cancel()
	for _, s := range ss {
		_ = s.End(ctx) // an error: ended already, or the connection went; nothing left to hand back
	}
}

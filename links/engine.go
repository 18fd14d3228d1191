package links

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/engine"
	"github.com/fedrouter/fedrouter/amqp/wire"
)

// The engine data path (docs/engine.md, "Routes on the engine"): a run
// whose messages move as bytes on fedrouter's own AMQP engine, the source
// settled in ranges after the destination's outcome. The forwarding
// itself runs on the two connections' reader goroutines
// (engine.Forwarder); what this file adds is the run around it: its end
// (a link, session or connection gone, a drain, a limit), and the
// route's counters.
//
// Config.OutcomeTimeout and MaxAbandoned are checked every engineTick: a message without the destination's outcome in time
// is rejected at the source (NoOutcome and Rejected count it), and the
// run ends with ErrTooManyAbandoned after MaxAbandoned of them. With
// EngineLinks.DeadLetter, a message the destination rejected or gave no
// outcome for goes to that queue instead, with the annotations of
// deadLetterAnnotations (the reason, the condition, the time and
// Config.DeadLetterAnnotations), and is accepted at the source once the
// dead-letter queue accepted it (engine/deadletter.go).
// Config.Fence is asked by the engine's forwarder before each message
// (engine.ForwardOptions.Fence); a no ends the run with ErrFenced. A
// message the destination released goes back to the source, and the run
// pauses before it sends more (releasepause.go): a full queue does not
// make it send the same messages round at full speed.

// EngineLinks are one run's sessions on the engine and its termini.
type EngineLinks struct {
	Src, Dst *engine.Session
	Source   engine.ReceiverOptions
	// Target is the run's one destination, on Dst; with Dst nil there is
	// none: Dispatch names each message's and Resolve attaches them.
	Target engine.SenderOptions
	// DeadLetter, when set, is the dead-letter queue at the source's
	// broker: its sender is attached on Src.
	DeadLetter *engine.SenderOptions
	// Dispatch, when set, chooses each message's copies and what is set
	// on them (engine.ForwardOptions.Dispatch): Target is the copies
	// for "", Resolve attaches the others.
	Dispatch func([]byte, *wire.Sections, *engine.Choice)
	// Resolve says where a destination key's sender attaches (a session
	// and its options), or refuses the messages for it (the node does
	// not exist); an error ends the run. It runs on the run's goroutine,
	// bounded by ctx.
	Resolve func(ctx context.Context, key string) (*engine.Session, engine.SenderOptions, *wire.Error, error)
	// AttachTimeout bounds each Resolve and attach (default 30 s).
	AttachTimeout time.Duration
	// Early, with Dispatch and no Dst, are destinations attached before
	// the source (their keys what Dispatch names); one whose attach
	// fails is left out. Attached, when set, is told the keys attached
	// before the first message can come.
	Early    []EngineDest
	Attached func(keys []string)
	// Gate, when set, is the gate of Target's queue (a global
	// destination's limits): while it is
	// closed the copies for Target wait and the source is granted no
	// more credit; a rejection by the destination is a release at the
	// source (the limit refused it: the source keeps it) and closes the
	// gate for RefusalPause, as does a run the destination ended
	// (RabbitMQ 3.10 answers a refusal by closing the connection).
	Gate *Gate
}

// EngineDest is a destination's sender to attach: its key, session and
// options.
type EngineDest struct {
	Key    string
	Sess   *engine.Session
	Target engine.SenderOptions
}

// EngineForwarder is one run's links on the engine, attached.
type EngineForwarder struct {
	f   *engine.Forwarder
	rcv *engine.Receiver
	snd *engine.Sender // nil without Target
	l   EngineLinks
	// extra are the senders attached on the forwarder's requests.
	extra []*engine.Sender
	// last is what the counters were last brought up to (Run adds the
	// difference: a route's counters add up across its runs).
	last engine.ForwardStats
	// resumed is the forwarder's Held count at the last Resume.
	resumed uint64
	// pause holds the copies for Target back after it released one
	// (releasepause.go).
	pause *releasePause
}

// AttachEngine attaches the destination sender and the source receiver
// of l. cfg.Window is the source's credit, cfg.Fence asked before each
// message; ack is the --ack batch: 0 settles the source once per range
// the destination acknowledged, N a disposition after at most N settled
// deliveries or the engine's AckDelay.
func AttachEngine(ctx context.Context, l EngineLinks, cfg Config, ack int) (*EngineForwarder, error) {
	ro := l.Source
	ro.Credit = uint32(max(1, cfg.Window))
	fo := engine.ForwardOptions{AckN: ack, Fence: cfg.Fence, Dispatch: l.Dispatch, MaxDestinations: maxSenders}
	if l.DeadLetter != nil {
		fo.DeadLetter, fo.DeadLetterAnnotations, fo.UndecodableKey = l.DeadLetter, deadLetterAnnotations(cfg), AnnotationUndecodable
	}
	// A dispatching run with no way to a destination refuses or drops
	// every message: its source's credit is its window.
	fo.NoDestinations = l.Dst == nil && l.Resolve == nil && len(l.Early) == 0
	pause := &releasePause{}
	fo.OnReleased = func() { pause.released(time.Now().UnixNano()) }
	fo.Hold = pause.holdingNow
	if g := l.Gate; g != nil {
		fo.Hold = func() bool { return g.Closed() || pause.holdingNow() }
		fo.OnRejected = func(*engine.DeliveryState) *engine.DeliveryState {
			g.refuse()
			return engine.Released
		}
	}
	if l.Dst == nil {
		return attachDispatch(ctx, l, ro, fo, pause)
	}
	f, rcv, snd, err := engine.Forward(ctx, l.Src, ro, l.Dst, l.Target, fo)
	if err != nil {
		return nil, err
	}
	return &EngineForwarder{f: f, rcv: rcv, snd: snd, l: l, pause: pause}, nil
}

// attachDispatch attaches a dispatching forwarder: l.Early first, then
// the source.
func attachDispatch(ctx context.Context, l EngineLinks, ro engine.ReceiverOptions, fo engine.ForwardOptions, pause *releasePause) (*EngineForwarder, error) {
	f, err := engine.NewForwarder(fo)
	if err != nil {
		return nil, err
	}
	e := &EngineForwarder{f: f, l: l, pause: pause}
	var keys []string
	for _, d := range l.Early {
		snd, err := f.AddDestination(ctx, d.Key, d.Sess, d.Target)
		if err != nil {
			continue // not early then: Dispatch does without it
		}
		e.extra = append(e.extra, snd)
		keys = append(keys, d.Key)
	}
	if l.Attached != nil {
		l.Attached(keys)
	}
	if e.rcv, err = f.AttachSource(ctx, l.Src, ro); err != nil {
		e.Close(ctx)
		return nil, err
	}
	return e, nil
}

// attach answers the forwarder's request for key's sender (run
// goroutine): attached, or the messages for it refused.
func (e *EngineForwarder) attach(ctx context.Context, key string) error {
	if e.l.Resolve == nil {
		return fmt.Errorf("links: a message for %s, and no way to attach it", key)
	}
	timeout := e.l.AttachTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	sess, so, refused, err := e.l.Resolve(actx, key)
	switch {
	case err != nil:
		return err
	case refused != nil:
		e.f.Unreachable(key, refused)
		return nil
	}
	snd, err := e.f.AddDestination(actx, key, sess, so)
	if err != nil {
		return fmt.Errorf("links: %w", err)
	}
	e.extra = append(e.extra, snd)
	return nil
}

// extraDone is the error of an attached destination that ended; nil
// while all run.
func (e *EngineForwarder) extraDone() error {
	for _, s := range e.extra {
		select {
		case <-s.Done():
			return fmt.Errorf("links: send to %s: %w", s.Name(), s.Err())
		default:
		}
	}
	return nil
}

// engineTick is how often a run brings the route's counters up to date
// and looks at the forwarder's error; the forwarding itself does not
// wait for it.
const engineTick = 50 * time.Millisecond

// Run forwards until ctx ends, a link, session or connection of the run
// ends (its error returned), cfg.Drain is closed (the source's credit
// taken back, what is in flight settled, nil returned) or cfg.Limit
// messages were settled (nil). It keeps c up to date. The caller closes
// the links and sessions after: what is still unsettled then goes back
// to the source broker.
func (e *EngineForwarder) Run(ctx context.Context, cfg Config, c *Counters) error {
	tick := time.NewTicker(engineTick)
	defer tick.Stop()
	defer func() {
		e.count(c)
		c.InFlight.Store(0) // what is unsettled goes back with the links
	}()
	drain := cfg.Drain
	draining := false
	var sndDone <-chan struct{} // nil without a Target: never ready
	if e.snd != nil {
		sndDone = e.snd.Done()
	}
	var dlDone <-chan struct{} // nil without a dead-letter queue: never ready
	if dl := e.f.DeadLetterSender(); dl != nil {
		dlDone = dl.Done()
	}
	if cfg.MaxAbandoned <= 0 {
		cfg.MaxAbandoned = 1000
	}
	expired := noOutcome(cfg.OutcomeTimeout)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-drain:
			e.f.Stop()
			draining, drain = true, nil
		case <-e.rcv.Done():
			return fmt.Errorf("links: receive: %w", e.rcv.Err())
		case <-sndDone:
			return e.destEnded(fmt.Errorf("links: send: %w", e.snd.Err()))
		case key := <-e.f.AttachRequests():
			if err := e.attach(ctx, key); err != nil {
				return err
			}
		case <-dlDone:
			return fmt.Errorf("links: dead-letter send: %w", e.f.DeadLetterSender().Err())
		case <-e.l.Src.Done():
			return fmt.Errorf("links: source session: %w", e.l.Src.Err())
		case <-e.dstDone():
			return e.destEnded(fmt.Errorf("links: destination session: %w", e.l.Dst.Err()))
		case <-e.gateOpened():
		case <-e.f.Progress():
		case <-tick.C:
		}
		if over, err := e.step(cfg, c, expired, &draining); over {
			return err
		}
	}
}

// step follows one event of Run: the counters brought up to date, what
// had no outcome in time expired, what the gate held back resumed. It
// says whether the run is over, and with what error.
func (e *EngineForwarder) step(cfg Config, c *Counters, expired *engine.DeliveryState, draining *bool) (bool, error) {
	if err := e.extraDone(); err != nil {
		return true, err
	}
	if cfg.OutcomeTimeout > 0 {
		e.f.Expire(time.Now().Add(-cfg.OutcomeTimeout), expired)
	}
	prev := e.last.Accepted
	st := e.count(c)
	if st.Accepted != prev {
		e.pause.accepted()
	}
	if int(st.Abandoned) >= cfg.MaxAbandoned {
		return true, ErrTooManyAbandoned
	}
	switch err := e.f.Err(); {
	case errors.Is(err, engine.ErrFenced):
		return true, ErrFenced
	case errors.Is(err, engine.ErrDeadLetterRefused):
		return true, fmt.Errorf("links: send: %w", err)
	case err != nil:
		return true, e.destEnded(fmt.Errorf("links: send: %w", err))
	}
	if *draining && st.InFlight == 0 && st.Parked == 0 {
		return true, nil
	}
	if cfg.Limit > 0 && int(st.Settled+st.Refused) >= cfg.Limit {
		e.f.Stop()
		*draining = true
	}
	if st.Held != e.resumed && !e.holding() {
		e.resumed = st.Held
		e.f.Resume()
	}
	return false, nil
}

// holding says whether the run holds its copies for Target back now: its
// gate is closed, or it pauses after a release.
func (e *EngineForwarder) holding() bool {
	if g := e.l.Gate; g != nil && g.Closed() {
		return true
	}
	return e.pause.holdingNow()
}

// destEnded is err, the end of the run's destination; with a gate, the
// gate closes for RefusalPause first:
// RabbitMQ 3.10 answers a refusal by closing the connection, and the
// next run waits.
func (e *EngineForwarder) destEnded(err error) error {
	if e.l.Gate != nil {
		e.l.Gate.refuse()
	}
	return err
}

// gateOpened is closed when the run's gate, closed now, opens; nil (never
// ready) without a gate or while it is open. A refusal's pause is seen
// at the next tick.
func (e *EngineForwarder) gateOpened() <-chan struct{} {
	if e.l.Gate == nil {
		return nil
	}
	return e.l.Gate.opened()
}

// dstDone is the destination session's end; nil (never) without one.
func (e *EngineForwarder) dstDone() <-chan struct{} {
	if e.l.Dst == nil {
		return nil
	}
	return e.l.Dst.Done()
}

// count brings c up to the forwarder's counts and returns them.
func (e *EngineForwarder) count(c *Counters) engine.ForwardStats {
	st := e.f.Stats()
	p := e.last
	c.Sent.Add(st.Forwarded - p.Forwarded)
	c.Forwarded.Add(st.Accepted - p.Accepted)
	c.Rejected.Add(st.Rejected - p.Rejected + st.Refused - p.Refused + st.Expired - p.Expired + st.Refusals - p.Refusals)
	c.NoOutcome.Add(st.Abandoned - p.Abandoned)
	c.DeadLettered.Add(st.DeadLettered - p.DeadLettered)
	c.Looped.Add(st.Dropped - p.Dropped)
	// Released at the source: outcomes other than accepted or rejected,
	// and deliveries that were never sent (the forwarder stopping, or
	// beyond what it may park) — but for those the source sent
	// pre-settled: lost.
	redelivered := func(s engine.ForwardStats) uint64 {
		return s.Settled - s.Accepted - s.Rejected - s.Expired - s.DeadLettered - s.Refusals - s.Dropped + s.Released - s.Lost
	}
	c.Redelivered.Add(redelivered(st) - redelivered(p))
	c.Lost.Add(st.Lost - p.Lost)
	c.InFlight.Store(int64(st.InFlight + st.Parked))
	e.last = st
	return st
}

// Holding is what the source receiver holds unsettled (received, not
// yet settled at the source) and the credit it has granted and not yet
// received against.
func (e *EngineForwarder) Holding() (held, credit int64) {
	h, c := e.rcv.Holding()
	return int64(h), int64(c)
}

// Close detaches the run's links, the receiver first (bounded by ctx):
// what is unsettled at the source is released by the broker.
func (e *EngineForwarder) Close(ctx context.Context) {
	if e.rcv != nil {
		_ = e.rcv.Close(ctx) // the sessions end next: an error here changes nothing
	}
	for _, s := range e.f.Destinations() {
		_ = s.Close(ctx)
	}
	if dl := e.f.DeadLetterSender(); dl != nil {
		_ = dl.Close(ctx)
	}
}

// noOutcome is the state a message without the destination's outcome in
// time is settled with at the source when there is no dead-letter
// queue: rejected.
func noOutcome(timeout time.Duration) *engine.DeliveryState {
	return &engine.DeliveryState{Kind: wire.StateRejected, Error: &wire.Error{Condition: "amqp:not-allowed",
		Description: fmt.Sprintf("fedrouter: no outcome from the destination within %s (unroutable?)", timeout)}}
}

// EngineRefuseAll is a Dispatch refusing every message with condition
// and reason (a route with no path: CondNoPath), each counted in count:
// rejected at the source, or dead-lettered with the reason.
func EngineRefuseAll(condition, reason string, count *atomic.Uint64) func([]byte, *wire.Sections, *engine.Choice) {
	refusal := engineRefusal(condition, reason) // shared: the forwarder only reads it
	return func(_ []byte, _ *wire.Sections, c *engine.Choice) {
		count.Add(1)
		c.Refuse = refusal
	}
}

// AnnotationUndecodable holds, on a message dead-lettered on the engine
// because its message annotations do not decode, that section as it
// came (encoded, a binary): it cannot be rewritten, and nothing is lost.
const AnnotationUndecodable = "x-fedrouter-undecodable-annotations"

// deadLetterAnnotations are the annotations a message dead-lettered on
// the engine gets (AnnotationReason, AnnotationCondition, AnnotationTime
// and Config.DeadLetterAnnotations), encoded. A message whose
// annotations do not decode is said so, with amqp:decode-error.
func deadLetterAnnotations(cfg Config) func(st *engine.DeliveryState, cause engine.DeadLetterCause) []wire.Annotated {
	return func(st *engine.DeliveryState, cause engine.DeadLetterCause) []wire.Annotated {
		reason, condition := "rejected by the destination", "amqp:not-allowed"
		switch {
		case cause == engine.CauseNoOutcome:
			reason = fmt.Sprintf("no outcome from the destination within %s (unroutable?)", cfg.OutcomeTimeout)
		case cause == engine.CauseUndecodable:
			reason, condition = "the message does not decode: "+st.Error.Description, st.Error.Condition
		case cause == engine.CauseRefused: // the router's own: as it said it
			reason, condition = strings.TrimPrefix(st.Error.Description, refusalPrefix), st.Error.Condition
		case st.Error != nil && (st.Error.Condition != "" || st.Error.Description != ""):
			reason += ": " + amqp.Refused(st.Error.Condition, st.Error.Description).Reason()
		}
		set := make([]wire.Annotated, 0, 3+len(cfg.DeadLetterAnnotations))
		set = append(set,
			wire.Annotated{Key: AnnotationReason, Value: wire.AppendString(nil, reason)},
			wire.Annotated{Key: AnnotationCondition, Value: wire.AppendString(nil, condition)},
			wire.Annotated{Key: AnnotationTime, Value: wire.AppendTimestamp(nil, wire.Timestamp(time.Now().UnixMilli()))})
		for k, v := range cfg.DeadLetterAnnotations {
			set = append(set, wire.Annotated{Key: k, Value: wire.AppendString(nil, v)})
		}
		return set
	}
}

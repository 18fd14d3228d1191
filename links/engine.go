package links

import (
	"context"
	"errors"
	"fmt"
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
// Config.OutcomeTimeout and MaxAbandoned act as on go-amqp, checked
// every engineTick: a message without the destination's outcome in time
// is rejected at the source (NoOutcome and Rejected count it), and the
// run ends with ErrTooManyAbandoned after MaxAbandoned of them. With
// EngineLinks.DeadLetter, a message the destination rejected or gave no
// outcome for goes to that queue instead, with the annotations
// links.Forward gives it (the reason, the condition, the time and
// Config.DeadLetterAnnotations), and is accepted at the source once the
// dead-letter queue accepted it (engine/deadletter.go). Config.Prepare
// and Config.DeadLetter are go-amqp's: EngineLinks.Rewrite (on bytes)
// and EngineLinks.DeadLetter stand for them. Config.Fence is asked by the engine's forwarder before each
// message (engine.ForwardOptions.Fence); a no ends the run with
// ErrFenced, as on go-amqp.

// EngineLinks are one run's sessions on the engine and its two termini.
type EngineLinks struct {
	Src, Dst *engine.Session
	Source   engine.ReceiverOptions
	Target   engine.SenderOptions
	// DeadLetter, when set, is the dead-letter queue at the source's
	// broker: its sender is attached on Src.
	DeadLetter *engine.SenderOptions
	// Rewrite, when set, is the run's per-message hook (a route's
	// meshHop or traceHop on bytes, routes/enginehook.go): the
	// annotations to set, engine.ErrDrop for a message that would loop
	// (accepted at the source, counted Looped), or an error refusing it.
	Rewrite func(payload []byte, s *wire.Sections) ([]wire.Annotated, error)
}

// EngineForwarder is one run's links on the engine, attached.
type EngineForwarder struct {
	f   *engine.Forwarder
	rcv *engine.Receiver
	snd *engine.Sender
	l   EngineLinks
	// last is what the counters were last brought up to (Run adds the
	// difference: a route's counters add up across its runs).
	last engine.ForwardStats
}

// AttachEngine attaches the destination sender and the source receiver
// of l. cfg.Window is the source's credit, cfg.Fence asked before each
// message; ack is the --ack batch: 0 settles the source once per range
// the destination acknowledged, N a disposition after at most N settled
// deliveries or the engine's AckDelay.
func AttachEngine(ctx context.Context, l EngineLinks, cfg Config, ack int) (*EngineForwarder, error) {
	ro := l.Source
	ro.Credit = uint32(max(1, cfg.Window))
	fo := engine.ForwardOptions{AckN: ack, Fence: cfg.Fence, Rewrite: l.Rewrite}
	if l.DeadLetter != nil {
		fo.DeadLetter, fo.DeadLetterAnnotations, fo.UndecodableKey = l.DeadLetter, deadLetterAnnotations(cfg), AnnotationUndecodable
	}
	f, rcv, snd, err := engine.Forward(ctx, l.Src, ro, l.Dst, l.Target, fo)
	if err != nil {
		return nil, err
	}
	return &EngineForwarder{f: f, rcv: rcv, snd: snd, l: l}, nil
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
		case <-e.snd.Done():
			return fmt.Errorf("links: send: %w", e.snd.Err())
		case <-dlDone:
			return fmt.Errorf("links: dead-letter send: %w", e.f.DeadLetterSender().Err())
		case <-e.l.Src.Done():
			return fmt.Errorf("links: source session: %w", e.l.Src.Err())
		case <-e.l.Dst.Done():
			return fmt.Errorf("links: destination session: %w", e.l.Dst.Err())
		case <-e.f.Progress():
		case <-tick.C:
		}
		if cfg.OutcomeTimeout > 0 {
			e.f.Expire(time.Now().Add(-cfg.OutcomeTimeout), expired)
		}
		st := e.count(c)
		if int(st.Abandoned) >= cfg.MaxAbandoned {
			return ErrTooManyAbandoned
		}
		if err := e.f.Err(); errors.Is(err, engine.ErrFenced) {
			return ErrFenced
		} else if err != nil {
			return fmt.Errorf("links: send: %w", err)
		}
		if draining && st.InFlight == 0 && st.Parked == 0 {
			return nil
		}
		if cfg.Limit > 0 && int(st.Settled+st.Refused) >= cfg.Limit {
			e.f.Stop()
			draining = true
		}
	}
}

// count brings c up to the forwarder's counts and returns them.
func (e *EngineForwarder) count(c *Counters) engine.ForwardStats {
	st := e.f.Stats()
	p := e.last
	c.Sent.Add(st.Forwarded - p.Forwarded)
	c.Forwarded.Add(st.Accepted - p.Accepted)
	c.Rejected.Add(st.Rejected - p.Rejected + st.Refused - p.Refused + st.Expired - p.Expired)
	c.NoOutcome.Add(st.Abandoned - p.Abandoned)
	c.DeadLettered.Add(st.DeadLettered - p.DeadLettered)
	c.Looped.Add(st.Looped - p.Looped)
	// Released at the source: outcomes other than accepted or rejected,
	// and deliveries that were never sent (the forwarder stopping, or
	// beyond what it may park).
	redelivered := func(s engine.ForwardStats) uint64 {
		return s.Settled - s.Accepted - s.Rejected - s.Expired - s.DeadLettered - s.Looped + s.Released
	}
	c.Redelivered.Add(redelivered(st) - redelivered(p))
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
	_ = e.rcv.Close(ctx) // the sessions end next: an error here changes nothing
	_ = e.snd.Close(ctx)
	if dl := e.f.DeadLetterSender(); dl != nil {
		_ = dl.Close(ctx)
	}
}

// noOutcome is the state a message without the destination's outcome in
// time is settled with at the source: rejected, as links.Forward does
// without a dead-letter queue.
func noOutcome(timeout time.Duration) *engine.DeliveryState {
	return &engine.DeliveryState{Kind: wire.StateRejected, Error: &wire.Error{Condition: "amqp:not-allowed",
		Description: fmt.Sprintf("fedrouter: no outcome from the destination within %s (unroutable?)", timeout)}}
}

// AnnotationUndecodable holds, on a message dead-lettered on the engine
// because its message annotations do not decode, that section as it
// came (encoded, a binary): it cannot be rewritten, and nothing is lost.
const AnnotationUndecodable = "x-fedrouter-undecodable-annotations"

// deadLetterAnnotations are the annotations a message dead-lettered on
// the engine gets: those refuse gives one on go-amqp, encoded. A
// message that does not decode (go-amqp cannot take it at all: a poison
// message there) is said so, with amqp:decode-error.
func deadLetterAnnotations(cfg Config) func(st *engine.DeliveryState, cause engine.DeadLetterCause) []wire.Annotated {
	return func(st *engine.DeliveryState, cause engine.DeadLetterCause) []wire.Annotated {
		reason, condition := "rejected by the destination", "amqp:not-allowed"
		switch {
		case cause == engine.CauseNoOutcome:
			reason = fmt.Sprintf("no outcome from the destination within %s (unroutable?)", cfg.OutcomeTimeout)
		case cause == engine.CauseUndecodable && st.Error.Condition == CondInvalidField: // refused by the route's hook
			reason, condition = "refused: "+st.Error.Description, st.Error.Condition
		case cause == engine.CauseUndecodable:
			reason, condition = "the message does not decode: "+st.Error.Description, st.Error.Condition
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

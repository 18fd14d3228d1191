// Package links moves messages across a federation link: from a receiver
// on the source broker to a sender on the destination broker, settling the
// source only once the destination has decided (at-least-once).
package links

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fedrouter/fedrouter/amqp"
)

// Source is where a forwarder takes messages from: *amqp.Receiver.
type Source interface {
	Receive(ctx context.Context) (amqp.Message, error)
	Accept(ctx context.Context, msg amqp.Message) error
	Release(ctx context.Context, msg amqp.Message) error
	Reject(ctx context.Context, msg amqp.Message, condition, description string) error
}

// Receipt is the pending outcome of one send: *amqp.Receipt, or one the
// router decides itself (Refusal).
type Receipt interface {
	Wait(ctx context.Context) (amqp.Outcome, error)
}

// Sink is where a forwarder sends to. SenderSink adapts an amqp.Sender.
type Sink interface {
	Send(ctx context.Context, msg amqp.Message) (Receipt, error)
}

// MessageSender is what SenderSink sends with: *amqp.Sender, or
// *amqp.PooledSender.
type MessageSender interface {
	Send(ctx context.Context, msg amqp.Message) (*amqp.Receipt, error)
}

// SenderSink adapts a MessageSender to Sink.
type SenderSink struct{ S MessageSender }

// Send sends msg unsettled and returns its receipt.
func (s SenderSink) Send(ctx context.Context, msg amqp.Message) (Receipt, error) {
	r, err := s.S.Send(ctx, msg)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Refusal is a receipt that refuses the message at once with a condition
// (fed:...) and a reason: Forward dead-letters or rejects it at the source
// as the route says.
func Refusal(condition, reason string) Receipt {
	o := amqp.Refused(condition, reason)
	o.Local = true
	return refusal{o}
}

type refusal struct{ o amqp.Outcome }

func (r refusal) Wait(context.Context) (amqp.Outcome, error) { return r.o, nil }

// Config tunes one forwarder run.
type Config struct {
	// Window bounds the messages sent and not yet settled at the source.
	// The channels between the receive, send and settle loops hold at most
	// this many each; the source receiver's MaxUnsettled must not exceed
	// it, and bounds all of them together (a message is unsettled from its
	// Receive to its settlement).
	Window int
	// OutcomeTimeout bounds the wait for the destination's outcome of one
	// message, counted from its send. Past it the message is unroutable.
	OutcomeTimeout time.Duration
	// DeadLetter, when set, receives rejected and unroutable messages
	// (annotated with the reason) and they are accepted at the source;
	// when nil they are rejected at the source.
	DeadLetter Sink
	// Annotations added to dead-lettered messages besides the reason
	// (route id, destination).
	DeadLetterAnnotations map[string]string
	// Prepare, when set, sees each message's forward copy before it is
	// sent and may change it (a dynamic route adds its trace); returning
	// false drops it: it is accepted at the source, not sent, and counted
	// as Looped (it has already been where it would go).
	Prepare func(out amqp.Message) bool
	// Limit, when > 0, ends the run cleanly (nil) once this many messages
	// have been received and settled: a route probing past a suspected
	// poison message runs in such short steps.
	Limit int
	// Drain, when closed, ends the run gracefully: no more messages are
	// taken from the source, those in flight get their outcomes and are
	// settled, and Forward returns nil. A forwarder whose path changed
	// stops this way, so that nothing it sent comes back from the source
	// as a duplicate. Callers bound the wait by cancelling ctx.
	Drain <-chan struct{}
	// MaxAbandoned: after this many sends without outcome on one run, the
	// run ends so the destination link is rebuilt (go-amqp keeps a record
	// of every unsettled delivery; this bounds it). Default 1000.
	MaxAbandoned int
	// Fence, when set, is asked before each message is sent: false ends
	// the run with ErrFenced, that message unsent (it goes back to the
	// source with the session). In a router cluster it says whether this
	// router's lease on the route still covers it: a router paused past
	// its lease must not forward a single message on waking.
	Fence func() bool
}

// ErrFenced: the run ended because Config.Fence said no.
var ErrFenced = errors.New("links: this router no longer holds the route's lease")

// Counters are a route's message counts; safe for concurrent reads.
type Counters struct {
	Sent, Forwarded, Redelivered, Rejected, DeadLettered, NoOutcome, Looped atomic.Uint64
	// Lost: sent pre-settled by the source and not taken by the
	// destination — nothing redelivers them (the engine's count; go-amqp
	// does not say whether a delivery came settled).
	Lost     atomic.Uint64
	InFlight atomic.Int64
}

// Settled is how many messages left the source one way or another.
func (c *Counters) Settled() uint64 {
	return c.Forwarded.Load() + c.Redelivered.Load() + c.Rejected.Load() + c.DeadLettered.Load() + c.Looped.Load() + c.Lost.Load()
}

// Annotation keys put on dead-lettered messages.
const (
	AnnotationReason = "x-fedrouter-reason"
	// AnnotationCondition is the AMQP condition the message would have
	// been rejected with (e.g. amqp:unauthorized-access, fed:no-path).
	AnnotationCondition = "x-fedrouter-condition"
	AnnotationRoute     = "x-fedrouter-route"
	AnnotationTime      = "x-fedrouter-time" // when it was dead-lettered
)

// ErrTooManyAbandoned ends a run whose destination stopped answering.
var ErrTooManyAbandoned = errors.New("links: too many sends without an outcome; rebuilding the destination link")

// pending is a message sent to the destination, outcome not yet known.
type pending struct {
	msg      amqp.Message // as received: settled through the source
	receipt  Receipt      // nil when the send itself refused the message
	sendErr  error        // why the send refused it (e.g. message too large)
	looped   bool         // not sent: Prepare dropped it
	deadline time.Time
}

// Forward runs until ctx ends or a link fails, and returns why. Messages
// received and not yet settled when it returns are left unsettled: the
// caller closes the source session and the broker redelivers them.
//
// Three goroutines, each handing on in order through a channel (so order
// is kept per route): the receive loop takes messages from the source; this
// one sends them; the settle loop waits for each outcome in send order and
// settles the source. The window bounds what is between them. Forward owns
// the receive and settle loops (and, with cfg.Drain, a drain watcher) and
// joins all of them before it returns: nothing it starts outlives the call.
//
// Why receiving has a goroutine of its own (measured, docs/performance.md):
// a send returns only once its transfer is written, and while the send
// loop was sending it was not receiving, so the source receiver's next
// credit grant — issued inside Receive once the last grant is used up —
// waited for the send as well. Received ahead, the next message is ready
// when a send returns and grants go out as soon as they are due.
func Forward(ctx context.Context, src Source, dst Sink, cfg Config, c *Counters) error {
	if cfg.Window <= 0 {
		cfg.Window = 1
	}
	if cfg.MaxAbandoned <= 0 {
		cfg.MaxAbandoned = 1000
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var first firstError
	queue := make(chan pending, cfg.Window)
	var wg sync.WaitGroup // every goroutine of this run; waited below
	wg.Add(1)
	go func() { // the settle loop: ends when queue is closed below, or with ctx
		defer wg.Done()
		if err := settleLoop(ctx, queue, src, cfg, c); err != nil {
			first.set(err)
			cancel()
		}
	}()
	// The receive loop stops when the send loop does, not with the run: the
	// settle loop still settles what was sent.
	rctx, stopReceiving := context.WithCancel(ctx)
	received := make(chan receivedMsg, cfg.Window)
	var draining atomic.Bool
	if cfg.Drain != nil {
		wg.Add(1)
		go func() { // ends with rctx, which stopReceiving below cancels
			defer wg.Done()
			select {
			case <-cfg.Drain:
				draining.Store(true)
				stopReceiving()
			case <-rctx.Done():
			}
		}()
	}
	wg.Add(1)
	go func() { // the receive loop: ends with rctx, a receive error or the limit
		defer wg.Done()
		receiveLoop(rctx, src, cfg.Limit, &draining, received)
	}()
	first.set(sendLoop(ctx, received, queue, dst, cfg, c))
	stopReceiving()
	close(queue)
	wg.Wait()
	// What is still unsettled goes back to the source broker with the
	// session the caller closes: nothing is in flight any more.
	c.InFlight.Store(0)
	return first.get()
}

// Undecodable reports whether err is the source link failing on a
// message that cannot be decoded (amqp.Undecodable): a poison message.
func Undecodable(err error) (string, bool) { return amqp.Undecodable(err) }

// receivedMsg is what the receive loop hands on: a message, or the error
// that ended receiving (after every message received before it).
type receivedMsg struct {
	msg amqp.Message
	err error
}

// receiveLoop receives from src into out until limit messages (if > 0),
// the first error (handed on), ctx's end or a drain, and closes out. Messages it
// holds count against the source receiver's unsettled bound like any
// other, so reading ahead adds no memory beyond the window.
func receiveLoop(ctx context.Context, src Source, limit int, draining *atomic.Bool, out chan<- receivedMsg) {
	defer close(out)
	for n := 0; limit <= 0 || n < limit; n++ {
		msg, err := src.Receive(ctx)
		if err != nil && draining.Load() {
			return // drained: the send loop ends cleanly, the settle loop settles
		}
		select {
		case out <- receivedMsg{msg, err}:
		case <-ctx.Done():
			return // the send loop has stopped: msg goes back with the session
		}
		if err != nil {
			return
		}
	}
}

func sendLoop(ctx context.Context, in <-chan receivedMsg, queue chan<- pending, dst Sink, cfg Config, c *Counters) error {
	for {
		var r receivedMsg
		var ok bool
		select {
		case r, ok = <-in:
		case <-ctx.Done():
			return ctx.Err()
		}
		if !ok {
			return nil // the limit: the settle loop drains what is in flight
		}
		if r.err != nil {
			return fmt.Errorf("links: receive: %w", r.err)
		}
		if cfg.Fence != nil && !cfg.Fence() {
			return ErrFenced
		}
		p := pending{msg: r.msg}
		out := r.msg.ForwardCopy()
		if cfg.Prepare != nil && !cfg.Prepare(out) {
			p.looped = true
			p.deadline = time.Now()
			c.InFlight.Add(1)
			select {
			case queue <- p: // settled in order with the rest
			case <-ctx.Done():
				return ctx.Err()
			}
			continue
		}
		var err error
		p.receipt, err = dst.Send(ctx, out)
		if err != nil {
			if !amqp.PerMessage(err) {
				return fmt.Errorf("links: send: %w", err)
			}
			p.sendErr = err
		} else {
			c.Sent.Add(1)
		}
		p.deadline = time.Now().Add(cfg.OutcomeTimeout)
		c.InFlight.Add(1)
		select {
		case queue <- p:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func settleLoop(ctx context.Context, queue <-chan pending, src Source, cfg Config, c *Counters) error {
	abandoned := 0
	w := outcomeWaiter{parent: ctx}
	defer w.stop()
	for p := range queue {
		if p.looped {
			c.Looped.Add(1)
			if err := wrapSettle("accept looped", src.Accept(ctx, p.msg)); err != nil {
				return err
			}
			c.InFlight.Add(-1)
			continue
		}
		state, err := w.outcome(p)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("links: wait for outcome: %w", err)
			}
			abandoned++
			c.NoOutcome.Add(1)
			err = fmt.Errorf("no outcome from the destination within %s (unroutable?)", cfg.OutcomeTimeout)
		}
		if err := settle(ctx, p.msg, state, err, src, cfg, c); err != nil {
			return err
		}
		c.InFlight.Add(-1)
		if abandoned >= cfg.MaxAbandoned {
			return ErrTooManyAbandoned
		}
	}
	return nil
}

// outcomeWaiter waits for each outcome, in send order, until that
// message's deadline, without a context and a timer per message (creating
// them was about 3 % of the forwarder's CPU in the profile,
// docs/performance.md). Deadlines
// grow in send order, so one context with an earlier message's deadline
// serves every later message until it expires; then a wait that is not yet
// past its own deadline starts again with a new one. Healthy traffic
// re-arms once per OutcomeTimeout.
type outcomeWaiter struct {
	parent context.Context
	ctx    context.Context // nil until the first wait
	cancel context.CancelFunc
}

// outcome waits for p's outcome until p's deadline: context.DeadlineExceeded
// past it, the parent's error once the run ends.
func (w *outcomeWaiter) outcome(p pending) (amqp.Outcome, error) {
	if p.receipt == nil {
		return amqp.Refused("amqp:not-allowed", p.sendErr.Error()), nil
	}
	for {
		if w.ctx == nil || w.ctx.Err() != nil {
			w.stop()
			w.ctx, w.cancel = context.WithDeadline(w.parent, p.deadline)
		}
		state, err := p.receipt.Wait(w.ctx)
		if err == nil || w.parent.Err() != nil || w.ctx.Err() == nil {
			return state, err // an outcome, the run's end, or a link failure
		}
		if !time.Now().Before(p.deadline) {
			return amqp.Outcome{}, context.DeadlineExceeded
		}
		// The deadline that passed was an earlier message's: wait on.
	}
}

func (w *outcomeWaiter) stop() {
	if w.cancel != nil {
		w.cancel()
	}
}

// settle settles msg at the source according to the destination's
// outcome; noRoute is set when there was none in time.
func settle(ctx context.Context, msg amqp.Message, o amqp.Outcome, noRoute error, src Source, cfg Config, c *Counters) error {
	reason, condition := "", "amqp:not-allowed"
	switch o.Kind {
	case amqp.Accepted:
		c.Forwarded.Add(1)
		return wrapSettle("accept", src.Accept(ctx, msg))
	case amqp.Rejected:
		reason = "rejected by the destination"
		switch {
		case o.Local:
			// The router's own refusal (a route without a path, a bad
			// transit message): its condition and reason are what the
			// source should see.
			condition, reason = o.Condition, o.Description
		case o.Condition != "" || o.Description != "":
			reason += ": " + o.Reason()
		}
	case amqp.NoState:
		if noRoute == nil {
			// A settlement without a state: treat as released, nothing lost.
			c.Redelivered.Add(1)
			return wrapSettle("release", src.Release(ctx, msg))
		}
		reason = noRoute.Error()
	default: // released, modified: the destination did not take it; the
		// source broker redelivers it.
		c.Redelivered.Add(1)
		return wrapSettle("release", src.Release(ctx, msg))
	}
	return refuse(ctx, msg, condition, reason, src, cfg, c)
}

// refuse applies the reject policy to a message the destination did not
// take.
func refuse(ctx context.Context, msg amqp.Message, condition, reason string, src Source, cfg Config, c *Counters) error {
	if cfg.DeadLetter == nil {
		c.Rejected.Add(1)
		return wrapSettle("reject", src.Reject(ctx, msg, condition, "fedrouter: "+reason))
	}
	dl := msg.ForwardCopy()
	dl.SetAnnotation(AnnotationReason, reason)
	dl.SetAnnotation(AnnotationCondition, condition)
	dl.SetAnnotation(AnnotationTime, time.Now().UTC())
	for k, v := range cfg.DeadLetterAnnotations {
		dl.SetAnnotation(k, v)
	}
	r, err := cfg.DeadLetter.Send(ctx, dl)
	if err != nil {
		return fmt.Errorf("links: dead-letter send: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, cfg.OutcomeTimeout)
	defer cancel()
	o, err := r.Wait(wctx)
	if err != nil {
		return fmt.Errorf("links: dead-letter outcome: %w", err)
	}
	if o.Kind != amqp.Accepted {
		// The dead-letter queue refused it: keep the message at the source.
		_ = src.Release(ctx, msg) // the error that matters is the one returned: the run ends and the session's close hands it back anyway
		return fmt.Errorf("links: dead-letter queue did not accept the message (%s %s)", o.Kind, o.Reason())
	}
	c.DeadLettered.Add(1)
	return wrapSettle("accept dead-lettered", src.Accept(ctx, msg))
}

func wrapSettle(op string, err error) error {
	if err != nil {
		return fmt.Errorf("links: %s at source: %w", op, err)
	}
	return nil
}

// firstError keeps the first non-nil, non-cancellation error set, or a
// cancellation if nothing else.
type firstError struct {
	mu  sync.Mutex
	err error
}

func (f *firstError) set(err error) {
	if err == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil || (errors.Is(f.err, context.Canceled) && !errors.Is(err, context.Canceled)) {
		f.err = err
	}
}

func (f *firstError) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

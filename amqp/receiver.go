package amqp

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	goamqp "github.com/Azure/go-amqp"
)

// Receiver wraps a go-amqp receiver with explicitly managed credit.
//
// Why: with automatic credit go-amqp decrements its credit counter on every
// transfer; when RabbitMQ 3.10 sends more transfers than the credit it was
// granted (seen here in most long drains), the unsigned counter wraps and
// go-amqp never grants credit again: the link stalls for good.
//
// How: the link runs in manual mode. Receiver mirrors go-amqp's counter as a
// signed number (credit left = granted − received, negative after an
// over-delivery) and grants the next window only once the previous grant is
// used up entirely (credit ≤ 0). At that moment no transfer is in flight, so
// the broker and we agree on the delivery count. The grant is Window − credit,
// which makes go-amqp's own (wrapped) counter come out at exactly Window.
//
// Bound: at most MaxUnsettled messages are held unsettled; a grant that
// would exceed it waits for settlements (Accept/Release/Reject), so a slow
// destination holds messages at the source broker, not in memory.
type Receiver struct {
	r            *goamqp.Receiver
	window       int64
	maxUnsettled int64

	mu        sync.Mutex
	credit    int64         // guarded by mu: our mirror of the link credit left
	unsettled int64         // guarded by mu: received and not yet settled
	settled   chan struct{} // signalled (non-blocking) on each settlement

	overDelivered atomic.Uint64 // transfers received beyond the credit granted
	grants        atomic.Uint64
}

// ReceiverConfig sets a Receiver's window.
type ReceiverConfig struct {
	Window       int // credit per grant; default 500
	MaxUnsettled int // default 2×Window; at least Window
}

// NewReceiver attaches a receiver for spec on sess.
func NewReceiver(ctx context.Context, sess *Session, spec LinkSpec, cfg ReceiverConfig) (*Receiver, error) {
	if cfg.Window <= 0 {
		cfg.Window = 500
	}
	if cfg.MaxUnsettled < cfg.Window {
		cfg.MaxUnsettled = 2 * cfg.Window
	}
	r, err := sess.s.NewReceiver(ctx, spec.Address, spec.ReceiverOptions())
	if err != nil {
		return nil, wrap("attach receiver "+spec.Address, "", err)
	}
	return &Receiver{r: r, window: int64(cfg.Window), maxUnsettled: int64(cfg.MaxUnsettled),
		settled: make(chan struct{}, 1)}, nil
}

// Receive returns the next message, granting credit as described on
// Receiver. It blocks until a message arrives, the link fails, or ctx ends.
func (r *Receiver) Receive(ctx context.Context) (Message, error) {
	if err := r.maybeGrant(ctx); err != nil {
		return Message{}, err
	}
	msg, err := r.r.Receive(ctx, nil)
	if err != nil {
		return Message{}, wrap("receive", "", err)
	}
	r.mu.Lock()
	if r.credit <= 0 {
		r.overDelivered.Add(1)
	}
	r.credit--
	// Every message counts until the caller settles it, pre-settled ones
	// (the Proton C broker) included: go-amqp hides which is which and
	// makes settling those a no-op, so callers settle every message.
	r.unsettled++
	r.mu.Unlock()
	return Message{m: msg}, nil
}

// maybeGrant issues the next window once the last is consumed and the
// unsettled bound allows it, waiting for settlements if need be.
func (r *Receiver) maybeGrant(ctx context.Context) error {
	for {
		r.mu.Lock()
		if r.credit > 0 {
			r.mu.Unlock()
			return nil
		}
		if r.unsettled+r.window <= r.maxUnsettled {
			grant := r.window - r.credit
			r.credit = r.window
			r.mu.Unlock()
			r.grants.Add(1)
			if err := r.r.IssueCredit(uint32(grant)); err != nil {
				return wrap("issue credit", "", err)
			}
			return nil
		}
		r.mu.Unlock()
		select {
		case <-r.settled:
		case <-ctx.Done():
			return wrap("wait for settlements", "", ctx.Err())
		}
	}
}

func (r *Receiver) onSettled() {
	r.mu.Lock()
	r.unsettled--
	r.mu.Unlock()
	select {
	case r.settled <- struct{}{}:
	default:
	}
}

// Accept settles msg as accepted.
func (r *Receiver) Accept(ctx context.Context, msg Message) error {
	err := r.r.AcceptMessage(ctx, msg.m)
	r.onSettled()
	return wrap("accept", "", err)
}

// Release settles msg as released: the broker redelivers it.
func (r *Receiver) Release(ctx context.Context, msg Message) error {
	err := r.r.ReleaseMessage(ctx, msg.m)
	r.onSettled()
	return wrap("release", "", err)
}

// Close detaches the link with a bounded context: RabbitMQ answers a
// closing detach with a non-closing one and go-amqp would wait forever.
// Owners that must not leak should close the session, which returns at once.
func (r *Receiver) Close(ctx context.Context) error {
	err := r.r.Close(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		return nil // the session's close reclaims the link
	}
	return wrap("close receiver", "", err)
}

// ReceiverStats are counters of the credit manager.
type ReceiverStats struct {
	Grants, OverDelivered uint64
	Unsettled, Credit     int64
}

// Stats returns the receiver's counters.
func (r *Receiver) Stats() ReceiverStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return ReceiverStats{Grants: r.grants.Load(), OverDelivered: r.overDelivered.Load(),
		Unsettled: r.unsettled, Credit: r.credit}
}

// Address returns the source address.
func (r *Receiver) Address() string { return r.r.Address() }

package engine

import (
	"errors"

	"github.com/fedrouter/fedrouter/amqp/wire"
)

// What a forwarder's Rewrite (ForwardOptions.Rewrite) may say besides
// the annotations to set: drop the message (ErrDrop: it has been where
// it would go — a mesh's loop guard) or refuse it (any other error: an
// annotation a router reads is not what a router writes). Neither is
// sent; both are settled at the source in their turn, in the order of
// the rest, so ranges and at-least-once hold as for a sent message.

// ErrDrop, returned by Rewrite: the message is not sent. It is accepted
// at the source in its turn (after every message received before it has
// its outcome) and counted in ForwardStats.Looped.
var ErrDrop = errors.New("engine: the rewrite dropped the message")

// rewriteErr makes Rewrite's error a send error: ErrDrop as it is, any
// other a refusal (rejected at the source, or dead-lettered) with the
// condition amqp:invalid-field unless the error carries one (a
// *wire.Error).
func rewriteErr(err error) error {
	if errors.Is(err, ErrDrop) {
		return err
	}
	r := &refusal{err: err, cond: condInvalidField}
	var we *wire.Error
	if errors.As(err, &we) && we.Condition != "" {
		r.cond = we.Condition
	}
	return r
}

// wireError is the rejection a refused message gets at the source.
func (r *refusal) wireError() *wire.Error {
	cond := r.cond
	if cond == "" {
		cond = condDecodeError
	}
	return &wire.Error{Condition: cond, Description: r.Error()}
}

// pushLooped puts a message Rewrite dropped in the send order as if the
// destination had accepted it, so that the source accepts it in its
// turn; it was never sent. f.mu is held.
func (f *Forwarder) pushLooped(id uint32, settled bool) {
	f.push(f.lastDst, id, settled, nil)
	f.forwarded-- // not sent
	e := &f.inflight[len(f.inflight)-1]
	e.done, e.looped = true, true
	e.state = wire.DeliveryState{Kind: wire.StateAccepted}
	f.settleHeadLocked()
}

package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/fedrouter/fedrouter/amqp/wire"
)

// Dead-lettering on the forwarder (ForwardOptions.DeadLetter): a message
// the destination rejected, or Expire gave up on, is sent to the
// dead-letter queue at the source's broker, as bytes with its message
// annotations set (DeadLetterAnnotations) and its delivery annotations
// dropped, and the source is accepted only once the dead-letter queue
// accepted it (at-least-once). A dead-letter queue that refuses it
// stops the forwarder (ErrDeadLetterRefused) and the message is released
// at the source, which keeps it.
//
// The forwarder keeps a copy of each message in flight for this (pooled,
// reused: with dead-lettering, a message is copied once more than
// without). Dead-lettering goes in send order from the head of what is
// in flight, one message at a time: the deliveries behind wait for it.

// DeadLetterCause is why a message goes to the dead-letter queue.
type DeadLetterCause uint8

// The causes of dead-lettering.
const (
	CauseRejected    DeadLetterCause = iota // the destination rejected it
	CauseNoOutcome                          // Expire gave up waiting for the destination
	CauseUndecodable                        // its annotations do not decode: never sent
	CauseRefused                            // the forwarder's own refusal (Dispatch, Unreachable, ErrUnwritable): never sent
)

// ErrDeadLetterRefused: the dead-letter queue did not accept a message;
// the forwarder sends nothing more.
var ErrDeadLetterRefused = errors.New("engine: the dead-letter queue did not accept the message")

// attachDeadLetter attaches the dead-letter sender on src, when asked.
func (f *Forwarder) attachDeadLetter(ctx context.Context, src *Session) error {
	if f.opts.DeadLetter == nil {
		return nil
	}
	o := *f.opts.DeadLetter
	o.OnSettled, o.OnCredit, o.Mode = f.onDeadLetterSettled, f.onDeadLetterCredit, SettleUnsettled
	dl, err := src.NewSender(ctx, o)
	if err != nil {
		return fmt.Errorf("engine: attach dead-letter sender to %s: %w", o.Address, err)
	}
	f.dl = dl
	return nil
}

// DeadLetterSender is the dead-letter queue's sender (nil without one):
// the caller watches it end and closes it with the other links.
func (f *Forwarder) DeadLetterSender() *Sender { return f.dl }

// keep returns a copy of payload for the dead-letter queue, in a pooled
// buffer; nil without a dead-letter queue. f.mu is held.
func (f *Forwarder) keep(payload []byte) []byte {
	if f.dl == nil {
		return nil
	}
	var buf []byte
	if n := len(f.free); n > 0 {
		buf, f.free = f.free[n-1][:0], f.free[:n-1]
	}
	return append(buf, payload...)
}

// deadLetterLocked moves the rejected message e at the head along: it
// sends it to the dead-letter queue when it has not been, and says
// whether e may be settled at the source now (true: the dead-letter
// queue's send failed for good, e released and the forwarder stopped).
// f.mu is held.
func (f *Forwarder) deadLetterLocked(e *inflight) bool {
	if e.dlSent {
		return false // its outcome is awaited: onDeadLetterSettled
	}
	cause := CauseRejected
	switch {
	case e.local:
		cause = CauseRefused
	case e.undecodable:
		cause = CauseUndecodable
	case e.expired:
		cause = CauseNoOutcome
	}
	sec, bad, err := wire.ScanSectionsLenient(e.payload)
	if err == nil {
		var set []wire.Annotated
		if f.opts.DeadLetterAnnotations != nil {
			set = f.opts.DeadLetterAnnotations(&e.state, cause)
		}
		if bad { // kept whole beside ours, the section itself replaced
			if f.opts.UndecodableKey != "" {
				set = append(set, wire.Annotated{Key: f.opts.UndecodableKey,
					Value: wire.AppendBinary(nil, e.payload[sec.MessageAnnotations.Start:sec.MessageAnnotations.End])})
			}
			sec.MessageAnnotations = wire.Span{}
		}
		e.dlID, err = f.dl.TrySendRewritten(e.payload, &sec, set...)
	}
	switch {
	case err == nil:
		e.dlSent = true
		return false
	case errors.Is(err, ErrNoCredit):
		return false // onDeadLetterCredit tries again
	}
	if f.err == nil {
		f.err = fmt.Errorf("engine: dead-letter send: %w", err)
	}
	f.failEntry(e) // counted as released at the source
	return true
}

// onDeadLetterSettled takes the dead-letter queue's outcome (source
// reader goroutine): accepted, the message at the head is settled
// accepted at the source; anything else releases it there and stops the
// forwarder.
func (f *Forwarder) onDeadLetterSettled(first, last uint32, st *DeliveryState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.head == len(f.inflight) {
		return
	}
	e := &f.inflight[f.head]
	if !e.dlSent || e.dead || int32(e.dlID-first) < 0 || int32(e.dlID-last) > 0 || e.state.Kind != wire.StateRejected {
		return
	}
	if st.Kind == wire.StateAccepted {
		e.dead = true
	} else {
		if f.err == nil {
			f.err = fmt.Errorf("%w (%s)", ErrDeadLetterRefused, describeState(st))
		}
		f.failEntry(e)
	}
	f.settleHeadLocked()
}

// onDeadLetterCredit sends the message waiting at the head, if any, now
// that the dead-letter queue grants credit (source reader goroutine).
func (f *Forwarder) onDeadLetterCredit() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.settleHeadLocked()
}

// describeState is an outcome as one line for an error.
func describeState(st *DeliveryState) string {
	s := st.Kind.String()
	if st.Error != nil {
		s += " " + st.Error.Condition
		if st.Error.Description != "" {
			s += ": " + st.Error.Description
		}
	}
	return s
}

// pushUndecodable puts a message whose annotations do not decode in the
// arrival order as if the destination had rejected it, so that it goes
// to the dead-letter queue in its turn; it was never sent. f.mu is held.
func (f *Forwarder) pushUndecodable(id uint32, settled bool, payload []byte, err error) {
	e := f.push(id, settled, f.keep(payload), 0)
	e.done, e.undecodable = true, true
	e.state = wire.DeliveryState{Kind: wire.StateRejected, Error: &wire.Error{Condition: condDecodeError, Description: err.Error()}}
	f.settleHeadLocked()
}

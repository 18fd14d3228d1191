package amqp

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/fedrouter/fedrouter/amqp/engine"
	"github.com/fedrouter/fedrouter/amqp/wire"
)

// A receiver for input nobody vouches for (the control address, where
// anyone who may publish can send anything): it runs on the broker's
// engine connection, announces max-message-size at the attach, and never
// holds more than credit messages of maxSize bytes. A message over
// maxSize is read to its end without being kept and rejected at the
// broker (a detach would leave it unsettled, and the broker would give
// it to the next attach again). go-amqp cannot do this: v1.7.0 takes the
// broker's max-message-size over its own when the broker says 0
// (unlimited, as RabbitMQ does), and then buffers whatever arrives.

// ErrOversize: a message over the receiver's size bound was refused
// (rejected at the broker, never held whole).
var ErrOversize = errors.New("amqp: message over the size bound")

// ErrNotData: a message whose body is not data sections was refused
// (rejected at the broker).
var ErrNotData = errors.New("amqp: message body is not data")

// ErrBeyondWindow: a message the broker sent settled beyond the
// receiver's credit, when as many were waiting as it may hold, was
// dropped.
var ErrBeyondWindow = errors.New("amqp: message beyond the receiver's window")

// BoundedReceiver receives the data bodies of a source's messages, each
// at most a bound in size (Broker.NewBoundedReceiver).
type BoundedReceiver struct {
	broker string
	max    uint64
	sess   *engine.Session
	rcv    *engine.Receiver
	// in holds the valid messages, unsettled until Receive takes them, so
	// the credit bounds it; sized to the engine's own limit on unsettled
	// deliveries (2 × credit + 16), past which the engine ends the link,
	// so the reader goroutine never blocks on it (a delivery sent settled
	// beyond it is dropped: the broker ignored the credit).
	in chan bounded
	// Refusals are settled at once and only counted here, so that a
	// flood of them takes no room from the valid messages: Receive
	// reports each kind's count since the last report, with the last one's
	// error. wake tells Receive there are some.
	oversize, notData, beyond refusals
	wake                      chan struct{}
}

// bounded is one valid delivery waiting for Receive.
type bounded struct {
	id      uint32
	settled bool // the broker sent it settled: nothing to accept
	body    []byte
}

// refusals count one kind of refused messages.
type refusals struct {
	total, pending atomic.Uint64
	last           atomic.Pointer[error]
}

func (f *refusals) add(err error) {
	f.last.Store(&err)
	f.total.Add(1)
	f.pending.Add(1)
}

// take reports the refusals not reported yet: how many, and the last
// one's error.
func (f *refusals) take() (uint64, error) {
	n := f.pending.Swap(0)
	if n == 0 {
		return 0, nil
	}
	return n, *f.last.Load()
}

// RefusedError reports N messages refused since the previous report; Err
// (wrapping ErrOversize, ErrNotData or ErrBeyondWindow) is the last one's
// reason.
type RefusedError struct {
	N   uint64
	Err error
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%d message(s) refused, the last: %v", e.N, e.Err)
}

func (e *RefusedError) Unwrap() error { return e.Err }

// BoundedStats count what a BoundedReceiver did: the messages refused
// over the bound, not data, and beyond its window, and the most bytes it
// held for one message in reassembly.
type BoundedStats struct {
	Oversize, NotData, Beyond, PeakBuffered uint64
}

// NewBoundedReceiver attaches a receiver to spec's source on the broker's
// engine connection, with max-message-size maxSize and credit deliveries
// (at least 1). It holds at most credit × maxSize bytes of the broker's
// messages (the ones waiting for Receive), none of them over maxSize.
func (b Broker) NewBoundedReceiver(ctx context.Context, spec LinkSpec, maxSize uint64, credit uint32) (*BoundedReceiver, error) {
	name := b.Conn.cfg.Name
	opts, err := spec.EngineReceiver(b.Profile)
	if err != nil {
		return nil, &Error{Op: "attach receiver", Broker: name, Err: err}
	}
	conn, err := b.Conn.Engine(ctx)
	if err != nil {
		return nil, err
	}
	sess, err := conn.NewSession(ctx, engine.SessionOptions{})
	if err != nil {
		return nil, &Error{Op: "begin session", Broker: name, Scope: ScopeConn, Err: err}
	}
	credit = max(credit, 1)
	r := &BoundedReceiver{broker: name, max: maxSize, sess: sess, in: make(chan bounded, 2*credit+16), wake: make(chan struct{}, 1)}
	opts.Credit, opts.MaxMessageSize, opts.DiscardOversize = credit, maxSize, true
	opts.OnMessage = r.onMessage
	r.rcv, err = sess.NewReceiver(ctx, opts)
	if err != nil {
		_ = sess.End(ctx)
		return nil, &Error{Op: "attach receiver", Broker: name, Scope: ScopeLink, Err: fmt.Errorf("%s: %w", spec.Address, err)}
	}
	return r, nil
}

// onMessage runs on the engine's reader goroutine: it copies a data body
// out (the payload is the engine's), or refuses the delivery at once.
func (r *BoundedReceiver) onMessage(d *engine.Delivery) {
	if d.Oversize {
		r.refuse(d, &r.oversize, fmt.Errorf("%w: %d bytes, the bound is %d", ErrOversize, d.Size, r.max))
		return
	}
	body, err := wire.DataBody(d.Payload)
	if err != nil {
		r.refuse(d, &r.notData, fmt.Errorf("%w: %w", ErrNotData, err))
		return
	}
	select {
	case r.in <- bounded{id: d.ID, settled: d.Settled, body: append([]byte(nil), body...)}:
	default: // only a delivery sent settled: the engine ends the link first (see in)
		r.refuse(d, &r.beyond, fmt.Errorf("%w of %d", ErrBeyondWindow, cap(r.in)))
	}
}

func (r *BoundedReceiver) refuse(d *engine.Delivery, kind *refusals, why error) {
	if !d.Settled {
		d.Receiver.Settle(d.ID, &engine.DeliveryState{Kind: wire.StateRejected,
			Error: &wire.Error{Condition: "amqp:not-allowed", Description: why.Error()}})
	}
	kind.add(why)
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Receive returns the next message's body, accepting it at the broker.
// Messages refused since the last call (rejected at the broker already)
// come first as a *RefusedError, and the link goes on; any other error
// means the link ended.
func (r *BoundedReceiver) Receive(ctx context.Context) ([]byte, error) {
	for {
		for _, kind := range []*refusals{&r.oversize, &r.notData, &r.beyond} {
			if n, err := kind.take(); n > 0 {
				return nil, &RefusedError{N: n, Err: err}
			}
		}
		select {
		case m := <-r.in:
			if !m.settled {
				r.rcv.Settle(m.id, engine.Accepted)
			}
			return m.body, nil
		case <-r.wake:
		case <-r.rcv.Done():
			return nil, &Error{Op: "receive", Broker: r.broker, Scope: ScopeLink, Err: r.rcv.Err()}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Stats returns the receiver's counters.
func (r *BoundedReceiver) Stats() BoundedStats {
	return BoundedStats{Oversize: r.oversize.total.Load(), NotData: r.notData.total.Load(), Beyond: r.beyond.total.Load(), PeakBuffered: r.rcv.PeakBuffered()}
}

// Close detaches the link and ends its session (bounded by ctx); what
// was not yet received is released to the broker.
func (r *BoundedReceiver) Close(ctx context.Context) error {
	return errors.Join(r.rcv.Close(ctx), r.sess.End(ctx))
}

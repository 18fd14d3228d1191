package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fedrouter/fedrouter/amqp/wire"
)

// ForwardOptions configure a Forwarder.
type ForwardOptions struct {
	// Rewrite, when set, names message annotations to set on each
	// message (e.g. a hop count); it reads them from payload through s.
	// It runs on the source's reader goroutine with the forwarder's lock
	// held (one call at a time: it may reuse its buffers; what it
	// returns is used before its next call). Without it the payload is
	// forwarded as it came, delivery annotations dropped. Its error:
	// ErrDrop, the message is not sent and is accepted at the source in
	// its turn, counted Looped; any other refuses it (rewrite.go).
	Rewrite func(payload []byte, s *wire.Sections) ([]wire.Annotated, error)
	// AckN: 0 settles the source once per outcome the destination sends
	// (one disposition per range it acknowledged); N > 0 leaves it to
	// the source receiver's ack policy (AckN, AckDelay).
	AckN int
	// Fence, when set, is asked before each message is sent (on a
	// reader goroutine, no lock held; it must not block): false stops
	// the forwarder with ErrFenced, that message and every later one
	// released at the source. A router cluster's lease: a member past
	// it must not forward a single message.
	Fence func() bool
	// DeadLetter, when set, is the target of a sender the forwarder
	// attaches on the source's session: a message the destination
	// rejected, or Expire gave up on, goes there instead of being
	// rejected at the source (deadletter.go).
	DeadLetter *SenderOptions
	// DeadLetterAnnotations says which message annotations a message
	// sent to DeadLetter gets: st is the destination's rejection,
	// Expire's state, or the decoder's refusal (amqp:decode-error), as
	// cause says. It runs on a reader goroutine with the forwarder's
	// lock held: it must not block.
	DeadLetterAnnotations func(st *DeliveryState, cause DeadLetterCause) []wire.Annotated
	// UndecodableKey: with DeadLetter, a message whose message
	// annotations do not decode (a key neither symbol nor ulong) is
	// dead-lettered too, its annotations section kept whole, encoded, as
	// a binary annotation under this key (they cannot be rewritten).
	UndecodableKey string
}

// ErrFenced: ForwardOptions.Fence said no; the forwarder sends nothing
// more.
var ErrFenced = errors.New("engine: the forwarder's fence refused to send")

// Forwarder moves every delivery of a source receiver to a destination
// sender as bytes: the bare message is never decoded, only the sections
// before it scanned. The source is settled only after the destination's
// outcome (at-least-once), in the destination's order, in ranges. It
// owns no goroutine: it runs on the two connections' reader goroutines
// (OnMessage on the source's, OnSettled and OnCredit on the
// destination's).
//
// Lock order: Forwarder.mu, then either session's mutex (never both at
// once), then a connection's write buffer.
type Forwarder struct {
	opts ForwardOptions
	dst  *Sender
	dl   *Sender // ForwardOptions.DeadLetter's sender; nil without
	// lastDst is the destination delivery-id last sent: an undecodable
	// message's place in the send order (it has none of its own).
	lastDst uint32

	mu       sync.Mutex
	inflight []inflight // sent to dst, waiting for its outcome, in send order
	head     int
	parked   []parked // waiting for dst credit, in arrival order
	free     [][]byte // payload buffers of parked messages, reused
	limit    int      // parked messages at most; beyond, released at the source
	err      error
	src      *Receiver
	sec      wire.Sections // the message being sent, scanned

	forwarded, settled, released, refused, parks uint64
	accepted, rejected                           uint64 // the destination's outcomes, of settled
	expired                                      uint64 // settled by Expire: no outcome in time
	abandoned                                    uint64 // given a state by Expire (dead-lettered or not)
	looped                                       uint64 // dropped by Rewrite (ErrDrop), accepted at the source
	deadLettered                                 uint64 // accepted by the dead-letter queue, then at the source

	progress chan struct{} // poked (never blocking) when the source is settled
	nParked  atomic.Int64  // len(parked), read by limit without f.mu
	stopping atomic.Bool   // Stop: take no more, settle what is in flight
}

type inflight struct {
	dst, src   uint32
	srcSettled bool // the source sent it settled: nothing to settle there
	done       bool
	expired    bool  // Expire gave it its state, not the destination
	sent       int64 // when it was sent, Unix nanoseconds (Expire)
	state      wire.DeliveryState
	// With a dead-letter queue: the message as sent (a pooled copy), and
	// where its dead-lettering stands (deadletter.go).
	payload []byte
	dlSent  bool   // sent to the dead-letter queue, its outcome awaited
	dlID    uint32 // its delivery-id there
	dead    bool   // the dead-letter queue accepted it
	// undecodable: never sent, its annotations do not decode; it goes
	// to the dead-letter queue with them kept whole (deadletter.go).
	undecodable bool
	looped      bool // never sent: Rewrite dropped it (rewrite.go)
}

type parked struct {
	src        uint32
	srcSettled bool
	payload    []byte
}

// Forward attaches a sender on dst and a receiver on src wired to a new
// Forwarder. The receiver's OnMessage and the sender's OnSettled and
// OnCredit are the forwarder's.
func Forward(ctx context.Context, src *Session, ro ReceiverOptions, dst *Session, so SenderOptions, fo ForwardOptions) (*Forwarder, *Receiver, *Sender, error) {
	f := &Forwarder{opts: fo, progress: make(chan struct{}, 1)}
	so.OnSettled, so.OnCredit, so.Mode = f.onSettled, f.onCredit, SettleUnsettled
	snd, err := dst.NewSender(ctx, so)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("engine: attach sender to %s: %w", so.Address, err)
	}
	f.dst = snd
	if err := f.attachDeadLetter(ctx, src); err != nil {
		_ = snd.Close(ctx)
		return nil, nil, nil, err
	}
	if ro.Credit == 0 {
		ro.Credit = 100
	}
	f.limit = 2*int(ro.Credit) + 16
	if fo.AckN == 0 {
		ro.AckN = 1 << 30 // flushed by onSettled, once per destination outcome
	} else {
		ro.AckN = fo.AckN
	}
	ro.OnMessage = f.onMessage
	if ro.Mode != SettleAskUnsettled { // asked for (qpidd's exchange subscriptions), or the default
		ro.Mode = SettleUnsettled
	}
	// Credit follows the destination's: the source is asked for no more
	// than can be sent on at once, so little is parked (Proton's broker
	// grants 5, qpidd 500).
	ro.limit = f.creditLimit
	rcv, err := src.NewReceiver(ctx, ro)
	if err != nil {
		_ = snd.Close(ctx)
		if f.dl != nil {
			_ = f.dl.Close(ctx)
		}
		return nil, nil, nil, fmt.Errorf("engine: attach receiver to %s: %w", ro.Address, err)
	}
	f.mu.Lock()
	f.src = rcv
	f.mu.Unlock()
	rcv.Regrant() // in case the destination's credit came during the attach
	return f, rcv, snd, nil
}

// ForwardStats are a forwarder's counts: Forwarded sent to the
// destination, Settled of those with the destination's outcome (Accepted
// and Rejected by it, the rest released at the source), Released at the
// source without being sent, Refused (rejected at the source: they do
// not decode, or Rewrite refused them). With a dead-letter queue,
// DeadLettered of the settled went there (and were accepted at the
// source), not counted in Accepted, Rejected or Expired. Looped of the
// settled were dropped by Rewrite (never sent, accepted at the source),
// not counted in Forwarded or Accepted.
type ForwardStats struct {
	Forwarded, Settled, Released, Refused uint64
	Accepted, Rejected                    uint64
	Expired                               uint64 // settled at the source with Expire's state
	Abandoned                             uint64 // given up on by Expire: Expired, or dead-lettered
	DeadLettered                          uint64
	Looped                                uint64
	Parks                                 uint64 // messages that waited (copied) for destination credit
	InFlight, Parked                      int
}

// Stats returns the forwarder's counts.
func (f *Forwarder) Stats() ForwardStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return ForwardStats{Forwarded: f.forwarded, Settled: f.settled, Released: f.released, Refused: f.refused, Parks: f.parks,
		Accepted: f.accepted, Rejected: f.rejected, Expired: f.expired, Abandoned: f.abandoned, DeadLettered: f.deadLettered, Looped: f.looped,
		InFlight: len(f.inflight) - f.head, Parked: len(f.parked)}
}

// Err is the first error that stopped forwarding (the destination link
// failed); the source's deliveries are released from then on.
func (f *Forwarder) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// onMessage forwards one delivery (source reader goroutine). While the
// destination's outgoing buffer is over its bound it waits, holding no
// lock: the source connection stops reading (TCP pushes back on the
// broker) instead of the buffer growing. Waiting is safe because the
// destination's writer never waits for a reader; on one shared
// connection it would not be, so there it does not wait.
func (f *Forwarder) onMessage(d *Delivery) {
	if w := &f.dst.s.c.w; d.Receiver.s.c != f.dst.s.c {
		_ = w.waitRoom(len(d.Payload) + 64) // an error shows on the send below
	}
	fenced := f.fenced()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.src = d.Receiver
	if fenced && f.err == nil {
		f.err = ErrFenced
	}
	if f.err != nil || f.stopping.Load() {
		f.release(d.Receiver, d.ID, d.Settled)
		return
	}
	if len(f.parked) == 0 {
		id, err := f.send(d.Payload)
		if err == nil {
			f.push(id, d.ID, d.Settled, f.keep(d.Payload))
			return
		}
		if errors.Is(err, ErrDrop) {
			f.pushLooped(d.ID, d.Settled)
			return
		}
		if !errors.Is(err, ErrNoCredit) {
			f.fail(d.Receiver, d.ID, d.Settled, d.Payload, err)
			return
		}
	}
	if len(f.parked) >= f.limit {
		f.release(d.Receiver, d.ID, d.Settled)
		return
	}
	var buf []byte
	if n := len(f.free); n > 0 {
		buf, f.free = f.free[n-1][:0], f.free[:n-1]
	}
	f.parked = append(f.parked, parked{src: d.ID, srcSettled: d.Settled, payload: append(buf, d.Payload...)})
	f.nParked.Store(int64(len(f.parked)))
	f.parks++
}

// send sends one payload to dst without waiting; f.mu is held.
func (f *Forwarder) send(payload []byte) (uint32, error) {
	sec := &f.sec // a field, not a local: Rewrite would make a local escape
	var err error
	if *sec, err = wire.ScanSections(payload); err != nil {
		return 0, &refusal{err: err}
	}
	var set []wire.Annotated
	if f.opts.Rewrite != nil {
		if set, err = f.opts.Rewrite(payload, sec); err != nil {
			return 0, rewriteErr(err)
		}
	}
	if len(set) == 0 && !sec.DeliveryAnnotations.Present() {
		return f.dst.TrySend(payload)
	}
	return f.dst.TrySendRewritten(payload, sec, set...)
}

// refusal is a message the forwarder cannot forward as it is (its
// sections do not decode, or Rewrite refused it): rejected at the
// source with cond (amqp:decode-error when empty), not retried.
type refusal struct {
	err  error
	cond string
}

func (r *refusal) Error() string { return r.err.Error() }
func (r *refusal) Unwrap() error { return r.err }

// push records a message sent to the destination; payload is its copy
// kept for the dead-letter queue (nil without one).
func (f *Forwarder) push(dstID, srcID uint32, srcSettled bool, payload []byte) {
	if f.head > 0 && (f.head == len(f.inflight) || f.head >= 1024 && f.head*2 >= len(f.inflight)) {
		// Reuse the front: the slice stays as long as what is in flight.
		n := copy(f.inflight, f.inflight[f.head:])
		f.inflight, f.head = f.inflight[:n], 0
	}
	f.inflight = append(f.inflight, inflight{dst: dstID, src: srcID, srcSettled: srcSettled, sent: time.Now().UnixNano(), payload: payload})
	f.forwarded++
	f.lastDst = dstID
}

// fail handles a send that failed for good: a message that does not
// decode is rejected at the source; a dead destination stops the
// forwarder and the delivery is released (the source keeps it).
func (f *Forwarder) fail(src *Receiver, id uint32, settled bool, payload []byte, err error) {
	var r *refusal
	if errors.As(err, &r) && f.dl != nil {
		f.pushUndecodable(id, settled, payload, r)
		return
	}
	if errors.As(err, &r) {
		f.refused++
		if !settled {
			src.Settle(id, &DeliveryState{Kind: wire.StateRejected, Error: r.wireError()})
			src.Flush()
		}
		return
	}
	f.err = err
	f.release(src, id, settled)
}

func (f *Forwarder) release(src *Receiver, id uint32, settled bool) {
	f.released++
	if !settled {
		src.Settle(id, Released)
		src.Flush()
	}
}

// onSettled takes the destination's outcome for first..last (destination
// reader goroutine) and settles the source for every delivery at the
// head of the send order that has its outcome.
func (f *Forwarder) onSettled(first, last uint32, st *DeliveryState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := f.head; i < len(f.inflight); i++ {
		e := &f.inflight[i]
		if int32(e.dst-last) > 0 {
			break
		}
		if int32(e.dst-first) >= 0 && !e.done { // done: Expire's state stands
			e.done, e.state = true, *st
		}
	}
	f.settleHeadLocked()
}

// settleHeadLocked settles at the source every delivery at the head of
// the send order that has its state; f.mu is held.
func (f *Forwarder) settleHeadLocked() {
	src := f.src
	n := 0
	for f.head < len(f.inflight) && f.inflight[f.head].done {
		e := &f.inflight[f.head]
		if f.dl != nil && e.state.Kind == wire.StateRejected && !e.dead && !f.deadLetterLocked(e) {
			break // waiting for the dead-letter queue
		}
		f.head++
		n++
		f.settled++
		out := sourceOutcome(&e.state)
		switch {
		case e.dead:
			f.deadLettered++
			out = Accepted
		case e.looped:
			f.looped++
		case e.expired:
			f.expired++
		case e.state.Kind == wire.StateAccepted:
			f.accepted++
		case e.state.Kind == wire.StateRejected:
			f.rejected++
		}
		if !e.srcSettled {
			src.Settle(e.src, out)
		}
		if e.payload != nil {
			f.free = append(f.free, e.payload[:0])
			e.payload = nil
		}
	}
	if n > 0 && f.opts.AckN == 0 {
		src.Flush()
	}
	if n > 0 {
		select {
		case f.progress <- struct{}{}:
		default:
		}
	}
}

// Expire gives st (accepted, rejected or released at the source) to
// every delivery sent before before that still waits for the
// destination's outcome, and settles the source for them: a destination
// that does not answer in time does not hold the source's credit for
// good. A later outcome from the destination for one of them is
// ignored. It returns how many it expired.
func (f *Forwarder) Expire(before time.Time, st *DeliveryState) int {
	limit := before.UnixNano()
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for i := f.head; i < len(f.inflight) && f.inflight[i].sent < limit; i++ {
		if e := &f.inflight[i]; !e.done {
			e.done, e.expired, e.state = true, true, *st
			n++
		}
	}
	f.abandoned += uint64(n)
	if n > 0 {
		f.settleHeadLocked()
	}
	return n
}

// fenced asks the fence, if any, holding no lock.
func (f *Forwarder) fenced() bool { return f.opts.Fence != nil && !f.opts.Fence() }

// Stop makes the forwarder take no more from the source: its credit is
// taken back (a flow granting none), deliveries still arriving are
// released at the source (not sent: no duplicate comes of them), and
// those in flight are settled as the destination's outcomes come. A
// route whose path changed drains this way before it closes the links.
func (f *Forwarder) Stop() {
	f.stopping.Store(true)
	f.mu.Lock()
	src := f.src
	f.mu.Unlock()
	if src != nil {
		src.revoke()
	}
}

// Progress is poked whenever deliveries were settled at the source, so
// a caller can wait for a count (Stats) without polling.
func (f *Forwarder) Progress() <-chan struct{} { return f.progress }

// sourceOutcome is what the source is told: accepted and rejected pass
// through; anything else releases it so the source delivers it again
// (RabbitMQ refuses modified).
func sourceOutcome(st *DeliveryState) *DeliveryState {
	switch st.Kind {
	case wire.StateAccepted:
		return Accepted
	case wire.StateRejected:
		return st
	}
	return Released
}

// creditLimit is the credit the source may have: what the destination can
// take now, less what is parked for it, at least 1 so a grant is never
// withheld for good by a stale count. It takes no lock.
func (f *Forwarder) creditLimit() uint32 {
	if f.stopping.Load() {
		return 0
	}
	return max(1, f.dst.Available()-min(f.dst.Available(), uint32(f.nParked.Load())))
}

// onCredit sends parked messages while the destination has credit
// (destination reader goroutine), then lets the source have more.
func (f *Forwarder) onCredit() {
	fenced := f.fenced()
	f.mu.Lock()
	if fenced && f.err == nil {
		f.err = ErrFenced
	}
	f.drainParked()
	src := f.src
	f.mu.Unlock()
	if src != nil {
		src.Regrant()
	}
}

// drainParked sends parked messages while the destination takes them;
// f.mu is held.
func (f *Forwarder) drainParked() {
	sent := 0
	for _, p := range f.parked {
		if f.err != nil { // fenced, or the destination failed: the source keeps it
			f.release(f.src, p.src, p.srcSettled)
			f.free = append(f.free, p.payload)
			sent++
			continue
		}
		id, err := f.send(p.payload)
		if errors.Is(err, ErrNoCredit) {
			break
		}
		switch {
		case errors.Is(err, ErrDrop):
			f.pushLooped(p.src, p.srcSettled)
			f.free = append(f.free, p.payload)
		case err != nil:
			f.fail(f.src, p.src, p.srcSettled, p.payload, err)
			f.free = append(f.free, p.payload)
		case f.dl != nil:
			f.push(id, p.src, p.srcSettled, p.payload) // the parked copy is the one kept
		default:
			f.push(id, p.src, p.srcSettled, nil)
			f.free = append(f.free, p.payload)
		}
		sent++
	}
	if sent > 0 {
		n := copy(f.parked, f.parked[sent:])
		clear(f.parked[n:])
		f.parked = f.parked[:n]
		f.nParked.Store(int64(n))
	}
}

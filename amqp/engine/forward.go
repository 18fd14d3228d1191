package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fedrouter/fedrouter/amqp/wire"
)

// ForwardOptions configure a Forwarder.
type ForwardOptions struct {
	// Rewrite, when set, names message annotations to set on each
	// message (e.g. a hop count); it reads them from payload through s.
	// It runs on the source's reader goroutine. Without it the payload
	// is forwarded as it came, delivery annotations dropped. Ignored
	// when Dispatch is set.
	Rewrite func(payload []byte, s *wire.Sections) []wire.Annotated
	// Dispatch, when set, chooses per message where its copies go and
	// what is set on each (forward_dispatch.go): one destination among
	// several (transit's next hop), several (fan-out), none (dropped:
	// accepted at the source), or a refusal. It runs on the source's
	// reader goroutine with the forwarder's lock held: it must not
	// block. c is reset before each call.
	Dispatch func(payload []byte, s *wire.Sections, c *Choice)
	// MaxDestinations bounds the senders a dispatching forwarder keeps
	// (default 64); a message for one more stops the forwarder with
	// ErrTooManyDestinations (released at the source), and its owner
	// starts afresh with none.
	MaxDestinations int
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
	// rejected, Dispatch refused, or Expire gave up on, goes there
	// instead of being rejected at the source (deadletter.go).
	DeadLetter *SenderOptions
	// DeadLetterAnnotations says which message annotations a message
	// sent to DeadLetter gets: st is the destination's rejection,
	// Dispatch's refusal, Expire's state, or the decoder's refusal
	// (amqp:decode-error), as cause says. It runs on a reader goroutine
	// with the forwarder's lock held: it must not block.
	DeadLetterAnnotations func(st *DeliveryState, cause DeadLetterCause) []wire.Annotated
	// UndecodableKey: with DeadLetter, a message whose message
	// annotations do not decode (a key neither symbol nor ulong) is
	// dead-lettered too, its annotations section kept whole, encoded, as
	// a binary annotation under this key (they cannot be rewritten).
	UndecodableKey string
	// Hold, when set, is asked before a copy for the forwarder's own
	// destination ("": Forward's sender) is sent, and whenever the
	// source's credit is reckoned (on a reader goroutine, maybe with the
	// forwarder's or a session's lock held: it must neither block nor
	// lock). True parks that copy, and those behind it, and the source
	// is granted no more credit: what it has sent waits in the
	// forwarder, the rest at the source. The owner calls Resume once Hold
	// may say false again (ForwardStats.Held counts its yeses). A global
	// destination's gate: its limit holds messages back at the source;
	// and a run's pause after its destination released a message.
	Hold func() bool
	// OnRejected, when set, is told the forwarder's own destination's
	// rejection of a copy and returns the state to take instead (a
	// limit's refusal: released, so that the source keeps the message).
	// It runs on the destination's reader with the forwarder's lock
	// held: it must not block.
	OnRejected func(st *DeliveryState) *DeliveryState
	// OnReleased, when set, is told each time the forwarder's own
	// destination answers a copy released or modified: it did not take
	// it, and the source will deliver it again at once. A full qpidd
	// queue (qpid.policy_type reject) releases every message past
	// qpid.max_count; the owner pauses (Hold) rather than send them
	// round at full speed. It runs on the destination's reader with the
	// forwarder's lock held: it must not block.
	OnReleased func()
	// NoDestinations: Dispatch names no destination ever (it refuses or
	// drops every message: a route with no path), so the source's credit
	// is its receiver's window, not one message at a time as for a
	// dispatching forwarder still waiting for its first destination.
	NoDestinations bool
}

// ErrFenced: ForwardOptions.Fence said no; the forwarder sends nothing
// more.
var ErrFenced = errors.New("engine: the forwarder's fence refused to send")

// Forwarder moves every delivery of a source receiver to one or more
// destination senders as bytes: the bare message is never decoded, only
// the sections before it scanned. The source is settled only after the
// destinations' outcomes (at-least-once; with several copies, once all
// have theirs), in the order received, in ranges. It owns no goroutine:
// it runs on the connections' reader goroutines (OnMessage on the
// source's, OnSettled and OnCredit on each destination's); attaching a
// destination is its owner's (AttachRequests).
//
// Lock order: Forwarder.mu, then a sender's sendMu and one session's
// mutex at a time, then a connection's write buffer (docs/architecture.md,
// Lock order).
type Forwarder struct {
	opts ForwardOptions
	dl   *Sender // ForwardOptions.DeadLetter's sender; nil without

	mu       sync.Mutex
	dests    map[string]*dest // by key; "" is Forward's own destination
	asked    map[string]bool  // attach asked of the owner, not done yet
	inflight []inflight       // received and not settled at the source, in arrival order
	head     int
	seq0     uint64       // the sequence number of inflight[0]
	parked   []parkedCopy // copies waiting for credit or an attach, in order
	free     [][]byte     // payload buffers, reused
	limit    int          // parked copies at most; beyond, released at the source
	err      error
	src      *Receiver
	sec      wire.Sections // the message being sent, scanned
	choice   Choice        // Dispatch's, reused

	forwarded, settled, released, refused, parks uint64
	lost                                         uint64 // ForwardStats.Lost
	accepted, rejected                           uint64 // the destinations' outcomes, of settled
	expired                                      uint64 // settled by Expire: no outcome in time
	abandoned                                    uint64 // given a state by Expire (dead-lettered or not)
	deadLettered                                 uint64 // accepted by the dead-letter queue, then at the source
	dropped, copies                              uint64 // Dispatch chose no copy; copies sent
	refusals                                     uint64 // settled with the forwarder's own refusal

	requests chan string               // keys to attach, for the owner (cap MaxDestinations)
	senders  atomic.Pointer[[]*Sender] // the destinations' senders, for creditLimit
	progress chan struct{}             // poked (never blocking) when the source is settled
	nParked  atomic.Int64              // len(parked), read by limit without f.mu
	held     atomic.Uint64             // Hold's yeses (ForwardStats.Held)
	stopping atomic.Bool               // Stop: take no more, settle what is in flight
}

// inflight is one source delivery the forwarder took.
type inflight struct {
	src        uint32
	srcSettled bool // the source sent it settled: nothing to settle there
	pending    int  // copies without an outcome (sent or not yet)
	unsent     int  // copies parked, not sent yet
	worst      int  // the copy whose outcome is state (-1: all accepted so far)
	done       bool
	expired    bool  // Expire gave it its state, not the destination
	local      bool  // its state is the forwarder's own refusal (Dispatch, Refuse)
	dropped    bool  // Dispatch chose no copy
	sent       int64 // when its last copy was sent, Unix nanoseconds (Expire)
	state      wire.DeliveryState
	// With a dead-letter queue: the message as received (a pooled copy),
	// and where its dead-lettering stands (deadletter.go).
	payload []byte
	dlSent  bool   // sent to the dead-letter queue, its outcome awaited
	dlID    uint32 // its delivery-id there
	dead    bool   // the dead-letter queue accepted it
	// undecodable: never sent, its annotations do not decode; it goes
	// to the dead-letter queue with them kept whole (deadletter.go).
	undecodable bool
}

// Forward attaches a sender on dst and a receiver on src wired to a new
// Forwarder. The receiver's OnMessage and the sender's OnSettled and
// OnCredit are the forwarder's. The sender is the destination "" of
// ForwardOptions.Dispatch.
func Forward(ctx context.Context, src *Session, ro ReceiverOptions, dst *Session, so SenderOptions, fo ForwardOptions) (*Forwarder, *Receiver, *Sender, error) {
	f := newForwarder(fo)
	snd, err := f.attachDest(ctx, "", dst, so)
	if err != nil {
		return nil, nil, nil, err
	}
	rcv, err := f.attachSource(ctx, src, ro)
	if err != nil {
		_ = snd.Close(ctx)
		return nil, nil, nil, err
	}
	return f, rcv, snd, nil
}

// ForwardDispatch attaches a receiver on src wired to a new Forwarder
// with no destination yet: ForwardOptions.Dispatch names them, and the
// owner attaches each when asked (AttachRequests, AddDestination).
func ForwardDispatch(ctx context.Context, src *Session, ro ReceiverOptions, fo ForwardOptions) (*Forwarder, *Receiver, error) {
	f, err := NewForwarder(fo)
	if err != nil {
		return nil, nil, err
	}
	rcv, err := f.AttachSource(ctx, src, ro)
	if err != nil {
		return nil, nil, err
	}
	return f, rcv, nil
}

// NewForwarder is ForwardDispatch in two steps: the owner may attach
// destinations (AddDestination) before the source (AttachSource), so
// that Dispatch knows them from the first message.
func NewForwarder(fo ForwardOptions) (*Forwarder, error) {
	if fo.Dispatch == nil {
		return nil, errors.New("engine: a dispatching forwarder without ForwardOptions.Dispatch")
	}
	return newForwarder(fo), nil
}

// AttachSource attaches the dead-letter sender, when asked, and the
// source receiver whose deliveries the forwarder takes.
func (f *Forwarder) AttachSource(ctx context.Context, src *Session, ro ReceiverOptions) (*Receiver, error) {
	return f.attachSource(ctx, src, ro)
}

func newForwarder(fo ForwardOptions) *Forwarder {
	if fo.MaxDestinations <= 0 {
		fo.MaxDestinations = 64
	}
	f := &Forwarder{opts: fo, progress: make(chan struct{}, 1), dests: map[string]*dest{}, asked: map[string]bool{},
		requests: make(chan string, fo.MaxDestinations)}
	f.senders.Store(&[]*Sender{})
	return f
}

// attachSource attaches the dead-letter sender, when asked, and the
// source receiver.
func (f *Forwarder) attachSource(ctx context.Context, src *Session, ro ReceiverOptions) (*Receiver, error) {
	if err := f.attachDeadLetter(ctx, src); err != nil {
		return nil, err
	}
	if ro.Credit == 0 {
		ro.Credit = 100
	}
	f.limit = 2*int(ro.Credit) + 16
	if f.opts.AckN == 0 {
		ro.AckN = 1 << 30 // flushed by settleHeadLocked, once per destination outcome
	} else {
		ro.AckN = f.opts.AckN
	}
	ro.OnMessage = f.onMessage
	if ro.Mode != SettleAskUnsettled { // asked for (qpidd's exchange subscriptions), or the default
		ro.Mode = SettleUnsettled
	}
	// Credit follows the destinations': the source is asked for no more
	// than can be sent on at once, so little is parked (Proton's broker
	// grants 5, qpidd 500).
	ro.limit = f.creditLimit
	rcv, err := src.NewReceiver(ctx, ro)
	if err != nil {
		if f.dl != nil {
			_ = f.dl.Close(ctx)
		}
		return nil, fmt.Errorf("engine: attach receiver to %s: %w", ro.Address, err)
	}
	f.mu.Lock()
	f.src = rcv
	f.mu.Unlock()
	rcv.Regrant() // in case a destination's credit came during the attach
	return rcv, nil
}

// ForwardStats are a forwarder's counts: Forwarded messages sent (all
// their copies), Copies sent, Settled of those with the destinations'
// outcome (Accepted and Rejected by them, the rest released at the
// source), Released at the source without being sent, Refused (rejected
// at the source: they do not decode), Refusals (of the settled, rejected
// at the source with the forwarder's own refusal: Dispatch's, or a
// destination that cannot be attached), Dropped (of the settled,
// Dispatch chose no copy: accepted at the source). With a dead-letter queue, DeadLettered of the settled went there
// (and were accepted at the source), not counted in Accepted, Rejected
// or Expired. Lost: of the Released and the Settled released at the
// source (not Expired), those the source had sent pre-settled
// (at-most-once by the source's choice: it keeps no copy, nothing
// redelivers them).
type ForwardStats struct {
	Forwarded, Settled, Released, Refused uint64
	Accepted, Rejected                    uint64
	Expired                               uint64 // settled at the source with Expire's state
	Abandoned                             uint64 // given up on by Expire: Expired, or dead-lettered
	DeadLettered, Lost                    uint64
	Refusals, Dropped, Copies             uint64
	Parks                                 uint64 // copies that waited (copied) for credit or an attach
	Held                                  uint64 // times ForwardOptions.Hold said yes: Resume is due once it says no
	Destinations                          int    // senders attached
	InFlight, Parked                      int
}

// Stats returns the forwarder's counts.
func (f *Forwarder) Stats() ForwardStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return ForwardStats{Forwarded: f.forwarded, Settled: f.settled, Released: f.released, Refused: f.refused, Parks: f.parks,
		Accepted: f.accepted, Rejected: f.rejected, Expired: f.expired, Abandoned: f.abandoned, DeadLettered: f.deadLettered,
		Refusals: f.refusals, Dropped: f.dropped, Copies: f.copies, Destinations: len(f.dests), Lost: f.lost, Held: f.held.Load(),
		InFlight: len(f.inflight) - f.head, Parked: len(f.parked)}
}

// Err is the first error that stopped forwarding (a destination link
// failed); the source's deliveries are released from then on.
func (f *Forwarder) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// onMessage forwards one delivery (source reader goroutine). While a
// destination's outgoing buffer is over its bound it waits, holding no
// lock: the source connection stops reading (TCP pushes back on the
// broker) instead of the buffer growing. Waiting is safe because the
// destination's writer never waits for a reader; on one shared
// connection it would not be, so there it does not wait.
func (f *Forwarder) onMessage(d *Delivery) {
	for _, snd := range *f.senders.Load() {
		if w := &snd.s.c.w; d.Receiver.s.c != snd.s.c {
			_ = w.waitRoom(len(d.Payload) + 64) // an error shows on the send below
		}
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
	sec := &f.sec // a field, not a local: Dispatch would make a local escape
	var err error
	if *sec, err = wire.ScanSections(d.Payload); err != nil {
		f.refuseUndecodable(d.Receiver, d.ID, d.Settled, d.Payload, err)
		return
	}
	c := f.choose(d.Payload, sec)
	if len(f.parked) > 0 && len(f.parked)+len(c.Copies) > f.limit {
		f.release(d.Receiver, d.ID, d.Settled)
		return
	}
	e := f.push(d.ID, d.Settled, f.keep(d.Payload), len(c.Copies))
	switch {
	case c.Refuse != nil:
		e.done, e.local = true, true
		e.state = wire.DeliveryState{Kind: wire.StateRejected, Error: c.Refuse}
	case len(c.Copies) == 0:
		e.done, e.dropped = true, true
	}
	seq := f.seq0 + uint64(len(f.inflight)-1)
	for i := range c.Copies {
		f.sendCopy(seq, i, &c.Copies[i], d.Payload, sec)
	}
	f.settleHeadLocked()
}

// choose is Dispatch's choice for payload, or Forward's one destination
// with Rewrite's annotations.
func (f *Forwarder) choose(payload []byte, sec *wire.Sections) *Choice {
	c := &f.choice
	c.Copies, c.Refuse = c.Copies[:0], nil
	if f.opts.Dispatch != nil {
		f.opts.Dispatch(payload, sec, c)
		return c
	}
	var set []wire.Annotated
	if f.opts.Rewrite != nil {
		set = f.opts.Rewrite(payload, sec)
	}
	c.Copies = append(c.Copies, Copy{Set: set})
	return c
}

// refuseUndecodable handles a message whose sections do not decode: it
// is dead-lettered in its turn when there is a dead-letter queue, else
// rejected at the source with amqp:decode-error. f.mu is held.
func (f *Forwarder) refuseUndecodable(src *Receiver, id uint32, settled bool, payload []byte, err error) {
	if f.dl != nil {
		f.pushUndecodable(id, settled, payload, err)
		return
	}
	f.refused++
	if !settled {
		src.Settle(id, &DeliveryState{Kind: wire.StateRejected,
			Error: &wire.Error{Condition: condDecodeError, Description: err.Error()}})
		src.Flush()
	}
}

// push records a delivery taken from the source with copies to send;
// payload is its copy kept for the dead-letter queue (nil without one).
// f.mu is held.
func (f *Forwarder) push(srcID uint32, srcSettled bool, payload []byte, copies int) *inflight {
	if f.head > 0 && (f.head == len(f.inflight) || f.head >= 1024 && f.head*2 >= len(f.inflight)) {
		// Reuse the front: the slice stays as long as what is in flight.
		n := copy(f.inflight, f.inflight[f.head:])
		clear(f.inflight[n:])
		f.inflight, f.seq0, f.head = f.inflight[:n], f.seq0+uint64(f.head), 0
	}
	f.inflight = append(f.inflight, inflight{src: srcID, srcSettled: srcSettled, payload: payload,
		pending: copies, unsent: copies, worst: -1, state: wire.DeliveryState{Kind: wire.StateAccepted}})
	return &f.inflight[len(f.inflight)-1]
}

// entry is the delivery with sequence number seq, nil when it was
// settled at the source already. f.mu is held.
func (f *Forwarder) entry(seq uint64) *inflight {
	if seq < f.seq0+uint64(f.head) || seq >= f.seq0+uint64(len(f.inflight)) {
		return nil
	}
	return &f.inflight[seq-f.seq0]
}

func (f *Forwarder) release(src *Receiver, id uint32, settled bool) {
	f.released++
	if settled {
		f.lost++ // nothing left at the source to redeliver it
	} else {
		src.Settle(id, Released)
		src.Flush()
	}
}

// outcome takes one copy's outcome for the delivery seq: it is done
// once every copy has one; accepted when all were, else the outcome of
// the first copy (in Dispatch's order) that was not. f.mu is held.
func (f *Forwarder) outcome(seq uint64, copyIdx int, st *DeliveryState, local bool) {
	e := f.entry(seq)
	if e == nil || e.done { // done: Expire's state, or a failure's, stands
		return
	}
	e.pending--
	if st.Kind != wire.StateAccepted && (e.worst < 0 || copyIdx < e.worst) {
		e.state, e.worst, e.local = *st, copyIdx, local
	}
	if e.pending <= 0 {
		e.done = true
	}
}

// settleHeadLocked settles at the source every delivery at the head of
// the arrival order that has its state; f.mu is held.
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
		case e.expired:
			f.expired++
		case e.local:
			f.refusals++
		case e.dropped:
			f.dropped++
		case e.state.Kind == wire.StateAccepted:
			f.accepted++
		case e.state.Kind == wire.StateRejected:
			f.rejected++
		}
		switch {
		case !e.srcSettled:
			src.Settle(e.src, out)
		case out == Released && !e.expired: // expired: counted Expired
			f.lost++
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
// every delivery whose copies were all sent before before and that
// still waits for an outcome, and settles the source for them: a
// destination that does not answer in time does not hold the source's
// credit for good. A later outcome for one of them is ignored. It
// returns how many it expired.
func (f *Forwarder) Expire(before time.Time, st *DeliveryState) int {
	limit := before.UnixNano()
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for i := f.head; i < len(f.inflight); i++ {
		e := &f.inflight[i]
		if e.unsent > 0 || e.sent >= limit {
			break
		}
		if !e.done {
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

// holds asks ForwardOptions.Hold, if any, whether a copy for
// destination to waits now; each yes is counted.
func (f *Forwarder) holds(to string) bool {
	if to != "" || f.opts.Hold == nil || !f.opts.Hold() {
		return false
	}
	f.held.Add(1)
	return true
}

// Resume sends the copies Hold kept back, once it says no, and grants
// the source credit again (the owner's goroutine, no lock held).
func (f *Forwarder) Resume() { f.onCredit() }

// fenced asks the fence, if any, holding no lock.
func (f *Forwarder) fenced() bool { return f.opts.Fence != nil && !f.opts.Fence() }

// Stop makes the forwarder take no more from the source: its credit is
// taken back (a flow granting none), deliveries still arriving are
// released at the source (not sent: no duplicate comes of them), and
// those in flight are settled as the destinations' outcomes come; those
// ForwardOptions.Hold keeps back are released at the source. A route
// whose path changed drains this way before it closes the links.
func (f *Forwarder) Stop() {
	f.stopping.Store(true)
	f.mu.Lock()
	src := f.src
	if f.opts.Hold != nil {
		f.drainParked() // what Hold keeps is released, not waited for
	}
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

// creditLimit is the credit the source may have: what every destination
// can take now, less what is parked, at least 1 so a grant is never
// withheld for good by a stale count (and a dispatching forwarder with
// no destination yet takes one message at a time until it has one). It
// takes no lock.
func (f *Forwarder) creditLimit() uint32 {
	if f.stopping.Load() || f.holds("") {
		return 0
	}
	senders := *f.senders.Load()
	if len(senders) == 0 {
		if f.opts.NoDestinations {
			return math.MaxUint32 // the receiver's window alone
		}
		return 1
	}
	avail := senders[0].Available()
	for _, s := range senders[1:] {
		avail = min(avail, s.Available())
	}
	return max(1, avail-min(avail, uint32(f.nParked.Load())))
}

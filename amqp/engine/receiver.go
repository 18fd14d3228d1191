package engine

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/fedrouter/fedrouter/amqp/wire"
)

// DeliveryState is a delivery's outcome (accepted, rejected, released,
// modified).
type DeliveryState = wire.DeliveryState

// Outcomes without fields, ready to pass to Settle.
var (
	Accepted = &DeliveryState{Kind: wire.StateAccepted}
	Released = &DeliveryState{Kind: wire.StateReleased}
)

// Delivery is one complete message as it arrived. It and its byte
// slices are valid only during the OnMessage call.
type Delivery struct {
	ID       uint32
	Tag      []byte
	Format   uint32
	Settled  bool // the sender sent it settled: nothing to settle
	Payload  []byte
	Receiver *Receiver
	// Oversize: the message was longer than MaxMessageSize and the
	// receiver discards such messages (ReceiverOptions.DiscardOversize):
	// Payload is nil, Size is how many bytes arrived, and the delivery
	// must still be settled (rejected, so that the broker does not send
	// it again).
	Oversize bool
	Size     uint64
}

// Receiver is a receiving link. Its flow state is under its session's
// mutex; the reassembly state is the reader goroutine's.
type Receiver struct {
	link
	opts ReceiverOptions

	// Under s.mu.
	deliveryCount uint32 // the sender's delivery-count as we track it
	credit        uint32 // credit the sender has left
	held          uint32 // received unsettled, not yet settled by us
	run           settleRun
	timer         *time.Timer
	timerArmed    bool
	dispositions  uint64 // disposition frames sent

	// Reader goroutine only.
	partial   []byte
	partialOn bool
	partialID uint32
	partialSt bool
	tag       []byte
	delivery  Delivery
	// discarded counts the bytes of the oversize message in progress
	// (DiscardOversize), read but not kept; 0 when none.
	discarded uint64

	// peak is the most bytes ever held in reassembly (written by the
	// reader goroutine, read by anyone).
	peak atomic.Uint64
}

// settleRun is a run of contiguous delivery ids settled with one outcome,
// sent as one disposition.
type settleRun struct {
	on          bool
	first, last uint32
	state       DeliveryState
}

// NewReceiver attaches a receiving link and grants its first credit.
func (s *Session) NewReceiver(ctx context.Context, opts ReceiverOptions) (*Receiver, error) {
	if opts.Credit == 0 {
		opts.Credit = 100
	}
	if opts.MaxMessageSize == 0 {
		opts.MaxMessageSize = 64 << 20
	}
	if opts.AckDelay <= 0 {
		opts.AckDelay = 5 * time.Millisecond
	}
	if opts.Name == "" {
		opts.Name = fmt.Sprintf("fedrouter-rx-%s-%d", opts.Address, time.Now().UnixNano())
	}
	r := &Receiver{link: newLink(s, opts.Name, opts.Address, wire.RoleReceiver), opts: opts}
	r.receiver = r
	r.delivery.Receiver = r
	r.timer = time.AfterFunc(time.Hour, r.onTimer)
	r.timer.Stop()
	a := wire.Attach{
		Name: opts.Name, Role: wire.RoleReceiver, SndSettleMode: wire.SndMixed, RcvSettleMode: wire.RcvFirst,
		Source: &wire.Source{Address: opts.Address, Durable: opts.Durable, ExpiryPolicy: opts.ExpiryPolicy, Filter: opts.Filter, Capabilities: opts.Capabilities},
		Target: &wire.Target{}, MaxMessageSize: opts.MaxMessageSize,
	}
	switch opts.Mode {
	case SettlePresettled:
		a.SndSettleMode = wire.SndSettled
	case SettleAskUnsettled:
		a.SndSettleMode = wire.SndUnsettled
	}
	if err := r.attach(ctx, &a); err != nil {
		return nil, err
	}
	s.mu.Lock()
	r.deliveryCount = r.remote.InitialDeliveryCount
	b := r.grantLocked(s.c.w.lock(), true)
	s.c.w.unlock(b)
	s.mu.Unlock()
	return r, nil
}

// Close detaches the link (bounded by ctx). Deliveries not settled are
// released by the peer.
func (r *Receiver) Close(ctx context.Context) error {
	r.Flush()
	return r.close(ctx)
}

// needGrantLocked says whether the sender's credit is down to half the
// window or less of what we could hold.
func (r *Receiver) needGrantLocked() bool {
	target := r.targetLocked()
	if r.opts.GrantWhenSpent {
		return r.credit == 0 && target > 0
	}
	return target > r.credit && r.credit <= target/2
}

// targetLocked is the credit the sender should have: the window less
// what we hold unsettled, and no more than the limit when one is set (a
// forwarder's destination credit: what cannot be sent on at once is not
// asked for).
func (r *Receiver) targetLocked() uint32 {
	target := r.opts.Credit - min(r.held, r.opts.Credit)
	if r.opts.limit != nil {
		target = min(target, r.opts.limit())
	}
	return target
}

// Regrant grants credit now if the target has risen enough (a
// forwarder calls it when its destination's credit grows).
func (r *Receiver) Regrant() {
	s := r.s
	s.mu.Lock()
	if r.needGrantLocked() {
		s.c.w.unlock(r.grantLocked(s.c.w.lock(), true))
	}
	s.mu.Unlock()
}

// revoke sends the peer a flow with the credit the target allows now,
// even when it is less than the peer has (0 for a stopped forwarder).
func (r *Receiver) revoke() {
	s := r.s
	s.mu.Lock()
	s.c.w.unlock(r.grantLocked(s.c.w.lock(), true))
	s.mu.Unlock()
}

// grantLocked appends a flow granting credit when the sender's is down
// to half the window or less (always when force); s.mu is held.
func (r *Receiver) grantLocked(b []byte, force bool) []byte {
	if !force && !r.needGrantLocked() {
		return b
	}
	r.credit = r.targetLocked()
	f := wire.Flow{Handle: r.handle, HasHandle: true, DeliveryCount: r.deliveryCount, HasDeliveryCount: true,
		LinkCredit: r.credit, HasLinkCredit: true}
	return r.s.flowLocked(b, &f)
}

// onTransfer takes one transfer frame (reader goroutine): session window,
// credit, reassembly, then the callback with no lock held.
func (r *Receiver) onTransfer(t *wire.Transfer) error {
	s := r.s
	s.mu.Lock()
	if s.ended {
		// Sent before the peer saw our end: nothing more is answered on
		// this session (no flow may follow an end), so nothing is counted.
		s.mu.Unlock()
		return nil
	}
	if s.incomingWindow == 0 {
		s.mu.Unlock()
		return violate(condWindowViolation, "a transfer beyond the session's incoming window of %d frames", s.incomingWindowMax)
	}
	s.incomingWindow--
	s.nextIncomingID++
	if r.detachSent {
		// Frames the peer sent before it saw our detach: dropped, the
		// peer keeps the deliveries (they were never settled). They use
		// the session window all the same, so it must open again: a
		// peer left unable to send the rest of a delivery may never
		// answer our end (a 1 MiB message cut at 64 KiB hung End).
		s.reopenWindowLocked()
		s.mu.Unlock()
		return nil
	}
	if t.Aborted {
		s.reopenWindowLocked()
		s.mu.Unlock()
		r.partial, r.partialOn, r.discarded = r.partial[:0], false, 0
		return nil
	}
	first := !r.partialOn
	if first && !t.HasDeliveryID {
		s.mu.Unlock()
		return violate(condInvalidField, "transfer on link %q without a delivery-id", r.name)
	}
	if first {
		r.deliveryCount++
		if r.credit > 0 {
			r.credit--
		}
		if !t.Settled {
			r.held++
		}
		if r.held > 2*r.opts.Credit+16 {
			s.mu.Unlock()
			return violate(condTransferLimit, "link %q: %d deliveries unsettled, credit was %d", r.name, r.held, r.opts.Credit)
		}
	}
	var b []byte
	wrote := false
	if r.needGrantLocked() || s.incomingWindow <= s.incomingWindowMax/2 {
		b = s.c.w.lock()
		wrote = true
		if s.incomingWindow <= s.incomingWindowMax/2 {
			s.incomingWindow = s.incomingWindowMax
			b = r.grantLocked(b, true)
		} else {
			b = r.grantLocked(b, false)
		}
	}
	if wrote {
		s.c.w.unlock(b)
	}
	s.mu.Unlock()
	return r.assemble(t, first)
}

// reopenWindowLocked sends a session flow opening the incoming window
// again once it is down to half, for frames that grant no link credit;
// s.mu is held.
func (s *Session) reopenWindowLocked() {
	if s.incomingWindow <= s.incomingWindowMax/2 {
		s.incomingWindow = s.incomingWindowMax
		s.c.w.unlock(s.flowLocked(s.c.w.lock(), &wire.Flow{}))
	}
}

// assemble delivers a single-frame message in place, or gathers the
// frames of a longer one (bounded by MaxMessageSize).
func (r *Receiver) assemble(t *wire.Transfer, first bool) error {
	if first {
		r.partialID, r.partialSt = t.DeliveryID, t.Settled
		r.tag = append(r.tag[:0], t.DeliveryTag...)
		r.delivery.Format = t.MessageFormat
	}
	if r.discarded > 0 || uint64(len(r.partial)+len(t.Payload)) > r.opts.MaxMessageSize {
		return r.oversize(t)
	}
	if t.More || r.partialOn {
		r.partial = append(r.partial, t.Payload...)
		r.partialOn = t.More
		if n := uint64(len(r.partial)); n > r.peak.Load() {
			r.peak.Store(n)
		}
		if t.More {
			return nil
		}
		r.deliver(r.partial)
		if cap(r.partial) > 1<<20 {
			r.partial = nil
		}
		r.partial = r.partial[:0]
		return nil
	}
	r.deliver(t.Payload)
	return nil
}

// oversize takes a frame of a message over MaxMessageSize: the link is
// detached, or, with DiscardOversize, the frames are counted and dropped
// and the message is delivered marked Oversize once its last frame came.
func (r *Receiver) oversize(t *wire.Transfer) error {
	if !r.opts.DiscardOversize {
		r.partial, r.partialOn = nil, false
		return &linkViolation{l: &r.link, cond: condMessageSize,
			msg: fmt.Sprintf("a message over max-message-size %d", r.opts.MaxMessageSize)}
	}
	if r.discarded == 0 {
		r.discarded = uint64(len(r.partial))
		r.partial = r.partial[:0]
	}
	r.discarded += uint64(len(t.Payload))
	r.partialOn = t.More
	if t.More {
		return nil
	}
	d := &r.delivery
	d.Oversize, d.Size = true, r.discarded
	r.discarded = 0
	r.deliver(nil)
	d.Oversize, d.Size = false, 0
	return nil
}

func (r *Receiver) deliver(payload []byte) {
	d := &r.delivery
	d.ID, d.Tag, d.Settled, d.Payload = r.partialID, r.tag, r.partialSt, payload
	if r.opts.OnMessage != nil {
		r.opts.OnMessage(d)
	}
	d.Payload = nil
}

// Settle records the outcome of delivery id. Contiguous ids with the
// same outcome are sent as one disposition: when the run breaks, when
// it reaches AckN, after AckDelay, or on Flush.
func (r *Receiver) Settle(id uint32, state *DeliveryState) {
	s := r.s
	s.mu.Lock()
	var b []byte
	locked := false
	run := &r.run
	if run.on && (id != run.last+1 || !sameState(&run.state, state)) {
		b, locked = s.c.w.lock(), true
		b = r.dispositionLocked(b)
	}
	if !run.on {
		*run = settleRun{on: true, first: id, last: id, state: *state}
	} else {
		run.last = id
	}
	if r.held > 0 {
		r.held--
	}
	if r.opts.AckN <= 1 || int(run.last-run.first)+1 >= r.opts.AckN {
		if !locked {
			b, locked = s.c.w.lock(), true
		}
		b = r.dispositionLocked(b)
	} else if !r.timerArmed {
		r.timerArmed = true
		r.timer.Reset(r.opts.AckDelay)
	}
	if !locked && r.needGrantLocked() {
		b, locked = s.c.w.lock(), true
	}
	if locked {
		b = r.grantLocked(b, false)
		s.c.w.unlock(b)
	}
	s.mu.Unlock()
}

// Flush sends the pending run of settlements now.
func (r *Receiver) Flush() {
	s := r.s
	s.mu.Lock()
	if r.run.on {
		b := r.dispositionLocked(s.c.w.lock())
		s.c.w.unlock(r.grantLocked(b, false))
	}
	s.mu.Unlock()
}

// Holding says how many deliveries the receiver holds unsettled and how
// much credit the sender has left: what a stall watcher reads.
func (r *Receiver) Holding() (held, credit uint32) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	return r.held, r.credit
}

// Dispositions is how many disposition frames the receiver has sent.
func (r *Receiver) Dispositions() uint64 {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	return r.dispositions
}

func (r *Receiver) onTimer() {
	r.s.mu.Lock()
	r.timerArmed = false
	r.s.mu.Unlock()
	r.Flush()
}

func (r *Receiver) stopTimer() { r.timer.Stop() }

// dispositionLocked appends the run as one settled disposition; s.mu held.
func (r *Receiver) dispositionLocked(b []byte) []byte {
	run := &r.run
	if !run.on {
		return b
	}
	disp := wire.Disposition{Role: wire.RoleReceiver, First: run.first, Settled: true, State: run.state}
	if run.last != run.first {
		disp.Last, disp.HasLast = run.last, true
	}
	run.on = false
	r.dispositions++
	b, mark := wire.BeginFrame(b, wire.FrameAMQP, r.s.ch)
	return wire.EndFrame(wire.AppendDisposition(b, &disp), mark)
}

func sameState(a, b *DeliveryState) bool {
	return a == b || (a.Kind == b.Kind && a.Kind != wire.StateRejected && a.Kind != wire.StateModified)
}

// linkViolation ends one link (not the connection) with a condition.
type linkViolation struct {
	l    *link
	cond string
	msg  string
}

func (v *linkViolation) Error() string { return v.msg }

// PeakBuffered is the most bytes the receiver ever held for one message
// in reassembly (a message in a single frame is not copied, not counted).
func (r *Receiver) PeakBuffered() uint64 { return r.peak.Load() }

package engine

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fedrouter/fedrouter/amqp/wire"
)

// Sender is a sending link. Sends append their frames to the
// connection's outgoing buffer from the calling goroutine; outcomes come
// back through OnSettled on the reader goroutine.
type Sender struct {
	link
	opts SenderOptions

	sendMu  sync.Mutex    // one delivery at a time: a multi-frame one is not interleaved
	scratch []byte        // under sendMu: a rewritten payload
	sec     wire.Sections // under sendMu: a payload scanned to set its subject
	wake    chan struct{}

	// Under s.mu.
	credit        uint32
	deliveryCount uint32
	// avail mirrors min(credit, the session window) for readers that must
	// not take s.mu (a forwarder's source receiver, under its own lock).
	avail atomic.Uint32
}

// NewSender attaches a sending link and waits for the peer's attach.
func (s *Session) NewSender(ctx context.Context, opts SenderOptions) (*Sender, error) {
	if opts.Name == "" {
		opts.Name = fmt.Sprintf("fedrouter-tx-%s-%d", opts.Address, time.Now().UnixNano())
	}
	sn := &Sender{link: newLink(s, opts.Name, opts.Address, wire.RoleSender), opts: opts, wake: make(chan struct{}, 1)}
	sn.sender = sn
	a := wire.Attach{
		Name: opts.Name, Role: wire.RoleSender, SndSettleMode: wire.SndMixed, RcvSettleMode: wire.RcvFirst,
		Source: &wire.Source{},
		Target: &wire.Target{Address: opts.Address, Durable: opts.Durable, ExpiryPolicy: opts.ExpiryPolicy, Capabilities: opts.Capabilities},
	}
	if opts.Mode == SettlePresettled {
		a.SndSettleMode = wire.SndSettled
	}
	s.mu.Lock()
	s.senders = append(s.senders, sn)
	s.mu.Unlock()
	if err := sn.attach(ctx, &a); err != nil {
		sn.forget()
		return nil, err
	}
	return sn, nil
}

// Close detaches the link (bounded by ctx).
func (sn *Sender) Close(ctx context.Context) error { return sn.close(ctx) }

// Available is the credit the peer has left us, bounded by the session
// window, read without a lock (it may be a moment behind).
func (sn *Sender) Available() uint32 { return sn.avail.Load() }

// Credit is the link credit the peer has left us.
func (sn *Sender) Credit() uint32 {
	sn.s.mu.Lock()
	defer sn.s.mu.Unlock()
	return sn.credit
}

// Send sends payload (an encoded message) as one delivery, waiting for
// credit, session window and room in the outgoing buffer. It returns
// once the frames are in the buffer, with the delivery-id the outcome
// will name. With SenderOptions.Subject the message goes with that
// subject (its properties rewritten in a copy; payload is not changed),
// or not at all: ErrUnwritable when its properties do not decode.
func (sn *Sender) Send(ctx context.Context, payload []byte) (uint32, error) {
	return sn.send(waitFor(ctx), payload)
}

// TrySend sends payload only if credit and session window are there
// now; otherwise ErrNoCredit. It never waits for room in the buffer
// either (a forwarder calls it from a reader goroutine).
func (sn *Sender) TrySend(payload []byte) (uint32, error) {
	return sn.send(waiter{}, payload)
}

// waiter is what a send may wait on: a context's done channel and its
// error; the zero waiter does not wait.
type waiter struct {
	done <-chan struct{}
	err  func() error
}

func waitFor(ctx context.Context) waiter { return waiter{done: ctx.Done(), err: ctx.Err} }

func (w waiter) wait() bool { return w.err != nil }

// SendRewritten sends payload with its message annotations set and its
// delivery annotations dropped (wire.AppendRewritten), without decoding
// the bare message, waiting as Send does.
func (sn *Sender) SendRewritten(ctx context.Context, payload []byte, sec *wire.Sections, set ...wire.Annotated) (uint32, error) {
	return sn.sendRewritten(waitFor(ctx), payload, sec, set)
}

// TrySendRewritten is SendRewritten without waiting, as TrySend.
func (sn *Sender) TrySendRewritten(payload []byte, sec *wire.Sections, set ...wire.Annotated) (uint32, error) {
	return sn.sendRewritten(waiter{}, payload, sec, set)
}

func (sn *Sender) sendRewritten(w waiter, payload []byte, sec *wire.Sections, set []wire.Annotated) (uint32, error) {
	if w.wait() {
		if err := sn.s.c.w.waitRoom(len(payload) + 128); err != nil {
			return 0, &ConnError{Err: err}
		}
	}
	sn.sendMu.Lock()
	defer sn.sendMu.Unlock()
	if sn.opts.Subject == "" {
		sn.scratch = wire.AppendRewritten(sn.scratch[:0], payload, sec, true, set...)
	} else {
		var err error
		if sn.scratch, err = wire.AppendRewrittenWithSubject(sn.scratch[:0], payload, sec, true, sn.opts.Subject, set...); err != nil {
			return 0, sn.unwritable(err)
		}
	}
	return sn.sendLocked(w, sn.scratch)
}

func (sn *Sender) send(w waiter, payload []byte) (uint32, error) {
	if w.wait() {
		if err := sn.s.c.w.waitRoom(len(payload) + 64); err != nil {
			return 0, &ConnError{Err: err}
		}
	}
	sn.sendMu.Lock()
	defer sn.sendMu.Unlock()
	if sn.opts.Subject != "" {
		var err error
		if sn.sec, err = wire.ScanSections(payload); err == nil {
			sn.scratch, err = wire.AppendRewrittenWithSubject(sn.scratch[:0], payload, &sn.sec, false, sn.opts.Subject)
		}
		if err != nil {
			return 0, sn.unwritable(err)
		}
		payload = sn.scratch
	}
	return sn.sendLocked(w, payload)
}

// unwritable is the error of a message the sender cannot give its
// subject (err wraps wire.ErrDecode): nothing was sent, the link stays.
// Not a link's or a connection's error: a forwarder refuses that message
// and goes on.
func (sn *Sender) unwritable(err error) error {
	return fmt.Errorf("%w: to %s, the subject %q: %w", ErrUnwritable, sn.address, sn.opts.Subject, err)
}

// sendLocked writes the delivery's frames as credit and window allow,
// waiting for more when wait; sendMu is held.
func (sn *Sender) sendLocked(w waiter, payload []byte) (uint32, error) {
	var id uint32
	off, first := 0, true
	for {
		if err := sn.writeFrames(payload, &id, &off, &first, w.wait()); err != nil || off == len(payload) && !first {
			return id, err
		}
		if err := sn.waitCredit(w); err != nil {
			return id, err
		}
	}
}

// waitCredit waits until the reader signals new credit or window.
func (sn *Sender) waitCredit(w waiter) error {
	select {
	case <-sn.wake:
		return nil
	case <-sn.done:
		return sn.err
	case <-sn.s.c.done:
		return &ConnError{Err: sn.s.c.err}
	case <-w.done:
		return &LinkError{Name: sn.name, Address: sn.address, Err: fmt.Errorf("waiting for credit: %w", w.err())}
	}
}

// writeFrames appends as many frames of the delivery as the session
// window allows, starting at *off; the first frame takes a delivery-id
// and a credit. It returns ErrNoCredit (when !wait) or nil with *off
// short of the end when it must wait.
func (sn *Sender) writeFrames(payload []byte, id *uint32, off *int, first *bool, wait bool) error {
	s := sn.s
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-sn.done:
		return sn.err
	default:
	}
	// Without waiting, a delivery goes only if all its frames fit in the
	// window now: a caller on a reader goroutine cannot wait mid-message.
	if !wait && *first && s.remoteIncomingWindow < framesFor(len(payload), s.c.peerMaxFrame) {
		return ErrNoCredit
	}
	if *first && (sn.credit == 0 || s.remoteIncomingWindow == 0) || !*first && s.remoteIncomingWindow == 0 {
		if !wait && *first {
			return ErrNoCredit
		}
		return nil
	}
	if limit := sn.remote.MaxMessageSize; *first && limit > 0 && uint64(len(payload)) > limit {
		return fmt.Errorf("%w: %d bytes, the peer's max-message-size is %d", ErrTooLarge, len(payload), limit)
	}
	b := s.c.w.lock()
	for s.remoteIncomingWindow > 0 && (*first || *off < len(payload)) {
		b = sn.frameLocked(b, payload, id, off, first)
	}
	s.c.w.unlock(b)
	return nil
}

// framesFor is how many transfer frames a payload of n bytes needs at
// most (a transfer performative takes under 64 bytes).
func framesFor(n int, maxFrame uint32) uint32 {
	per := int(maxFrame) - 8 - 64
	return uint32(max(1, (n+per-1)/per))
}

// frameLocked appends one transfer frame; s.mu and the buffer are held.
func (sn *Sender) frameLocked(b, payload []byte, id *uint32, off *int, first *bool) []byte {
	s := sn.s
	tr := wire.Transfer{Handle: sn.handle}
	var tag [4]byte
	if *first {
		*id = s.nextDeliveryID
		s.nextDeliveryID++
		sn.credit--
		sn.deliveryCount++
		sn.avail.Store(min(sn.credit, s.remoteIncomingWindow))
		binary.BigEndian.PutUint32(tag[:], *id)
		tr.DeliveryID, tr.HasDeliveryID, tr.DeliveryTag = *id, true, tag[:]
		tr.Settled = sn.opts.Mode == SettlePresettled
		*first = false
	}
	s.nextOutgoingID++
	s.remoteIncomingWindow--
	b, mark := wire.BeginFrame(b, wire.FrameAMQP, s.ch)
	perf := len(b)
	b = wire.AppendTransfer(b, &tr)
	rest := payload[*off:]
	if room := int(s.c.peerMaxFrame) - (len(b) - mark); len(rest) > room {
		tr.More = true
		b = wire.AppendTransfer(b[:perf], &tr)
		room = int(s.c.peerMaxFrame) - (len(b) - mark)
		rest = rest[:room]
	}
	*off += len(rest)
	return wire.EndFrame(append(b, rest...), mark)
}

// onFlow applies the link part of a flow (reader goroutine, s.mu held);
// it returns a flow to send back when the peer asked for drain or echo.
func (sn *Sender) onFlowLocked(f *wire.Flow, b []byte) []byte {
	if f.HasLinkCredit {
		count := sn.deliveryCount
		if f.HasDeliveryCount {
			// credit = the peer's count + its credit - ours (part 2.6.7)
			sn.credit = f.DeliveryCount + f.LinkCredit - count
		} else {
			sn.credit = f.LinkCredit
		}
		if int32(sn.credit) < 0 {
			sn.credit = 0
		}
	}
	if f.Drain && sn.credit > 0 {
		// Nothing is queued here (sends are synchronous): use the credit up.
		sn.deliveryCount += sn.credit
		sn.credit = 0
		f.Echo = true
	}
	sn.avail.Store(min(sn.credit, sn.s.remoteIncomingWindow))
	if !f.Echo {
		return b
	}
	out := wire.Flow{Handle: sn.handle, HasHandle: true, DeliveryCount: sn.deliveryCount, HasDeliveryCount: true,
		LinkCredit: sn.credit, HasLinkCredit: true, Drain: f.Drain}
	return sn.s.flowLocked(b, &out)
}

func (sn *Sender) signal() {
	select {
	case sn.wake <- struct{}{}:
	default:
	}
}

package engine

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/fedrouter/fedrouter/amqp/wire"
)

// A forwarder's destinations (ForwardOptions.Dispatch): each message's
// copies go to senders chosen per message by key, attached lazily. A
// copy for a key without a sender is parked (copied, rewritten) and the
// key handed to the owner on AttachRequests: attaching is I/O, which
// must not happen on a reader goroutine nor under the forwarder's lock.
// The owner attaches it (AddDestination: the parked copies go on) or
// says it cannot be (Unreachable: their messages are refused). Parked
// copies go in arrival order, whatever their destination: a message
// waiting for one destination's credit or attach holds back those behind
// it (the order of the source is kept, and the bound on parked copies is
// one for all).

// ErrTooManyDestinations: a message named one destination more than
// ForwardOptions.MaxDestinations allow; the forwarder sends nothing more
// (its owner starts afresh with no sender).
var ErrTooManyDestinations = errors.New("engine: more destinations than the forwarder may keep senders for")

// Copy is one copy of a message: the destination it goes to (a key the
// owner resolves; "" is Forward's own sender) and the message
// annotations set on it (a nil Value removes that annotation). Values
// must not alias the payload: a parked copy outlives it. Count, when
// set, is added 1 once the destination accepted this copy (before the
// source was settled otherwise: Expire).
type Copy struct {
	To    string
	Set   []wire.Annotated
	Count *atomic.Uint64
}

// Choice is what Dispatch makes of one message: its copies (none: the
// message is dropped, accepted at the source and sent nowhere), or a
// refusal (rejected at the source with it, or dead-lettered).
type Choice struct {
	Copies []Copy
	Refuse *wire.Error
}

// dest is one destination's sender and what it has in flight.
type dest struct {
	key  string
	snd  *Sender
	out  []outstanding // sent, in send order, from head
	head int
}

// outstanding is one copy sent to a destination, waiting for its outcome.
type outstanding struct {
	id    uint32
	seq   uint64 // the delivery it is a copy of
	copy  int    // its index among the delivery's copies
	done  bool
	count *atomic.Uint64 // Copy.Count
}

// parkedCopy is a copy waiting for its destination's credit or attach:
// its payload as it is to be sent (rewritten), in a pooled buffer.
type parkedCopy struct {
	seq     uint64
	copy    int
	to      string
	payload []byte
	count   *atomic.Uint64
}

// AttachRequests yields the keys of destinations a message was
// dispatched to and that have no sender yet; the owner answers each
// with AddDestination or Unreachable. Each key is asked once until
// answered.
func (f *Forwarder) AttachRequests() <-chan string { return f.requests }

// AddDestination attaches a sender for key on sess (I/O: not on a reader
// goroutine, no lock held) and sends the copies parked for it.
func (f *Forwarder) AddDestination(ctx context.Context, key string, sess *Session, so SenderOptions) (*Sender, error) {
	return f.attachDest(ctx, key, sess, so)
}

func (f *Forwarder) attachDest(ctx context.Context, key string, sess *Session, so SenderOptions) (*Sender, error) {
	d := &dest{key: key}
	so.OnSettled = func(first, last uint32, st *DeliveryState) { f.onSettled(d, first, last, st) }
	so.OnCredit, so.Mode = f.onCredit, SettleUnsettled
	snd, err := sess.NewSender(ctx, so)
	if err != nil {
		f.mu.Lock()
		delete(f.asked, key)
		f.mu.Unlock()
		return nil, fmt.Errorf("engine: attach sender to %s: %w", so.Address, err)
	}
	d.snd = snd
	f.mu.Lock()
	delete(f.asked, key)
	f.dests[key] = d
	senders := append([]*Sender{}, *f.senders.Load()...)
	senders = append(senders, snd)
	f.senders.Store(&senders)
	f.drainParked()
	src := f.src
	f.mu.Unlock()
	if src != nil {
		src.Regrant()
	}
	return snd, nil
}

// Unreachable refuses the messages whose copies wait for key: the
// destination cannot be attached (it does not exist). Each is rejected
// at the source with e, or dead-lettered; a later message for key asks
// again.
func (f *Forwarder) Unreachable(key string, e *wire.Error) {
	f.mu.Lock()
	delete(f.asked, key)
	st := DeliveryState{Kind: wire.StateRejected, Error: e}
	kept := f.parked[:0]
	for _, p := range f.parked {
		if p.to != key {
			kept = append(kept, p)
			continue
		}
		f.refuseCopy(p.seq, p.copy, &st)
		f.free = append(f.free, p.payload[:0])
	}
	clear(f.parked[len(kept):])
	f.parked = kept
	f.nParked.Store(int64(len(kept)))
	f.drainParked()
	src := f.src
	f.mu.Unlock()
	if src != nil {
		src.Regrant()
	}
}

// Destinations returns the senders attached, for the owner to watch and
// close.
func (f *Forwarder) Destinations() []*Sender { return *f.senders.Load() }

// sendCopy sends copy i of the delivery seq, or parks it (no credit now,
// no sender yet, or copies parked before it). f.mu is held.
func (f *Forwarder) sendCopy(seq uint64, i int, cp *Copy, payload []byte, sec *wire.Sections) {
	if f.err != nil {
		return // the delivery was released when it happened
	}
	d := f.dests[cp.To]
	if len(f.parked) == 0 && d != nil && !f.holds(cp.To) {
		id, err := sendTo(d.snd, payload, sec, cp.Set)
		switch {
		case err == nil:
			f.sent(d, seq, i, id, cp.Count)
			return
		case perMessage(err) != nil:
			f.refuseCopy(seq, i, perMessage(err))
			return
		case !errors.Is(err, ErrNoCredit):
			f.failDest(seq, err)
			return
		}
	}
	if d == nil && !f.ask(cp.To) {
		f.failDest(seq, ErrTooManyDestinations)
		return
	}
	var buf []byte
	if n := len(f.free); n > 0 {
		buf, f.free = f.free[n-1][:0], f.free[:n-1]
	}
	if len(cp.Set) == 0 && !sec.DeliveryAnnotations.Present() {
		buf = append(buf, payload...)
	} else {
		buf = wire.AppendRewritten(buf, payload, sec, true, cp.Set...)
	}
	f.parked = append(f.parked, parkedCopy{seq: seq, copy: i, to: cp.To, payload: buf, count: cp.Count})
	f.nParked.Store(int64(len(f.parked)))
	f.parks++
}

// sendTo sends payload with set without waiting. A sender that sets a
// subject rewrites every message anyway: it is given the sections
// scanned already.
func sendTo(snd *Sender, payload []byte, sec *wire.Sections, set []wire.Annotated) (uint32, error) {
	if len(set) == 0 && !sec.DeliveryAnnotations.Present() && snd.opts.Subject == "" {
		return snd.TrySend(payload)
	}
	return snd.TrySendRewritten(payload, sec, set...)
}

// refuseCopy gives copy i of the delivery seq the forwarder's own
// refusal st without sending it: its destination is unreachable, or its
// sender cannot write it. The delivery is rejected at the source with
// st, or dead-lettered, once its other copies have their outcomes.
// f.mu is held.
func (f *Forwarder) refuseCopy(seq uint64, i int, st *DeliveryState) {
	e := f.entry(seq)
	if e == nil {
		return
	}
	if e.unsent--; e.unsent == 0 {
		e.sent = time.Now().UnixNano() // Expire counts from here
	}
	f.outcome(seq, i, st, true)
}

// perMessage is the refusal of a message a destination's sender cannot
// send, when that is the message's fault, not the link's: one it cannot
// write (ErrUnwritable: a decode error naming why), or one over the
// destination's max-message-size (ErrTooLarge). The message is rejected
// at the source (or dead-lettered) alone and the forwarder goes on;
// releasing it instead would bring it back at the head of the source
// for every run, and nothing behind it would ever cross. nil: not such
// an error.
func perMessage(err error) *DeliveryState {
	cond := ""
	switch {
	case errors.Is(err, ErrUnwritable):
		cond = condDecodeError
	case errors.Is(err, ErrTooLarge):
		cond = condMessageSize
	default:
		return nil
	}
	return &DeliveryState{Kind: wire.StateRejected, Error: &wire.Error{Condition: cond, Description: err.Error()}}
}

// ask hands key to the owner to attach, once; false when that would
// pass MaxDestinations (f.err set). f.mu is held.
func (f *Forwarder) ask(key string) bool {
	if f.asked[key] {
		return true
	}
	if len(f.dests)+len(f.asked) >= f.opts.MaxDestinations {
		if f.err == nil {
			f.err = fmt.Errorf("%w (%d)", ErrTooManyDestinations, f.opts.MaxDestinations)
		}
		return false
	}
	f.asked[key] = true
	select {
	case f.requests <- key: // room: at most MaxDestinations are asked at once
	default:
	}
	return true
}

// sent records copy i of seq sent to d as delivery id. f.mu is held.
func (f *Forwarder) sent(d *dest, seq uint64, i int, id uint32, count *atomic.Uint64) {
	if d.head > 0 && (d.head == len(d.out) || d.head >= 1024 && d.head*2 >= len(d.out)) {
		n := copy(d.out, d.out[d.head:])
		d.out, d.head = d.out[:n], 0
	}
	d.out = append(d.out, outstanding{id: id, seq: seq, copy: i, count: count})
	f.copies++
	if e := f.entry(seq); e != nil {
		if e.unsent--; e.unsent == 0 {
			e.sent = time.Now().UnixNano()
			f.forwarded++
		}
	}
}

// failDest handles a send that failed for good (the destination link or
// its connection is gone): the forwarder stops, the delivery seq is
// released at the source (the source keeps it; copies already sent may
// arrive twice). f.mu is held.
func (f *Forwarder) failDest(seq uint64, err error) {
	if f.err == nil {
		f.err = err
	}
	if e := f.entry(seq); e != nil {
		f.failEntry(e)
	}
}

// failEntry settles e released at the source once its turn comes.
func (f *Forwarder) failEntry(e *inflight) {
	e.done, e.expired, e.local, e.dropped = true, false, false, false
	e.state = *Released
}

// onSettled takes d's outcome for first..last (its connection's reader
// goroutine) and settles the source for every delivery at the head of
// the arrival order that has all its outcomes.
func (f *Forwarder) onSettled(d *dest, first, last uint32, st *DeliveryState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := d.head; i < len(d.out); i++ {
		o := &d.out[i]
		if int32(o.id-last) > 0 {
			break
		}
		if int32(o.id-first) >= 0 && !o.done {
			o.done = true
			st := st
			switch {
			case d.key != "":
			case st.Kind == wire.StateRejected && f.opts.OnRejected != nil:
				st = f.opts.OnRejected(st)
			case (st.Kind == wire.StateReleased || st.Kind == wire.StateModified) && f.opts.OnReleased != nil:
				f.opts.OnReleased()
			}
			if e := f.entry(o.seq); o.count != nil && st.Kind == wire.StateAccepted && e != nil && !e.done {
				o.count.Add(1)
			}
			f.outcome(o.seq, o.copy, st, false)
		}
	}
	for d.head < len(d.out) && d.out[d.head].done {
		d.head++
	}
	f.settleHeadLocked()
}

// onCredit sends parked copies while their destinations have credit (a
// destination's reader goroutine), then lets the source have more.
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

// drainParked sends parked copies, in order, while their destinations
// take them; f.mu is held.
func (f *Forwarder) drainParked() {
	taken := 0
	for _, p := range f.parked {
		e := f.entry(p.seq)
		if e != nil && !e.done && f.err == nil {
			d := f.dests[p.to]
			if d == nil {
				if f.ask(p.to) {
					break // waiting for its attach
				}
				f.failEntry(e)
			} else if f.holds(p.to) {
				if !f.stopping.Load() {
					break // Resume sends it
				}
				f.failEntry(e) // stopping: the source keeps it, never sent
			} else if id, err := d.snd.TrySend(p.payload); errors.Is(err, ErrNoCredit) {
				break
			} else if st := perMessage(err); st != nil {
				f.refuseCopy(p.seq, p.copy, st)
			} else if err != nil {
				f.failDest(p.seq, err)
			} else {
				f.sent(d, p.seq, p.copy, id, p.count)
			}
		} else if e != nil && !e.done { // fenced, or a destination failed: the source keeps it
			f.failEntry(e)
		}
		f.free = append(f.free, p.payload[:0])
		taken++
	}
	if taken > 0 {
		n := copy(f.parked, f.parked[taken:])
		clear(f.parked[n:])
		f.parked = f.parked[:n]
		f.nParked.Store(int64(n))
	}
	f.settleHeadLocked()
}

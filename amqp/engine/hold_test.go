package engine_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/amqp/engine"
	"github.com/fedrouter/fedrouter/amqp/wire"
)

// steppedSourcePeer is a source that sends payloads[0] once granted
// credit, the rest once more is closed, keeping to the credit it has
// (10 here), and reports each outcome on outcomes.
func steppedSourcePeer(t *testing.T, payloads [][]byte, more <-chan struct{}, outcomes chan<- [2]string) string {
	return fakePeer(t, func(p *peer) {
		p.open(wire.Open{})
		p.beginAttach(0)
		for {
			d, _ := p.expect(wire.DescFlow)
			if d == nil {
				return
			}
			var fl wire.Flow
			d.Flow(&fl)
			if fl.HasLinkCredit && fl.LinkCredit > 0 {
				break
			}
		}
		send := func(i int) {
			tr := wire.Transfer{Handle: 0, DeliveryID: uint32(i), HasDeliveryID: true, DeliveryTag: []byte{byte(i)}}
			p.send(0, func(b []byte) []byte { return append(wire.AppendTransfer(b, &tr), payloads[i]...) })
		}
		send(0)
		settled := readOutcomes(p, 0, outcomes)
		select {
		case <-more:
		case <-time.After(15 * time.Second):
			return
		}
		for i := 1; i < len(payloads); i++ {
			send(i)
		}
		for settled < len(payloads) {
			settled = readOutcomes(p, settled, outcomes)
		}
	})
}

// readOutcomes reads one disposition and reports its deliveries'
// outcomes ("accepted ", "rejected cond"); it returns settled plus their
// number (more than any count at the end of the stream, so that callers
// stop).
func readOutcomes(p *peer, settled int, outcomes chan<- [2]string) int {
	d, _ := p.expect(wire.DescDisposition)
	if d == nil {
		return 1 << 20
	}
	var disp wire.Disposition
	d.Disposition(&disp)
	last := disp.First
	if disp.HasLast {
		last = disp.Last
	}
	cond := ""
	if disp.State.Error != nil {
		cond = disp.State.Error.Condition
	}
	for id := disp.First; id <= last; id++ {
		outcomes <- [2]string{fmt.Sprint(id), disp.State.Kind.String() + " " + cond}
		settled++
	}
	return settled
}

// Without brokers: while Hold says yes, what the source sends is parked,
// none of it sent on and none settled; once it says no, Resume sends it
// in order; the destination's rejection is what OnRejected makes of it
// (released at the source here: a global destination's limit refused
// it), counted neither accepted nor rejected.
func TestForwardHoldAndOnRejected(t *testing.T) {
	payloads := make([][]byte, 4)
	for i := range payloads {
		payloads[i] = encodeMessage(fmt.Sprint(i), body(i, 64))
	}
	var hold atomic.Bool
	var onRejected atomic.Int64
	more := make(chan struct{})
	outcomes := make(chan [2]string, len(payloads))
	got := make(chan string, len(payloads))
	ss := session(t, dialFake(t, steppedSourcePeer(t, payloads, more, outcomes), engine.Options{}), engine.SessionOptions{})
	ds := session(t, dialFake(t, answeringPeer(t, got, func(id uint32) wire.StateKind {
		if id == 2 { // the third sent: refused, as by a full queue
			return wire.StateRejected
		}
		return wire.StateAccepted
	}), engine.Options{}), engine.SessionOptions{})
	fo := engine.ForwardOptions{Hold: hold.Load, OnRejected: func(st *engine.DeliveryState) *engine.DeliveryState {
		onRejected.Add(1)
		return engine.Released
	}}
	f, _, _, err := engine.Forward(t.Context(), ss, engine.ReceiverOptions{Address: "src", Credit: 10}, ds, engine.SenderOptions{Address: "dst"}, fo)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"0": "accepted ", "1": "accepted ", "2": "released ", "3": "accepted "}
	expect := func(n int) { t.Helper(); expectOutcomes(t, f, outcomes, want, n) }
	expect(1)
	hold.Store(true)
	close(more)
	brokertest.Eventually(t, 10*time.Second, 5*time.Millisecond, func() error {
		if st := f.Stats(); st.Parked != 3 || st.InFlight != 3 || st.Forwarded != 1 || st.Held == 0 {
			return fmt.Errorf("%+v: want 3 parked, held", st)
		}
		return nil
	})
	if len(got) != 1 || len(outcomes) != 0 {
		t.Fatalf("while held: the destination got %d, the source %d outcomes; want 1 and none", len(got), len(outcomes))
	}
	f.Resume() // still held: nothing moves
	if st := f.Stats(); st.Parked != 3 || len(got) != 1 {
		t.Fatalf("resumed while Hold says yes: %+v, the destination got %d", st, len(got))
	}
	hold.Store(false)
	f.Resume()
	expect(3)
	if st := f.Stats(); st.Accepted != 3 || st.Rejected != 0 || st.Settled != 4 || st.Forwarded != 4 || st.Parked != 0 || onRejected.Load() != 1 {
		t.Fatalf("stats %+v, OnRejected called %d times; want 3 accepted, the refused one released", st, onRejected.Load())
	}
}

// A forwarder whose Dispatch never names a destination (NoDestinations:
// a route with no path refusing every message) grants the source its
// window at once, not one message at a time.
func TestForwardNoDestinationsCredit(t *testing.T) {
	credit := make(chan uint32, 1)
	src := fakePeer(t, func(p *peer) {
		p.open(wire.Open{})
		p.beginAttach(0)
		d, _ := p.expect(wire.DescFlow)
		if d == nil {
			return
		}
		var fl wire.Flow
		d.Flow(&fl)
		credit <- fl.LinkCredit
		p.expect(wire.DescClose)
	})
	ss := session(t, dialFake(t, src, engine.Options{}), engine.SessionOptions{})
	refuse := func(_ []byte, _ *wire.Sections, c *engine.Choice) { c.Refuse = &wire.Error{Condition: "fed:no-path"} }
	_, _, err := engine.ForwardDispatch(t.Context(), ss, engine.ReceiverOptions{Address: "src", Credit: 50},
		engine.ForwardOptions{Dispatch: refuse, NoDestinations: true})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-credit:
		if c != 50 {
			t.Fatalf("credit %d granted, want the window, 50", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no flow from the receiver")
	}
}

// A forwarder stopped (a route draining) while Hold keeps copies back
// releases them at the source: nothing is sent after the stop, and the
// run need not wait for the gate to end.
func TestForwardHoldThenStop(t *testing.T) {
	payloads := make([][]byte, 4)
	for i := range payloads {
		payloads[i] = encodeMessage(fmt.Sprint(i), body(i, 64))
	}
	var hold atomic.Bool
	more := make(chan struct{})
	outcomes := make(chan [2]string, len(payloads))
	got := make(chan string, len(payloads))
	ss := session(t, dialFake(t, steppedSourcePeer(t, payloads, more, outcomes), engine.Options{}), engine.SessionOptions{})
	ds := session(t, dialFake(t, acceptingPeer(t, got), engine.Options{}), engine.SessionOptions{})
	f, _, _, err := engine.Forward(t.Context(), ss, engine.ReceiverOptions{Address: "src", Credit: 10}, ds, engine.SenderOptions{Address: "dst"},
		engine.ForwardOptions{Hold: hold.Load})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"0": "accepted ", "1": "released ", "2": "released ", "3": "released "}
	expect := func(n int) { t.Helper(); expectOutcomes(t, f, outcomes, want, n) }
	expect(1)
	hold.Store(true)
	close(more)
	brokertest.Eventually(t, 10*time.Second, 5*time.Millisecond, func() error {
		if st := f.Stats(); st.Parked != 3 {
			return fmt.Errorf("%+v: want 3 parked", st)
		}
		return nil
	})
	f.Stop()
	expect(3)
	if st := f.Stats(); st.Parked != 0 || st.InFlight != 0 || st.Forwarded != 1 || len(got) != 1 {
		t.Fatalf("stopped while held: %+v, the destination got %d; want the 3 held released, none sent", st, len(got))
	}
}

// expectOutcomes takes n outcomes reported by a source peer and checks
// each against want (by delivery id).
func expectOutcomes(t *testing.T, f *engine.Forwarder, outcomes <-chan [2]string, want map[string]string, n int) {
	t.Helper()
	for range n {
		select {
		case o := <-outcomes:
			if want[o[0]] != o[1] {
				t.Errorf("delivery %s settled %q at the source, want %q", o[0], o[1], want[o[0]])
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("outcomes missing; stats %+v", f.Stats())
		}
	}
}

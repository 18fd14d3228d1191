package engine_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/amqp/engine"
	"github.com/fedrouter/fedrouter/amqp/wire"
)

// acceptingPeer is a destination that takes a sender's attach, grants
// credit and accepts every transfer, counting them on got.
func acceptingPeer(t *testing.T, got chan<- string) string {
	return answeringPeer(t, got, func(uint32) wire.StateKind { return wire.StateAccepted })
}

// answeringPeer is acceptingPeer settling each delivery with the state
// answer gives for its id.
func answeringPeer(t *testing.T, got chan<- string, answer func(id uint32) wire.StateKind) string {
	return destPeer(t, func(tr *wire.Transfer) *wire.DeliveryState {
		got <- fmt.Sprintf("%x", tr.Payload[len(tr.Payload)-1])
		return &wire.DeliveryState{Kind: answer(tr.DeliveryID)}
	})
}

// destPeer is a destination that takes a sender's attach, grants credit
// and settles every transfer (first frame of a delivery) with the state
// answer gives, or leaves it unanswered when answer gives nil.
func destPeer(t *testing.T, answer func(tr *wire.Transfer) *wire.DeliveryState) string {
	return destPeerAttach(t, nil, answer)
}

// destPeerAttach is destPeer with its attach changed by edit (nil: none).
func destPeerAttach(t *testing.T, edit func(*wire.Attach), answer func(tr *wire.Transfer) *wire.DeliveryState) string {
	return fakePeer(t, func(p *peer) {
		p.open(wire.Open{})
		p.beginAttachWith(0, edit)
		p.send(0, func(b []byte) []byte {
			return wire.AppendFlow(b, &wire.Flow{NextIncomingID: 0, HasNextIncomingID: true, IncomingWindow: 100, NextOutgoingID: 0, OutgoingWindow: 100,
				Handle: 0, HasHandle: true, DeliveryCount: 0, HasDeliveryCount: true, LinkCredit: 100, HasLinkCredit: true})
		})
		for {
			d, ch := p.expect(wire.DescTransfer)
			if d == nil {
				return
			}
			var tr wire.Transfer
			d.Transfer(&tr)
			if !tr.HasDeliveryID {
				continue // a later frame of a multi-frame delivery
			}
			st := answer(&tr)
			if st == nil {
				continue
			}
			disp := wire.Disposition{Role: wire.RoleReceiver, First: tr.DeliveryID, Settled: true, State: *st}
			p.send(ch, func(b []byte) []byte { return wire.AppendDisposition(b, &disp) })
		}
	})
}

// sourcePeer is a source that, once granted credit, sends payloads as
// deliveries 0.. and reports each one's outcome on outcomes, by id.
func sourcePeer(t *testing.T, payloads [][]byte, outcomes chan<- [2]string) string {
	return fakePeer(t, func(p *peer) {
		p.open(wire.Open{})
		p.beginAttach(0)
		if d, _ := p.expect(wire.DescFlow); d == nil {
			return
		}
		sendAll(p, payloads, false)
		for settled := 0; settled < len(payloads); {
			settled = readOutcomes(p, settled, outcomes)
		}
	})
}

// sendAll sends payloads as deliveries 0.. on handle 0, settled or not.
func sendAll(p *peer, payloads [][]byte, settled bool) {
	for i, pl := range payloads {
		tr := wire.Transfer{Handle: 0, DeliveryID: uint32(i), HasDeliveryID: true, DeliveryTag: []byte{byte(i)}, Settled: settled}
		p.send(0, func(b []byte) []byte { return append(wire.AppendTransfer(b, &tr), pl...) })
	}
}

// Without brokers: a source that sends pre-settled (the Proton C broker
// does) keeps no copy, so what the destination releases is lost, not
// redelivered: counted Lost, and the source is sent no disposition.
func TestForwardPresettledSourceReleasedIsLost(t *testing.T) {
	const n = 6
	payloads := make([][]byte, n)
	for i := range payloads {
		payloads[i] = encodeMessage(fmt.Sprint(i), body(i, 64))
	}
	dispositions := make(chan struct{}, n)
	src := fakePeer(t, func(p *peer) {
		p.open(wire.Open{})
		p.beginAttach(0)
		if d, _ := p.expect(wire.DescFlow); d == nil {
			return
		}
		sendAll(p, payloads, true)
		for {
			d, _ := p.expect(wire.DescDisposition) // none is due: each counts
			if d == nil {
				return
			}
			dispositions <- struct{}{}
		}
	})
	got := make(chan string, n)
	odd := func(id uint32) wire.StateKind {
		if id%2 == 1 {
			return wire.StateReleased
		}
		return wire.StateAccepted
	}
	ss := session(t, dialFake(t, src, engine.Options{}), engine.SessionOptions{})
	ds := session(t, dialFake(t, answeringPeer(t, got, odd), engine.Options{}), engine.SessionOptions{})
	f, _, _, err := engine.Forward(t.Context(), ss, engine.ReceiverOptions{Address: "src", Credit: 10}, ds, engine.SenderOptions{Address: "dst"}, engine.ForwardOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for f.Stats().Settled < n {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v, want %d settled", f.Stats(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st := f.Stats(); st.Accepted != n/2 || st.Lost != n/2 || st.Released != 0 {
		t.Fatalf("stats %+v: want %d accepted and %d lost", st, n/2, n/2)
	}
	if len(dispositions) != 0 {
		t.Fatalf("%d dispositions sent for pre-settled deliveries", len(dispositions))
	}
}

// Without brokers: six deliveries from a scripted source, each sent to
// the destinations its x-to names among two scripted ones attached
// lazily by the owner, one copied to both, one for a destination that
// does not exist: every delivery is settled at the source in order,
// accepted but the one the owner refused (rejected with its condition).
func TestForwardDispatchScripted(t *testing.T) {
	to := []string{"a", "b", "a,b", "missing", "a", "b"}
	payloads := make([][]byte, len(to))
	for i, k := range to {
		payloads[i] = addressed(i, k)
	}
	outcomes := make(chan [2]string, len(to))
	gotA, gotB := make(chan string, 10), make(chan string, 10)
	src := sourcePeer(t, payloads, outcomes)
	ss := session(t, dialFake(t, src, engine.Options{}), engine.SessionOptions{})
	at := map[string]*engine.Session{
		"a": session(t, dialFake(t, acceptingPeer(t, gotA), engine.Options{}), engine.SessionOptions{}),
		"b": session(t, dialFake(t, acceptingPeer(t, gotB), engine.Options{}), engine.SessionOptions{}),
	}
	f, _, err := engine.ForwardDispatch(t.Context(), ss, engine.ReceiverOptions{Address: "src", Credit: 10}, engine.ForwardOptions{Dispatch: byXTo})
	if err != nil {
		t.Fatal(err)
	}
	serve(t, f, at, map[string]string{"a": "a", "b": "b"})
	want := map[string]string{"0": "accepted ", "1": "accepted ", "2": "accepted ", "3": "rejected fed:no-such-address", "4": "accepted ", "5": "accepted "}
	for range to {
		select {
		case o := <-outcomes:
			if want[o[0]] != o[1] {
				t.Errorf("delivery %s: %q, want %q", o[0], o[1], want[o[0]])
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("outcomes missing; stats %+v", f.Stats())
		}
	}
	if len(gotA) != 3 || len(gotB) != 3 {
		t.Fatalf("a got %d, b got %d; want 3 each", len(gotA), len(gotB))
	}
	if st := f.Stats(); st.Accepted != 5 || st.Refusals != 1 || st.Copies != 6 || st.Destinations != 2 {
		t.Fatalf("stats %+v", st)
	}
}

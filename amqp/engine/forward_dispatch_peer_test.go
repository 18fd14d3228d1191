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
	return fakePeer(t, func(p *peer) {
		p.open(wire.Open{})
		p.beginAttach(0)
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
			got <- fmt.Sprintf("%x", tr.Payload[len(tr.Payload)-1])
			disp := wire.Disposition{Role: wire.RoleReceiver, First: tr.DeliveryID, Settled: true, State: wire.DeliveryState{Kind: wire.StateAccepted}}
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
		for i, pl := range payloads {
			tr := wire.Transfer{Handle: 0, DeliveryID: uint32(i), HasDeliveryID: true, DeliveryTag: []byte{byte(i)}}
			p.send(0, func(b []byte) []byte { return append(wire.AppendTransfer(b, &tr), pl...) })
		}
		for settled := 0; settled < len(payloads); {
			settled = readOutcomes(p, settled, outcomes)
		}
	})
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

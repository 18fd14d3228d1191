package engine_test

import (
	"bytes"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/amqp/engine"
	"github.com/fedrouter/fedrouter/amqp/wire"
)

// hookQueue makes a queue unique to this branch's tests on b.
func hookQueue(t testing.TB, b brokertest.Broker) string {
	t.Helper()
	return queuePrefixed(t, b, "h-enghook")
}

// numberOf is message i's number, read from its data ("m-000042-...").
func numberOf(payload []byte) (int, error) {
	data, err := dataOf(payload)
	if err != nil || len(data) < 8 {
		return 0, fmt.Errorf("no numbered data: %v", err)
	}
	return strconv.Atoi(string(data[2:8]))
}

// dropOrRefuse is a Dispatch that drops every third message (no copy),
// refuses every 50th from the 7th, and counts a hop on the rest.
func dropOrRefuse(payload []byte, s *wire.Sections, c *engine.Choice) {
	i, err := numberOf(payload)
	switch {
	case err != nil:
		c.Refuse = &wire.Error{Condition: "amqp:invalid-field", Description: err.Error()}
	case i%3 == 0:
	case i%50 == 7:
		c.Refuse = &wire.Error{Condition: "amqp:invalid-field", Description: "test: refused"}
	default:
		c.Copies = append(c.Copies, engine.Copy{Set: hopRewrite(payload, s)})
	}
}

// A Dispatch that drops or refuses messages (a route's hook does: a
// mesh's loop guard): those are not sent; the dropped ones are accepted
// at the source, the refused rejected there (amqp:invalid-field), each
// in its turn, and everything else crosses byte for byte in order. Proton C grants 5 credits: most messages park
// and are dropped from the parked list; ack 100 settles in ranges.
func TestConformanceForwardRewriteDrop(t *testing.T) {
	for _, c := range []struct {
		src, dst string
		ack      int
	}{{"rabbit1", "rabbit2", 0}, {"rabbit1", "rabbit2", 100}, {"qpidd1", "proton1", 0}} {
		t.Run(fmt.Sprintf("%s-%s/ack%d", c.src, c.dst, c.ack), func(t *testing.T) {
			bs := brokertest.Require(t, c.src, c.dst)
			src, dst := bs[0], bs[1]
			srcAddr, dstAddr := hookQueue(t, src), hookQueue(t, dst)
			const n = 600
			var want []int
			dropped, refused := 0, 0
			for i := range n {
				switch {
				case i%3 == 0:
					dropped++
				case i%50 == 7:
					refused++
				default:
					want = append(want, i)
				}
			}
			fill(t, src, srcAddr, n, 64)
			f := startForward(t, src, dst, srcAddr, dstAddr, 100, engine.ForwardOptions{Dispatch: dropOrRefuse, AckN: c.ack})
			brokertest.Eventually(t, 30*time.Second, 10*time.Millisecond, func() error {
				if st := f.Stats(); st.Settled != n {
					return fmt.Errorf("%+v, err %v", st, f.Err())
				}
				return nil
			})
			st := f.Stats()
			t.Logf("%+v", st)
			if st.Dropped != uint64(dropped) || st.Refusals != uint64(refused) || st.Forwarded != uint64(len(want)) ||
				st.Accepted != uint64(len(want)) || st.Released != 0 {
				t.Fatalf("stats %+v: want %d dropped, %d refused, %d forwarded", st, dropped, refused, len(want))
			}
			col := newCollector(len(want))
			if _, err := session(t, dial(t, dst, engine.Options{}), engine.SessionOptions{}).NewReceiver(t.Context(),
				engine.ReceiverOptions{Address: dstAddr, Credit: 100, OnMessage: col.onMessage}); err != nil {
				t.Fatal(err)
			}
			for k, p := range col.take(t, len(want), 20*time.Second) {
				got, err := dataOf(p)
				if err != nil || !bytes.Equal(got, body(want[k], 64)) {
					t.Fatalf("message %d: want number %d: %v", k, want[k], err)
				}
			}
			if src.Kind == "rabbitmq" {
				sourceEmpty(t, src, srcAddr)
			}
		})
	}
}

// A dropped message is accepted at the source in its turn: behind a
// message still waiting for the destination's outcome it waits too (in
// flight, not yet counted looped), and both go out in one range once
// that outcome comes. Scripted peers: the destination answers only when
// the test says.
func TestForwardDropSettledInTurn(t *testing.T) {
	answer := make(chan struct{})
	dstAddr := fakePeer(t, func(p *peer) {
		p.open(wire.Open{})
		p.beginAttach(0)
		p.send(0, func(b []byte) []byte {
			return wire.AppendFlow(b, &wire.Flow{NextIncomingID: 0, HasNextIncomingID: true, IncomingWindow: 100, NextOutgoingID: 0, OutgoingWindow: 100,
				Handle: 0, HasHandle: true, DeliveryCount: 0, HasDeliveryCount: true, LinkCredit: 100, HasLinkCredit: true})
		})
		d, ch := p.expect(wire.DescTransfer)
		if d == nil {
			return
		}
		var tr wire.Transfer
		d.Transfer(&tr)
		select {
		case <-answer:
		case <-time.After(15 * time.Second):
			return
		}
		disp := wire.Disposition{Role: wire.RoleReceiver, First: tr.DeliveryID, Settled: true, State: wire.DeliveryState{Kind: wire.StateAccepted}}
		p.send(ch, func(b []byte) []byte { return wire.AppendDisposition(b, &disp) })
		p.expect(wire.DescClose)
	})
	dispositions := make(chan wire.Disposition, 4)
	srcAddr := fakePeer(t, func(p *peer) {
		p.open(wire.Open{})
		p.beginAttach(0)
		p.expect(wire.DescFlow)             // the receiver's credit
		for i, id := range []uint32{1, 2} { // message 1 is sent on, 0 (i%3 == 0) dropped
			p.send(0, func(b []byte) []byte {
				b = wire.AppendTransfer(b, &wire.Transfer{Handle: 0, DeliveryID: id, HasDeliveryID: true, DeliveryTag: []byte{byte(id)}})
				return append(b, encodeMessage(fmt.Sprint(i), body(1-i, 64))...)
			})
		}
		for {
			d, _ := p.expect(wire.DescDisposition)
			if d == nil {
				return
			}
			var got wire.Disposition
			d.Disposition(&got)
			dispositions <- got
		}
	})
	ss := session(t, dialFake(t, srcAddr, engine.Options{}), engine.SessionOptions{})
	ds := session(t, dialFake(t, dstAddr, engine.Options{}), engine.SessionOptions{})
	f, _, _, err := engine.Forward(t.Context(), ss, engine.ReceiverOptions{Address: "src", Credit: 10}, ds, engine.SenderOptions{Address: "dst"},
		engine.ForwardOptions{Dispatch: dropOrRefuse})
	if err != nil {
		t.Fatal(err)
	}
	brokertest.Eventually(t, 10*time.Second, 5*time.Millisecond, func() error {
		if st := f.Stats(); st.Forwarded != 1 || st.InFlight != 2 || st.Dropped != 0 || st.Settled != 0 {
			return fmt.Errorf("%+v: want 1 sent and the dropped one waiting behind it", st)
		}
		return nil
	})
	close(answer)
	select {
	case d := <-dispositions:
		last := d.First
		if d.HasLast {
			last = d.Last
		}
		if d.First != 1 || last != 2 || !d.Settled || d.State.Kind != wire.StateAccepted {
			t.Fatalf("source disposition %+v: want 1..2 accepted, settled", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no disposition at the source: %+v", f.Stats())
	}
	if st := f.Stats(); st.Dropped != 1 || st.Accepted != 1 || st.Settled != 2 {
		t.Fatalf("stats %+v", st)
	}
}

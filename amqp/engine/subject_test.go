package engine_test

import (
	"fmt"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"

	"github.com/fedrouter/fedrouter/amqp/engine"
	"github.com/fedrouter/fedrouter/amqp/wire"
)

// creditPeer is a destination that keeps a sender's credit at credit
// (granted again after each transfer), accepts every transfer and hands
// its payload (a copy) to got.
func creditPeer(t *testing.T, credit uint32, got chan<- []byte) string {
	return fakePeer(t, func(p *peer) {
		p.open(wire.Open{})
		p.beginAttach(0)
		flow := func(count uint32) func([]byte) []byte {
			return func(b []byte) []byte {
				return wire.AppendFlow(b, &wire.Flow{NextIncomingID: count, HasNextIncomingID: true, IncomingWindow: 100, NextOutgoingID: 0, OutgoingWindow: 100,
					Handle: 0, HasHandle: true, DeliveryCount: count, HasDeliveryCount: true, LinkCredit: credit, HasLinkCredit: true})
			}
		}
		p.send(0, flow(0))
		for n := uint32(1); ; n++ {
			d, ch := p.expect(wire.DescTransfer)
			if d == nil {
				return
			}
			var tr wire.Transfer
			d.Transfer(&tr)
			got <- append([]byte(nil), tr.Payload...)
			disp := wire.Disposition{Role: wire.RoleReceiver, First: tr.DeliveryID, Settled: true, State: wire.DeliveryState{Kind: wire.StateAccepted}}
			p.send(ch, func(b []byte) []byte { return wire.AppendDisposition(b, &disp) })
			p.send(ch, flow(n))
		}
	})
}

// withProperties is a message whose properties list is fields, with
// one data section.
func withProperties(t *testing.T, fields []any, data string) []byte {
	b := wire.AppendDescriptor(nil, wire.DescMessageAnnotations)
	b, _ = wire.AppendValue(b, wire.Map{{Key: wire.Symbol("x-keep"), Value: "k"}})
	if fields != nil {
		var err error
		b = wire.AppendDescriptor(b, wire.DescProperties)
		if b, err = wire.AppendValue(b, fields); err != nil {
			t.Fatal(err)
		}
	}
	return wire.AppendBinary(wire.AppendDescriptor(b, wire.DescData), []byte(data))
}

// Without brokers: a forwarder whose destination sender sets a subject
// (qpidd's literal key) gives it to every message — one with another
// subject, one with no properties section, one whose list stops before
// the subject — with its other properties, annotations and body as they
// came; one whose properties do not decode is rejected at the source
// with amqp:decode-error and its neighbours go on. With credit 1 at the
// destination most copies wait parked and are written as they leave.
func TestForwardSubjectScripted(t *testing.T) {
	payloads := [][]byte{
		withProperties(t, []any{"id-0", nil, "to", "old.key", "reply"}, "m0"),
		withProperties(t, nil, "m1"),
		withProperties(t, []any{"id-2", nil, nil, int32(7)}, "m2"), // a subject that is not a string
		withProperties(t, []any{"id-3"}, "m3"),
	}
	want := map[string]string{"0": "accepted ", "1": "accepted ", "2": "rejected amqp:decode-error", "3": "accepted "}
	for _, credit := range []uint32{100, 1} {
		t.Run(fmt.Sprintf("credit%d", credit), func(t *testing.T) {
			outcomes, got := make(chan [2]string, len(payloads)), make(chan []byte, len(payloads))
			ss := session(t, dialFake(t, sourcePeer(t, payloads, outcomes), engine.Options{}), engine.SessionOptions{})
			ds := session(t, dialFake(t, creditPeer(t, credit, got), engine.Options{}), engine.SessionOptions{})
			f, _, _, err := engine.Forward(t.Context(), ss, engine.ReceiverOptions{Address: "src", Credit: 10},
				ds, engine.SenderOptions{Address: "amq.topic", Subject: "news.eu"}, engine.ForwardOptions{Rewrite: hopRewrite})
			if err != nil {
				t.Fatal(err)
			}
			for range payloads {
				select {
				case o := <-outcomes:
					if want[o[0]] != o[1] {
						t.Errorf("delivery %s: %q, want %q", o[0], o[1], want[o[0]])
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("outcomes missing; stats %+v, err %v", f.Stats(), f.Err())
				}
			}
			for _, id := range []string{"id-0", "", "id-3"} {
				checkSubjectSet(t, <-got, id)
			}
			if st := f.Stats(); st.Accepted != 3 || st.Refusals != 1 || f.Err() != nil || credit == 1 && st.Parks == 0 {
				t.Fatalf("stats %+v, err %v", st, f.Err())
			}
		})
	}
}

// checkSubjectSet checks a forwarded message: subject news.eu, message
// id id, the annotation kept, the hop counted, its body.
func checkSubjectSet(t *testing.T, payload []byte, id string) {
	t.Helper()
	var m goamqp.Message
	if err := m.UnmarshalBinary(payload); err != nil {
		t.Fatalf("forwarded message does not decode: %v", err)
	}
	if m.Properties == nil || m.Properties.Subject == nil || *m.Properties.Subject != "news.eu" {
		t.Fatalf("message %q: properties %+v, want the subject news.eu", id, m.Properties)
	}
	gotID, _ := m.Properties.MessageID.(string)
	switch {
	case gotID != id:
		t.Fatalf("message-id %q, want %q", gotID, id)
	case m.Annotations["x-keep"] != "k" || m.Annotations["x-fedrouter-hops"] == nil:
		t.Fatalf("message %q: annotations %v", id, m.Annotations)
	case id == "id-0" && (m.Properties.To == nil || *m.Properties.To != "to" || m.Properties.ReplyTo == nil || *m.Properties.ReplyTo != "reply"):
		t.Fatalf("message %q: other properties lost: %+v", id, m.Properties)
	}
}

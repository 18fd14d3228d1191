package engine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	famqp "github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/amqp/engine"
	"github.com/fedrouter/fedrouter/amqp/wire"
)

// rejectingPeer is a destination that takes a sender's attach, grants
// credit and answers every transfer with reject (condition cond), or,
// with cond "", with nothing at all.
func rejectingPeer(t *testing.T, cond string) string {
	return destPeer(t, func(tr *wire.Transfer) *wire.DeliveryState {
		if cond == "" {
			return nil
		}
		return &wire.DeliveryState{Kind: wire.StateRejected, Error: &wire.Error{Condition: cond, Description: "queue full"}}
	})
}

// A message the destination rejects, or gives no outcome for until
// Expire, goes to the dead-letter queue at the source's broker with the
// annotations asked for, its bytes otherwise as they came; the source
// is accepted after the dead-letter queue accepted, and ends empty.
func TestConformanceForwardDeadLetter(t *testing.T) {
	for _, tc := range []struct{ name, cond string }{{"rejected", "amqp:resource-limit-exceeded"}, {"no outcome", ""}} {
		t.Run(tc.name, func(t *testing.T) { forwardDeadLetter(t, tc.cond) })
	}
}

func forwardDeadLetter(t *testing.T, cond string) {
	const n = 20
	b := brokertest.Require(t, "rabbit1")[0]
	addr := rejectingPeer(t, cond)
	src, dlq := queue(t, b), queue(t, b)
	fill(t, b, src, n, 64)
	ss := session(t, dial(t, b, engine.Options{}), engine.SessionOptions{})
	ds := session(t, dialFake(t, addr, engine.Options{}), engine.SessionOptions{})
	why := func(st *engine.DeliveryState, cause engine.DeadLetterCause) []wire.Annotated {
		reason := "expired"
		if cause == engine.CauseRejected {
			reason = st.Error.Condition
		}
		return []wire.Annotated{{Key: "x-test-reason", Value: wire.AppendString(nil, reason)}}
	}
	f, _, _, err := engine.Forward(t.Context(), ss, engine.ReceiverOptions{Address: src, Credit: 8}, ds, engine.SenderOptions{Address: "full"},
		engine.ForwardOptions{DeadLetter: &engine.SenderOptions{Address: dlq}, DeadLetterAnnotations: why})
	if err != nil {
		t.Fatal(err)
	}
	if cond == "" {
		// Each message the peer holds is expired once sent: credit 8,
		// so the 20 go in turns.
		brokertest.Eventually(t, 30*time.Second, 10*time.Millisecond, func() error {
			f.Expire(time.Now(), &engine.DeliveryState{Kind: wire.StateRejected})
			if st := f.Stats(); st.DeadLettered != n {
				return fmt.Errorf("stats %+v, err %v", st, f.Err())
			}
			return nil
		})
	}
	waitSettled(t, f, n, 30*time.Second)
	want := cond
	if want == "" {
		want = "expired"
	}
	if st := f.Stats(); st.DeadLettered != n || st.Accepted != 0 || st.Rejected != 0 || st.Expired != 0 || f.Err() != nil {
		t.Fatalf("stats %+v, err %v", st, f.Err())
	}
	col := newCollector(n)
	if _, err := session(t, dial(t, b, engine.Options{}), engine.SessionOptions{}).NewReceiver(t.Context(),
		engine.ReceiverOptions{Address: dlq, Credit: 50, OnMessage: col.onMessage}); err != nil {
		t.Fatal(err)
	}
	for i, p := range col.take(t, n, 20*time.Second) {
		got, err := dataOf(p)
		if err != nil || !bytes.Equal(got, body(i, 64)) {
			t.Fatalf("dead-lettered message %d: %v", i, err)
		}
		s, _ := wire.ScanSections(p)
		v, ok := s.Annotation(p, "x-test-reason")
		if d := wire.NewDecoder(v); !ok || d.String() != want {
			t.Fatalf("dead-lettered message %d: x-test-reason %q, want %q", i, v, want)
		}
	}
	sourceEmpty(t, b, src)
}

// sourceEmpty waits until RabbitMQ's queue at addr holds nothing.
func sourceEmpty(t *testing.T, b brokertest.Broker, addr string) {
	t.Helper()
	m, err := famqp.NewRabbitManagement(b.Config())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	brokertest.Eventually(t, 10*time.Second, 50*time.Millisecond, func() error {
		q, err := m.Queue(context.Background(), strings.TrimPrefix(addr, "/amq/queue/"))
		if err != nil {
			return err
		}
		if q.Messages != 0 {
			return fmt.Errorf("%d messages at the source", q.Messages)
		}
		return nil
	})
}

// A dead-letter queue that refuses the message: the source gets it
// released (it keeps it), not accepted, and the forwarder stops with
// ErrDeadLetterRefused. The source and its dead-letter queue are one
// scripted peer: no broker refuses a dead-letter send on demand.
func TestForwardDeadLetterRefused(t *testing.T) {
	settled := make(chan wire.DeliveryState, 1)
	srcAddr := fakePeer(t, func(p *peer) {
		p.open(wire.Open{})
		p.beginAttach(0) // the dead-letter sender: handle 0
		grant := wire.Flow{NextIncomingID: 0, HasNextIncomingID: true, IncomingWindow: 100, NextOutgoingID: 0, OutgoingWindow: 100,
			Handle: 0, HasHandle: true, DeliveryCount: 0, HasDeliveryCount: true, LinkCredit: 10, HasLinkCredit: true}
		p.send(0, func(b []byte) []byte { return wire.AppendFlow(b, &grant) })
		d, ch := p.expect(wire.DescAttach) // the source receiver
		if d == nil {
			return
		}
		var a wire.Attach
		d.Attach(&a)
		a.Role, a.Handle = !a.Role, 1
		p.send(ch, func(b []byte) []byte { return wire.AppendAttach(b, &a) })
		p.expect(wire.DescFlow) // its credit
		p.send(ch, func(b []byte) []byte {
			b = wire.AppendTransfer(b, &wire.Transfer{Handle: 1, DeliveryID: 7, HasDeliveryID: true, DeliveryTag: []byte{7}})
			return append(b, encodeMessage("m", body(0, 64))...)
		})
		if d, _ = p.expect(wire.DescTransfer); d == nil { // the dead-letter send
			return
		}
		var tr wire.Transfer
		d.Transfer(&tr)
		disp := wire.Disposition{Role: wire.RoleReceiver, First: tr.DeliveryID, Settled: true,
			State: wire.DeliveryState{Kind: wire.StateRejected, Error: &wire.Error{Condition: "amqp:unauthorized-access"}}}
		p.send(ch, func(b []byte) []byte { return wire.AppendDisposition(b, &disp) })
		for {
			if d, _ = p.expect(wire.DescDisposition); d == nil {
				return
			}
			var got wire.Disposition
			d.Disposition(&got)
			if got.Role == wire.RoleReceiver && got.First == 7 {
				settled <- got.State
				p.expect(wire.DescClose) // until the test closes
				return
			}
		}
	})
	dstAddr := rejectingPeer(t, "amqp:resource-limit-exceeded")
	ss := session(t, dialFake(t, srcAddr, engine.Options{}), engine.SessionOptions{})
	ds := session(t, dialFake(t, dstAddr, engine.Options{}), engine.SessionOptions{})
	f, _, _, err := engine.Forward(t.Context(), ss, engine.ReceiverOptions{Address: "src", Credit: 5}, ds, engine.SenderOptions{Address: "full"},
		engine.ForwardOptions{DeadLetter: &engine.SenderOptions{Address: "dlq"}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case st := <-settled:
		if st.Kind != wire.StateReleased {
			t.Fatalf("source settled %v, want released", st.Kind)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the source was not settled: %+v, err %v", f.Stats(), f.Err())
	}
	brokertest.Eventually(t, 5*time.Second, 10*time.Millisecond, func() error {
		if err := f.Err(); !errors.Is(err, engine.ErrDeadLetterRefused) || !strings.Contains(err.Error(), "unauthorized-access") {
			return fmt.Errorf("forwarder error %v", err)
		}
		return nil
	})
	if st := f.Stats(); st.DeadLettered != 0 || st.Settled != 1 || st.Rejected != 0 || st.Accepted != 0 {
		t.Fatalf("stats %+v", st)
	}
}

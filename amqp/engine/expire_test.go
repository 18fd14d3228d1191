package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	famqp "github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/amqp/engine"
	"github.com/fedrouter/fedrouter/amqp/wire"
)

// A destination that takes every transfer and never answers (a scripted
// peer) holds the source's deliveries until Expire settles them with the
// state it is given: here rejected, so RabbitMQ drops them. Expire
// leaves alone what was sent after its bound.
func TestConformanceForwardExpire(t *testing.T) {
	const n = 5
	b := brokertest.Require(t, "rabbit1")[0]
	transfers := make(chan struct{}, 100)
	addr := fakePeer(t, func(p *peer) {
		p.open(wire.Open{})
		p.beginAttach(0)
		p.send(0, func(b []byte) []byte {
			return wire.AppendFlow(b, &wire.Flow{NextIncomingID: 0, HasNextIncomingID: true, IncomingWindow: 100, NextOutgoingID: 0, OutgoingWindow: 100,
				Handle: 0, HasHandle: true, DeliveryCount: 0, HasDeliveryCount: true, LinkCredit: 100, HasLinkCredit: true})
		})
		for {
			if d, _ := p.expect(wire.DescTransfer); d == nil {
				return
			}
			transfers <- struct{}{}
		}
	})
	src := queue(t, b)
	fill(t, b, src, n, 64)
	ss := session(t, dial(t, b, engine.Options{}), engine.SessionOptions{})
	ds := session(t, dialFake(t, addr, engine.Options{}), engine.SessionOptions{})
	f, _, _, err := engine.Forward(t.Context(), ss, engine.ReceiverOptions{Address: src, Credit: 10}, ds, engine.SenderOptions{Address: "nowhere"}, engine.ForwardOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		select {
		case <-transfers:
		case <-time.After(20 * time.Second):
			t.Fatalf("%d transfers reached the peer, want %d (%+v)", i, n, f.Stats())
		}
	}
	if got := f.Expire(time.Now().Add(-time.Hour), engine.Released); got != 0 {
		t.Fatalf("Expire before any send expired %d", got)
	}
	rejected := &engine.DeliveryState{Kind: wire.StateRejected, Error: &wire.Error{Condition: "amqp:not-allowed", Description: "no outcome"}}
	if got := f.Expire(time.Now(), rejected); got != n {
		t.Fatalf("Expire expired %d, want %d", got, n)
	}
	if st := f.Stats(); st.Expired != n || st.Settled != n || st.InFlight != 0 || st.Accepted != 0 {
		t.Fatalf("stats after Expire: %+v", st)
	}
	m, err := famqp.NewRabbitManagement(b.Config())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	brokertest.Eventually(t, 10*time.Second, 50*time.Millisecond, func() error {
		q, err := m.Queue(context.Background(), strings.TrimPrefix(src, "/amq/queue/"))
		if err != nil {
			return err
		}
		if q.Messages != 0 {
			return fmt.Errorf("%d messages at the source", q.Messages)
		}
		return nil
	})
}

package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
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
	sourceEmpty(t, b, src)
}

// A fence that says no after ten questions (it is asked before each
// message, and before parked ones go on): what was sent before crosses,
// the forwarder stops with ErrFenced and sends nothing more (a router
// cluster member past its lease).
func TestConformanceForwardFence(t *testing.T) {
	const n, allowed = 20, 10
	bs := brokertest.Require(t, "rabbit1", "rabbit2")
	src, dst := queue(t, bs[0]), queue(t, bs[1])
	fill(t, bs[0], src, n, 64)
	var asked atomic.Int64
	f := startForward(t, bs[0], bs[1], src, dst, n, engine.ForwardOptions{Fence: func() bool { return asked.Add(1) <= allowed }})
	brokertest.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error {
		if !errors.Is(f.Err(), engine.ErrFenced) {
			return fmt.Errorf("forwarder error %v", f.Err())
		}
		return nil
	})
	st := f.Stats()
	if st.Forwarded == 0 || st.Forwarded > allowed {
		t.Fatalf("fenced after %d questions: %+v", allowed, st)
	}
	waitSettled(t, f, st.Forwarded, 30*time.Second)
	if st := f.Stats(); st.Accepted != st.Forwarded || st.Forwarded > allowed {
		t.Fatalf("after the fence: %+v", st)
	}
	m, err := famqp.NewRabbitManagement(bs[1].Config())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	brokertest.Eventually(t, 15*time.Second, 100*time.Millisecond, func() error { // management's figures lag
		q, err := m.Queue(context.Background(), strings.TrimPrefix(dst, "/amq/queue/"))
		if err != nil || q.Messages != int(st.Forwarded) {
			return fmt.Errorf("destination queue: %+v, %v; want the %d forwarded", q, err, st.Forwarded)
		}
		return nil
	})
}

// Stop (a route draining on a path change): the source's credit is taken
// back, what was sent is settled, and nothing more crosses; what was not
// sent stays at the source.
func TestConformanceForwardStop(t *testing.T) {
	const n = 2000
	bs := brokertest.Require(t, "rabbit1", "rabbit2")
	src, dst := queue(t, bs[0]), queue(t, bs[1])
	fill(t, bs[0], src, n, 64)
	f := startForward(t, bs[0], bs[1], src, dst, 50, engine.ForwardOptions{})
	waitSettled(t, f, 100, 30*time.Second)
	f.Stop()
	ms := map[string]*famqp.RabbitManagement{}
	for _, b := range bs {
		m, err := famqp.NewRabbitManagement(b.Config())
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		ms[b.Name] = m
	}
	count := func(b brokertest.Broker, addr string) int {
		q, err := ms[b.Name].Queue(context.Background(), strings.TrimPrefix(addr, "/amq/queue/"))
		if err != nil {
			t.Fatal(err)
		}
		return q.Messages
	}
	brokertest.Eventually(t, 20*time.Second, 100*time.Millisecond, func() error { // management's figures lag
		st := f.Stats()
		if st.InFlight != 0 || st.Settled != st.Forwarded || st.Forwarded >= n {
			return fmt.Errorf("after Stop: %+v", st)
		}
		if d, s := count(bs[1], dst), count(bs[0], src); d != int(st.Forwarded) || s != n-int(st.Forwarded) {
			return fmt.Errorf("destination %d, source %d; forwarded %d of %d", d, s, st.Forwarded, n)
		}
		return nil
	})
}

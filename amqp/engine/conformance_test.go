package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"

	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/amqp/engine"
)

var conformanceBrokers = []string{"rabbit1", "proton1", "pyproton1", "qpidd1"}

// 1,000 messages sent with go-amqp are received by the engine byte for
// byte, and 1,000 sent by the engine are received by go-amqp.
func TestConformanceRoundTrip(t *testing.T) {
	for _, name := range conformanceBrokers {
		t.Run(name, func(t *testing.T) {
			b := brokertest.Require(t, name)[0]
			n := 1000
			if b.Kind == "proton" && name == "pyproton1" {
				n = 300 // the Python broker is slow; the path is the same
			}
			goToEngine(t, b, n)
			engineToGo(t, b, n)
		})
	}
}

func goToEngine(t *testing.T, b brokertest.Broker, n int) {
	addr := queue(t, b)
	gs := goamqpConn(t, b)
	snd, err := gs.NewSender(t.Context(), addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if err := snd.Send(t.Context(), goamqp.NewMessage(body(i, 100+i%300)), nil); err != nil {
			t.Fatalf("go-amqp send %d: %v", i, err)
		}
	}
	col := newCollector(n)
	s := session(t, dial(t, b, engine.Options{}), engine.SessionOptions{})
	if _, err := s.NewReceiver(t.Context(), engine.ReceiverOptions{Address: addr, Credit: 200, OnMessage: col.onMessage}); err != nil {
		t.Fatal(err)
	}
	for i, p := range col.take(t, n, 20*time.Second) {
		got, err := dataOf(p)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if want := body(i, 100+i%300); !bytes.Equal(got, want) {
			t.Fatalf("message %d: got %q..., want %q...", i, got[:12], want[:12])
		}
	}
}

func engineToGo(t *testing.T, b brokertest.Broker, n int) {
	addr := queue(t, b)
	out := newOutcomes(n)
	s := session(t, dial(t, b, engine.Options{}), engine.SessionOptions{})
	snd, err := s.NewSender(t.Context(), engine.SenderOptions{Address: addr, OnSettled: out.onSettled})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if _, err := snd.Send(t.Context(), encodeMessage(fmt.Sprint(i), body(i, 100+i%300))); err != nil {
			t.Fatalf("engine send %d: %v", i, err)
		}
	}
	out.wait(t, n, 20*time.Second)
	gs := goamqpConn(t, b)
	// Manual credit, a full grant at a time: go-amqp's automatic credit
	// stalls when RabbitMQ over-delivers (docs/go-amqp-credit.md).
	rcv, err := gs.NewReceiver(t.Context(), addr, &goamqp.ReceiverOptions{Credit: -1})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if i%100 == 0 {
			if err := rcv.IssueCredit(100); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		m, err := rcv.Receive(ctx, nil)
		cancel()
		if err != nil {
			t.Fatalf("go-amqp receive %d: %v", i, err)
		}
		if want := body(i, 100+i%300); !bytes.Equal(m.GetData(), want) || fmt.Sprint(m.Properties.MessageID) != fmt.Sprint(i) {
			t.Fatalf("message %d: id %v, data %q...", i, m.Properties.MessageID, m.GetData()[:12])
		}
		if err := rcv.AcceptMessage(t.Context(), m); err != nil {
			t.Fatal(err)
		}
	}
}

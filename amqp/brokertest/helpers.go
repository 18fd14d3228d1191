package brokertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"

	famqp "github.com/fedrouter/fedrouter/amqp"
)

// Helpers shared by the integration tests of every package: connections,
// sessions and bulk send/receive against the real brokers.

func Dial(t testing.TB, cfg famqp.BrokerConfig, opts famqp.ConnOptions) *famqp.Conn {
	t.Helper()
	c, err := famqp.Dial(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func Session(t testing.TB, c *famqp.Conn) *goamqp.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, _, err := c.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func Profile(t testing.TB, cfg famqp.BrokerConfig) famqp.Profile {
	t.Helper()
	p, err := famqp.NewProfile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// DeclareQueue makes q exist where the broker needs it declared first.
func DeclareQueue(t testing.TB, cfg famqp.BrokerConfig, q string) {
	t.Helper()
	if cfg.Profile != "rabbitmq" {
		return
	}
	m, err := famqp.NewRabbitManagement(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := m.DeclareQueue(ctx, q, famqp.QueueArgs{Durable: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = m.DeleteQueue(context.Background(), q)
		m.Close()
	})
}

// SendAll sends msgs with receipts pipelined (at most window in flight) and
// fails unless every one is accepted.
func SendAll(t testing.TB, s *goamqp.Session, addr string, window int, n int, mk func(i int) *goamqp.Message) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	snd, err := s.NewSender(ctx, addr, nil)
	if err != nil {
		t.Fatalf("attach sender %s: %v", addr, err)
	}
	receipts := make(chan goamqp.SendReceipt, window)
	errc := make(chan error, 1)
	go func() {
		defer close(errc)
		for r := range receipts {
			st, err := r.Wait(ctx)
			if err != nil {
				errc <- err
				return
			}
			if _, ok := st.(*goamqp.StateAccepted); !ok {
				errc <- fmt.Errorf("outcome %T", st)
				return
			}
		}
	}()
	for i := 0; i < n; i++ {
		r, err := snd.SendWithReceipt(ctx, mk(i), nil)
		if err != nil {
			close(receipts)
			t.Fatalf("send %d: %v", i, err)
		}
		receipts <- r
	}
	close(receipts)
	if err := <-errc; err != nil {
		t.Fatalf("receipt: %v", err)
	}
}

func Body(i int) *goamqp.Message { return goamqp.NewMessage([]byte(fmt.Sprintf("m-%06d", i))) }

// ReceiveN receives n messages, accepting each, and returns their bodies.
// It fails if no message arrives for stallAfter.
func ReceiveN(t testing.TB, r *famqp.Receiver, n int, stallAfter time.Duration) []string {
	t.Helper()
	out := make([]string, 0, n)
	for len(out) < n {
		ctx, cancel := context.WithTimeout(context.Background(), stallAfter)
		msg, err := r.Receive(ctx)
		if err != nil {
			cancel()
			t.Fatalf("after %d of %d messages: %v (receiver stats %+v)", len(out), n, err, r.Stats())
		}
		if err := r.Accept(ctx, msg); err != nil {
			cancel()
			t.Fatalf("accept: %v", err)
		}
		cancel()
		out = append(out, string(msg.GetData()))
	}
	return out
}

func OpenReceiver(t testing.TB, s *goamqp.Session, spec famqp.LinkSpec, window int) *famqp.Receiver {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := famqp.NewReceiver(ctx, s, spec, famqp.ReceiverConfig{Window: window})
	if err != nil {
		t.Fatalf("attach receiver %s: %v", spec.Address, err)
	}
	return r
}


package routes_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"

	famqp "github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/routes"
)

// BenchmarkForwardRabbitToRabbit compares one queue route RabbitMQ ->
// RabbitMQ with a raw go-amqp receive-send-accept loop over the same pair,
// measured in the same run: 256-byte messages, pre-filled at the source,
// timed until the last one is accepted by the destination and settled at
// the source. Run with a fixed count: make bench (-benchtime 20000x).
func BenchmarkForwardRabbitToRabbit(b *testing.B) {
	for _, variant := range []string{"raw", "route"} {
		b.Run(variant, func(b *testing.B) {
			benchForward(b, variant)
		})
	}
}

func benchForward(b *testing.B, variant string) {
	bs := brokertest.Require(b, "rabbit1", "rabbit2")
	src, ex, dq := brokertest.UniqueName(b, "bsrc"), brokertest.UniqueName(b, "bex"), brokertest.UniqueName(b, "bdq")
	brokertest.DeclareQueue(b, bs[0].Config(), src)
	brokertest.DeclareExchangeQueue(b, bs[1].Config(), ex, "fanout", dq, "")
	c1 := brokertest.Dial(b, bs[0].Config(), famqp.ConnOptions{})
	c2 := brokertest.Dial(b, bs[1].Config(), famqp.ConnOptions{})
	payload := make([]byte, 256)
	brokertest.SendAll(b, brokertest.Session(b, c1), "/amq/queue/"+src, 1000, b.N, func(int) *goamqp.Message { return goamqp.NewMessage(payload) })
	b.ResetTimer()
	start := time.Now()
	switch variant {
	case "raw":
		rawForward(b, brokertest.Session(b, c1), brokertest.Session(b, c2), src, ex, b.N)
	case "route":
		routeForward(b, map[string]famqp.Broker{
			"rabbit1": {Conn: c1, Profile: brokertest.Profile(b, bs[0].Config())},
			"rabbit2": {Conn: c2, Profile: brokertest.Profile(b, bs[1].Config())},
		}, src, ex, b.N)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msg/s")
}

// rawForward is the baseline: the simplest correct at-least-once pipeline
// with go-amqp alone (manual credit through amqp.Receiver, which go-amqp
// needs on RabbitMQ; receipts waited in order by a second goroutine).
func rawForward(b *testing.B, s1, s2 *famqp.Session, src, ex string, n int) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r, err := famqp.NewReceiver(ctx, s1, famqp.LinkSpec{Address: "/amq/queue/" + src}, famqp.ReceiverConfig{Window: 250, MaxUnsettled: 500})
	if err != nil {
		b.Fatal(err)
	}
	snd, err := s2.GoAMQP().NewSender(ctx, "/exchange/"+ex, nil)
	if err != nil {
		b.Fatal(err)
	}
	type sent struct {
		msg famqp.Message
		rc  goamqp.SendReceipt
	}
	q := make(chan sent, 500)
	done := make(chan error, 1)
	go func() {
		for i := 0; i < n; i++ {
			p := <-q
			st, err := p.rc.Wait(ctx)
			if err == nil {
				if _, ok := st.(*goamqp.StateAccepted); !ok {
					err = fmt.Errorf("outcome %T", st)
				}
			}
			if err == nil {
				err = r.Accept(ctx, p.msg)
			}
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for i := 0; i < n; i++ {
		msg, err := r.Receive(ctx)
		if err != nil {
			b.Fatal(err)
		}
		rc, err := snd.SendWithReceipt(ctx, msg.GoAMQP(), nil)
		if err != nil {
			b.Fatal(err)
		}
		q <- sent{msg, rc}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

func routeForward(b *testing.B, brokers map[string]famqp.Broker, src, ex string, n int) {
	m := routes.NewManager(context.Background(), routes.Options{RouterID: "bench", Brokers: brokers})
	defer m.Stop(context.Background())
	st, err := m.Add(b.Context(), routes.Spec{Kind: routes.KindQueue, Dest: "rabbit2", Src: "rabbit1", Exchange: ex, Queue: src})
	if err != nil {
		b.Fatal(err)
	}
	brokertest.Eventually(b, 5*time.Minute, time.Millisecond, func() error {
		s, _ := m.Get(st.ID)
		if s.Forwarded < uint64(n) {
			return fmt.Errorf("forwarded %d of %d (%s %s)", s.Forwarded, n, s.State, s.LastError)
		}
		return nil
	})
}

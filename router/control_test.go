package router

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
)

func controlFor(t *testing.T, id, addr string, bs []brokertest.Broker) *Control {
	t.Helper()
	brokers := map[string]amqp.Broker{}
	for _, b := range bs {
		brokers[b.Name] = amqp.Broker{Conn: brokertest.Dial(t, b.Config(), amqp.ConnOptions{}), Profile: brokertest.Profile(t, b.Config())}
	}
	c := NewControl(brokers, ControlOptions{RouterID: id, Address: addr,
		Backoff: amqp.Backoff{Min: 100 * time.Millisecond, Max: time.Second}, Log: zerolog.New(zerolog.NewTestWriter(t))})
	c.Start(t.Context())
	t.Cleanup(c.Stop)
	return c
}

// Two routers exchange control messages through a RabbitMQ node (a
// broadcast: the sender hears itself too) and through a Proton broker
// (queue-only: into the peer's inbox).
func TestIntegrationControlTransport(t *testing.T) {
	bs := brokertest.Require(t, "rabbit1", "proton1")
	addr := brokertest.UniqueName(t, "ctl")
	t.Cleanup(func() { // the fanout exchange and both routers' queues
		m, err := amqp.NewRabbitManagement(bs[0].Config())
		if err != nil {
			return
		}
		defer m.Close()
		ctx := context.Background()
		_ = m.DeleteQueue(ctx, addr+".a")
		_ = m.DeleteQueue(ctx, addr+".b")
		_ = m.DeleteExchange(ctx, addr)
	})
	a, b := controlFor(t, "a", addr, bs), controlFor(t, "b", addr, bs)
	if !a.Multicast("rabbit1") || a.Multicast("proton1") {
		t.Fatal("rabbit1 must be multicast, proton1 queue-only")
	}
	got := map[string]bool{}
	brokertest.Eventually(t, 30*time.Second, 100*time.Millisecond, func() error {
		a.Send("rabbit1", []byte("via-rabbit"), nil)
		a.Send("proton1", []byte("via-proton"), []string{"b"})
		for {
			select {
			case in := <-b.Inbound():
				got[in.Broker+":"+string(in.Data)] = true
				continue
			default:
			}
			break
		}
		if !got["rabbit1:via-rabbit"] || !got["proton1:via-proton"] {
			return fmt.Errorf("b got %v", got)
		}
		return nil
	})
	if st := a.Stats(); st.Sent == 0 || st.SendErrors != 0 {
		t.Fatalf("a's stats %+v", st)
	}
}

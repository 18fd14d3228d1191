package router

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/topology"
)

func controlFor(t *testing.T, id, addr string, bs []brokertest.Broker) *Control {
	t.Helper()
	brokers := map[string]amqp.Broker{}
	for _, b := range bs {
		brokers[b.Name] = amqp.Broker{Conn: brokertest.Dial(t, b.Config(), amqp.ConnOptions{}), Profile: brokertest.Profile(t, b.Config())}
	}
	c := NewControl(brokers, ControlOptions{RouterID: id, Address: addr,
		Backoff: amqp.Backoff{Min: 100 * time.Millisecond, Max: time.Second}, Log: zerolog.New(zerolog.NewTestWriter(t))})
	c.SetSecret([]byte(controlSecret))
	c.Start(t.Context())
	t.Cleanup(c.Stop)
	return c
}

const controlSecret = "control-test-secret-0123456789abcdef"

// signedLSA is a genuine advertisement of router, signed now.
func signedLSA(t *testing.T, router string, instance int64, seq uint64, brokers ...string) []byte {
	t.Helper()
	l := topology.LSA{Router: router, Instance: instance, Seq: seq, Time: time.Now().UnixNano()}
	for _, b := range brokers {
		l.Brokers = append(l.Brokers, topology.BrokerState{Name: b, State: topology.StateOperational})
	}
	data, err := topology.Encode(l, []byte(controlSecret))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// drain takes every advertisement waiting in c.
func drain(c *Control) []Inbound {
	var out []Inbound
	for {
		in, ok := c.Take()
		if !ok {
			return out
		}
		out = append(out, in)
	}
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
	viaRabbit, viaProton := signedLSA(t, "x1", 1, 1, "rabbit1"), signedLSA(t, "x2", 1, 1, "proton1")
	got := map[string]bool{}
	brokertest.Eventually(t, 30*time.Second, 100*time.Millisecond, func() error {
		a.Send("rabbit1", viaRabbit, nil)
		a.Send("proton1", viaProton, []string{"b"})
		for _, in := range drain(b) {
			got[in.Broker+":"+string(in.Data)] = true
		}
		if !got["rabbit1:"+string(viaRabbit)] || !got["proton1:"+string(viaProton)] {
			return fmt.Errorf("b got %d messages: %v", len(got), b.Stats())
		}
		return nil
	})
	if st := a.Stats(); st.Sent == 0 || st.SendErrors != 0 {
		t.Fatalf("a's stats %+v", st)
	}
}

package amqp_test

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"

	famqp "github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
)

// TestIntegrationDrainWithoutStall fills a RabbitMQ queue with 200,000
// messages and drains it through Receiver, three times. go-amqp's automatic
// credit stalled for good in most such drains here (RabbitMQ over-delivers);
// Receiver must never stall: the test fails if no message arrives for 15 s.
// FEDROUTER_DRAIN_N and FEDROUTER_DRAIN_ROUNDS override the sizes.
func TestIntegrationDrainWithoutStall(t *testing.T) {
	b := brokertest.Require(t, "rabbit1")[0]
	n, rounds := envInt("FEDROUTER_DRAIN_N", 200_000), envInt("FEDROUTER_DRAIN_ROUNDS", 3)
	cfg := b.Config()
	q := brokertest.UniqueName(t, "drain")
	brokertest.DeclareQueue(t, cfg, q)
	c := brokertest.Dial(t, cfg, famqp.ConnOptions{})
	payload := bytes.Repeat([]byte("x"), 256)
	for round := 1; round <= rounds; round++ {
		fill := brokertest.Session(t, c)
		t0 := time.Now()
		brokertest.SendAll(t, fill, "/amq/queue/"+q, 1000, n, func(int) *goamqp.Message { return goamqp.NewMessage(payload) })
		fillTook := time.Since(t0)

		s := brokertest.Session(t, c)
		r := brokertest.OpenReceiver(t, s, famqp.LinkSpec{Address: "/amq/queue/" + q}, 1000)
		t0 = time.Now()
		brokertest.ReceiveN(t, r, n, 15*time.Second)
		drainTook := time.Since(t0)
		st := r.Stats()
		t.Logf("round %d: fill %d msgs in %v (%.0f msg/s); drain in %v (%.0f msg/s); grants %d, over-delivered %d",
			round, n, fillTook.Round(time.Millisecond), float64(n)/fillTook.Seconds(),
			drainTook.Round(time.Millisecond), float64(n)/drainTook.Seconds(), st.Grants, st.OverDelivered)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = s.Close(ctx) // returns at once, unlike a receiver detach on RabbitMQ
		_ = fill.Close(ctx)
		cancel()
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

package amqp_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	famqp "github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
)

// The profiles that can tell a source queue's depth (the route stall
// watcher's evidence) read what waits there, and say ErrNotFound for a
// queue that is not there.
func TestIntegrationQueueDepth(t *testing.T) {
	for _, name := range []string{"rabbit1", "qpidd1"} {
		t.Run(name, func(t *testing.T) {
			b := brokertest.Require(t, name)[0]
			dr, ok := brokertest.Profile(t, b.Config()).(famqp.DepthReader)
			if !ok {
				t.Fatalf("the %s profile cannot read a queue's depth", b.Kind)
			}
			q := brokertest.UniqueName(t, "h-stall-depth")
			brokertest.DeclareQueue(t, b.Config(), q)
			if got, ok := dr.SourceQueue(famqp.Node{Kind: famqp.Queue, Name: q}, famqp.Subscription{}); !ok || got != q {
				t.Fatalf("SourceQueue of queue %s = %q %v", q, got, ok)
			}
			c := brokertest.Dial(t, b.Config(), famqp.ConnOptions{})
			addr := q
			if b.Kind == "rabbitmq" {
				addr = "/amq/queue/" + q
			}
			brokertest.SendAll(t, brokertest.Session(t, c), addr, 10, 7, brokertest.Numbered)
			// RabbitMQ's statistics lag the queue by up to 5 s.
			brokertest.Eventually(t, 20*time.Second, 100*time.Millisecond, func() error {
				if d, err := dr.QueueDepth(t.Context(), q); err != nil || d != 7 {
					return fmt.Errorf("depth %d, %v; want 7", d, err)
				}
				return nil
			})
			if _, err := dr.QueueDepth(t.Context(), "h-stall-no-such-queue"); !errors.Is(err, famqp.ErrNotFound) {
				t.Fatalf("depth of a missing queue: %v, want ErrNotFound", err)
			}
			// Many at once: from the broker's listing.
			names := []string{q}
			for i := range 20 {
				names = append(names, fmt.Sprintf("h-stall-no-such-queue-%d", i))
			}
			got, err := dr.QueueDepths(t.Context(), names)
			if err != nil || len(got) != 1 || got[q] != 7 {
				t.Fatalf("depths of %d queues, one there: %v, %v", len(names), got, err)
			}
		})
	}
}

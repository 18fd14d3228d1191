package amqp_test

import (
	"context"
	"slices"
	"testing"
	"time"

	famqp "github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
)

// The rabbitmq profile announces a queue and a consumer as they come and
// go: queue.created, consumer.created, consumer.deleted, queue.deleted for
// the queue, in that order, read from the event exchange; what concerns
// other queues (other tests run) is left aside.
func TestIntegrationRabbitQueueEvents(t *testing.T) {
	b := brokertest.Require(t, "rabbit1")[0]
	prof := brokertest.Profile(t, b.Config())
	qe, ok := prof.(famqp.QueueEvents)
	if !ok {
		t.Fatal("the rabbitmq profile is not a QueueEvents")
	}
	qm := prof.(famqp.QueueManager)
	ctx := context.Background()
	name := brokertest.UniqueName(t, "h-gd")
	sub := famqp.Subscription{Name: name + ".events"}
	spec, err := qe.QueueEvents(ctx, sub)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, q := range []string{sub.Name, sub.Name + ".detail"} {
			_ = qm.DeleteQueue(context.Background(), q, famqp.DeleteCond{})
		}
	})
	s := brokertest.Session(t, brokertest.Dial(t, b.Config(), famqp.ConnOptions{}))
	events := brokertest.OpenReceiver(t, s, spec, 100)
	if err := qm.DeclareQueue(ctx, name, famqp.QueueArgs{Durable: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = qm.DeleteQueue(context.Background(), name, famqp.DeleteCond{}) })
	c2 := brokertest.Dial(t, b.Config(), famqp.ConnOptions{})
	brokertest.OpenReceiver(t, brokertest.Session(t, c2), famqp.LinkSpec{Address: "/amq/queue/" + name}, 1)
	// Each event wakes the receiver; the details come from the twin queue.
	var seen []string
	next := func(want string) {
		t.Helper()
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		for !slices.Contains(seen, want) {
			msg, err := events.Receive(rctx)
			if err != nil {
				t.Fatalf("waiting for %s: %v (seen %v)", want, err, seen)
			}
			_ = events.Accept(rctx, msg)
			evs, _, err := qe.FetchQueueEvents(rctx, sub, 100)
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range evs {
				if ev.Queue == name {
					seen = append(seen, ev.Kind)
				}
			}
		}
	}
	next(famqp.EventQueueCreated)
	next(famqp.EventConsumerCreated)
	_ = c2.Close() // the consumer goes with its connection (a detach of an idle receiver can wait on RabbitMQ)
	next(famqp.EventConsumerDeleted)
	if err := qm.DeleteQueue(ctx, name, famqp.DeleteCond{}); err != nil {
		t.Fatal(err)
	}
	next(famqp.EventQueueDeleted)
	want := []string{famqp.EventQueueCreated, famqp.EventConsumerCreated, famqp.EventConsumerDeleted, famqp.EventQueueDeleted}
	if !slices.Equal(seen, want) {
		t.Errorf("events %v, want %v", seen, want)
	}
}

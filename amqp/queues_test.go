package amqp_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	goamqp "github.com/Azure/go-amqp"

	famqp "github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
)

// The rabbitmq profile as a QueueManager against a real node: a queue
// declared with arguments is listed with them; deleting it if empty keeps
// it while it holds a message, then deletes it; deleting a missing queue
// is not an error.
func TestIntegrationRabbitQueueManager(t *testing.T) {
	b := brokertest.Require(t, "rabbit1")[0]
	qm, ok := brokertest.Profile(t, b.Config()).(famqp.QueueManager)
	if !ok {
		t.Fatal("the rabbitmq profile is not a QueueManager")
	}
	ctx := context.Background()
	name := brokertest.UniqueName(t, "gd")
	if err := qm.DeclareQueue(ctx, name, famqp.QueueArgs{Durable: true, Arguments: map[string]any{"x-max-length": 7}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = qm.DeleteQueue(context.Background(), name, famqp.DeleteCond{}) }) // best effort
	qs, err := qm.ListQueues(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, q := range qs {
		if q.Name == name {
			found = q.Durable && q.Arguments["x-max-length"] == float64(7)
		}
	}
	if !found {
		t.Fatalf("%s not listed durable with x-max-length 7: %+v", name, qs)
	}
	s := brokertest.Session(t, brokertest.Dial(t, b.Config(), famqp.ConnOptions{}))
	brokertest.SendAll(t, s, "/amq/queue/"+name, 1, 1, func(int) *goamqp.Message { return brokertest.Numbered(0) })
	if err := qm.DeleteQueue(ctx, name, famqp.DeleteCond{IfEmpty: true}); !errors.Is(err, famqp.ErrQueueNotEmpty) {
		t.Fatalf("delete if empty of a queue holding a message: %v, want ErrQueueNotEmpty", err)
	}
	// A consumer (left open: the connection's cleanup ends it).
	brokertest.OpenReceiver(t, s, famqp.LinkSpec{Address: "/amq/queue/" + name}, 0)
	if err := qm.DeleteQueue(ctx, name, famqp.DeleteCond{IfUnused: true}); !errors.Is(err, famqp.ErrQueueInUse) {
		t.Fatalf("delete if unused of a queue with a consumer: %v, want ErrQueueInUse", err)
	}
	if err := qm.DeleteQueue(ctx, name, famqp.DeleteCond{}); err != nil {
		t.Fatal(err)
	}
	if err := qm.DeleteQueue(ctx, name, famqp.DeleteCond{IfEmpty: true, IfUnused: true}); err != nil {
		t.Fatalf("delete of a missing queue: %v", err)
	}
}

// Every profile says what it can do for global destinations, and only
// the rabbitmq profile (the one QueueManager) says yes.
func TestDestinationSupportStated(t *testing.T) {
	for _, n := range famqp.ProfileNames() {
		s := famqp.DestinationSupport(n)
		if s == "no" || (n == "rabbitmq") != strings.HasPrefix(s, "yes") {
			t.Errorf("profile %s: %q", n, s)
		}
	}
}

// Every profile says what it enforces of a destination's limits; only the
// rabbitmq profile (the one QueueLimiter) enforces any, and max_producers
// none.
func TestLimitSupportStated(t *testing.T) {
	for _, n := range famqp.ProfileNames() {
		s := famqp.LimitSupport(n)
		if !strings.Contains(s, "not enforceable with this profile") || famqp.EnforcesLimit(n, "max_producers") ||
			(n == "rabbitmq") != famqp.EnforcesLimit(n, "max_messages") || (n == "rabbitmq") != famqp.EnforcesLimit(n, "max_bytes") {
			t.Errorf("profile %s: %q", n, s)
		}
	}
}

package amqp_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	famqp "github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
)

// The rabbitmq profile as a QueueLimiter against a real node: a policy
// bounding one queue to 3 messages with reject-publish makes the broker
// refuse the 4th publish (the outcome a publisher and a route see), keeps
// the 3, and a queue whose name only starts like it is not bounded;
// cleared, the queue takes more; the policy is listed while it exists.
func TestIntegrationRabbitQueueLimit(t *testing.T) {
	b := brokertest.Require(t, "rabbit1")[0]
	prof := brokertest.Profile(t, b.Config())
	ql, ok := prof.(famqp.QueueLimiter)
	qm := prof.(famqp.QueueManager)
	if !ok {
		t.Fatal("the rabbitmq profile is not a QueueLimiter")
	}
	ctx := context.Background()
	name := brokertest.UniqueName(t, "h-gd")
	for _, q := range []string{name, name + "x"} {
		if err := qm.DeclareQueue(ctx, q, famqp.QueueArgs{Durable: true}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = qm.DeleteQueue(context.Background(), q, famqp.DeleteCond{}) }) // best effort
	}
	if err := ql.SetQueueLimit(ctx, name, famqp.QueueLimit{MaxLength: 3, Overflow: "reject-publish"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ql.ClearQueueLimit(context.Background(), name) })
	if got, err := ql.QueueLimits(ctx); err != nil || !slices.Contains(got, name) {
		t.Fatalf("QueueLimits: %v %v, want %s among them", got, err, name)
	}
	// RabbitMQ 3.10's AMQP 1.0 plugin cannot turn the queue's refusal
	// (basic.nack) into an outcome: it closes the connection
	// (amqp:internal-error, function_clause in its session process). Either
	// is a refusal: the message was not accepted. A new connection each
	// time, then.
	publish := func(q string, n int) (outcomes []string) {
		s := brokertest.Session(t, brokertest.Dial(t, b.Config(), famqp.ConnOptions{}))
		snd, err := s.NewSender(ctx, famqp.LinkSpec{Address: "/amq/queue/" + q})
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			rc, err := snd.Send(ctx, famqp.WrapMessage(brokertest.Numbered(i)))
			var o famqp.Outcome
			if err == nil {
				o, err = rc.Wait(ctx)
			}
			if err != nil {
				return append(outcomes, "refused: "+err.Error())
			}
			outcomes = append(outcomes, o.Kind.String())
		}
		return outcomes
	}
	// The policy applies within moments of its PUT (asynchronously).
	brokertest.Eventually(t, 30*time.Second, 200*time.Millisecond, func() error {
		if got := publish(name, 1); got[0] != "rejected" && !strings.HasPrefix(got[0], "refused") {
			return fmt.Errorf("publish: %s, want a refusal once the queue holds 3", got)
		}
		return nil
	})
	if got := publish(name+"x", 5); fmt.Sprint(got) != "[accepted accepted accepted accepted accepted]" {
		t.Errorf("a queue the pattern must not match: %v, want all accepted", got)
	}
	brokertest.Eventually(t, 30*time.Second, 250*time.Millisecond, func() error {
		qs, err := qm.ListQueues(ctx) // the statistics: they lag up to 5 s
		for _, q := range qs {
			if q.Name == name && q.Messages == 3 && q.MessageBytes > 0 {
				return nil
			}
		}
		return fmt.Errorf("%s does not hold 3 messages (%v)", name, err)
	})
	if err := ql.ClearQueueLimit(ctx, name); err != nil {
		t.Fatal(err)
	}
	brokertest.Eventually(t, 30*time.Second, 200*time.Millisecond, func() error {
		if got := publish(name, 1); got[0] != "accepted" {
			return fmt.Errorf("publish after clearing: %s, want accepted", got)
		}
		return nil
	})
	if err := ql.ClearQueueLimit(ctx, name); err != nil {
		t.Errorf("clearing again: %v, want nothing (a missing policy is not an error)", err)
	}
}

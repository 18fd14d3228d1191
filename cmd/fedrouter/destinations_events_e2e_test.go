package main

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
)

// Seen as it happens (issue 29, item 8): a queue created at rabbit1
// reaches rabbit2..4, and 5,000 messages waiting (at rabbit1, then where
// the last round left them) begin to
// arrive at a consumer that attaches at rabbit4 (then rabbit3, rabbit2:
// an instance no flow has filled) — both timed, three rounds of each. Without the brokers' event exchange the router learns of them
// from its listing every 2 s and, for consumers, the management API's
// statistics (every 5 s); with it, from the events.
func TestGlobalDestinationsSeenAsItHappens(t *testing.T) {
	d := newDestRigNamed(t, "h-gd", "settle: 2s, max_hops: 10")
	ctx := context.Background()
	var propagation []time.Duration
	for i := range 3 {
		q := fmt.Sprintf("%s.p%d", d.prefix, i)
		t.Cleanup(func() {
			for _, m := range d.mgmt {
				_ = m.DeleteQueue(context.Background(), q) // best effort
			}
		})
		created := time.Now()
		if err := d.mgmt[0].DeclareQueue(ctx, q, amqp.QueueArgs{Durable: true}); err != nil {
			t.Fatal(err)
		}
		brokertest.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
			for b := 1; b < len(d.bs); b++ {
				names, err := d.mgmt[b].QueueNames(ctx)
				if err != nil || !slices.Contains(names, q) {
					return fmt.Errorf("%s not at %s yet (%v)", q, d.bs[b].Name, err)
				}
			}
			return nil
		})
		propagation = append(propagation, time.Since(created))
	}

	q := d.globalQueue()
	const n = 5000
	s := brokertest.Session(t, brokertest.Dial(t, d.bs[0].Config(), amqp.ConnOptions{}))
	brokertest.SendAll(t, s, "/amq/queue/"+q, 200, n, func(i int) *goamqp.Message { return brokertest.Numbered(i) })
	d.waitDepth(0, q, n, time.Minute)
	var follow []time.Duration
	for round, at := range []int{3, 2, 1} { // an instance no flow has filled yet, each round
		ty := newTally()
		attached := time.Now()
		stop := d.consuming(at, q, ty)
		brokertest.Eventually(t, time.Minute, 10*time.Millisecond, func() error {
			if ty.distinct() == 0 {
				return fmt.Errorf("round %d: nothing at %s's consumer yet", round, d.bs[at].Name)
			}
			return nil
		})
		follow = append(follow, time.Since(attached))
		// Stop it once a share has arrived, the rest stays for the next
		// round: rabbit1's messages wait for another consumer.
		brokertest.Eventually(t, time.Minute, 10*time.Millisecond, func() error {
			if ty.distinct() < 100 {
				return fmt.Errorf("round %d: %d at %s", round, ty.distinct(), d.bs[at].Name)
			}
			return nil
		})
		if err := stop(); err != nil {
			t.Fatalf("consumer at %s: %v", d.bs[at].Name, err)
		}
		stopped := time.Now()
		// The flow stops once rabbit4 has had no consumer for settle;
		// wait for that, and for what moved to rabbit4 to come back
		// into play: the next round starts from no flow.
		brokertest.Eventually(t, time.Minute, 100*time.Millisecond, func() error {
			fs, err := d.flows(q)
			if err != nil || len(fs) > 0 {
				return fmt.Errorf("flows %+v (%v)", fs, err)
			}
			return nil
		})
		brokertest.Eventually(t, time.Minute, 250*time.Millisecond, func() error {
			if time.Since(stopped) < 7*time.Second { // the statistics' 5 s, and a listing
				return fmt.Errorf("the consumer's going may not be counted yet")
			}
			return nil
		})
		d.waitNoConsumers(q)
	}
	t.Logf("a queue created at rabbit1 was at rabbit2..4 after %v; 5,000 waiting at rabbit1: the first at a consumer attaching at rabbit4, 3, 2 after %v",
		round(propagation), round(follow))
}

func round(ds []time.Duration) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Round(10 * time.Millisecond).String()
	}
	return out
}

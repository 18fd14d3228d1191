package engine_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/amqp/engine"
)

// fill sends n messages of size bytes of data to addr with the engine
// and waits until all are accepted.
func fill(t testing.TB, b brokertest.Broker, addr string, n, size int) {
	t.Helper()
	out := newOutcomes(n)
	c := dial(t, b, engine.Options{})
	snd, err := session(t, c, engine.SessionOptions{}).NewSender(t.Context(), engine.SenderOptions{Address: addr, OnSettled: out.onSettled})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if _, err := snd.Send(t.Context(), encodeMessage(fmt.Sprint(i), body(i, size))); err != nil {
			t.Fatal(err)
		}
	}
	out.wait(t, n, 30*time.Second)
}

// Settlement in ranges: with ack N = 100, 1,000 deliveries are settled
// with about ten dispositions (one per run of contiguous ids), with
// ack 1 one each; either way the queue ends empty: nothing is left
// unsettled and nothing comes back on a new receiver.
func TestConformanceAckRanges(t *testing.T) {
	for _, name := range []string{"rabbit1", "qpidd1"} {
		for _, ackN := range []int{1, 100} {
			t.Run(fmt.Sprintf("%s/ack%d", name, ackN), func(t *testing.T) {
				b := brokertest.Require(t, name)[0]
				addr := queue(t, b)
				const n = 1000
				fill(t, b, addr, n, 64)
				c := dial(t, b, engine.Options{})
				col := newCollector(n)
				r, err := session(t, c, engine.SessionOptions{}).NewReceiver(t.Context(), engine.ReceiverOptions{
					Address: addr, Credit: 500, AckN: ackN, AckDelay: time.Second, OnMessage: col.onMessage})
				if err != nil {
					t.Fatal(err)
				}
				col.take(t, n, 20*time.Second)
				r.Flush()
				disp := r.Dispositions()
				t.Logf("ack %d: %d deliveries settled with %d dispositions", ackN, n, disp)
				switch {
				case ackN == 1 && disp != n:
					t.Fatalf("ack 1: %d dispositions, want %d", disp, n)
				case ackN == 100 && disp > n/100+10:
					t.Fatalf("ack 100: %d dispositions, want about %d", disp, n/100)
				}
				if err := c.Close(); err != nil {
					t.Fatal(err)
				}
				// Nothing left: a new receiver gets nothing.
				left := newCollector(n)
				_, err = session(t, dial(t, b, engine.Options{}), engine.SessionOptions{}).NewReceiver(t.Context(),
					engine.ReceiverOptions{Address: addr, Credit: 100, OnMessage: left.onMessage})
				if err != nil {
					t.Fatal(err)
				}
				select {
				case <-left.ch:
					t.Fatal("a settled message came back")
				case <-time.After(2 * time.Second):
				}
			})
		}
	}
}

// The time bound of ack N: fewer than N deliveries are settled by the
// AckDelay timer, without a Flush, and do not come back.
func TestConformanceAckTimeBound(t *testing.T) {
	b := brokertest.Require(t, "rabbit1")[0]
	addr := queue(t, b)
	const n = 30
	fill(t, b, addr, n, 64)
	c := dial(t, b, engine.Options{})
	col := newCollector(n)
	r, err := session(t, c, engine.SessionOptions{}).NewReceiver(t.Context(), engine.ReceiverOptions{
		Address: addr, Credit: 100, AckN: 1000, AckDelay: 100 * time.Millisecond, OnMessage: col.onMessage})
	if err != nil {
		t.Fatal(err)
	}
	col.take(t, n, 20*time.Second)
	brokertest.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error {
		if d := r.Dispositions(); d == 0 {
			return fmt.Errorf("no disposition yet")
		}
		return nil
	})
	t.Logf("%d deliveries settled by the timer with %d dispositions", n, r.Dispositions())
	// Dropped without a close (no Flush on the way): what the timer
	// settled must stay settled.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	left := newCollector(n)
	_, err = session(t, dial(t, b, engine.Options{}), engine.SessionOptions{}).NewReceiver(t.Context(),
		engine.ReceiverOptions{Address: addr, Credit: 100, OnMessage: left.onMessage})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-left.ch:
		t.Fatal("a message settled by the timer came back")
	case <-time.After(2 * time.Second):
	}
}

package routes_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	famqp "github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/links"
	"github.com/fedrouter/fedrouter/routes"
)

// oneGate is routes.Gates with one gate, for queue at broker: what a
// router's global destinations with limits give the routes.
type oneGate struct {
	broker, queue string
	g             *links.Gate
}

func (o oneGate) Gate(broker, queue string) *links.Gate {
	if broker == o.broker && queue == o.queue {
		return o.g
	}
	return nil
}

// A queue route into a queue a global destination's limits gate, on each
// data path: while the gate is closed nothing crosses and nothing is
// settled at the source; opened, the messages cross into the queue up
// to its limit, and what the full queue refuses goes back to the source
// (never rejected, never dead-lettered: the limit refused it), closing
// the gate for links.RefusalPause; once a consumer makes room, every
// message arrives. RabbitMQ only: limits are RabbitMQ's
// (amqp.QueueLimiter), and it refuses by closing the connection (the
// engine's OnRejected, a refusal as an outcome, is amqp/engine
// TestForwardHoldAndOnRejected's). qpidd's reject policy gives no
// outcome over AMQP 1.0 here: it is not a limit the gates know.
func TestIntegrationGatedQueueRoute(t *testing.T) {
	onEachDataPath(t, func(t *testing.T, dataPath string) { gatedQueueRoute(t, dataPath, "rabbit1", "rabbit2") })
}

// gatedQueueRoute runs TestIntegrationGatedQueueRoute from srcName to
// dstName on dataPath.
func gatedQueueRoute(t *testing.T, dataPath, srcName, dstName string) {
	const n, maxLength = 20, 5
	h := newHarnessOn(t, dataPath, srcName, dstName)
	src, dq := brokertest.UniqueName(t, "h-enginerest-src"), brokertest.UniqueName(t, "h-enginerest-dq")
	brokertest.DeclareQueue(t, h.brokers[srcName].Config(), src)
	h.declareLimitedQueue(dstName, dq, maxLength)
	gate := links.NewGate()
	gate.Set(true)
	h.m.Stop(context.Background())
	h.opts.Gates = oneGate{broker: dstName, queue: dq, g: gate}
	h.start()
	st := h.add(routes.Spec{Kind: routes.KindQueue, Dest: dstName, Src: srcName, Queue: src, DestQueue: dq})
	h.waitDataPath(st.ID, dataPath)

	brokertest.SendAll(t, h.session(srcName), queueAddress(h.brokers[srcName], src), n, n, brokertest.Numbered)
	// Closed: for two seconds (the route would send all in far less)
	// nothing is sent on, nothing settled at the source.
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if s, _ := h.m.Get(st.ID); s.Sent != 0 || s.Forwarded != 0 || s.Rejected != 0 || s.Redelivered != 0 {
			t.Fatalf("the gate is closed, yet: %+v", s.Counters)
		}
	}

	// Open: the queue fills to its limit, then refuses (RabbitMQ 3.10 by
	// closing the connection, the outcomes of what it took with it: the
	// run ends, what it had in flight goes back to the source), and the
	// gate closes for its pause — again at each try while it is full.
	gate.Set(false)
	brokertest.Eventually(t, 30*time.Second, 50*time.Millisecond, func() error {
		if s, _ := h.m.Get(st.ID); gate.Refusals() < 2 || s.Sent < maxLength {
			return fmt.Errorf("refusals %d, counters %+v", gate.Refusals(), s.Counters)
		}
		return nil
	})
	if s, _ := h.m.Get(st.ID); s.Rejected != 0 || s.DeadLettered != 0 {
		t.Fatalf("refused by the full queue, yet rejected or dead-lettered: %+v", s.Counters)
	}
	// A consumer of its own (the refusal may close the route's
	// connection) makes room: everything arrives.
	consumer := brokertest.Dial(t, h.brokers[dstName].Config(), famqp.ConnOptions{})
	got := brokertest.Collect(t, consumer, queueAddress(h.brokers[dstName], dq), n, 60*time.Second)
	dups := brokertest.CheckNoLoss(t, got, n)
	brokertest.Eventually(t, 10*time.Second, 50*time.Millisecond, func() error {
		s, _ := h.m.Get(st.ID)
		if s.Forwarded == 0 || s.Rejected != 0 || s.DeadLettered != 0 || s.InFlight != 0 {
			return fmt.Errorf("counters %+v: want messages forwarded, none rejected, none in flight", s.Counters)
		}
		return nil
	})
	s, _ := h.m.Get(st.ID)
	t.Logf("%s > %s on %s: %d refusals by the full queue, %d duplicates, counters %+v", srcName, dstName, dataPath, gate.Refusals(), dups, s.Counters)
}

// declareLimitedQueue declares queue q on RabbitMQ broker name,
// refusing messages beyond max (x-max-length with reject-publish);
// deleted at cleanup.
func (h *harness) declareLimitedQueue(name, q string, max int) {
	h.t.Helper()
	m := h.mgmt(name)
	if err := m.DeclareQueue(context.Background(), q, famqp.QueueArgs{Durable: true,
		Arguments: map[string]any{"x-max-length": max, "x-overflow": "reject-publish"}}); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = m.DeleteQueue(context.Background(), q) })
}

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
// settled at the source; opened, the messages cross into the queue up to
// its max-length, and what the full queue refuses goes back to the
// source (never rejected, never dead-lettered: the limit refused it),
// closing the gate for links.RefusalPause; once a consumer makes room,
// every message arrives.
func TestIntegrationGatedQueueRoute(t *testing.T) {
	onEachDataPath(t, gatedQueueRoute)
}

func gatedQueueRoute(t *testing.T, dataPath string) {
	const n, maxLength = 20, 5
	h := newHarnessOn(t, dataPath, "rabbit1", "rabbit2")
	src, dq := brokertest.UniqueName(t, "h-enginerest-src"), brokertest.UniqueName(t, "h-enginerest-dq")
	brokertest.DeclareQueue(t, h.brokers["rabbit1"].Config(), src)
	m := h.mgmt("rabbit2")
	if err := m.DeclareQueue(context.Background(), dq, famqp.QueueArgs{Durable: true,
		Arguments: map[string]any{"x-max-length": maxLength, "x-overflow": "reject-publish"}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.DeleteQueue(context.Background(), dq) })
	gate := links.NewGate()
	gate.Set(true)
	h.m.Stop(context.Background())
	h.opts.Gates = oneGate{broker: "rabbit2", queue: dq, g: gate}
	h.start()
	st := h.add(routes.Spec{Kind: routes.KindQueue, Dest: "rabbit2", Src: "rabbit1", Queue: src, DestQueue: dq})
	h.waitDataPath(st.ID, dataPath)

	brokertest.SendAll(t, h.session("rabbit1"), "/amq/queue/"+src, n, n, brokertest.Numbered)
	// Closed: for two seconds (the route would send all in far less)
	// nothing is sent on, nothing settled at the source.
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if s, _ := h.m.Get(st.ID); s.Sent != 0 || s.Forwarded != 0 || s.Rejected != 0 || s.Redelivered != 0 {
			t.Fatalf("the gate is closed, yet: %+v", s.Counters)
		}
	}

	// Open: the queue fills to its max-length, then refuses. RabbitMQ
	// 3.10 refuses by closing the connection, the outcomes of what it
	// took with it: the run ends, what it had in flight goes back to the
	// source, and the gate closes for its pause — again at each run while
	// the queue is full.
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
	// connection to rabbit2) makes room: everything arrives.
	consumer := brokertest.Dial(t, h.brokers["rabbit2"].Config(), famqp.ConnOptions{})
	got := brokertest.Collect(t, consumer, "/amq/queue/"+dq, n, 60*time.Second)
	dups := brokertest.CheckNoLoss(t, got, n)
	brokertest.Eventually(t, 10*time.Second, 50*time.Millisecond, func() error {
		s, _ := h.m.Get(st.ID)
		if s.Forwarded == 0 || s.Rejected != 0 || s.DeadLettered != 0 || s.InFlight != 0 {
			return fmt.Errorf("counters %+v: want messages forwarded, none rejected, none in flight", s.Counters)
		}
		return nil
	})
	s, _ := h.m.Get(st.ID)
	t.Logf("%s: %d refusals by the full queue, %d duplicates, counters %+v", dataPath, gate.Refusals(), dups, s.Counters)
}

package routes_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"

	famqp "github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/routes"
)

// proxiedDest puts a fault proxy between the router and rabbit2: cutting
// it leaves the routes to rabbit2 without a path.
func (h *harness) proxiedDest(t *testing.T) *brokertest.FaultProxy {
	t.Helper()
	b := h.brokers["rabbit2"]
	p, err := brokertest.NewFaultProxy(b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() }) // the test's outcome is decided by then
	cfg := b.Config()
	cfg.URLs = []string{"amqp://" + p.Addr()}
	h.m.Stop(context.Background())
	c := brokertest.Dial(t, cfg, famqp.ConnOptions{Backoff: famqp.Backoff{Min: 100 * time.Millisecond, Max: 500 * time.Millisecond}})
	h.opts.Brokers["rabbit2"] = famqp.Broker{Conn: c, Profile: h.opts.Brokers["rabbit2"].Profile}
	h.start()
	return p
}

// With no path to the destination, a route holds, then dead-letters what
// its source has, with the reason; when the path is back it forwards
// again, the held messages first.
func TestIntegrationNoPathHoldThenDeadLetter(t *testing.T) {
	onEachDataPath(t, noPathHoldThenDeadLetter)
}

func noPathHoldThenDeadLetter(t *testing.T, dataPath string) {
	h := newHarnessOn(t, dataPath, "rabbit1", "rabbit2")
	proxy := h.proxiedDest(t)
	src, dlq, ex, dq := brokertest.UniqueName(t, "src"), brokertest.UniqueName(t, "dlq"), brokertest.UniqueName(t, "ex"), brokertest.UniqueName(t, "dq")
	cfg := h.brokers["rabbit1"].Config()
	brokertest.DeclareQueue(t, cfg, src)
	brokertest.DeclareQueue(t, cfg, dlq)
	h.exchangeWithQueue("rabbit2", ex, "fanout", dq, "")
	st := h.add(routes.Spec{Kind: routes.KindQueue, Dest: "rabbit2", Src: "rabbit1", Exchange: ex, Queue: src,
		NoPath: []string{"hold 3s", "dead-letter"}, DeadLetterQueue: dlq})
	h.waitState(st.ID, routes.StateOperational)

	// Cut: the first messages are held (none dead-lettered within the hold).
	proxy.Cut()
	h.waitState(st.ID, routes.StateWaiting)
	s := h.session("rabbit1")
	brokertest.SendAll(t, s, "/amq/queue/"+src, 10, 5, brokertest.Numbered)
	brokertest.Eventually(t, 2*time.Second, 20*time.Millisecond, func() error {
		if got, _ := h.m.Get(st.ID); got.NoPath != 0 || !strings.Contains(got.Detail, "holding") {
			return fmt.Errorf("during the hold: %+v (%s)", got.Counters, got.Detail)
		}
		return nil
	})
	// After the hold: dead-lettered, with the reason and the destination.
	brokertest.SendAll(t, s, "/amq/queue/"+src, 10, 5, func(i int) *goamqp.Message { return brokertest.Numbered(5 + i) })
	r := brokertest.OpenReceiver(t, s, famqp.LinkSpec{Address: "/amq/queue/" + dlq}, 20)
	for i := 0; i < 10; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		msg, err := r.Receive(ctx)
		cancel()
		if err != nil {
			got, _ := h.m.Get(st.ID)
			t.Fatalf("dead-letter %d: %v (route %s %s %+v)", i, err, got.State, got.Detail, got.Counters)
		}
		if reason, _ := msg.GoAMQP().Annotations["x-fedrouter-reason"].(string); !strings.Contains(reason, "no-path") ||
			msg.GoAMQP().Annotations["x-fedrouter-dest-broker"] != "rabbit2" || msg.GoAMQP().Annotations["x-fedrouter-dest-address"] != "exchange:"+ex {
			t.Fatalf("dead-lettered message annotations %v", msg.GoAMQP().Annotations)
		}
		_ = r.Accept(context.Background(), msg)
	}
	brokertest.Eventually(t, 5*time.Second, 20*time.Millisecond, func() error {
		if got, _ := h.m.Get(st.ID); got.NoPath != 10 || got.DeadLettered != 10 || got.Sent != 0 || got.InFlight != 0 {
			return fmt.Errorf("counters %+v", got.Counters)
		}
		return nil
	})
	h.waitNoPathOn(st.ID, dataPath, "dead-lettering to "+dlq)

	// Healed: forwarding again.
	proxy.Heal()
	h.waitState(st.ID, routes.StateOperational)
	brokertest.SendAll(t, s, "/amq/queue/"+src, 10, 5, func(i int) *goamqp.Message { return brokertest.Numbered(100 + i) })
	got := brokertest.Collect(t, h.conns["rabbit2"], "/amq/queue/"+dq, 5, 30*time.Second)
	brokertest.CheckNoLossFrom(t, got, 100, 105)
}

// The default, hold: nothing is lost; what was published while the path
// was gone arrives when it is back.
func TestIntegrationNoPathHoldKeepsEverything(t *testing.T) {
	onEachDataPath(t, noPathHoldKeepsEverything)
}

func noPathHoldKeepsEverything(t *testing.T, dataPath string) {
	h := newHarnessOn(t, dataPath, "rabbit1", "rabbit2")
	proxy := h.proxiedDest(t)
	src, ex, dq := brokertest.UniqueName(t, "src"), brokertest.UniqueName(t, "ex"), brokertest.UniqueName(t, "dq")
	brokertest.DeclareQueue(t, h.brokers["rabbit1"].Config(), src)
	h.exchangeWithQueue("rabbit2", ex, "fanout", dq, "")
	st := h.add(routes.Spec{Kind: routes.KindQueue, Dest: "rabbit2", Src: "rabbit1", Exchange: ex, Queue: src})
	h.waitState(st.ID, routes.StateOperational)
	proxy.Cut()
	h.waitState(st.ID, routes.StateWaiting)
	brokertest.SendAll(t, h.session("rabbit1"), "/amq/queue/"+src, 100, 1000, brokertest.Numbered)
	brokertest.Eventually(t, 5*time.Second, 100*time.Millisecond, func() error {
		got, _ := h.m.Get(st.ID)
		if !strings.Contains(got.Detail, "holding") {
			return fmt.Errorf("detail %q", got.Detail)
		}
		return nil
	})
	proxy.Heal()
	got := brokertest.Collect(t, h.conns["rabbit2"], "/amq/queue/"+dq, 1000, 30*time.Second)
	dups := brokertest.CheckNoLoss(t, got, 1000)
	t.Logf("held 1000 messages while the path was cut; all arrived after healing (%d duplicates)", dups)
}

// no_path reject: the source broker's own dead-lettering takes the
// messages (a RabbitMQ dead-letter exchange on the source queue).
func TestIntegrationNoPathRejectUsesSourceDeadLettering(t *testing.T) {
	onEachDataPath(t, noPathRejectUsesSourceDeadLettering)
}

func noPathRejectUsesSourceDeadLettering(t *testing.T, dataPath string) {
	h := newHarnessOn(t, dataPath, "rabbit1", "rabbit2")
	proxy := h.proxiedDest(t)
	src, dlq, ex, dq := brokertest.UniqueName(t, "src"), brokertest.UniqueName(t, "dlq"), brokertest.UniqueName(t, "ex"), brokertest.UniqueName(t, "dq")
	cfg := h.brokers["rabbit1"].Config()
	brokertest.DeclareQueue(t, cfg, dlq)
	m := h.mgmt("rabbit1")
	if err := m.DeclareQueue(context.Background(), src, famqp.QueueArgs{Durable: true,
		Arguments: map[string]any{"x-dead-letter-exchange": "", "x-dead-letter-routing-key": dlq}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.DeleteQueue(context.Background(), src) })
	h.exchangeWithQueue("rabbit2", ex, "fanout", dq, "")
	st := h.add(routes.Spec{Kind: routes.KindQueue, Dest: "rabbit2", Src: "rabbit1", Exchange: ex, Queue: src, NoPath: []string{"reject"}})
	h.waitState(st.ID, routes.StateOperational)
	proxy.Cut()
	brokertest.SendAll(t, h.session("rabbit1"), "/amq/queue/"+src, 10, 5, brokertest.Numbered)
	got := brokertest.Collect(t, h.conns["rabbit1"], "/amq/queue/"+dlq, 5, 30*time.Second)
	brokertest.CheckNoLossFrom(t, got, 0, 5)
	brokertest.Eventually(t, 5*time.Second, 20*time.Millisecond, func() error {
		if s, _ := h.m.Get(st.ID); s.NoPath != 5 || s.Rejected != 5 || s.DeadLettered != 0 || s.InFlight != 0 {
			return fmt.Errorf("counters %+v", s.Counters)
		}
		return nil
	})
	h.waitNoPathOn(st.ID, dataPath, "rejecting at the source with fed:no-path")
}

// waitNoPathOn waits until route id carries out its no-path action
// (route list's detail says which: want) on dataPath: on the engine the
// detail says so.
func (h *harness) waitNoPathOn(id, dataPath, want string) {
	h.t.Helper()
	brokertest.Eventually(h.t, 10*time.Second, 20*time.Millisecond, func() error {
		st, _ := h.m.Get(id)
		onEngine := strings.HasSuffix(st.Detail, "; on the engine data path")
		if st.State != routes.StateWaiting || !strings.Contains(st.Detail, want) || onEngine != (dataPath == routes.DataPathEngine) {
			return fmt.Errorf("route %s on data path %q is %s with detail %q, want %q", id, dataPath, st.State, st.Detail, want)
		}
		return nil
	})
}

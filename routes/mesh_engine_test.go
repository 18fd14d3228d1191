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
	"github.com/fedrouter/fedrouter/links"
	"github.com/fedrouter/fedrouter/routes"
)

// squareNames name qpidd1..qpidd4 in the square's harness: the transit
// queues a link-state table makes the manager carry are named for the
// destination broker ("fedrouter.transit.hk2"), so these are this test's
// own, never another test's on the shared brokers.
var squareNames = map[string]string{"hk1": "qpidd1", "hk2": "qpidd2", "hk3": "qpidd3", "hk4": "qpidd4"}

// squareSides: hk1 - hk2 - hk3 - hk4 - hk1.
var squareSides = [][2]string{{"hk1", "hk2"}, {"hk2", "hk3"}, {"hk3", "hk4"}, {"hk4", "hk1"}}

// newSquareHarness is a route manager on dataPath attached to the four
// qpidd brokers under squareNames, with a link-state table of the square
// (cost 1 each way): its exchange routes are direct, each message judged
// by meshHop (qpidd's subscriptions are not shared: no fan-out). Its
// connections are not the test's; the one to hk2 goes through the
// returned proxy.
func newSquareHarness(t *testing.T, dataPath string) (*harness, *brokertest.FaultProxy) {
	t.Helper()
	h := newHarnessNamed(t, dataPath, squareNames)
	for _, b := range h.brokers {
		t.Cleanup(func() { deleteTransitQueues(t, b) }) // after the manager stopped (cleanups run last first)
	}
	h.m.Stop(context.Background())
	p, err := brokertest.NewFaultProxy(h.brokers["hk2"].Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() }) // its only error is the listener's close
	// The manager's connections are its own: the test's (h.conns) are
	// not cut, and a route's connection lost mid-stream does not end the
	// test's collecting (the routes recover; what it costs is counted).
	for alias, br := range h.brokers {
		cfg := br.Config()
		if alias == "hk2" {
			cfg.URLs = []string{"amqp://" + p.Addr()}
		}
		b := h.opts.Brokers[alias]
		b.Conn = brokertest.Dial(t, cfg, famqp.ConnOptions{Backoff: famqp.Backoff{Min: 100 * time.Millisecond, Max: 500 * time.Millisecond}})
		h.opts.Brokers[alias] = b
	}
	h.opts.RouterID, h.opts.Table = "h-enghook", newTable(meshPaths(t, squareSides...))
	h.start()
	return h, p
}

// deleteTransitQueues removes, on b, the transit queues the square's
// manager made.
func deleteTransitQueues(t *testing.T, b brokertest.Broker) {
	m := brokertest.QpidManagement(t, b.Config())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for alias := range squareNames {
		_ = m.Delete(ctx, "queue", links.TransitPrefix+alias) // absent when no forwarder attached: nothing to remove
	}
}

// Exchange routes both ways on every side of a square of qpidd brokers,
// on each data path: a message published at hk1 or hk3 reaches every
// broker's consumer exactly once. Each message crosses the three links
// of its origin's shortest-path tree and is dropped (looped) by the five
// other routes that see it: the two back to where it came from (its
// trace), the ones off its origin's tree. On the engine, a message whose
// trace is not a string is refused at the source (go-amqp reads it as
// no trace and forwards it).
func TestIntegrationMeshExchangeRoutesOnceQpidd(t *testing.T) {
	onEachDataPath(t, meshExchangeRoutesOnce)
}

func meshExchangeRoutesOnce(t *testing.T, dataPath string) {
	h, proxy := newSquareHarness(t, dataPath)
	ex := brokertest.UniqueName(t, "h-enghook-ex")
	queues := map[string]string{}
	for alias, b := range h.brokers {
		queues[alias] = brokertest.UniqueName(t, "h-enghook-q-"+alias)
		brokertest.DeclareExchangeQueue(t, b.Config(), ex, "topic", queues[alias], "orders.#")
	}
	var ids []string
	for _, side := range squareSides {
		for _, dir := range [][2]string{side, {side[1], side[0]}} {
			// Durable: the subscription keeps what arrives while the
			// route is down (the flap below).
			ids = append(ids, h.add(routes.Spec{Kind: routes.KindExchange, Src: dir[0], Dest: dir[1], Exchange: ex, Key: "orders.#",
				Credit: meshCredit, Durable: true}).ID)
		}
	}
	t.Cleanup(func() { // before the manager stops: deleting a route removes its subscription
		for _, id := range ids {
			if err := h.m.Delete(context.Background(), id); err != nil {
				t.Errorf("delete route %s: %v", id, err)
			}
		}
	})
	for _, id := range ids {
		h.waitDataPath(id, dataPath)
	}
	const n = 300
	brokertest.SendAll(t, h.session("hk1"), ex, 100, n, func(i int) *goamqp.Message { return keyed("orders.created", i) })
	brokertest.SendAll(t, h.session("hk3"), ex, 100, n, func(i int) *goamqp.Message { return keyed("orders.created", 1000+i) })
	for alias, q := range queues {
		got := brokertest.Collect(t, h.conns[alias], q, 2*n, 30*time.Second)
		brokertest.CheckNoLossFrom(t, got, 0, n)
		if dups := brokertest.CheckNoLossFrom(t, got, 1000, 1000+n); dups != 0 {
			t.Errorf("%s: %d duplicates", alias, dups)
		}
	}
	// Every copy is accounted for: 3 forwarded and 5 dropped per message,
	// none rejected, nothing left in flight.
	total := func() (c routes.Counters) {
		for _, id := range ids {
			st, _ := h.m.Get(id)
			c.Forwarded += st.Forwarded
			c.Looped += st.Looped
			c.Rejected += st.Rejected
			c.InFlight += st.InFlight
		}
		return c
	}
	brokertest.Eventually(t, 20*time.Second, 20*time.Millisecond, func() error {
		if c := total(); c.Forwarded != 3*2*n || c.Looped != 5*2*n || c.Rejected != 0 || c.InFlight != 0 {
			return fmt.Errorf("forwarded %d (want %d), looped %d (want %d), rejected %d, in flight %d", c.Forwarded, 3*2*n, c.Looped, 5*2*n, c.Rejected, c.InFlight)
		}
		return nil
	})
	t.Logf("%s: %d messages published at hk1 and hk3 reached each of 4 brokers once; routes forwarded %d, dropped %d", dataPath, 2*n, 3*2*n, 5*2*n)
	badTrace(t, h, ex, queues, dataPath, total().Forwarded)
	meshFlap(t, h, proxy, ex, queues, ids)
}

// meshCredit is each mesh route's credit: the window of duplicates a cut
// gives back (docs/multihop.md, "How many duplicates").
const meshCredit = 100

// meshFlap cuts the manager's connection to hk2 mid-stream and heals it
// once the routes on it have failed: of 3,000 messages published at hk1
// and at hk3 every broker gets each, none lost; duplicates at most the
// windows of the four routes the cut took (those with a side on hk2).
func meshFlap(t *testing.T, h *harness, proxy *brokertest.FaultProxy, ex string, queues map[string]string, ids []string) {
	t.Helper()
	const n, base = 3000, 10000
	brokertest.SendAll(t, h.session("hk1"), ex, 200, n/2, func(i int) *goamqp.Message { return keyed("orders.created", base+i) })
	proxy.Cut()
	brokertest.SendAll(t, h.session("hk3"), ex, 200, n, func(i int) *goamqp.Message { return keyed("orders.created", 2*base+i) })
	brokertest.SendAll(t, h.session("hk1"), ex, 200, n/2, func(i int) *goamqp.Message { return keyed("orders.created", base+n/2+i) })
	brokertest.Eventually(t, 20*time.Second, 20*time.Millisecond, func() error {
		for _, id := range ids {
			if st, _ := h.m.Get(id); (st.Spec.Src == "hk2" || st.Spec.Dest == "hk2") && st.State == routes.StateOperational {
				return fmt.Errorf("route %s still %s", st.Spec, st.State)
			}
		}
		return nil
	})
	proxy.Heal()
	const bound = 4 * meshCredit
	for alias, q := range queues {
		got := brokertest.Collect(t, h.conns[alias], q, 2*n, 60*time.Second)
		// What came after the last distinct one: drain the queue a moment.
		got = append(got, drainSeqs(t, h, alias, q)...)
		brokertest.CheckNoLossFrom(t, got, base, base+n)
		dups := brokertest.CheckNoLossFrom(t, got, 2*base, 2*base+n)
		t.Logf("flap, %s: published %d, received %d, lost 0, duplicated %d (bound %d)", alias, 2*n, len(got), dups, bound)
		if dups > bound {
			t.Errorf("%s: %d duplicates, more than the %d routes' windows the cut took (%d)", alias, dups, 4, bound)
		}
	}
}

// drainSeqs receives what is left in q until the routes have nothing in
// flight and the queue gave nothing for a moment.
func drainSeqs(t *testing.T, h *harness, alias, q string) []int64 {
	t.Helper()
	brokertest.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
		for _, st := range h.m.List() {
			if st.InFlight != 0 || st.State != routes.StateOperational {
				return fmt.Errorf("route %s %s, %d in flight", st.Spec, st.State, st.InFlight)
			}
		}
		return nil
	})
	s := h.session(alias)
	r := brokertest.OpenReceiver(t, s, famqp.LinkSpec{Address: q}, 100)
	var got []int64
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		msg, err := r.Receive(ctx)
		cancel()
		if err != nil {
			return got
		}
		if err := r.Accept(t.Context(), msg); err != nil {
			t.Fatal(err)
		}
		seq, _ := msg.Property("seq").(int64)
		got = append(got, seq)
	}
}

// badTrace publishes at hk1 one message whose trace is a number: on the
// engine both of hk1's routes refuse it (rejected at the source) and it
// reaches no other broker; go-amqp forwards it as if it had no trace.
func badTrace(t *testing.T, h *harness, ex string, queues map[string]string, dataPath string, forwarded uint64) {
	t.Helper()
	brokertest.SendAll(t, h.session("hk1"), ex, 1, 1, func(int) *goamqp.Message {
		m := keyed("orders.created", 5000)
		m.Annotations[links.AnnotationTrace] = int64(5) // beside x-opt-origin, which CheckSections looks for
		return m
	})
	crossed := []string{"hk1", "hk2", "hk3", "hk4"}
	if dataPath == routes.DataPathEngine {
		crossed = crossed[:1] // published there
		brokertest.Eventually(t, 20*time.Second, 20*time.Millisecond, func() error {
			var rejected, fwd uint64
			for _, st := range h.m.List() {
				rejected += st.Rejected
				fwd += st.Forwarded
				if st.Spec.Src == "hk1" && st.Rejected != 1 {
					return fmt.Errorf("route %s rejected %d, want 1", st.Spec, st.Rejected)
				}
			}
			if rejected != 2 || fwd != forwarded {
				return fmt.Errorf("rejected %d, want 2 (hk1's routes); forwarded %d more", rejected, fwd-forwarded)
			}
			return nil
		})
	}
	for _, alias := range crossed {
		if got := brokertest.Collect(t, h.conns[alias], queues[alias], 1, 20*time.Second); fmt.Sprint(got) != "[5000]" {
			t.Errorf("%s: got %v", alias, got)
		}
	}
}

// On the engine, a message whose trace is not a string, on a route that
// dead-letters (on_reject: dead-letter), goes to the dead-letter queue in
// its turn, said refused with amqp:invalid-field naming the annotation;
// the messages around it cross (a dynamic route: traceHop).
func TestIntegrationBadTraceDeadLetteredOnEngine(t *testing.T) {
	h := newHarnessOn(t, routes.DataPathEngine, "rabbit1", "rabbit2")
	ex, dq, dlq := brokertest.UniqueName(t, "h-enghook-ex"), brokertest.UniqueName(t, "h-enghook-dq"), brokertest.UniqueName(t, "h-enghook-dlq")
	h.exchangeWithQueue("rabbit1", ex, "topic", "", "")
	h.exchangeWithQueue("rabbit2", ex, "topic", dq, "k")
	brokertest.DeclareQueue(t, h.brokers["rabbit1"].Config(), dlq)
	st := h.add(routes.Spec{Kind: routes.KindDynamic, Src: "rabbit1", Dest: "rabbit2", Exchange: ex, OnReject: routes.DeadLetter, DeadLetterQueue: dlq})
	h.waitDemand(st.ID, `"k" (from rabbit2)`)
	h.waitDataPath(st.ID, routes.DataPathEngine)
	s := h.session("rabbit1")
	for i := range 7 {
		brokertest.SendAll(t, s, "/exchange/"+ex+"/k", 1, 1, func(int) *goamqp.Message {
			m := keyed("k", i)
			if i == 3 {
				m.Annotations[links.AnnotationTrace] = int64(5)
			}
			return m
		})
	}
	if got := brokertest.Collect(t, h.conns["rabbit2"], "/amq/queue/"+dq, 6, 30*time.Second); fmt.Sprint(got) != "[0 1 2 4 5 6]" {
		t.Fatalf("crossed %v, want all but 3", got)
	}
	r := brokertest.OpenReceiver(t, s, famqp.LinkSpec{Address: "/amq/queue/" + dlq}, 5)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	msg, err := r.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a := msg.GoAMQP().Annotations
	if reason, _ := a[links.AnnotationReason].(string); !strings.HasPrefix(reason, "annotation "+links.AnnotationTrace+": want a string") ||
		a[links.AnnotationCondition] != "amqp:invalid-field" || msg.Property("seq") != int64(3) {
		t.Fatalf("dead-lettered seq %v with annotations %v", msg.Property("seq"), a)
	}
	if err := r.Accept(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
	brokertest.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error {
		if g, _ := h.m.Get(st.ID); g.Forwarded != 6 || g.DeadLettered != 1 || g.Rejected != 0 || g.InFlight != 0 {
			return fmt.Errorf("counters %+v", g.Counters)
		}
		return nil
	})
}

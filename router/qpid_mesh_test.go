package router

import (
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

// Multi-hop on strict qpidd brokers (issue 19, items 3 and 4): a chain
//
//	qpidd1 ── qX ── qpidd2 ── qY ── qpidd4   (qY to qpidd4 through a fault proxy)
//
// Routes on qX from qpidd1 to qpidd4 go through transit on qpidd1 and
// qpidd2; an application's request enters at qpidd1's ingress. The
// routers' own queues are created durable on brokers that refuse unknown
// addresses, their control traffic stays on the control exchange (an
// application queue bound to amq.fanout sees none), and, with qpidd4 cut
// off, each no-path action does what it says: hold, dead-letter, reject.
func TestIntegrationQpidMultiHopStrictBrokers(t *testing.T) {
	for _, dp := range []string{"engine"} {
		t.Run(dp, func(t *testing.T) { qpidMultiHopStrictBrokers(t, "data_path: "+dp+"\n") })
	}
}

func qpidMultiHopStrictBrokers(t *testing.T, dataPath string) {
	qHold, qDL, qRJ := brokertest.UniqueName(t, "hold"), brokertest.UniqueName(t, "dl"), brokertest.UniqueName(t, "rj")
	dlq, ex, dq := brokertest.UniqueName(t, "dlq"), brokertest.UniqueName(t, "ex"), brokertest.UniqueName(t, "dq")
	m := brokersOf(t, "qpidd1", "qpidd2", "qpidd4")
	q1, q2, q4 := m.brokers["qpidd1"].Config(), m.brokers["qpidd2"].Config(), m.brokers["qpidd4"].Config()
	for _, q := range []string{qHold, qDL, qRJ, dlq} {
		brokertest.DeclareQueue(t, q1, q)
	}
	brokertest.DeclareExchangeQueue(t, q4, ex, "fanout", dq, "")
	app := brokertest.UniqueName(t, "appfanout") // an application's queue on amq.fanout
	brokertest.DeclareQueue(t, q2, app)
	if err := brokertest.QpidManagement(t, q2).Create(t.Context(), "binding", "amq.fanout/"+app+"/", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	proxy, err := brokertest.NewFaultProxy(m.brokers["qpidd4"].Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() }) // its only error is the listener's close
	m.proxies["qY"] = proxy
	route := func(q, extra string) string {
		return fmt.Sprintf("  - {kind: queue, src: qpidd1, dest: qpidd4, exchange: %s, queue: %s%s}\n", ex, q, extra)
	}
	m.start("qX", "qpidd1", "qpidd2", dataPath+"routes:\n"+route(qHold, "")+route(qDL, ", no_path: [dead-letter], dead_letter_queue: "+dlq)+
		route(qRJ, ", no_path: [reject]"))
	m.start("qY", "qpidd2", "qpidd4", dataPath)
	ids := map[string]string{}
	for _, q := range []string{qHold, qDL, qRJ} {
		ids[q] = routes.Spec{Kind: routes.KindQueue, Src: "qpidd1", Dest: "qpidd4", Exchange: ex, Queue: q}.ID()
		m.waitRoute("qX", ids[q], func(st routes.Status) error {
			if err := operational(st); err != nil {
				return err
			}
			if !strings.Contains(st.Detail, "qpidd1 > qpidd2 > qpidd4") {
				return fmt.Errorf("detail %q", st.Detail)
			}
			return nil
		})
	}
	s1 := m.session("qpidd1")
	dst := brokertest.Dial(t, q4, famqp.ConnOptions{})

	// Connected: a route and an ingress request cross two hops. A request
	// for an exchange qpidd4 lacks goes first: it is dead-lettered where
	// the last hop is taken (qpidd2), and holds up nothing behind it.
	const n = 500
	marker := brokertest.UniqueName(t, "marker")
	dead := m.deadLetters("qpidd2", marker)
	waitTransit(t, m.routers["qX"], "qpidd1", "") // the ingress of qpidd1 is served
	brokertest.SendAll(t, s1, links.IngressQueue, 1, 1, func(int) *goamqp.Message {
		msg := brokertest.Numbered(-1)
		msg.ApplicationProperties[links.PropDestBroker] = "qpidd4"
		msg.ApplicationProperties[links.PropDestAddress] = "exchange:" + brokertest.UniqueName(t, "missing")
		msg.ApplicationProperties["ingress-test"] = marker
		msg.ApplicationProperties["case"] = "missing"
		return msg
	})
	brokertest.SendAll(t, s1, qHold, 100, n, brokertest.Numbered)
	brokertest.SendAll(t, s1, links.IngressQueue, 10, 10, func(i int) *goamqp.Message {
		msg := brokertest.Numbered(n + i)
		msg.ApplicationProperties[links.PropDestBroker] = "qpidd4"
		msg.ApplicationProperties[links.PropDestAddress] = "exchange:" + ex
		return msg
	})
	got := brokertest.Collect(t, dst, dq, n+10, 60*time.Second)
	dups := brokertest.CheckNoLoss(t, got, n+10)
	t.Logf("qpidd1 > qpidd2 > qpidd4: route %d + ingress 10 sent, %d received, lost 0, duplicated %d", n, len(got), dups)
	if dups != 0 {
		t.Errorf("%d duplicates without a fault", dups)
	}
	refused := dead.wait(t, 1, 30*time.Second)["missing"]
	if cond, _ := refused.Annotations[links.AnnotationCondition].(string); cond != links.CondNoAddress {
		t.Errorf("request for a missing exchange dead-lettered with %v", refused.Annotations)
	}
	checkQpidOwnQueues(t, q1, links.IngressQueue, links.RouterDeadLetterQueue, links.TransitPrefix+"qpidd4")
	checkQpidOwnQueues(t, q2, links.TransitPrefix+"qpidd4")
	// Control traffic flowed (the routes took a two-hop path) and none of
	// it reached the application's amq.fanout queue.
	if q, err := brokertest.QpidManagement(t, q2).Queue(t.Context(), app); err != nil || q["msgTotalEnqueues"] != uint64(0) {
		t.Errorf("application queue on amq.fanout: %v, %v messages enqueued, want 0", err, q["msgTotalEnqueues"])
	}

	checkQpidNoPath(t, m, ids, strings.TrimSuffix(strings.TrimPrefix(dataPath, "data_path: "), "\n"), qHold, qDL, qRJ, dlq, dq)
}

// checkQpidNoPath cuts qpidd4 off, sends to the hold, dead-letter and
// reject routes, checks each action, heals and checks the held ones arrive.
func checkQpidNoPath(t *testing.T, m *mesh, ids map[string]string, dataPath, qHold, qDL, qRJ, dlq, dq string) {
	t.Helper()
	m.proxies["qY"].Cut()
	for _, q := range []string{qHold, qDL, qRJ} {
		m.waitRoute("qX", ids[q], func(st routes.Status) error {
			if st.State != routes.StateWaiting || !strings.Contains(st.Detail, "no path") {
				return fmt.Errorf("%s: %s (%s)", st.Spec, st.State, st.Detail)
			}
			return nil
		})
	}
	const n = 200
	s1 := m.session("qpidd1")
	brokertest.SendAll(t, s1, qHold, 100, n, func(i int) *goamqp.Message { return brokertest.Numbered(2000 + i) })
	brokertest.SendAll(t, s1, qDL, 100, n, func(i int) *goamqp.Message { return brokertest.Numbered(3000 + i) })
	brokertest.SendAll(t, s1, qRJ, 100, n, func(i int) *goamqp.Message { return brokertest.Numbered(4000 + i) })
	dead := m.receiveN("qpidd1", dlq, n, 30*time.Second)
	for _, msg := range dead {
		seq, _ := msg.ApplicationProperties["seq"].(int64)
		reason, _ := msg.Annotations["x-fedrouter-reason"].(string)
		if seq < 3000 || seq >= 3000+n || !strings.Contains(reason, "no-path") {
			t.Fatalf("dead-lettered message %d: %v", seq, msg.Annotations)
		}
	}
	m.waitRoute("qX", ids[qRJ], func(st routes.Status) error {
		if st.NoPath < n || st.Rejected < n {
			return fmt.Errorf("reject route: no-path count %d, rejected %d, of %d", st.NoPath, st.Rejected, n)
		}
		return noPathOn(st, dataPath)
	})
	m.waitRoute("qX", ids[qDL], func(st routes.Status) error {
		if st.DeadLettered < n {
			return fmt.Errorf("dead-letter route: dead-lettered %d of %d", st.DeadLettered, n)
		}
		return noPathOn(st, dataPath)
	})
	if st, _ := m.routers["qX"].routes.Get(ids[qHold]); st.NoPath != 0 {
		t.Errorf("holding route gave up messages while partitioned: %+v", st.Counters)
	}
	m.proxies["qY"].Heal()
	got := brokertest.Collect(t, brokertest.Dial(t, m.brokers["qpidd4"].Config(), famqp.ConnOptions{}), dq, n, 90*time.Second)
	for _, s := range got {
		if s < 2000 || s >= 2000+n {
			t.Fatalf("message %d arrived after healing: only the held ones may", s)
		}
	}
	dups := brokertest.CheckNoLossFrom(t, got, 2000, 2000+n)
	t.Logf("no path on strict qpidd: hold %d sent, %d received after healing, lost 0, duplicated %d; dead-letter %d of %d with reason no-path; reject %d counted",
		n, len(got), dups, len(dead), n, n)
}

// checkQpidOwnQueues: the routers' queues exist on a strict broker,
// durable, neither auto-deleted nor exclusive.
func checkQpidOwnQueues(t *testing.T, cfg famqp.BrokerConfig, names ...string) {
	t.Helper()
	qm := brokertest.QpidManagement(t, cfg)
	for _, name := range names {
		q, err := qm.Queue(t.Context(), name)
		if err != nil {
			t.Errorf("%s: %v", cfg.Name, err)
			continue
		}
		if !q.Bool("durable") || q.Bool("autoDelete") || q.Bool("exclusive") {
			t.Errorf("%s %s: durable=%v autoDelete=%v exclusive=%v", cfg.Name, name, q["durable"], q["autoDelete"], q["exclusive"])
		}
	}
}

// The reroute no-path action on strict qpidd brokers: a triangle
//
//	qpidd2 ── rA (fault proxy) ── qpidd4
//	   │                            │
//	   rB ───────── qpidd1 ──────── rC
//
// rA's direct route qpidd2 → qpidd4 has no_path [reroute, hold]: when its
// side to qpidd4 is cut, it goes on through transit over qpidd1, nothing
// lost.
func TestIntegrationQpidReroute(t *testing.T) {
	for _, dp := range []string{"engine"} {
		t.Run(dp, func(t *testing.T) { qpidReroute(t, "data_path: "+dp+"\n") })
	}
}

func qpidReroute(t *testing.T, dataPath string) {
	src, ex, dq := brokertest.UniqueName(t, "rr"), brokertest.UniqueName(t, "ex"), brokertest.UniqueName(t, "dq")
	m := brokersOf(t, "qpidd1", "qpidd2", "qpidd4")
	brokertest.DeclareQueue(t, m.brokers["qpidd2"].Config(), src)
	brokertest.DeclareExchangeQueue(t, m.brokers["qpidd4"].Config(), ex, "fanout", dq, "")
	proxy, err := brokertest.NewFaultProxy(m.brokers["qpidd4"].Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() }) // its only error is the listener's close
	m.proxies["rA"] = proxy
	m.start("rA", "qpidd2", "qpidd4", dataPath+fmt.Sprintf("routes:\n  - {kind: queue, src: qpidd2, dest: qpidd4, exchange: %s, queue: %s, no_path: [reroute, hold]}\n", ex, src))
	m.start("rB", "qpidd2", "qpidd1", dataPath)
	m.start("rC", "qpidd1", "qpidd4", dataPath)
	id := routes.Spec{Kind: routes.KindQueue, Src: "qpidd2", Dest: "qpidd4", Exchange: ex, Queue: src}.ID()
	m.waitRoute("rA", id, operational)
	s2 := m.session("qpidd2")
	const n = 500
	col := m.collect("qpidd4", dq)
	brokertest.SendAll(t, s2, src, 100, n, brokertest.Numbered)
	col.wait(t, n, 30*time.Second)

	proxy.Cut()
	st := m.waitRoute("rA", id, rerouting)
	brokertest.SendAll(t, s2, src, 100, n, func(i int) *goamqp.Message { return brokertest.Numbered(n + i) })
	col.wait(t, 2*n, 60*time.Second)
	arrivals := col.snapshot()
	got := seqs(arrivals)
	dups := brokertest.CheckNoLoss(t, got, 2*n)
	for _, a := range arrivals {
		if a.seq >= n && !strings.Contains(a.trace, "qpidd1") {
			t.Fatalf("message %d sent after the cut came by %q, not over qpidd1", a.seq, a.trace)
		}
	}
	if st, _ := m.routers["rA"].routes.Get(id); st.Rerouted < n {
		t.Errorf("rerouted count %d, want >= %d", st.Rerouted, n)
	}
	t.Logf("reroute on strict qpidd (%s): sent %d (%d after the cut), received %d, lost 0, duplicated %d", st.Detail, 2*n, n, len(got), dups)
}

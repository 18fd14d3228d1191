package routes_test

import (
	"fmt"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"

	famqp "github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/links"
	"github.com/fedrouter/fedrouter/routes"
)

// A queue route into a named queue at the destination (Spec.DestQueue,
// as a global destination's flows have, here without their move count)
// on RabbitMQ and qpidd: every message arrives in order, the counters
// move, and on the engine data path route list says it runs there.
func TestIntegrationQueueRouteToDestQueue(t *testing.T) {
	for _, pair := range [][2]string{{"rabbit1", "rabbit2"}, {"qpidd1", "qpidd2"}} {
		t.Run(pair[0]+"-"+pair[1], func(t *testing.T) {
			onEachDataPath(t, func(t *testing.T, dataPath string) { queueRouteToDestQueue(t, dataPath, pair[0], pair[1]) })
		})
	}
}

func queueRouteToDestQueue(t *testing.T, dataPath, srcName, dstName string) {
	const n = 2000
	h := newHarnessOn(t, dataPath, srcName, dstName)
	src, dq := brokertest.UniqueName(t, "h-engdl-src"), brokertest.UniqueName(t, "h-engdl-dq")
	brokertest.DeclareQueue(t, h.brokers[srcName].Config(), src)
	brokertest.DeclareQueue(t, h.brokers[dstName].Config(), dq)
	st := h.add(routes.Spec{Kind: routes.KindQueue, Dest: dstName, Src: srcName, Queue: src, DestQueue: dq})
	h.waitDataPath(st.ID, dataPath)
	brokertest.SendAll(t, h.session(srcName), queueAddress(h.brokers[srcName], src), 500, n, brokertest.Numbered)
	got := brokertest.Collect(t, h.conns[dstName], queueAddress(h.brokers[dstName], dq), n, 30*time.Second)
	brokertest.CheckInOrderOnce(t, got, n)
	brokertest.Eventually(t, 10*time.Second, 50*time.Millisecond, func() error {
		s, _ := h.m.Get(st.ID)
		if s.Forwarded != n || s.Sent != n || s.InFlight != 0 {
			return fmt.Errorf("counters %+v", s.Counters)
		}
		return nil
	})
}

// An exchange route out of qpidd with a wildcard key, on each data path:
// qpidd subscribes the route with the legacy topic filter (encoded by
// the engine itself there), so only matching subjects cross, and the
// subscription sends unsettled (asked for: qpidd sends settled
// otherwise).
func TestIntegrationExchangeRouteKeyQpidd(t *testing.T) {
	onEachDataPath(t, func(t *testing.T, dataPath string) {
		h := newHarnessOn(t, dataPath, "qpidd1", "qpidd2")
		ex, dq := brokertest.UniqueName(t, "h-engdl-ex"), brokertest.UniqueName(t, "h-engdl-dq")
		brokertest.DeclareExchangeQueue(t, h.brokers["qpidd1"].Config(), ex, "topic", "", "")
		brokertest.DeclareExchangeQueue(t, h.brokers["qpidd2"].Config(), ex, "topic", dq, "#")
		st := h.add(routes.Spec{Kind: routes.KindExchange, Dest: "qpidd2", Src: "qpidd1", Exchange: ex, Key: "eu.#"})
		h.waitDataPath(st.ID, dataPath)
		s := h.session("qpidd1")
		for i, key := range []string{"us.orders", "eu.orders", "us.refunds", "eu.refunds"} {
			brokertest.SendAll(t, s, ex, 1, 1, func(int) *goamqp.Message {
				m := brokertest.Numbered(i)
				m.Properties.Subject = &key
				m.ApplicationProperties["subject"] = key
				return m
			})
		}
		got := brokertest.Collect(t, h.conns["qpidd2"], dq, 2, 20*time.Second)
		if fmt.Sprint(got) != "[1 3]" {
			t.Fatalf("crossed: %v, want only the eu.# messages [1 3]", got)
		}
		brokertest.Eventually(t, 10*time.Second, 50*time.Millisecond, func() error {
			if g, _ := h.m.Get(st.ID); g.Forwarded != 2 || g.Sent != 2 || g.InFlight != 0 {
				return fmt.Errorf("counters %+v", g.Counters)
			}
			return nil
		})
	})
}

// An exchange route out of a qpidd fanout exchange into a qpidd topic
// exchange with a literal key, on each data path: every message crosses
// (a fanout ignores the key), whatever subject it came with or none, and
// the destination routes it by the key because the route's sender gives
// it the key as its subject (on the engine, the properties rewritten in
// the message's bytes); the other sections arrive as they were sent.
func TestIntegrationExchangeRouteLiteralKeyQpidd(t *testing.T) {
	const n = 200
	onEachDataPath(t, func(t *testing.T, dataPath string) {
		h := newHarnessOn(t, dataPath, "qpidd1", "qpidd2")
		ex, dq := brokertest.UniqueName(t, "h-enginelinks-ex"), brokertest.UniqueName(t, "h-enginelinks-dq")
		brokertest.DeclareExchangeQueue(t, h.brokers["qpidd1"].Config(), ex, "fanout", "", "")
		brokertest.DeclareExchangeQueue(t, h.brokers["qpidd2"].Config(), ex, "topic", dq, "eu.orders")
		st := h.add(routes.Spec{Kind: routes.KindExchange, Dest: "qpidd2", Src: "qpidd1", Exchange: ex, Key: "eu.orders"})
		h.waitDataPath(st.ID, dataPath)
		brokertest.SendAll(t, h.session("qpidd1"), ex, 50, n, func(i int) *goamqp.Message {
			m := brokertest.Numbered(i)
			m.ApplicationProperties["subject"] = "eu.orders" // what it must arrive with
			switch i % 3 {
			case 0:
				m.Properties.Subject = nil
			case 1:
				other := "us.refunds"
				m.Properties.Subject = &other
			}
			return m
		})
		got := brokertest.Collect(t, h.conns["qpidd2"], dq, n, 30*time.Second)
		brokertest.CheckInOrderOnce(t, got, n)
		brokertest.Eventually(t, 10*time.Second, 50*time.Millisecond, func() error {
			if g, _ := h.m.Get(st.ID); g.Forwarded != n || g.Sent != n || g.InFlight != 0 {
				return fmt.Errorf("counters %+v", g.Counters)
			}
			return nil
		})
	})
}

// A transit queue's forwarder on the last hop of messages in transit for
// a qpidd topic exchange with a literal key (exchange:EX:news.eu), on
// each data path: the sender it attaches for that address gives every
// message the key as its subject (on the engine: links.EngineResolver's
// sender, the properties rewritten in the bytes), so qpidd routes each
// into the queue bound with it, whatever subject it came with.
func TestIntegrationTransitIntoLiteralKeyQpidd(t *testing.T) {
	const n = 200
	onEachDataPath(t, func(t *testing.T, dataPath string) {
		bs := brokertest.Require(t, "qpidd1", "qpidd2")
		src, dst := bs[0], bs[1]
		q := brokertest.UniqueName(t, "h-enginelinks-transit")
		ex, dq := brokertest.UniqueName(t, "h-enginelinks-ex"), brokertest.UniqueName(t, "h-enginelinks-dq")
		brokertest.DeclareQueue(t, src.Config(), q)
		brokertest.DeclareExchangeQueue(t, dst.Config(), ex, "topic", dq, "news.eu")
		sc, dc := brokertest.Dial(t, src.Config(), famqp.ConnOptions{}), brokertest.Dial(t, dst.Config(), famqp.ConnOptions{})
		sp, dp := brokertest.Profile(t, src.Config()), brokertest.Profile(t, dst.Config())
		brokertest.SendAll(t, brokertest.Session(t, sc), q, 50, n, func(i int) *goamqp.Message {
			m := brokertest.Numbered(i) // subject orders.created: nothing is bound to it
			m.ApplicationProperties["subject"] = "news.eu"
			m.Annotations[links.AnnotationDestBroker] = dst.Name
			m.Annotations[links.AnnotationDestAddress] = "exchange:" + ex + ":news.eu"
			m.Annotations[links.AnnotationOrigin], m.Annotations[links.AnnotationHops] = "elsewhere", int64(1)
			return m
		})
		spec, err := sp.Source(t.Context(), famqp.Node{Kind: famqp.Queue, Name: q}, famqp.Subscription{})
		if err != nil {
			t.Fatal(err)
		}
		cfg := links.Config{Window: 100, OutcomeTimeout: time.Minute, Limit: n}
		var c links.Counters
		err = engineHop(t.Context(), sc, dc, spec, sp, dp, src.Name, dst.Name, cfg, &c)
		if err != nil || c.Forwarded.Load() != n {
			t.Fatalf("%s: forwarded %d of %d (rejected %d): %v", dataPath, c.Forwarded.Load(), n, c.Rejected.Load(), err)
		}
		got := brokertest.Collect(t, dc, dq, n, 30*time.Second)
		brokertest.CheckInOrderOnce(t, got, n)
	})
}

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

// Two exchange routes of one group leave rabbit1 (to rabbit2 and to
// rabbit3): they share one durable queue there with a single active
// consumer, so each message is taken once, copied to both brokers, in
// order; the queue stays while a route of the group uses it and goes
// with the last. Another router's advertised route (rabbit3 > rabbit4)
// widens the reach: copies for rabbit4 wait in rabbit1's transit queue
// for it (no router here carries it). On each data path: on the engine,
// one forwarder copies each message to the two direct senders and the
// transit queue.
func TestIntegrationFanoutSharedQueue(t *testing.T) {
	onEachDataPath(t, fanoutSharedQueue)
}

func fanoutSharedQueue(t *testing.T, dataPath string) {
	h := newHarnessOn(t, dataPath, "rabbit1", "rabbit2", "rabbit3")
	h.m.Stop(context.Background())
	paths := meshPaths(t, [2]string{"rabbit1", "rabbit2"}, [2]string{"rabbit1", "rabbit3"}, [2]string{"rabbit2", "rabbit3"})
	ex, key := brokertest.UniqueName(t, "fanout"), "orders.#"
	h.opts.Table = newTable(paths, routes.ExchangeEdge{Src: "rabbit3", Dest: "rabbit4", Exchange: ex, Key: key})
	h.opts.TableGrace = 10 * time.Millisecond
	h.start()
	mg := h.mgmt("rabbit1")
	shared := routes.FanoutPrefix + ex + "." + routes.ExchangeEdge{Exchange: ex, Key: key}.Group()
	transit4 := links.TransitPrefix + "rabbit4"
	// Counted exactly below: what an earlier test left there must go.
	if err := mg.DeleteQueue(t.Context(), transit4); err != nil {
		t.Fatalf("delete %s on rabbit1: %v", transit4, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = mg.DeleteQueue(ctx, shared) // gone already when the test passed
		// The copies for rabbit4 must not reach later tests' routers
		// (fedrouter declares the queue again when it needs it).
		if err := mg.DeleteQueue(ctx, transit4); err != nil {
			t.Errorf("delete %s on rabbit1: %v", transit4, err)
		}
	})
	brokertest.DeclareExchangeQueue(t, h.brokers["rabbit1"].Config(), ex, "topic", "", "")
	got := map[string]string{}
	for _, b := range []string{"rabbit2", "rabbit3"} {
		got[b] = brokertest.UniqueName(t, "fanout-"+b)
		brokertest.DeclareExchangeQueue(t, h.brokers[b].Config(), ex, "topic", got[b], key)
	}
	to2 := h.add(routes.Spec{Kind: routes.KindExchange, Src: "rabbit1", Dest: "rabbit2", Exchange: ex, Key: key})
	to3 := h.add(routes.Spec{Kind: routes.KindExchange, Src: "rabbit1", Dest: "rabbit3", Exchange: ex, Key: key})
	for _, id := range []string{to2.ID, to3.ID} {
		brokertest.Eventually(t, 30*time.Second, 10*time.Millisecond, func() error {
			st, _ := h.m.Get(id)
			if st.State != routes.StateOperational || !strings.Contains(st.Detail, "fan-out from rabbit1 to rabbit2, rabbit3, rabbit4") ||
				dataPath == routes.DataPathEngine && !strings.Contains(st.Detail, "forwarding on the engine data path") {
				return fmt.Errorf("%s: %s (%s)", id, st.State, st.Detail)
			}
			return nil
		})
	}
	brokertest.Eventually(t, 30*time.Second, 100*time.Millisecond, func() error {
		q, err := mg.Queue(context.Background(), shared)
		if err != nil {
			return err
		}
		if !q.Durable || q.Arguments["x-single-active-consumer"] != true || q.Consumers != 2 {
			return fmt.Errorf("shared queue: durable %v, arguments %v, %d consumers (want 2)", q.Durable, q.Arguments, q.Consumers)
		}
		return nil
	})

	const n = 1000
	brokertest.SendAll(t, h.session("rabbit1"), "/exchange/"+ex+"/orders.created", 100, n, brokertest.Numbered)
	for _, b := range []string{"rabbit2", "rabbit3"} {
		seqs := brokertest.Collect(t, h.conns[b], "/amq/queue/"+got[b], n, 30*time.Second)
		brokertest.CheckInOrderOnce(t, seqs, n)
	}
	brokertest.Eventually(t, 30*time.Second, 100*time.Millisecond, func() error {
		q, err := mg.Queue(context.Background(), transit4)
		if err != nil || q.Messages != n {
			return fmt.Errorf("rabbit1's transit queue for rabbit4: %d messages, want %d (%v)", q.Messages, n, err)
		}
		return nil
	})
	var forwarded, copies, viaTransit uint64
	for _, id := range []string{to2.ID, to3.ID} {
		st, _ := h.m.Get(id)
		forwarded, copies, viaTransit = forwarded+st.Forwarded, copies+st.Copies, viaTransit+st.CopiesViaTransit
	}
	if forwarded != n || copies != 3*n || viaTransit != n {
		t.Errorf("routes took %d messages (want %d), sent %d copies (want %d), %d by transit (want %d)", forwarded, n, copies, 3*n, viaTransit, n)
	}
	t.Logf("%d messages taken once at rabbit1, %d copies (%d by transit): rabbit2 and rabbit3 got each once, in order", forwarded, copies, viaTransit)

	// Deleting one route keeps the queue for the other, whose group now
	// reaches rabbit3 and, by the advertised route, rabbit4.
	if err := h.m.Delete(context.Background(), to2.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := mg.Queue(context.Background(), shared); err != nil {
		t.Fatalf("the shared queue went with one of its two routes: %v", err)
	}
	brokertest.SendAll(t, h.session("rabbit1"), "/exchange/"+ex+"/orders.created", 100, 10, func(i int) *goamqp.Message { return brokertest.Numbered(n + i) })
	seqs := brokertest.Collect(t, h.conns["rabbit3"], "/amq/queue/"+got["rabbit3"], 10, 30*time.Second)
	brokertest.CheckNoLossFrom(t, seqs, n, n+10)
	if err := h.m.Delete(context.Background(), to3.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := mg.Queue(context.Background(), shared); err == nil {
		t.Fatal("the shared queue stayed after the group's last route at rabbit1 was deleted")
	}
	// rabbit2 got nothing after its route went.
	s := h.session("rabbit2")
	r := brokertest.OpenReceiver(t, s, famqp.LinkSpec{Address: "/amq/queue/" + got["rabbit2"]}, 10)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if msg, err := r.Receive(ctx); err == nil {
		t.Fatalf("rabbit2 got a message after its route was deleted: %v", msg.GoAMQP().ApplicationProperties)
	}
}

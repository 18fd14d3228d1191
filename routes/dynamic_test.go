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

// keyed is a message published with routing key key, which it also
// carries as its subject: the AMQP 1.0 convention, and what the
// destination routes by (RabbitMQ does not tell a consumer the key).
func keyed(key string, seq int) *goamqp.Message {
	m := brokertest.Numbered(seq)
	m.Properties.Subject = &key
	m.ApplicationProperties["subject"] = key // for brokertest.CheckSections
	return m
}

func (h *harness) publish(broker, ex, key string, seq int) {
	h.t.Helper()
	brokertest.SendAll(h.t, h.session(broker), "/exchange/"+ex+"/"+key, 1, 1, func(int) *goamqp.Message { return keyed(key, seq) })
}

// queueDepth polls a RabbitMQ queue until it holds want messages and
// stays there for a moment (management statistics lag by up to 5 s).
func (h *harness) expectDepth(broker, q string, want int) {
	h.t.Helper()
	m := h.mgmt(broker)
	brokertest.Eventually(h.t, 20*time.Second, 200*time.Millisecond, func() error {
		info, err := m.Queue(context.Background(), q)
		if err != nil {
			return err
		}
		if info.Messages != want {
			return fmt.Errorf("%s on %s holds %d messages, want %d", q, broker, info.Messages, want)
		}
		return nil
	})
}

func (h *harness) waitDemand(id string, want string) time.Duration {
	h.t.Helper()
	began := time.Now()
	brokertest.Eventually(h.t, 20*time.Second, 20*time.Millisecond, func() error {
		st, _ := h.m.Get(id)
		if got := strings.Join(st.Demand, " "); got != want {
			return fmt.Errorf("route demand %q, want %q (state %s %s)", got, want, st.State, st.LastError)
		}
		return nil
	})
	return time.Since(began)
}

func TestIntegrationDynamicRouteFollowsBindings(t *testing.T) {
	onEachDataPath(t, dynamicRouteFollowsBindings)
}

func dynamicRouteFollowsBindings(t *testing.T, dataPath string) {
	h := newHarnessOn(t, dataPath, "rabbit1", "rabbit2")
	ex, q := brokertest.UniqueName(t, "ex"), brokertest.UniqueName(t, "q")
	h.exchangeWithQueue("rabbit1", ex, "topic", "", "")
	h.exchangeWithQueue("rabbit2", ex, "topic", q, "") // bound with "", which topic keys never match...
	m := h.mgmt("rabbit2")
	ctx := context.Background()
	unbindAll(t, m, ex, q) // ...and unbound at once: no demand at the start
	st := h.add(routes.Spec{Kind: routes.KindDynamic, Dest: "rabbit2", Src: "rabbit1", Exchange: ex})
	h.waitDataPath(st.ID, dataPath)
	h.waitDemand(st.ID, "")
	// The harness's nodes run rabbitmq_event_exchange: events, not polling
	// (said once the event link is attached, after the route is Operational).
	brokertest.Eventually(t, 20*time.Second, 20*time.Millisecond, func() error {
		if s, _ := h.m.Get(st.ID); !strings.HasPrefix(s.DemandSource, "binding events") {
			return fmt.Errorf("demand source %q, want binding events", s.DemandSource)
		}
		return nil
	})

	h.publish("rabbit1", ex, "eu.orders", 1) // no binding, no traffic
	if err := m.Bind(ctx, ex, q, "eu.*"); err != nil {
		t.Fatal(err)
	}
	took := h.waitDemand(st.ID, `"eu.*" (from rabbit2)`)
	t.Logf("binding added at the destination: the route followed in %s", took.Round(time.Millisecond))
	h.publish("rabbit1", ex, "eu.orders", 2)
	h.publish("rabbit1", ex, "us.orders", 3)
	got := brokertest.Collect(t, h.conns["rabbit2"], "/amq/queue/"+q, 1, 20*time.Second)
	if fmt.Sprint(got) != "[2]" {
		t.Fatalf("crossed %v, want [2] (1 was published before the binding, 3 does not match)", got)
	}
	unbindAll(t, m, ex, q)
	took = h.waitDemand(st.ID, "")
	t.Logf("binding removed at the destination: the route followed in %s", took.Round(time.Millisecond))
	h.publish("rabbit1", ex, "eu.orders", 4)
	h.expectDepth("rabbit2", q, 0)
	if s, _ := h.m.Get(st.ID); s.Forwarded != 1 {
		t.Fatalf("forwarded %d, want 1", s.Forwarded)
	}
}

func unbindAll(t *testing.T, m *famqp.RabbitManagement, ex, q string) {
	t.Helper()
	bs, err := m.Bindings(context.Background(), ex, q)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bs {
		if err := m.Unbind(context.Background(), ex, q, b.PropertiesKey); err != nil {
			t.Fatal(err)
		}
	}
}

// Dynamic routes both ways between two brokers, a consumer on each: a
// message published on either side reaches both consumers once, and
// nothing comes back.
func TestIntegrationDynamicBothWaysNoEcho(t *testing.T) { onEachDataPath(t, dynamicBothWaysNoEcho) }

func dynamicBothWaysNoEcho(t *testing.T, dataPath string) {
	h := newHarnessOn(t, dataPath, "rabbit1", "rabbit2")
	ex, qa, qb := brokertest.UniqueName(t, "ex"), brokertest.UniqueName(t, "qa"), brokertest.UniqueName(t, "qb")
	h.exchangeWithQueue("rabbit1", ex, "topic", qa, "k")
	h.exchangeWithQueue("rabbit2", ex, "topic", qb, "k")
	ab := h.add(routes.Spec{Kind: routes.KindDynamic, Dest: "rabbit2", Src: "rabbit1", Exchange: ex})
	ba := h.add(routes.Spec{Kind: routes.KindDynamic, Dest: "rabbit1", Src: "rabbit2", Exchange: ex})
	// Each follows only the other side's local consumer, not the demand
	// the other route propagated from its own source.
	h.waitDemand(ab.ID, `"k" (from rabbit2)`)
	h.waitDemand(ba.ID, `"k" (from rabbit1)`)
	h.waitDataPath(ab.ID, dataPath)
	h.waitDataPath(ba.ID, dataPath)

	h.publish("rabbit1", ex, "k", 1)
	h.publish("rabbit2", ex, "k", 2)
	brokertest.Eventually(t, 20*time.Second, 50*time.Millisecond, func() error {
		a, _ := h.m.Get(ab.ID)
		b, _ := h.m.Get(ba.ID)
		if a.Forwarded != 1 || b.Forwarded != 1 {
			return fmt.Errorf("forwarded a->b %d, b->a %d", a.Forwarded, b.Forwarded)
		}
		return nil
	})
	h.expectDepth("rabbit1", qa, 2)
	h.expectDepth("rabbit2", qb, 2)
	// The copy that reached the other side also entered the reverse
	// route's subscription there (bound for this side's consumer); its
	// trace names this side, so it was dropped, not sent back.
	a, _ := h.m.Get(ab.ID)
	b, _ := h.m.Get(ba.ID)
	if a.Forwarded != 1 || b.Forwarded != 1 || a.Looped != 1 || b.Looped != 1 {
		t.Fatalf("a->b %+v, b->a %+v: want one forwarded and one dropped by its trace each way", a.Counters, b.Counters)
	}
}

// An exchange-to-exchange binding is demand only with divert_bindings, and
// only while the exchange it leads to has a queue bound.
func TestIntegrationDynamicDivertBindings(t *testing.T) {
	h := newHarness(t, "rabbit1", "rabbit2")
	ex, inner, q := brokertest.UniqueName(t, "ex"), brokertest.UniqueName(t, "inner"), brokertest.UniqueName(t, "q")
	h.exchangeWithQueue("rabbit1", ex, "topic", "", "")
	h.exchangeWithQueue("rabbit2", ex, "topic", "", "")
	h.exchangeWithQueue("rabbit2", inner, "fanout", q, "")
	m := h.mgmt("rabbit2")
	if err := m.BindExchange(context.Background(), ex, inner, "k"); err != nil {
		t.Fatal(err)
	}
	off := h.add(routes.Spec{Kind: routes.KindDynamic, Dest: "rabbit2", Src: "rabbit1", Exchange: ex})
	h.waitState(off.ID, routes.StateOperational)
	h.waitDemand(off.ID, "")
	if err := h.m.Delete(context.Background(), off.ID); err != nil {
		t.Fatal(err)
	}
	on := h.add(routes.Spec{Kind: routes.KindDynamic, Dest: "rabbit2", Src: "rabbit1", Exchange: ex, DivertBindings: true})
	h.waitDemand(on.ID, `"k" (from rabbit2)`)
	h.waitState(on.ID, routes.StateOperational)
	h.publish("rabbit1", ex, "k", 1)
	if got := brokertest.Collect(t, h.conns["rabbit2"], "/amq/queue/"+q, 1, 20*time.Second); fmt.Sprint(got) != "[1]" {
		t.Fatalf("got %v", got)
	}
	unbindAll(t, m, inner, q) // the queue behind the divert goes: so does the demand
	h.waitDemand(on.ID, "")
	h.publish("rabbit1", ex, "k", 2) // and the flow stops
	brokertest.Eventually(t, 5*time.Second, 100*time.Millisecond, func() error {
		info, err := h.mgmt("rabbit1").Queue(context.Background(), "fedrouter.test."+on.ID)
		if err != nil {
			return err
		}
		if info.Messages != 0 {
			return fmt.Errorf("%d messages in the subscription", info.Messages)
		}
		return nil
	})
	if s, _ := h.m.Get(on.ID); s.Forwarded != 1 || s.Sent != 1 {
		t.Fatalf("after the demand went: sent %d forwarded %d, want 1 (the first message only)", s.Sent, s.Forwarded)
	}
}

// Three brokers in a line with dynamic routes towards the far end and a
// consumer only there: a message published at the near end crosses the
// middle once.
func TestIntegrationDynamicLineCrossesMiddleOnce(t *testing.T) {
	onEachDataPath(t, dynamicLineCrossesMiddleOnce)
}

func dynamicLineCrossesMiddleOnce(t *testing.T, dataPath string) {
	h := newHarnessOn(t, dataPath, "rabbit1", "rabbit2", "rabbit3")
	ex, q := brokertest.UniqueName(t, "ex"), brokertest.UniqueName(t, "q")
	h.exchangeWithQueue("rabbit1", ex, "topic", "", "")
	h.exchangeWithQueue("rabbit2", ex, "topic", "", "")
	h.exchangeWithQueue("rabbit3", ex, "topic", q, "orders.#")
	ab := h.add(routes.Spec{Kind: routes.KindDynamic, Dest: "rabbit2", Src: "rabbit1", Exchange: ex})
	bc := h.add(routes.Spec{Kind: routes.KindDynamic, Dest: "rabbit3", Src: "rabbit2", Exchange: ex})
	cb := h.add(routes.Spec{Kind: routes.KindDynamic, Dest: "rabbit2", Src: "rabbit3", Exchange: ex})
	h.waitDemand(bc.ID, `"orders.#" (from rabbit3)`)
	h.waitDemand(ab.ID, `"orders.#" (from rabbit3,rabbit2)`)
	h.waitDemand(cb.ID, "") // rabbit2's only demand came from rabbit3
	h.waitDataPath(ab.ID, dataPath)
	h.waitDataPath(bc.ID, dataPath)
	h.publish("rabbit1", ex, "orders.eu", 1)
	if got := brokertest.Collect(t, h.conns["rabbit3"], "/amq/queue/"+q, 1, 20*time.Second); fmt.Sprint(got) != "[1]" {
		t.Fatalf("got %v", got)
	}
	h.expectDepth("rabbit3", q, 0)
	// The count follows the destination's outcome, which may come after
	// the consumer has the message.
	for _, id := range []string{ab.ID, bc.ID} {
		brokertest.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error {
			if s, _ := h.m.Get(id); s.Forwarded != 1 {
				return fmt.Errorf("route %s forwarded %d, want 1", s.Spec, s.Forwarded)
			}
			return nil
		})
	}
}

// A broker that cannot tell its bindings (the Proton broker) gets them from
// the configuration: a dynamic route to it follows the declared ones.
func TestIntegrationDynamicStaticDemand(t *testing.T) {
	h := newHarness(t, "rabbit1", "proton1")
	ex := brokertest.UniqueName(t, "ex") // an exchange at rabbit1, an address at proton1
	h.exchangeWithQueue("rabbit1", ex, "topic", "", "")
	h.m.Stop(context.Background())
	p := h.opts.Brokers["proton1"]
	p.StaticDemand = map[string][]string{ex: {"eu.#"}}
	h.opts.Brokers["proton1"] = p
	h.start()
	st := h.add(routes.Spec{Kind: routes.KindDynamic, Dest: "proton1", Src: "rabbit1", Exchange: ex})
	h.waitDemand(st.ID, `"eu.#" (from proton1)`)
	h.waitState(st.ID, routes.StateOperational)
	h.publish("rabbit1", ex, "us.orders", 1)
	h.publish("rabbit1", ex, "eu.orders", 2)
	if got := brokertest.Collect(t, h.conns["proton1"], ex, 1, 20*time.Second); fmt.Sprint(got) != "[2]" {
		t.Fatalf("got %v, want [2]", got)
	}
	if s, _ := h.m.Get(st.ID); s.Forwarded != 1 || !strings.HasPrefix(s.DemandSource, "poll") {
		t.Fatalf("forwarded %d, demand source %q", s.Forwarded, s.DemandSource)
	}
}

// A ring of three brokers with dynamic routes both ways round (a mesh
// with two paths between any two brokers) and a consumer on rabbit1: with
// shortest paths known, a message published on rabbit2 or rabbit3
// reaches it once, not once per path.
func TestIntegrationDynamicMeshDeliversOnce(t *testing.T) { onEachDataPath(t, dynamicMeshDeliversOnce) }

func dynamicMeshDeliversOnce(t *testing.T, dataPath string) {
	h := newHarnessOn(t, dataPath, "rabbit1", "rabbit2", "rabbit3")
	names := []string{"rabbit1", "rabbit2", "rabbit3"}
	h.m.Stop(context.Background())
	table := newTable(meshPaths(t, [2]string{"rabbit1", "rabbit2"}, [2]string{"rabbit1", "rabbit3"}, [2]string{"rabbit2", "rabbit3"}))
	table.hopsOnly = true
	h.opts.Table = table
	h.start()
	ex, q := brokertest.UniqueName(t, "ex"), brokertest.UniqueName(t, "q")
	for _, b := range names {
		queue := ""
		if b == "rabbit1" {
			queue = q
		}
		h.exchangeWithQueue(b, ex, "topic", queue, "k")
	}
	ids := map[string]string{}
	for _, a := range names {
		for _, b := range names {
			if a != b {
				ids[a+">"+b] = h.add(routes.Spec{Kind: routes.KindDynamic, Dest: b, Src: a, Exchange: ex}).ID
			}
		}
	}
	// Only the direct routes to rabbit1 follow its consumer.
	h.waitDemand(ids["rabbit2>rabbit1"], `"k" (from rabbit1)`)
	h.waitDemand(ids["rabbit3>rabbit1"], `"k" (from rabbit1)`)
	for _, id := range []string{ids["rabbit2>rabbit3"], ids["rabbit3>rabbit2"], ids["rabbit1>rabbit2"], ids["rabbit1>rabbit3"]} {
		h.waitDemand(id, "")
	}
	for _, id := range ids {
		h.waitDataPath(id, dataPath)
	}
	h.publish("rabbit2", ex, "k", 1)
	h.publish("rabbit3", ex, "k", 2)
	h.publish("rabbit1", ex, "k", 3)
	got := brokertest.Collect(t, h.conns["rabbit1"], "/amq/queue/"+q, 3, 20*time.Second)
	if dups := brokertest.CheckNoLossFrom(t, got, 1, 4); dups != 0 {
		t.Fatalf("%d duplicates: %v", dups, got)
	}
	h.expectDepth("rabbit1", q, 0)
}

// A dynamic route whose binding-event link is lost polls instead, and is
// still deleted promptly: the demand follower waits for the event
// watcher it started, not for a channel it forgot when the link failed
// (it did: a route list or a reload deleting such a route hung).
func TestIntegrationDynamicEventLinkLostThenDeleted(t *testing.T) {
	h := newHarness(t, "rabbit1", "rabbit2")
	ex := brokertest.UniqueName(t, "ex")
	h.exchangeWithQueue("rabbit1", ex, "topic", "", "")
	h.exchangeWithQueue("rabbit2", ex, "topic", "", "")
	st := h.add(routes.Spec{Kind: routes.KindDynamic, Dest: "rabbit2", Src: "rabbit1", Exchange: ex})
	h.waitState(st.ID, routes.StateOperational)
	demandSource := func(prefix string) {
		t.Helper()
		brokertest.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
			if s, _ := h.m.Get(st.ID); !strings.HasPrefix(s.DemandSource, prefix) {
				return fmt.Errorf("demand source %q, want %s", s.DemandSource, prefix)
			}
			return nil
		})
	}
	demandSource("binding events")
	// Deleting the events queue detaches the route's receiver from it
	// (deleted again while the route still says events: management's
	// statistics lag, and a delete before its consumer shows may miss).
	events, mg := "fedrouter."+h.opts.RouterID+"."+st.ID+".events", h.mgmt("rabbit2")
	brokertest.Eventually(t, 60*time.Second, 200*time.Millisecond, func() error {
		if s, _ := h.m.Get(st.ID); strings.HasPrefix(s.DemandSource, "poll") {
			return nil
		}
		if qi, err := mg.Queue(t.Context(), events); err != nil || qi.Consumers == 0 {
			return fmt.Errorf("events queue %s: %+v, %v: want the route consuming", events, qi, err)
		}
		if err := mg.DeleteQueue(t.Context(), events); err != nil {
			return fmt.Errorf("delete %s: %w", events, err)
		}
		return fmt.Errorf("deleted %s; the route still follows binding events", events)
	})
	deleted := make(chan error, 1)
	go func() { deleted <- h.m.Delete(context.Background(), st.ID) }() // ends when Delete returns
	select {
	case err := <-deleted:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Delete of the route did not return in a minute")
	}
	if _, ok := h.m.Get(st.ID); ok {
		t.Fatal("the route is still listed after Delete")
	}
}

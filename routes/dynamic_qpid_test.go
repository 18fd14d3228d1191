package routes_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/routes"
)

// A dynamic route to a strict qpidd (issue 19): the destination's demand
// is its exchange's bindings, read through QMF and polled; a binding added
// or removed there changes what crosses from RabbitMQ.
func TestIntegrationDynamicToQpidd(t *testing.T) {
	h := newHarness(t, "rabbit1", "qpidd2")
	ex, q := brokertest.UniqueName(t, "ex"), brokertest.UniqueName(t, "q")
	h.exchangeWithQueue("rabbit1", ex, "topic", "", "")
	qcfg := h.brokers["qpidd2"].Config()
	brokertest.DeclareExchangeQueue(t, qcfg, ex, "topic", q, "eu.#")
	st := h.add(routes.Spec{Kind: routes.KindDynamic, Dest: "qpidd2", Src: "rabbit1", Exchange: ex})
	h.waitDemand(st.ID, `"eu.#" (from qpidd2)`)
	h.waitState(st.ID, routes.StateOperational)
	h.publish("rabbit1", ex, "us.orders", 1)
	h.publish("rabbit1", ex, "eu.orders", 2)
	if got := brokertest.Collect(t, h.conns["qpidd2"], q, 1, 20*time.Second); fmt.Sprint(got) != "[2]" {
		t.Fatalf("got %v, want [2]", got)
	}

	qm := brokertest.QpidManagement(t, qcfg)
	if err := qm.Create(t.Context(), "binding", ex+"/"+q+"/us.#", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	took := h.waitDemand(st.ID, `"eu.#" (from qpidd2) "us.#" (from qpidd2)`)
	h.publish("rabbit1", ex, "us.orders", 3)
	if got := brokertest.Collect(t, h.conns["qpidd2"], q, 1, 20*time.Second); fmt.Sprint(got) != "[3]" {
		t.Fatalf("after binding us.#: got %v, want [3]", got)
	}
	if err := qm.Delete(t.Context(), "binding", ex+"/"+q+"/us.#"); err != nil {
		t.Fatal(err)
	}
	h.waitDemand(st.ID, `"eu.#" (from qpidd2)`)
	h.publish("rabbit1", ex, "us.orders", 4)
	h.publish("rabbit1", ex, "eu.orders", 5)
	if got := brokertest.Collect(t, h.conns["qpidd2"], q, 1, 20*time.Second); fmt.Sprint(got) != "[5]" {
		t.Fatalf("after unbinding us.#: got %v, want [5]", got)
	}
	s, _ := h.m.Get(st.ID)
	t.Logf("dynamic rabbit1 -> qpidd2: demand followed by %s (binding added, seen in %s); forwarded %d of 5 published, the 2 without demand not",
		s.DemandSource, took.Round(time.Millisecond), s.Forwarded)
}

package routes_test

import (
	"context"
	"testing"

	goamqp "github.com/Azure/go-amqp"

	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/routes"
)

// measureHookRoute is measureRoute for a route with a per-message hook:
// "dynamic" (traceHop; RabbitMQ sources: demand needs their bindings) or
// "mesh" (an exchange route under a link-state table of the two
// brokers, meshHop; qpidd: RabbitMQ's would fan out), and "exchange",
// the same exchange route without a table (no hook: what the hook adds
// is mesh against exchange). Its subscription
// only collects once the route has made it, so the route is made
// (durable), its manager stopped, the subscription filled through the
// source exchange, and the same route started again on a new manager,
// as after a router restart: the clock runs from there.
func measureHookRoute(t *testing.T, kind, dataPath string, ack int, src, dst string, size, n int) figure {
	as := map[string]string{"hk1": src, "hk2": dst}
	h := newHarnessNamed(t, dataPath, as)
	ex, dq := brokertest.UniqueName(t, "h-enghook-ex"), brokertest.UniqueName(t, "h-enghook-dq")
	brokertest.DeclareExchangeQueue(t, h.brokers["hk1"].Config(), ex, "topic", "", "")
	brokertest.DeclareExchangeQueue(t, h.brokers["hk2"].Config(), ex, "topic", dq, "k.#")
	spec := routes.Spec{Kind: routes.KindDynamic, Src: "hk1", Dest: "hk2", Exchange: ex, Durable: true, Ack: ack}
	pub := "/exchange/" + ex + "/k.x"
	if kind != "dynamic" {
		// A wildcard: a literal key on qpidd would also rewrite every
		// message's subject, a cost this measure leaves out.
		spec.Kind, spec.Key, pub = routes.KindExchange, "k.#", ex
	}
	if kind == "mesh" {
		h.m.Stop(context.Background())
		h.opts.Table = newTable(meshPaths(t, [2]string{"hk1", "hk2"}))
		for _, b := range h.brokers {
			t.Cleanup(func() { deleteTransitQueues(t, b) })
		}
		h.start()
	}
	st := h.add(spec)
	h.waitState(st.ID, routes.StateOperational)
	if kind == "dynamic" {
		h.waitDemand(st.ID, `"k.#" (from hk2)`)
	}
	h.m.Stop(context.Background()) // the durable subscription stays
	body := make([]byte, size)
	brokertest.SendAll(t, h.session("hk1"), pub, 500, n, func(int) *goamqp.Message {
		k := "k.x"
		return &goamqp.Message{Properties: &goamqp.MessageProperties{Subject: &k}, Data: [][]byte{body}}
	})
	h.start()
	f := timeRoute(t, h, spec, dataPath, n)
	h.m.Stop(context.Background()) // its transit forwarders too: the next run measures its own alone
	return f
}

package main

// fedrouter processes forwarding on the engine data path (data_path:
// engine, docs/engine.md "Routes on the engine"), issue 25.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/routes"
)

// A durable queue route on the engine with --ack N, the router killed
// with -9 in the middle of a stream and started again: every message
// arrives, and no more come twice than the source can have had
// delivered and unsettled — the credit plus the N settlements a
// disposition may wait for. (On RabbitMQ, which adds a flow's
// link-credit to the transfers still in flight, that holds because the
// engine's receivers there grant only once the credit is spent:
// amqp.LinkSpec.EngineReceiver.)
func TestRouterKilledMidStreamAckN(t *testing.T) {
	t.Parallel() // each pair and N a parallel subtest
	for _, pair := range [][2]string{{"rabbit1", "rabbit2"}, {"qpidd1", "qpidd2"}} {
		for _, ack := range []int{1, 100, 1000} {
			t.Run(fmt.Sprintf("%s to %s ack %d", pair[0], pair[1], ack), func(t *testing.T) {
				parallelE2E(t)
				bs := brokertest.Require(t, pair[0], pair[1])
				engineAckKill9(t, bs[0], bs[1], ack)
			})
		}
	}
}

func engineAckKill9(t *testing.T, src, dst brokertest.Broker, ack int) {
	const n, credit = 20000, 200
	q, ex, dq := brokertest.UniqueName(t, "src"), brokertest.UniqueName(t, "ex"), brokertest.UniqueName(t, "dq")
	brokertest.DeclareQueue(t, src.Config(), q)
	brokertest.DeclareExchangeQueue(t, dst.Config(), ex, "fanout", dq, "")

	config := writeConfig(t, t.TempDir(), "eng", "data_path: engine\n", src, dst)
	p := startRouter(t, config)
	p.mustCLI("queue", "add", "-d", "--credit", fmt.Sprint(credit), "--ack", fmt.Sprint(ack), dst.Name, src.Name, ex, q)
	waitRoute(t, p, onEngine)

	// Published in batches while the route forwards, the kill coming
	// between two of them once a quarter crossed: a router faster than
	// the publisher (qpidd on an idle machine) is still killed
	// mid-stream, with the rest published while it is down.
	pub := brokertest.Session(t, brokertest.Dial(t, src.Config(), amqp.ConnOptions{}))
	const batch = 1000
	var atKill routes.Status
	killed := false
	for i := 0; i < n; i += batch {
		brokertest.SendAll(t, pub, queueAddr(src, q), 500, batch, func(j int) *goamqp.Message { return brokertest.Numbered(i + j) })
		if killed {
			continue
		}
		if st := waitRoute(t, p, func(routes.Status) error { return nil }); st.Forwarded >= n/4 {
			atKill, killed = p.kill9After(n/4), true
		}
	}
	if !killed {
		atKill = p.kill9After(n / 4)
	}
	if atKill.Forwarded >= n {
		t.Fatalf("the kill came after all %d had crossed: nothing was in flight", n)
	}

	p = startRouter(t, config)
	waitRoute(t, p, func(st routes.Status) error {
		if st.Spec.Ack != ack || !st.Spec.Durable {
			return fmt.Errorf("restored route %+v", st.Spec)
		}
		return onEngine(st)
	})
	got := brokertest.Collect(t, brokertest.Dial(t, dst.Config(), amqp.ConnOptions{}), queueAddr(dst, dq), n, 90*time.Second)
	dups := brokertest.CheckNoLoss(t, got, n)
	bound := ack + credit
	t.Logf("%s -> %s queue route on the engine, ack %d, router kill -9 with %d forwarded: sent %d, received %d, lost 0, duplicates %d (bound %d; ack + credit = %d)",
		src.Name, dst.Name, ack, atKill.Forwarded, n, len(got), dups, bound, ack+credit)
	if dups > bound {
		t.Fatalf("%d duplicates, more than the bound %d", dups, bound)
	}
	waitRoute(t, p, func(st routes.Status) error {
		if st.InFlight != 0 {
			return fmt.Errorf("%d in flight after the stream", st.InFlight)
		}
		return nil
	})
}

// onEngine: the route is Operational on the engine data path.
func onEngine(st routes.Status) error {
	if err := operational(st); err != nil {
		return err
	}
	if !strings.Contains(st.Detail, "engine") {
		return fmt.Errorf("Operational, not on the engine (detail %q)", st.Detail)
	}
	return nil
}

package main

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/routes"
)

// A router with stall_after 2s, as an operator sees it: a route to a
// destination exchange not created yet says what it waits for in
// `route list`; created, the route starts by itself; its source — a
// single-active-consumer queue another consumer holds — has messages
// that never reach it: `route list` and /metrics show it Stalled until
// the other consumer goes and it forwards.
func TestRouterShowsWaitingAndStalledRoutes(t *testing.T) {
	parallelE2E(t)
	bs := brokertest.Require(t, "rabbit1", "rabbit2")
	src, ex, dq := brokertest.UniqueName(t, "h-stall-src"), brokertest.UniqueName(t, "h-stall-ex"), brokertest.UniqueName(t, "h-stall-dq")
	m1, err := amqp.NewRabbitManagement(bs[0].Config())
	if err != nil {
		t.Fatal(err)
	}
	defer m1.Close()
	if err := m1.DeclareQueue(t.Context(), src, amqp.QueueArgs{Durable: true, Arguments: map[string]any{"x-single-active-consumer": true}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m1.DeleteQueue(context.Background(), src) })
	c1 := brokertest.Dial(t, bs[0].Config(), amqp.ConnOptions{})
	brokertest.SendAll(t, brokertest.Session(t, c1), "/amq/queue/"+src, 50, 50, brokertest.Numbered)
	holder := brokertest.Session(t, c1)
	hr := brokertest.OpenReceiver(t, holder, amqp.LinkSpec{Address: "/amq/queue/" + src}, 1)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	_, err = hr.Receive(ctx) // the active consumer sits on one message
	cancel()
	if err != nil {
		t.Fatal(err)
	}

	config := pairConfig(t, t.TempDir(), "e2e-stall", bs)
	f, err := os.OpenFile(config, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("stall_after: 2s\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	p := startRouter(t, config)
	if out, code := p.cli("queue", "add", "r2", "r1", ex, src); code != 0 {
		t.Fatalf("queue add: exit %d: %s", code, out)
	}
	waiting := "waiting for exchange " + ex + " at broker r2"
	var out string
	brokertest.Eventually(t, 30*time.Second, 100*time.Millisecond, func() error {
		if out, _ = p.cli("route", "list"); !regexp.MustCompile(`\sWaiting\s.*` + regexp.QuoteMeta(waiting)).MatchString(out) {
			return fmt.Errorf("route list does not show the route %s:\n%s", waiting, out)
		}
		return nil
	})
	t.Logf("route list:\n%s", out)
	brokertest.DeclareExchangeQueue(t, bs[1].Config(), ex, "fanout", dq, "")
	waitRoute(t, p, operational)

	brokertest.Eventually(t, 60*time.Second, 100*time.Millisecond, func() error {
		out, _ = p.cli("route", "list")
		if !regexp.MustCompile(`\sStalled\s.*the source holds \d+ messages and none arrives`).MatchString(out) {
			return fmt.Errorf("route list does not show the route Stalled with why:\n%s", out)
		}
		return p.metrics(`fedrouter_routes{state="Stalled"} 1`, `fedrouter_route_stalled{dest="r2",route=`)
	})

	t.Logf("route list:\n%s", out)
	amqp.CloseSessionContext(t.Context(), holder)
	waitRoute(t, p, func(st routes.Status) error {
		if st.State != routes.StateOperational || st.Forwarded < 50 {
			return fmt.Errorf("state %s, %d forwarded", st.State, st.Forwarded)
		}
		return nil
	})
	if err := p.metrics(`fedrouter_routes{state="Stalled"} 0`); err != nil {
		t.Fatal(err)
	}
	got := brokertest.Collect(t, brokertest.Dial(t, bs[1].Config(), amqp.ConnOptions{}), "/amq/queue/"+dq, 50, 30*time.Second)
	brokertest.CheckNoLoss(t, got, 50)
}

// metrics says which of want /metrics lacks.
func (p *routerProc) metrics(want ...string) error {
	p.t.Helper()
	out, err := p.api().Metrics(p.t.Context())
	if err != nil {
		return err
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			return fmt.Errorf("/metrics lacks %s", w)
		}
	}
	return nil
}

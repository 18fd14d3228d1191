package routes_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/routes"
	"github.com/fedrouter/fedrouter/topology"
)

// testTable is a link-state table that never changes: its paths (nil: it
// has not filled, the router is alone) and the exchange routes other
// routers advertise. With hopsOnly it answers next hops from its paths
// but shows none, so that no transit forwarder starts: a test of dynamic
// routes on the shared brokers must not take their transit queues.
type testTable struct {
	paths      *topology.Paths
	hopsOnly   bool
	advertised []routes.ExchangeEdge
	never      chan struct{}
}

// newTable returns a table holding paths and advertised edges.
func newTable(paths *topology.Paths, advertised ...routes.ExchangeEdge) *testTable {
	return &testTable{paths: paths, advertised: advertised, never: make(chan struct{})}
}

// meshPaths returns the shortest paths over links (both ways, cost 1).
func meshPaths(t *testing.T, links ...[2]string) *topology.Paths {
	t.Helper()
	var edges []topology.Edge
	for _, l := range links {
		edges = append(edges, topology.Edge{From: l[0], To: l[1], Cost: 1, Up: true}, topology.Edge{From: l[1], To: l[0], Cost: 1, Up: true})
	}
	paths, err := topology.Compute(edges)
	if err != nil {
		t.Fatal(err)
	}
	return paths
}

func (tt *testTable) Paths() (*topology.Paths, <-chan struct{}) {
	if tt.hopsOnly {
		return nil, tt.never
	}
	return tt.paths, tt.never
}

func (tt *testTable) NextHop(src, dst string) (string, bool) {
	if tt.paths == nil {
		return "", false
	}
	rt, ok := tt.paths.Route(src, dst)
	return rt.NextHop, ok
}

func (tt *testTable) Advertised() []routes.ExchangeEdge { return tt.advertised }

// Known: a broker on the table's paths was named by an advertisement.
func (tt *testTable) Known(b string) bool {
	return tt.paths != nil && slices.Contains(tt.paths.Brokers(), b)
}

// A route to a broker the router is not attached to, with no_path
// [dead-letter]: while the link-state table is young it holds (no path yet
// is not "no path": the other routers' advertisements are still coming),
// and only after the grace (from the router's start) does it dead-letter,
// with the reason.
func TestIntegrationRemoteRouteHoldsWhileTheTableFills(t *testing.T) {
	h := newHarness(t, "rabbit1")
	h.m.Stop(context.Background())
	const grace = 2 * time.Second
	h.opts.Table, h.opts.TableGrace = newTable(nil), grace
	started := time.Now()
	h.start()
	src, dlq := brokertest.UniqueName(t, "remote-src"), brokertest.UniqueName(t, "remote-dlq")
	cfg := h.brokers["rabbit1"].Config()
	brokertest.DeclareQueue(t, cfg, src)
	brokertest.DeclareQueue(t, cfg, dlq)
	st := h.add(routes.Spec{Kind: routes.KindQueue, Src: "rabbit1", Dest: "faraway", Exchange: "orders", Queue: src,
		NoPath: []string{"dead-letter"}, DeadLetterQueue: dlq, Force: true}) // faraway: named by no one
	brokertest.SendAll(t, h.session("rabbit1"), "/amq/queue/"+src, 10, 20, brokertest.Numbered)
	brokertest.Eventually(t, grace/2, 10*time.Millisecond, func() error {
		got, _ := h.m.Get(st.ID)
		if got.State != routes.StateWaiting || !strings.Contains(got.Detail, "still filling") {
			return fmt.Errorf("%s (%s)", got.State, got.Detail)
		}
		return nil
	})
	if got, _ := h.m.Get(st.ID); got.NoPath != 0 {
		t.Fatalf("dead-lettered %d while the table was young", got.NoPath)
	}
	s := h.session("rabbit1")
	r := brokertest.OpenReceiver(t, s, amqp.LinkSpec{Address: "/amq/queue/" + dlq}, 20)
	for i := 0; i < 20; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		msg, err := r.Receive(ctx)
		cancel()
		if err != nil {
			t.Fatalf("dead-letter %d: %v", i, err)
		}
		if i == 0 && time.Since(started) < grace {
			t.Fatalf("dead-lettered %s after the router started, before the %s grace", time.Since(started), grace)
		}
		if reason, _ := msg.GoAMQP().Annotations["x-fedrouter-reason"].(string); !strings.Contains(reason, "no-path") ||
			msg.GoAMQP().Annotations["x-fedrouter-dest-broker"] != "faraway" || msg.GoAMQP().Annotations["x-fedrouter-dest-address"] != "exchange:orders" {
			t.Fatalf("dead-lettered with %v", msg.GoAMQP().Annotations)
		}
		if err := r.Accept(context.Background(), msg); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := h.m.Get(st.ID)
	if got.NoPath != 20 || !strings.Contains(got.Detail, "no path to broker faraway in the link-state table") {
		t.Errorf("after the grace: no_path %d, detail %q", got.NoPath, got.Detail)
	}
}

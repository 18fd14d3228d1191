package router

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"
	"github.com/rs/zerolog"

	famqp "github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/topology"
)

// Issue 17, finding 3: the last signed advertisement of a dead router was
// accepted again after each expiry, for ever. Here a router's real
// advertisement is captured off the control exchange, the router stops,
// its entry expires at the other router, and the captured bytes are
// published again on the control exchange, as anyone who can read and
// publish there could: the other router refuses them (replayed), and its
// table does not bring the dead router's broker back. The router then
// restarts (a new instance): taken at once; the captured advertisement of
// its previous instance is refused then too (stale).
func TestIntegrationControlReplayRefused(t *testing.T) {
	m := brokersOf(t, "rabbit1", "rabbit2", "rabbit3")
	tap := m.tap("rabbit2")
	m.start("rA", "rabbit1", "rabbit2", "")
	m.start("rB", "rabbit2", "rabbit3", "") // rabbit3 is known to rA only through rB
	rA := m.routers["rA"]
	waitPath(t, rA, "rabbit1", "rabbit3", true)

	captured := tap.capture(t, "rB")
	m.routers["rB"].Stop()
	waitPath(t, rA, "rabbit1", "rabbit3", false)
	waitRouter(t, rA, "rB", false)

	// The replays: each reaches rA's link-state core, which refuses it
	// (the counter says so), and none is taken.
	const replays = 20
	attacker := brokertest.Session(t, brokertest.Dial(t, m.brokers["rabbit2"].Config(), famqp.ConnOptions{}))
	before := topoOf(t, rA).Counters
	replay(t, rA, attacker, "/exchange/"+m.control, captured.data, replays, func(k topology.Counters) uint64 { return k.Replayed })
	if k := topoOf(t, rA).Counters; k.Accepted != before.Accepted || holds(t, rA, "rB") || rA.table.Load().Reachable("rabbit1", "rabbit3") {
		t.Fatalf("the replayed advertisement of the dead router was taken (%d accepted)", k.Accepted-before.Accepted)
	}

	// rB restarts: a new instance, taken at once (well within one max age).
	restarted := time.Now()
	m.start("rB", "rabbit2", "rabbit3", "")
	waitPath(t, rA, "rabbit1", "rabbit3", true)
	rv := waitRouter(t, rA, "rB", true)
	if rv.Instance <= captured.lsa.Instance {
		t.Fatalf("rA holds rB's instance %d, not the restart's (the captured one is %d)", rv.Instance, captured.lsa.Instance)
	}
	// Not held back by the memory of the previous instance, nor by the
	// window of its last advertisement (MaxAge + MaxSkew = 33 s here).
	if took := time.Since(restarted); took > 15*time.Second {
		t.Fatalf("the restarted router was taken only %s after its start", took.Round(time.Millisecond))
	} else {
		t.Logf("the restarted router was taken %s after its start", took.Round(time.Millisecond))
	}

	// The previous instance's advertisement is refused now as stale.
	replay(t, rA, attacker, "/exchange/"+m.control, captured.data, replays, func(k topology.Counters) uint64 { return k.Stale })
	if rv := waitRouter(t, rA, "rB", true); rv.Instance == captured.lsa.Instance {
		t.Fatal("the previous instance's advertisement replaced the restart's")
	}
}

// replay publishes data n times on addr, one at a time: each waits until
// r's counter of the refusal expected has moved, so that each copy reaches
// the link-state core (copies waiting together would coalesce in the
// transport's slot for their router).
func replay(t *testing.T, r *Router, s *famqp.Session, addr string, data []byte, n int, refused func(topology.Counters) uint64) {
	t.Helper()
	for i := range n {
		before := refused(topoOf(t, r).Counters)
		brokertest.SendAll(t, s, addr, 1, 1, func(int) *goamqp.Message { return goamqp.NewMessage(data) })
		brokertest.Eventually(t, 20*time.Second, 10*time.Millisecond, func() error {
			if refused(topoOf(t, r).Counters) == before {
				return fmt.Errorf("replay %d of %d not refused", i+1, n)
			}
			return nil
		})
	}
}

// controlTap is a listener on a control exchange, as anyone allowed to
// read it could be: a Control of its own, with the network's secret to
// tell advertisements apart.
type controlTap struct {
	c *Control
}

// tap subscribes to the mesh's control exchange on broker.
func (m *mesh) tap(broker string) *controlTap {
	m.t.Helper()
	b := m.brokers[broker]
	conns := map[string]famqp.Broker{broker: {Conn: brokertest.Dial(m.t, b.Config(), famqp.ConnOptions{}), Profile: brokertest.Profile(m.t, b.Config())}}
	c := NewControl(conns, ControlOptions{RouterID: "tap", Address: m.control,
		Backoff: famqp.Backoff{Min: 100 * time.Millisecond, Max: time.Second}, Log: zerolog.New(zerolog.NewTestWriter(m.t))})
	c.SetSecret([]byte(meshSecret))
	c.Start(m.t.Context())
	m.t.Cleanup(c.Stop)
	m.t.Cleanup(func() {
		mg, err := famqp.NewRabbitManagement(b.Config())
		if err != nil {
			return
		}
		defer mg.Close()
		_ = mg.DeleteQueue(context.Background(), m.control+".tap") // best effort: a unique name, expiring anyway
	})
	return &controlTap{c: c}
}

type capturedLSA struct {
	lsa  topology.LSA
	data []byte
}

// capture waits for an advertisement of router and returns its bytes.
func (tp *controlTap) capture(t *testing.T, router string) capturedLSA {
	t.Helper()
	var got capturedLSA
	brokertest.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
		for _, in := range drain(tp.c) {
			l, err := topology.Decode(in.Data, []byte(meshSecret))
			if err == nil && l.Router == router {
				got = capturedLSA{l, in.Data}
			}
		}
		if got.data == nil {
			return fmt.Errorf("no advertisement of %s seen (tap stats %+v)", router, tp.c.Stats())
		}
		return nil
	})
	return got
}

func topoOf(t *testing.T, r *Router) topology.Snapshot {
	t.Helper()
	s, err := r.Topology(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func holds(t *testing.T, r *Router, router string) bool {
	_, ok := routerView(topoOf(t, r), router)
	return ok
}

func routerView(s topology.Snapshot, router string) (topology.RouterView, bool) {
	i := slices.IndexFunc(s.Routers, func(rv topology.RouterView) bool { return rv.Router == router })
	if i < 0 {
		return topology.RouterView{}, false
	}
	return s.Routers[i], true
}

// waitRouter waits until r holds (or no longer holds) router's
// advertisement.
func waitRouter(t *testing.T, r *Router, router string, want bool) topology.RouterView {
	t.Helper()
	var rv topology.RouterView
	brokertest.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
		var ok bool
		if rv, ok = routerView(topoOf(t, r), router); ok != want {
			return fmt.Errorf("holds %s: %v, want %v", router, ok, want)
		}
		return nil
	})
	return rv
}

// waitPath waits until r's table has (or has no) path from src to dst.
func waitPath(t *testing.T, r *Router, src, dst string, want bool) {
	t.Helper()
	brokertest.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
		p := r.table.Load()
		if got := p != nil && p.Reachable(src, dst); got != want {
			return fmt.Errorf("path %s→%s: %v, want %v", src, dst, got, want)
		}
		return nil
	})
}

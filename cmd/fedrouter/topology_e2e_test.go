package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"

	famqp "github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/topology"
)

const e2eSecret = "e2e-network-secret-0123456789abc"

// topoRouter writes the config of a router attached to brokers a and b
// with a queue route b <= a, and starts it.
func topoRouter(t *testing.T, id, control string, a, b brokertest.Broker) *routerProc {
	t.Helper()
	q := "topo-e2e." + id
	brokertest.DeclareQueue(t, a.Config(), q)
	yaml := fmt.Sprintf(`router_id: %s
brokers:
  - {name: %s, url: %q, profile: rabbitmq, username: guest, password: guest, management: {url: %q}}
  - {name: %s, url: %q, profile: rabbitmq, username: guest, password: guest, management: {url: %q}}
routes:
  - {kind: queue, dest: %s, src: %s, exchange: amq.fanout, queue: %s}
topology: {secret: %q, refresh: 1s, max_age: 3s, control_address: %s}
reconnect: {min: 100ms, max: 1s}
admin: {listen: "127.0.0.1:0"}
log: {level: info, format: json}
`, id, a.Name, a.URL, a.MgmtURL, b.Name, b.URL, b.MgmtURL, b.Name, a.Name, q, e2eSecret, control)
	yaml = withAdminPort(t, yaml)
	path := filepath.Join(t.TempDir(), id+".yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return startRouter(t, path)
}

func (p *routerProc) topology() topology.Snapshot {
	p.t.Helper()
	out, code := p.cli("topology", "--json")
	if code != 0 {
		p.t.Fatalf("topology: exit %d: %s", code, out)
	}
	var s topology.Snapshot
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		p.t.Fatalf("topology --json: %v\n%s", err, out)
	}
	return s
}

// graphOf renders what must be equal on every router: the routers, the
// links with their state, and every broker's next hops.
func graphOf(s topology.Snapshot) string {
	var b strings.Builder
	var ids []string // each router lists itself first
	for _, r := range s.Routers {
		ids = append(ids, r.Router)
	}
	slices.Sort(ids)
	for _, id := range ids {
		fmt.Fprintf(&b, "router %s\n", id)
	}
	for _, l := range s.Links {
		fmt.Fprintf(&b, "link %s>%s:%d:%s by %s\n", l.From, l.To, l.Cost, l.State, l.Router)
	}
	for _, br := range s.Routes {
		for _, r := range br.Routes {
			fmt.Fprintf(&b, "route %s->%s via %s cost %d hops %d\n", br.Broker, r.Dest, r.NextHop, r.Cost, r.Hops)
		}
	}
	return b.String()
}

// Three router processes, each attached to two of four RabbitMQ nodes in a
// chain, converge to the same graph and table; a forged advertisement is
// rejected; a stopped router's links are gone after max age.
func TestTopologyThreeRoutersConverge(t *testing.T) {
	parallelE2E(t, &linkStateLane)
	bs := brokertest.Require(t, "rabbit1", "rabbit2", "rabbit3", "rabbit4")
	control := fmt.Sprintf("fedrouter.control.e2e%d", time.Now().UnixNano()%1e9)
	t.Cleanup(func() {
		for _, b := range bs {
			if m, err := famqp.NewRabbitManagement(b.Config()); err == nil {
				for _, id := range []string{"t1", "t2", "t3"} {
					_ = m.DeleteQueue(context.Background(), control+"."+id)
				}
				_ = m.DeleteExchange(context.Background(), control)
				m.Close()
			}
		}
	})
	began := time.Now()
	rs := []*routerProc{
		topoRouter(t, "t1", control, bs[0], bs[1]),
		topoRouter(t, "t2", control, bs[1], bs[2]),
		topoRouter(t, "t3", control, bs[2], bs[3]),
	}
	started := time.Since(began)
	// Converged, as each router logs it: its table spans the four brokers
	// with radius 3. Polling the logs is cheap, so this times convergence
	// itself; the CLI check below then compares the graphs.
	full := `"brokers":["rabbit1","rabbit2","rabbit3","rabbit4"],"radius":3`
	brokertest.Eventually(t, 60*time.Second, 10*time.Millisecond, func() error {
		for i, r := range rs {
			if !strings.Contains(r.out.String(), full) {
				return fmt.Errorf("t%d has no full table yet", i+1)
			}
		}
		return nil
	})
	converged := time.Since(began)
	want := ""
	brokertest.Eventually(t, 60*time.Second, 100*time.Millisecond, func() error {
		var graphs []string
		for _, r := range rs {
			graphs = append(graphs, graphOf(r.topology()))
		}
		for _, l := range []string{"link rabbit1>rabbit2:1:up by t1", "link rabbit2>rabbit3:1:up by t2", "link rabbit3>rabbit4:1:up by t3",
			"route rabbit1->rabbit4 via rabbit2 cost 3 hops 3"} {
			if !strings.Contains(graphs[0], l) {
				return fmt.Errorf("t1 lacks %q:\n%s", l, graphs[0])
			}
		}
		for i, g := range graphs[1:] {
			if g != graphs[0] {
				return fmt.Errorf("t%d's graph differs from t1's:\n%s\n---\n%s", i+2, g, graphs[0])
			}
		}
		want = graphs[0]
		return nil
	})
	t.Logf("three routers converged %s after the first started (starting the three processes took %s):\n%s", converged.Round(time.Millisecond), started.Round(time.Millisecond), want)

	// A forged advertisement on rabbit2's control exchange is rejected.
	forged, err := topology.Encode(topology.LSA{Version: topology.ProtocolVersion, Router: "evil", Instance: 1, Seq: 1, Time: time.Now().UnixNano(),
		Brokers: []topology.BrokerState{{Name: "rabbit2", State: "Operational"}, {Name: "evilbroker", State: "Operational"}},
		Links:   []topology.Link{{From: "rabbit2", To: "evilbroker", Cost: 1, Up: true}}}, []byte("not-the-network-secret"))
	if err != nil {
		t.Fatal(err)
	}
	before := rs[0].topology().Counters.BadSignature
	s := brokertest.Session(t, brokertest.Dial(t, bs[1].Config(), famqp.ConnOptions{}))
	brokertest.SendAll(t, s, "/exchange/"+control, 1, 1, func(int) *goamqp.Message { return goamqp.NewMessage(forged) })
	brokertest.Eventually(t, 20*time.Second, 100*time.Millisecond, func() error {
		snap := rs[0].topology()
		if snap.Counters.BadSignature <= before {
			return fmt.Errorf("bad signatures %d", snap.Counters.BadSignature)
		}
		return nil
	})
	for _, r := range rs[:2] {
		if g := graphOf(r.topology()); strings.Contains(g, "evil") {
			t.Fatalf("forged advertisement taken:\n%s", g)
		}
	}

	// Demand at rabbit4 behind t3's dynamic route is advertised: t1, two
	// brokers away, knows it.
	ex, q := brokertest.UniqueName(t, "ex"), brokertest.UniqueName(t, "q")
	brokertest.DeclareExchangeQueue(t, bs[2].Config(), ex, "topic", "", "")
	brokertest.DeclareExchangeQueue(t, bs[3].Config(), ex, "topic", q, "orders.#")
	if out, code := rs[2].cli("dynamic", "add", "rabbit4", "rabbit3", ex); code != 0 {
		t.Fatalf("dynamic add: exit %d: %s", code, out)
	}
	brokertest.Eventually(t, 20*time.Second, 100*time.Millisecond, func() error {
		for _, rv := range rs[0].topology().Routers {
			var d map[string]map[string][]string
			if rv.Router == "t3" && json.Unmarshal(rv.Ext["demand"], &d) == nil && fmt.Sprint(d["rabbit4"][ex]) == "[orders.#]" {
				return nil
			}
		}
		out, _ := rs[0].cli("topology")
		return fmt.Errorf("t1 does not see t3's demand:\n%s", out)
	})
	if out, _ := rs[0].cli("topology"); !strings.Contains(out, "Demand (advertised):") || !strings.Contains(out, "orders.#") {
		t.Fatalf("topology does not show the demand:\n%s", out)
	}
	// The durable queue there is a configured destination: advertised by
	// t3 (which lists rabbit4's queues), seen at t1.
	brokertest.Eventually(t, 30*time.Second, 200*time.Millisecond, func() error {
		for _, rv := range rs[0].topology().Routers {
			var d map[string][]string
			if rv.Router == "t3" && json.Unmarshal(rv.Ext["destinations"], &d) == nil && slices.Contains(d["rabbit4"], q) {
				return nil
			}
		}
		return fmt.Errorf("t1 does not see t3 advertise %s on rabbit4", q)
	})

	// t3 stops: after max age its link is gone from t1's graph.
	stopped := time.Now()
	if err := rs[2].cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = rs[2].cmd.Wait()
	brokertest.Eventually(t, 30*time.Second, 100*time.Millisecond, func() error {
		snap := rs[0].topology()
		if slices.ContainsFunc(snap.Routers, func(r topology.RouterView) bool { return r.Router == "t3" }) {
			return fmt.Errorf("t3 still known:\n%s", graphOf(snap))
		}
		if g := graphOf(snap); strings.Contains(g, "rabbit3>rabbit4") {
			return fmt.Errorf("t3's link still there:\n%s", g)
		}
		return nil
	})
	t.Logf("t3's links dropped %s after it stopped (max age 3s)", time.Since(stopped).Round(time.Millisecond))
}

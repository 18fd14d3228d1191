package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"

	famqp "github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/links"
	"github.com/fedrouter/fedrouter/topology"
)

// A multi-hop route towards a broker no advertisement has named is
// refused at add, in one line naming the broker as typed, and added with
// --force; a broker another router advertised once — even after that
// router's advertisement expired — is taken without.
func TestRemoteRouteTowardsUnnamedBrokerNeedsForce(t *testing.T) {
	parallelE2E(t, &linkStateLane)
	bs := brokertest.Require(t, "rabbit1", "rabbit2")
	stamp := time.Now().UnixNano() % 1e9
	control := fmt.Sprintf("fedrouter.control.force%d", stamp)
	typo, far := fmt.Sprintf("h-cli-nowhere%d", stamp), fmt.Sprintf("h-cli-far%d", stamp)
	t.Cleanup(func() {
		for _, b := range bs {
			m, err := famqp.NewRabbitManagement(b.Config())
			if err != nil {
				continue
			}
			ctx := context.Background()
			for _, q := range []string{control + ".force", links.TransitPrefix + typo, links.TransitPrefix + far} {
				_ = m.DeleteQueue(ctx, q) // absent ones too: only what this test may have made
			}
			_ = m.DeleteExchange(ctx, control)
			m.Close()
		}
	})
	config := pairConfigOn(t, t.TempDir(), "force", bs,
		fmt.Sprintf("topology: {secret: %q, refresh: 1s, max_age: 3s, control_address: %s}\n", e2eSecret, control))
	p := startRouter(t, config)

	out, code := p.cli("route", "add", typo, "r1", "amq.topic", "#")
	if code != 1 || !strings.Contains(out, `"`+typo+`"`) || !strings.Contains(out, "--force") || strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Fatalf("route add towards a broker never named: exit %d, want 1 and one line naming %s and --force:\n%s", code, typo, out)
	}
	if len(p.routes()) != 0 {
		t.Fatalf("a refused route is listed: %v", p.routes())
	}
	if out, code := p.cli("queue", "add", "--force", typo, "r1", "amq.direct", "h-cli-force-q"); code != 0 {
		t.Fatalf("queue add --force: exit %d: %s", code, out)
	}
	if rs := p.routes(); len(rs) != 1 || rs[0].Spec.Dest != typo || rs[0].Spec.Force {
		t.Fatalf("after add --force: %+v", rs)
	}

	// Another router advertises far, on r1's control exchange, then goes
	// away (max_age 3s): far stays named.
	lsa, err := topology.Encode(topology.LSA{Version: topology.ProtocolVersion, Router: "h-cli-other", Instance: 1, Seq: 1, Time: time.Now().UnixNano(),
		Brokers: []topology.BrokerState{{Name: "r1", State: topology.StateOperational}, {Name: far, State: topology.StateOperational}},
		Links:   []topology.Link{{From: "r1", To: far, Cost: 1, Up: true}}}, []byte(e2eSecret))
	if err != nil {
		t.Fatal(err)
	}
	s := brokertest.Session(t, brokertest.Dial(t, bs[0].Config(), famqp.ConnOptions{}))
	brokertest.SendAll(t, s, "/exchange/"+control, 1, 1, func(int) *goamqp.Message { return goamqp.NewMessage(lsa) })
	heard := func(snap topology.Snapshot) bool {
		return slices.ContainsFunc(snap.Routers, func(r topology.RouterView) bool { return r.Router == "h-cli-other" })
	}
	brokertest.Eventually(t, 20*time.Second, 50*time.Millisecond, func() error {
		if !heard(p.topology()) {
			return fmt.Errorf("the advertisement naming %s not received", far)
		}
		return nil
	})
	brokertest.Eventually(t, 20*time.Second, 100*time.Millisecond, func() error {
		if heard(p.topology()) {
			return fmt.Errorf("h-cli-other's advertisement not expired yet")
		}
		return nil
	})
	if out, code := p.cli("route", "add", far, "r1", "amq.topic", "#"); code != 0 {
		t.Fatalf("route add towards %s, advertised once: exit %d: %s", far, code, out)
	}
}

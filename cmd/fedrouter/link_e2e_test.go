package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	famqp "github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/routes"
)

// qpid-route's link add and del on a real router: the link is advertised
// in its link state both ways and listed; a second add is a duplicate
// (warning, success); del takes it out of the link state; a second del is
// refused naming the link.
func TestLinkAddDel(t *testing.T) {
	parallelE2E(t, &linkStateLane)
	bs := brokertest.Require(t, "rabbit1", "rabbit2")
	control := fmt.Sprintf("fedrouter.control.link%d", time.Now().UnixNano()%1e9)
	t.Cleanup(func() {
		for _, b := range bs {
			if m, err := famqp.NewRabbitManagement(b.Config()); err == nil {
				_ = m.DeleteQueue(context.Background(), control+".link")
				_ = m.DeleteExchange(context.Background(), control)
				m.Close()
			}
		}
	})
	config := pairConfigOn(t, t.TempDir(), "link", bs,
		fmt.Sprintf("topology: {secret: %q, refresh: 1s, max_age: 3s, control_address: %s}\n", e2eSecret, control))
	p := startRouter(t, config)
	advertised := func(want bool) {
		t.Helper()
		brokertest.Eventually(t, 20*time.Second, 100*time.Millisecond, func() error {
			g := graphOf(p.topology())
			for _, l := range []string{"link r1>r2:2:up by link", "link r2>r1:2:up by link"} {
				if strings.Contains(g, l) != want {
					return fmt.Errorf("advertised %q: %v, want %v:\n%s", l, !want, want, g)
				}
			}
			return nil
		})
	}
	if out, code := p.cli("link", "add", "--cost", "2", "r2", "r1"); code != 0 || out != "" {
		t.Fatalf("link add: exit %d: %q", code, out)
	}
	advertised(true)
	out, code := p.cli("link", "list", "--json")
	var ls []routes.LinkStatus
	if code != 0 || json.Unmarshal([]byte(out), &ls) != nil {
		t.Fatalf("link list: exit %d: %s", code, out)
	}
	listed := map[string]routes.State{}
	for _, l := range ls {
		listed[l.Src+">"+l.Dest] = l.State
	}
	if listed["r1>r2"] != routes.StateOperational || listed["r2>r1"] != routes.StateOperational {
		t.Fatalf("link list: %s", out)
	}
	if out, code := p.cli("link", "add", "r2", "r1"); code != 0 || !strings.Contains(out, "Duplicate link - ignoring: r2 <-> r1") {
		t.Fatalf("second link add: exit %d: %q", code, out)
	}
	if out, code := p.cli("link", "del", "r1", "r2"); code != 0 || out != "" {
		t.Fatalf("link del: exit %d: %q", code, out)
	}
	advertised(false)
	if out, code := p.cli("link", "del", "r2", "r1"); code != 1 || !strings.Contains(out, "no such link: r2 <-> r1") || strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Fatalf("second link del: exit %d, want 1 and one line: %q", code, out)
	}
}

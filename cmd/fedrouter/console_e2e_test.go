package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	famqp "github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/console/consoletest"
)

const consoleToken = "console-e2e-token-0123456789"

// consoleRouter starts a router attached to brokers a and b (b's URL may
// be a proxy's) holding a link between them, flooding link state on
// control, with extra configuration (routes).
func consoleRouter(t *testing.T, id, control string, a, b brokertest.Broker, bURL, extra string) *routerProc {
	t.Helper()
	yaml := fmt.Sprintf(`router_id: %s
brokers:
  - {name: %s, url: %q, profile: rabbitmq, username: guest, password: guest, management: {url: %q}}
  - {name: %s, url: %q, profile: rabbitmq, username: guest, password: guest, management: {url: %q}}
links:
  - {between: [%s, %s]}
topology: {secret: %q, refresh: 1s, max_age: 3s, control_address: %s}
reconnect: {min: 100ms, max: 500ms}
admin: {listen: "127.0.0.1:0", token: %q}
log: {level: info, format: json}
%s`, id, a.Name, a.URL, a.MgmtURL, b.Name, bURL, b.MgmtURL, a.Name, b.Name, e2eSecret, control, consoleToken, extra)
	yaml = withAdminPort(t, yaml)
	path := filepath.Join(t.TempDir(), id+".yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startRouter(t, path)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("router %s log:\n%s", id, p.out.String())
		}
	})
	return p
}

// removeControl deletes the test's control exchange and queues.
func removeControl(bs []brokertest.Broker, control string, ids ...string) {
	for _, b := range bs {
		m, err := famqp.NewRabbitManagement(b.Config())
		if err != nil {
			continue
		}
		for _, id := range ids {
			_ = m.DeleteQueue(context.Background(), control+"."+id) // best effort: unique names
		}
		_ = m.DeleteExchange(context.Background(), control)
		m.Close()
	}
}

// linksDrawn is a poll's check: the console's graph draws exactly these
// links, each up or not as want says.
func linksDrawn(page *consoletest.Page, want map[string]bool) func() error {
	return func() error {
		got, err := page.Attrs("#graph [data-link]", "data-link", "data-state")
		if err != nil {
			return err
		}
		if len(got) != len(want) {
			return fmt.Errorf("links drawn: %v", got)
		}
		for l, up := range want {
			if s, ok := got[l]; !ok || (s == "up") != up {
				return fmt.Errorf("%s drawn %q, want up %v: %v", l, s, up, got)
			}
		}
		return nil
	}
}

// consoleRig starts cA (rabbit1—rabbit2, a route over it) and cB
// (rabbit2—rabbit3, through the returned proxy), and opens cA's console.
func consoleRig(t *testing.T) (*consoletest.Page, *brokertest.FaultProxy) {
	t.Helper()
	bs := brokertest.Require(t, "rabbit1", "rabbit2", "rabbit3")
	control := brokertest.UniqueName(t, "console.ctl")
	t.Cleanup(func() { removeControl(bs, control, "cA", "cB") })
	proxy, err := brokertest.NewFaultProxy(bs[2].Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() }) // its only error is the listener's close, of no interest at teardown
	q := brokertest.UniqueName(t, "console.src")
	brokertest.DeclareQueue(t, bs[0].Config(), q)
	route := fmt.Sprintf("routes:\n  - {kind: queue, dest: rabbit2, src: rabbit1, exchange: amq.fanout, queue: %s}\n", q)
	cA := consoleRouter(t, "cA", control, bs[0], bs[1], bs[1].URL, route)
	consoleRouter(t, "cB", control, bs[1], bs[2], "amqp://"+proxy.Addr(), "")
	page := consoletest.Open(t, cA.admin+"/console/")
	t.Cleanup(func() {
		if probs := page.Problems(); len(probs) > 0 {
			t.Errorf("the page reported:\n%s", strings.Join(probs, "\n"))
		}
	})
	return page, proxy
}

// The web console in a real browser against two router processes on
// three RabbitMQ nodes: cA holds rabbit1—rabbit2 and a route over it,
// cB holds rabbit2—rabbit3, reaching rabbit3 through a fault proxy. cA's
// console, logged in through its form, draws the four links up and the
// route's next hop; the proxy cuts cB from rabbit3 (the broker itself
// untouched) and the two links there are drawn down within 5 s; healed,
// up again.
func TestConsoleDrawsLinkCut(t *testing.T) {
	page, proxy := consoleRig(t)
	page.Login(consoleToken)
	up := map[string]bool{"rabbit1|rabbit2": true, "rabbit2|rabbit1": true, "rabbit2|rabbit3": true, "rabbit3|rabbit2": true}
	took := page.Poll(60*time.Second, "every link drawn up", linksDrawn(page, up))
	page.Poll(10*time.Second, "the route Operational", func() error {
		rows, err := page.Attrs("#routes [data-route]", "data-route", "data-state")
		if err != nil || len(rows) != 1 || !slices.Contains(slices.Collect(maps.Values(rows)), "Operational") {
			return fmt.Errorf("routes: %v (%v)", rows, err)
		}
		return nil
	})
	t.Logf("every link drawn up %s after login", took.Round(time.Millisecond))
	hops, err := page.Attrs("#graph [data-nexthop]", "data-link", "data-router")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(hops) != "map[rabbit1|rabbit2:cA]" {
		t.Errorf("next hops drawn: %v, want rabbit1|rabbit2 (the route's)", hops)
	}
	shots := []string{page.Screenshot("console-up.png")}

	proxy.Cut()
	cut := maps.Clone(up)
	cut["rabbit2|rabbit3"], cut["rabbit3|rabbit2"] = false, false
	took = page.Poll(5*time.Second, "the cut links drawn down", linksDrawn(page, cut))
	t.Logf("link rabbit2—rabbit3 cut: drawn down %s later (requirement: 5s)", took.Round(time.Millisecond))
	var text string
	page.Eval(`document.getElementById("summary").innerText`, &text)
	if !strings.Contains(text, "2 / 4") {
		t.Errorf("summary after the cut does not say 2 of 4 links up:\n%s", text)
	}
	shots = append(shots, page.Screenshot("console-cut.png"))

	proxy.Heal()
	took = page.Poll(30*time.Second, "the healed links drawn up", linksDrawn(page, up))
	t.Logf("healed: drawn up %s later (cB reconnects with backoff); screenshots: %s", took.Round(time.Millisecond), strings.Join(shots, " "))
}

package console_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/console"
	"github.com/fedrouter/fedrouter/console/consoletest"
	"github.com/fedrouter/fedrouter/router"
	"github.com/fedrouter/fedrouter/router/routertest"
	"github.com/fedrouter/fedrouter/routes"
	"github.com/fedrouter/fedrouter/topology"
)

// open starts a browser at url (skipped with -short); at the end the
// test fails if the page reported a script error or a policy violation.
func open(t *testing.T, url string) *consoletest.Page {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a browser")
	}
	p := consoletest.Open(t, url)
	t.Cleanup(func() {
		if probs := p.Problems(); len(probs) > 0 {
			t.Errorf("the page reported:\n%s", strings.Join(probs, "\n"))
		}
	})
	return p
}

// states reads what the page draws: each link's and route's state.
func states(p *consoletest.Page) (links, rows map[string]string, err error) {
	if links, err = p.Attrs("#graph [data-link]", "data-link", "data-state"); err != nil {
		return nil, nil, err
	}
	rows, err = p.Attrs("#routes [data-route]", "data-route", "data-state")
	return links, rows, err
}

func visible(p *consoletest.Page, id string) bool {
	var v bool
	p.Eval(fmt.Sprintf(`!document.getElementById(%q).hidden`, id), &v)
	return v
}

func textOf(p *consoletest.Page, id string) string {
	var s string
	p.Eval(fmt.Sprintf(`document.getElementById(%q).innerText`, id), &s)
	return s
}

// A wrong token shows the error and nothing of the router: no link, no
// route, not even its name; nothing is kept, nothing goes into the URL.
func TestBrowserWrongToken(t *testing.T) {
	p := open(t, serve(t, fake(t))+"/") // / leads to the console
	p.WaitVisible("login-form")
	p.Login("not-the-token-0123456789")
	p.Poll(10*time.Second, "the wrong token's error", func() error {
		if msg := textOf(p, "login-error"); !visible(p, "login-error") || !strings.Contains(msg, "Wrong token") {
			return fmt.Errorf("error shown: %q", msg)
		}
		return nil
	})
	links, rows, err := states(p)
	if err != nil {
		t.Fatal(err)
	}
	var stored, where string
	p.Eval(`sessionStorage.getItem("fedrouter.admin-token") || ""`, &stored)
	p.Eval(`location.href`, &where)
	text := textOf(p, "console") + textOf(p, "router-id")
	if visible(p, "console") || len(links) > 0 || len(rows) > 0 || stored != "" || strings.Contains(where, "token") ||
		strings.Contains(text, "london") || strings.Contains(text, "paris") {
		t.Fatalf("after a wrong token: console shown %v, links %v, routes %v, stored %q, at %s, text:\n%s",
			visible(p, "console"), links, rows, stored, where, text)
	}
}

// The right token shows the graph with this router's next hops, the
// routes and the brokers; a link coming up is drawn up at the next
// refresh; with the router gone the page says so and keeps the last
// picture; logging out clears it.
func TestBrowserLogin(t *testing.T) {
	svc := fake(t)
	svc.SetTopology(network(false))
	url, stop := serveStop(t, svc)
	p := open(t, url+console.Prefix)
	p.Login(token)
	p.Poll(10*time.Second, "the console drawn", func() error {
		links, rows, err := states(p)
		if err != nil {
			return err
		}
		want := map[string]string{"paris|london": "up", "london|paris": "up", "london|tokyo": "down"}
		if fmt.Sprint(links) != fmt.Sprint(want) || len(rows) != 2 {
			return fmt.Errorf("links %v (want %v), routes %v", links, want, rows)
		}
		return nil
	})
	hops, err := p.Attrs(`#graph [data-nexthop]`, "data-link", "data-nexthop")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(hops) != "map[paris|london:]" {
		t.Errorf("next hops drawn: %v, want paris|london only (both routes leave paris through london)", hops)
	}
	text := textOf(p, "console") + textOf(p, "router-id")
	for _, want := range []string{"paris-1", "1,234", "Operational", "Waiting", "orders", "london-1", "amqp://paris:5672"} {
		if !strings.Contains(text, want) {
			t.Errorf("the page does not show %q:\n%s", want, text)
		}
	}

	// A broker's error: current while it is down, past once it is back.
	svc.UpdateBrokers(func(bs []amqp.Status) []amqp.Status {
		bs[0].LastError, bs[0].LastErrorAt = errors.New("london: connection reset"), time.Now().Add(-time.Minute)
		bs[1].State, bs[1].LastError, bs[1].LastErrorAt = amqp.Waiting, errors.New("paris: connection refused"), time.Now()
		return bs
	})
	p.Poll(5*time.Second, "errors drawn, one past", func() error {
		var past map[string]string
		p.Eval(`Object.fromEntries([...document.querySelectorAll("#brokers [data-broker]")].map((r) => [r.dataset.broker, (r.cells[4].dataset.past !== undefined ? "past: " : "now: ") + r.cells[4].textContent]))`, &past)
		if !strings.HasPrefix(past["london"], "past: before it recovered: london: connection reset") || !strings.HasPrefix(past["paris"], "now: paris: connection refused") {
			return fmt.Errorf("errors shown: %v", past)
		}
		return nil
	})

	svc.SetTopology(network(true))
	took := p.Poll(5*time.Second, "london|tokyo drawn up", func() error {
		if links, _, err := states(p); err != nil || links["london|tokyo"] != "up" {
			return fmt.Errorf("london|tokyo is %q (%v)", links["london|tokyo"], err)
		}
		return nil
	})
	t.Logf("a link coming up was drawn up %s later; screenshot: %s", took.Round(time.Millisecond), p.Screenshot("console-fake.png"))

	stop()
	p.Poll(10*time.Second, "the router's absence shown", func() error {
		var state string
		p.Eval(`document.getElementById("status").dataset.state`, &state)
		msg := textOf(p, "status")
		links, _, err := states(p)
		if err != nil || state != "error" || !strings.Contains(msg, "did not answer") || !strings.Contains(msg, "last good refresh") || links["london|tokyo"] != "up" {
			return fmt.Errorf("status %s %q, links %v (%v)", state, msg, links, err)
		}
		return nil
	})

	p.Click("logout")
	p.Poll(5*time.Second, "logged out", func() error {
		links, rows, err := states(p)
		var title, stored string
		p.Eval(`document.title`, &title)
		p.Eval(`sessionStorage.getItem("fedrouter.admin-token") || ""`, &stored)
		text := textOf(p, "console") + textOf(p, "router-id")
		if err != nil || len(links) > 0 || len(rows) > 0 || visible(p, "console") || strings.Contains(title+text, "paris") || stored != "" {
			return fmt.Errorf("still shown: %v %v, title %q, stored %q, text %q (%v)", links, rows, title, stored, text, err)
		}
		return nil
	})
}

// The router comes back with another token (its admin token changed):
// the page drops the old one, clears what it drew and asks again.
func TestBrowserTokenChanged(t *testing.T) {
	svc := fake(t)
	url, stop := serveStop(t, svc)
	p := open(t, url+console.Prefix)
	p.Login(token)
	p.Poll(10*time.Second, "the console drawn", func() error {
		if links, _, err := states(p); err != nil || len(links) != 3 {
			return fmt.Errorf("links %v (%v)", links, err)
		}
		return nil
	})
	stop()
	const other = "another-token-0123456789"
	serveOn(t, svc, strings.TrimPrefix(url, "http://"), other)
	p.Poll(10*time.Second, "asked again", func() error {
		links, rows, err := states(p)
		msg := textOf(p, "login-error")
		if err != nil || !visible(p, "login") || visible(p, "console") || len(links)+len(rows) > 0 || !strings.Contains(msg, "no longer accepts the token") {
			return fmt.Errorf("login shown %v, links %v, routes %v, message %q (%v)", visible(p, "login"), links, rows, msg, err)
		}
		return nil
	})
	p.Login(other)
	p.Poll(10*time.Second, "drawn with the new token", func() error {
		if links, _, err := states(p); err != nil || len(links) != 3 {
			return fmt.Errorf("links %v (%v)", links, err)
		}
		return nil
	})
}

// Five wrong tokens from one address: the sixth attempt is told to wait,
// as the API's throttle says (docs/admin-api.md).
func TestBrowserThrottled(t *testing.T) {
	p := open(t, serve(t, fake(t))+console.Prefix)
	for i := range 6 {
		p.Eval(`document.getElementById("login-error").textContent = ""`, new(string))
		p.Login(fmt.Sprintf("wrong-token-%d-0123456789", i))
		p.Poll(10*time.Second, fmt.Sprintf("attempt %d answered", i+1), func() error {
			if textOf(p, "login-error") == "" {
				return errors.New("no message yet")
			}
			return nil
		})
	}
	if m := textOf(p, "login-error"); !strings.Contains(m, "Too many wrong tokens") || !strings.Contains(m, "try again in 60 s") {
		t.Errorf("after six wrong tokens: %q", m)
	}
}

// Names come from the network (other routers' advertisements, brokers'
// errors): the page shows them as text, never as markup.
func TestBrowserNamesAreText(t *testing.T) {
	const evil = `<img src=x id=injected onerror="document.title='owned'">`
	svc := fake(t)
	snap := network(true)
	snap.Links = append(snap.Links, topology.LinkView{From: "london", To: evil, Cost: 1, State: "up", Router: "<b id=injected>london-1</b>"})
	snap.Brokers = append(snap.Brokers, topology.BrokerView{Name: evil, Routers: []topology.Attachment{{Router: "london-1", State: "Operational"}}})
	svc.SetTopology(snap)
	svc.UpdateBrokers(func(bs []amqp.Status) []amqp.Status {
		bs[0].LastError, bs[0].LastErrorAt = errors.New(evil), time.Now()
		return bs
	})
	p := open(t, serve(t, svc)+console.Prefix)
	p.Login(token)
	p.Poll(10*time.Second, "the evil names drawn", func() error {
		if text := textOf(p, "console"); strings.Count(text, evil) < 2 || !strings.Contains(text, "<b id=injected>london-1</b>") {
			return fmt.Errorf("names not shown as text:\n%s", text)
		}
		return nil
	})
	var injected int
	var title string
	p.Eval(`document.querySelectorAll("#injected").length`, &injected)
	p.Eval(`document.title`, &title)
	if injected != 0 || title == "owned" {
		t.Fatalf("markup from the network made it into the page: %d elements, title %q", injected, title)
	}
}

// Without link-state flooding the graph is this router's own links, from
// /links, without costs, and the page says so.
func TestBrowserWithoutFlooding(t *testing.T) {
	svc := routertest.New(routertest.Options{RouterID: "solo", TopologyOff: router.ErrTopologyOff,
		NotClustered: router.ErrNotClustered, NoDestinations: router.ErrNoDestinations,
		Brokers: []amqp.Status{{Broker: "a", State: amqp.Operational}, {Broker: "b", State: amqp.Waiting}},
		Links: []routes.LinkStatus{
			{Src: "a", Dest: "b", State: routes.StateWaiting, Routes: 1},
			{Src: "a", Dest: "", Ingress: true, State: routes.StateOperational},
		}})
	p := open(t, serve(t, svc)+console.Prefix)
	p.Login(token)
	p.Poll(10*time.Second, "own links drawn", func() error {
		links, err := p.Attrs("#graph [data-link]", "data-link", "data-state")
		if err != nil || fmt.Sprint(links) != "map[a|b:down]" {
			return fmt.Errorf("links %v (%v)", links, err)
		}
		return nil
	})
	if note := textOf(p, "graph-note"); !strings.Contains(note, "flooding is off") {
		t.Errorf("graph note: %q", note)
	}
	var cost string
	p.Eval(`document.querySelector("#graph [data-link]").getAttribute("data-cost") || ""`, &cost)
	if cost != "" {
		t.Errorf("a cost drawn without flooding: %q", cost)
	}
}

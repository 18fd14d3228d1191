package console_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/router"
	"github.com/fedrouter/fedrouter/router/routertest"
	"github.com/fedrouter/fedrouter/routes"
	"github.com/fedrouter/fedrouter/topology"
)

const token = "console-test-token-0123456789"

// network is what the fake router reports: paris-1 attached to paris and
// london, london-1 (heard from) to london and tokyo, whose link is up
// or not.
func network(tokyoUp bool) *topology.Snapshot {
	tokyo := "down"
	if tokyoUp {
		tokyo = "up"
	}
	return &topology.Snapshot{Router: "paris-1", Radius: 2,
		Routers: []topology.RouterView{{Router: "paris-1", Self: true}, {Router: "london-1"}},
		Brokers: []topology.BrokerView{
			{Name: "london", Routers: []topology.Attachment{{Router: "paris-1", State: "Operational"}, {Router: "london-1", State: "Operational"}}},
			{Name: "paris", Routers: []topology.Attachment{{Router: "paris-1", State: "Operational"}}},
			{Name: "tokyo", Routers: []topology.Attachment{{Router: "london-1", State: "Operational"}}},
		},
		Links: []topology.LinkView{
			{From: "paris", To: "london", Cost: 1, State: "up", Router: "paris-1"},
			{From: "london", To: "paris", Cost: 1, State: "up", Router: "paris-1"},
			{From: "london", To: "tokyo", Cost: 3, State: tokyo, Router: "london-1"},
		},
		Routes: []topology.BrokerRoutes{{Broker: "paris", Routes: []topology.RouteView{
			{Dest: "london", NextHop: "london", Cost: 1, Hops: 1}, {Dest: "tokyo", NextHop: "london", Cost: 4, Hops: 2}}}},
	}
}

// fake is a router attached to paris and london, with a route to each of
// london and tokyo.
func fake(t *testing.T) *routertest.Service {
	t.Helper()
	since := time.Now().Add(-3 * time.Minute)
	svc := routertest.New(routertest.Options{RouterID: "paris-1", Known: []string{"paris", "london", "tokyo"},
		NotClustered: router.ErrNotClustered, NoDestinations: router.ErrNoDestinations,
		Added: routes.Status{State: routes.StateWaiting},
		Brokers: []amqp.Status{
			{Broker: "london", State: amqp.Operational, Since: since, URL: "amqp://london:5672", Generation: 1},
			{Broker: "paris", State: amqp.Operational, Since: since, URL: "amqp://paris:5672", Generation: 1},
		}})
	svc.SetTopology(network(true))
	svc.AddConfig(routes.Spec{Kind: routes.KindQueue, Src: "paris", Dest: "london", Exchange: "amq.direct", Queue: "orders"},
		routes.Counters{Forwarded: 1234, InFlight: 7})
	if _, err := svc.AddRoute(context.Background(), routes.Spec{Kind: routes.KindQueue, Src: "paris", Dest: "tokyo", Exchange: "amq.direct", Queue: "to-tokyo"}); err != nil {
		t.Fatal(err)
	}
	return svc
}

// serve starts the admin API over svc and returns its URL.
func serve(t *testing.T, svc router.Service) string {
	t.Helper()
	url, _ := serveStop(t, svc)
	return url
}

// serveStop is serve, with a function that stops the server.
func serveStop(t *testing.T, svc router.Service) (string, func()) {
	t.Helper()
	return serveOn(t, svc, "127.0.0.1:0", token)
}

// serveOn starts the admin API over svc on listen with tok.
func serveOn(t *testing.T, svc router.Service, listen, tok string) (string, func()) {
	t.Helper()
	srv := router.NewAdminServer(svc, router.AdminOptions{Listen: listen, Token: tok, Log: zerolog.Nop()})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Close(ctx); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(stop) // a second Close is a no-op
	return "http://" + srv.Addr(), stop
}

func fetch(t *testing.T, url string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }() // read to the end below; nothing to learn from closing
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(body)
}

package adminclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/api"
	"github.com/fedrouter/fedrouter/router"
	"github.com/fedrouter/fedrouter/router/routertest"
	"github.com/fedrouter/fedrouter/routes"
	"github.com/fedrouter/fedrouter/topology"
)

const testToken = "s3cret-t0ken-0123"

// harness is the real admin handler over an in-memory router, and a
// client of it that traces into trace.
type harness struct {
	svc   *routertest.Service
	url   string
	c     *Client
	trace *bytes.Buffer
}

func newHarness(t *testing.T, serverToken, clientToken string) *harness {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) }) // runs last
	h := &harness{trace: &bytes.Buffer{}, svc: routertest.New(routertest.Options{
		RouterID: "ac-test", Known: []string{"a", "b"}, TopologyOff: router.ErrTopologyOff,
		Added: routes.Status{State: routes.StateOperational, Counters: routes.Counters{Forwarded: 5}},
		Brokers: []amqp.Status{
			{Broker: "a", State: amqp.Operational, URL: "amqp://h1:5672"},
			{Broker: "b", State: amqp.Operational, URL: "amqp://h2:5672"},
		},
		Links: []routes.LinkStatus{{Src: "a", Dest: "b", State: routes.StateOperational, Routes: 1}},
	})}
	admin := router.NewAdminServer(h.svc, router.AdminOptions{Token: serverToken, Log: zerolog.Nop()})
	srv := httptest.NewServer(admin.Handler())
	t.Cleanup(srv.Close)
	h.url = srv.URL
	h.c = newClient(t, srv.URL, Options{Token: clientToken, Trace: h.trace})
	return h
}

func newClient(t *testing.T, url string, o Options) *Client {
	t.Helper()
	c, err := New(url, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// asError checks err is an *Error with status.
// wantStatus checks that err is an *Error with status.
func wantStatus(t *testing.T, err error, status int) {
	t.Helper()
	_ = asError(t, err, status) // only the check is wanted
}

func asError(t *testing.T, err error, status int) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Status != status {
		t.Fatalf("got %v (%T), want an *Error with status %d", err, err, status)
	}
	return e
}

var queueRoute = routes.Spec{Kind: routes.KindQueue, Dest: "b", Src: "a", Exchange: "amq.direct", Queue: "orders"}

func TestRouteCalls(t *testing.T) {
	h := newHarness(t, testToken, testToken)
	ctx := context.Background()
	st, err := h.c.AddRoute(ctx, queueRoute)
	if err != nil || st.ID != queueRoute.ID() || st.State != routes.StateOperational || st.Spec.Credit != routes.DefaultCredit {
		t.Fatalf("AddRoute: %+v, %v", st, err)
	}
	_, err = h.c.AddRoute(ctx, queueRoute)
	if e := asError(t, err, http.StatusConflict); e.Message != routes.ErrDuplicate.Error() || e.Code != api.CodeDuplicate {
		t.Fatalf("duplicate: message %q, code %q", e.Message, e.Code)
	}
	ex := routes.Spec{Kind: routes.KindExchange, Dest: "a", Src: "b", Exchange: "amq.topic", Key: "#"}
	if _, err := h.c.AddRoute(ctx, ex); err != nil {
		t.Fatal(err)
	}
	sts, err := h.c.Routes(ctx)
	if err != nil || len(sts) != 2 || sts[1].Forwarded != 5 {
		t.Fatalf("Routes: %+v, %v", sts, err)
	}
	if err := h.c.DeleteRoute(ctx, queueRoute); err != nil {
		t.Fatal(err)
	}
	e := asError(t, h.c.DeleteRoute(ctx, queueRoute), http.StatusNotFound)
	if !strings.HasPrefix(e.Message, "routes: no such route with id ") {
		t.Fatalf("deleting a missing route: %q", e.Message)
	}
	if err := h.c.DeleteRouteID(ctx, ex.ID()); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, h.c.DeleteRouteID(ctx, "no/such id"), http.StatusNotFound)
	for _, s := range []routes.Spec{queueRoute, ex} {
		if _, err := h.c.AddRoute(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := h.c.FlushRoutes(ctx, "b"); n != 1 || err != nil {
		t.Fatalf("FlushRoutes(b): %d, %v", n, err)
	}
	if n, err := h.c.FlushRoutes(ctx, ""); n != 1 || err != nil {
		t.Fatalf("FlushRoutes: %d, %v", n, err)
	}
	if sts, err := h.c.Routes(ctx); err != nil || len(sts) != 0 {
		t.Fatalf("Routes after flush: %+v, %v", sts, err)
	}
}

// An invalid route comes back with each problem, an unknown broker with
// the router's words.
func TestRouteRefusals(t *testing.T) {
	h := newHarness(t, testToken, testToken)
	bad := queueRoute
	bad.OnReject = "drop"
	e := asError(t, func() error { _, err := h.c.AddRoute(context.Background(), bad); return err }(), http.StatusBadRequest)
	if len(e.Problems) != 1 || !strings.Contains(e.Problems[0], `on_reject "drop"`) {
		t.Fatalf("problems %q", e.Problems)
	}
	unknown := queueRoute
	unknown.Src = "zz"
	_, err := h.c.AddRoute(context.Background(), unknown)
	e = asError(t, err, http.StatusBadRequest)
	want := `routes: unknown broker "zz" (configured: a, b)`
	if e.Message != want || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "POST "+h.url+"/api/v1/routes") {
		t.Fatalf("unknown broker: %v", err)
	}
}

func TestListings(t *testing.T) {
	h := newHarness(t, testToken, testToken)
	ctx := context.Background()
	if ls, err := h.c.Links(ctx); err != nil || len(ls) != 1 || ls[0].Dest != "b" || ls[0].Routes != 1 {
		t.Fatalf("Links: %+v, %v", ls, err)
	}
	if bs, err := h.c.Brokers(ctx); err != nil || len(bs) != 2 || bs[1].URL != "amqp://h2:5672" || bs[1].State != "Operational" {
		t.Fatalf("Brokers: %+v, %v", bs, err)
	}
	if ri, err := h.c.Router(ctx); err != nil || ri != (api.RouterInfo{RouterID: "ac-test", Links: 1, Brokers: 2}) {
		t.Fatalf("Router: %+v, %v", ri, err)
	}
}

func TestTopology(t *testing.T) {
	h := newHarness(t, testToken, testToken)
	_, err := h.c.Topology(context.Background())
	if e := asError(t, err, http.StatusNotFound); !strings.Contains(e.Message, "flooding is off") {
		t.Fatalf("topology off: %q", e.Message)
	}
	snap := topology.Snapshot{Router: "r1", Radius: 1,
		Links: []topology.LinkView{{From: "a", To: "b", Cost: 3, State: "up", Router: "r1", Age: time.Second}}}
	h.svc.SetTopology(&snap)
	got, err := h.c.Topology(context.Background())
	if err != nil || got.Router != "r1" || len(got.Links) != 1 || got.Links[0] != snap.Links[0] {
		t.Fatalf("Topology: %+v, %v", got, err)
	}
}

// Healthz needs no token; Ready answers false with the brokers down.
func TestHealthAndReady(t *testing.T) {
	h := newHarness(t, testToken, "")
	ctx := context.Background()
	if err := h.c.Healthz(ctx); err != nil {
		t.Fatalf("Healthz without a token: %v", err)
	}
	wantStatus(t, func() error { _, _, err := h.c.Ready(ctx); return err }(), http.StatusUnauthorized)
	c := newClient(t, h.url, Options{Token: testToken})
	if ok, down, err := c.Ready(ctx); !ok || down != nil || err != nil {
		t.Fatalf("Ready: %v %+v %v", ok, down, err)
	}
	h.svc.UpdateBrokers(func(bs []amqp.Status) []amqp.Status {
		bs[1].State = amqp.Waiting
		return bs
	})
	if ok, down, err := c.Ready(ctx); ok || len(down) != 1 || down[0].Broker != "b" || err != nil {
		t.Fatalf("Ready with b Waiting: %v %+v %v", ok, down, err)
	}
}

// The token is sent, and is in no error and no trace line, even when the
// server echoes it back.
func TestTokenNeverShown(t *testing.T) {
	h := newHarness(t, testToken, "wrong-"+testToken)
	_, err := h.c.Routes(context.Background())
	e := asError(t, err, http.StatusUnauthorized)
	if !strings.Contains(e.Message, "wrong admin token") {
		t.Fatalf("wrong token: %q", e.Message)
	}
	good := newClient(t, h.url, Options{Token: testToken, Trace: h.trace})
	if _, err := good.Routes(context.Background()); err != nil {
		t.Fatal(err)
	}
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/json" {
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"error":"refused ` + r.Header.Get("Authorization") + `","problems":["` + r.Header.Get("Authorization") + `"]}`)) // a failed write fails the check below
			return
		}
		http.Error(w, "proxy says: "+r.Header.Get("Authorization"), http.StatusBadGateway)
	}))
	defer echo.Close()
	c := newClient(t, echo.URL, Options{Token: testToken, Trace: h.trace})
	for _, call := range []struct {
		err    error
		status int
	}{
		{c.Healthz(context.Background()), http.StatusBadGateway},
		{c.do(context.Background(), http.MethodGet, "/json", nil, nil), http.StatusForbidden},
	} {
		err := call.err
		e := asError(t, err, call.status)
		if text := err.Error() + e.Message + e.Body + strings.Join(e.Problems, ""); strings.Contains(text, testToken) {
			t.Errorf("the token shows in the error: %s", text)
		}
	}
	if strings.Contains(h.trace.String(), testToken) || !strings.Contains(h.trace.String(), "< 502 Bad Gateway") {
		t.Errorf("trace:\n%s", h.trace)
	}
}

func TestTrace(t *testing.T) {
	h := newHarness(t, testToken, testToken)
	if _, err := h.c.Routes(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := h.trace.String(), "> GET "+h.url+"/api/v1/routes?limit=1000\n< 200 OK\n"; got != want {
		t.Fatalf("trace %q, want %q", got, want)
	}
}

// Answers that are not the API's name the URL and the status.
func TestForeignAnswers(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/routes":
			http.Redirect(w, r, "https://login.example/", http.StatusFound)
		case "/api/v1/links":
			_, _ = w.Write([]byte("not json")) // a failed write fails the checks below
		default:
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte("<html>bad gateway</html>"))
		}
	}))
	defer srv.Close()
	c, err := New(srv.URL+"/", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	_, err = c.Routes(ctx)
	if e := asError(t, err, http.StatusFound); e.Location != "https://login.example/" ||
		err.Error() != "fedrouter admin API GET "+srv.URL+"/api/v1/routes?limit=1000: redirected (302 Found) to https://login.example/; the admin API does not redirect: give its own URL" {
		t.Fatalf("redirect: %v", err)
	}
	_, err = c.Brokers(ctx)
	if wantStatus(t, err, http.StatusBadGateway); err.Error() != "fedrouter admin API GET "+srv.URL+"/api/v1/brokers: 502 Bad Gateway, not the API's JSON: <html>bad gateway</html>" {
		t.Fatalf("proxy page: %v", err)
	}
	_, err = c.Links(ctx)
	var se *json.SyntaxError
	if wantStatus(t, err, http.StatusOK); !errors.As(err, &se) || !strings.Contains(err.Error(), "not the JSON expected") {
		t.Fatalf("2xx not JSON: %v", err)
	}
}

func TestNoAnswer(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	silent, err := New("http://"+addr, Options{Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = silent.Brokers(context.Background()) // accepted by the kernel, never answered
	if e := asError(t, err, 0); !e.Timeout() {
		t.Fatalf("no answer: %v is not a timeout", err)
	}
	silent.Close()
	if err := ln.Close(); err != nil { // nothing listens now: connection refused
		t.Fatal(err)
	}
	c, _ := New("http://"+addr, Options{})
	defer c.Close()
	_, err = c.Routes(context.Background())
	var op *net.OpError
	if e := asError(t, err, 0); e.Timeout() || !errors.As(err, &op) ||
		err.Error() != "fedrouter admin API GET http://"+addr+"/api/v1/routes?limit=1000: dial tcp "+addr+": connect: connection refused" {
		t.Fatalf("refused: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Healthz(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestNewURL(t *testing.T) {
	for _, bad := range []string{"", "ftp://h", "http://", "127.0.0.1:9595", "http://h:x:y"} {
		if _, err := New(bad, Options{}); !errors.Is(err, ErrBadURL) {
			t.Errorf("New(%q): %v, want ErrBadURL", bad, err)
		}
	}
	c, err := New("https://user:pw@h:9595/admin/", Options{})
	if err != nil || c.BaseURL() != "https://h:9595/admin" {
		t.Fatalf("New: %v, base %q", err, c.BaseURL())
	}
	c.Close()
}

// Routes pages through the list; from a router older than paging, which
// answers the whole array whatever the query, it takes that.
func TestRoutesPages(t *testing.T) {
	h := newHarness(t, testToken, testToken)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		s := queueRoute
		s.Queue = fmt.Sprintf("q%d", i)
		if _, err := h.c.AddRoute(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	p, err := h.c.RoutesPage(ctx, "", 2)
	if err != nil || len(p.Routes) != 2 || p.Next == "" {
		t.Fatalf("first page: %+v, %v", p, err)
	}
	if p, err = h.c.RoutesPage(ctx, p.Next, 2); err != nil || len(p.Routes) != 1 || p.Next != "" {
		t.Fatalf("last page: %+v, %v", p, err)
	}
	if sts, err := h.c.Routes(ctx); err != nil || len(sts) != 3 {
		t.Fatalf("Routes: %d, %v", len(sts), err)
	}

	old := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`[{"id":"a1"},{"id":"b2"}]`)) // a failed write fails the check below
	}))
	defer old.Close()
	c := newClient(t, old.URL, Options{})
	if sts, err := c.Routes(ctx); err != nil || len(sts) != 2 || sts[1].ID != "b2" {
		t.Fatalf("Routes from an older router: %+v, %v", sts, err)
	}
}

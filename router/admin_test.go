package router

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/api"
	"github.com/fedrouter/fedrouter/config"
	"github.com/fedrouter/fedrouter/router/routertest"
	"github.com/fedrouter/fedrouter/routes"
	"github.com/fedrouter/fedrouter/topology"
)

// newFakeService is an in-memory Service: brokers a and b exist (both
// Operational); routes added at runtime are Waiting.
func newFakeService() *routertest.Service {
	since := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	return routertest.New(routertest.Options{RouterID: "test-router", Known: []string{"a", "b"},
		Added: routes.Status{State: routes.StateWaiting}, TopologyOff: ErrTopologyOff,
		NotClustered: ErrNotClustered, NoDestinations: ErrNoDestinations,
		Brokers: []amqp.Status{
			{Broker: "a", State: amqp.Operational, Since: since, URL: "amqp://h1:5672", Generation: 1},
			{Broker: "b", State: amqp.Operational, Since: since, URL: "amqp://h2:5672", Generation: 3},
		},
		Links: []routes.LinkStatus{{Src: "a", Dest: "b", State: routes.StateOperational, Routes: 1}},
	})
}

// configCounters are the counts of a configured route in these tests.
var configCounters = routes.Counters{Forwarded: 7, Redelivered: 1, Rejected: 2, DeadLettered: 3, NoOutcome: 4, InFlight: 5, Looped: 6, NoPath: 8, Rerouted: 9}

var _ Service = (*routertest.Service)(nil)

// testToken is the admin token of the tests' servers.
const testToken = "test-token-0123456789"

// adminHarness is a real AdminServer on a loopback port and a client.
type adminHarness struct {
	t    *testing.T
	svc  *routertest.Service
	srv  *AdminServer
	base string
	hc   *http.Client
	log  *syncBuf
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// startAdmin starts a server with testToken, on loopback, in plain HTTP;
// opts adjusts its options.
func startAdmin(t *testing.T, opts ...func(*AdminOptions)) *adminHarness {
	t.Helper()
	// Registered first, so it runs after the server is closed.
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	h := &adminHarness{t: t, svc: newFakeService(), log: &syncBuf{}}
	o := AdminOptions{Listen: "127.0.0.1:0", Token: testToken, Log: zerolog.New(h.log)}
	for _, f := range opts {
		f(&o)
	}
	h.srv = NewAdminServer(h.svc, o)
	if err := h.srv.Start(); err != nil {
		t.Fatal(err)
	}
	h.base = h.srv.Scheme() + "://" + h.srv.Addr()
	tr := &http.Transport{}
	h.hc = &http.Client{Transport: tr, Timeout: 10 * time.Second}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := h.srv.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return h
}

// do sends a request and returns the status and body.
func (h *adminHarness) do(method, path, token string, body any) (int, string) {
	h.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		js, err := json.Marshal(b)
		if err != nil {
			h.t.Fatal(err)
		}
		rd = bytes.NewReader(js)
	}
	req, err := http.NewRequest(method, h.base+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if method != http.MethodGet {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := h.hc.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }() // read to the end below: nothing left to fail
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp.StatusCode, string(out)
}

// expect checks the status and that the body holds every want, for a
// request with the token.
func (h *adminHarness) expect(method, path string, body any, status int, want ...string) string {
	h.t.Helper()
	got, out := h.do(method, path, testToken, body)
	if got != status {
		h.t.Fatalf("%s %s: status %d, want %d\n%s", method, path, got, status, out)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			h.t.Errorf("%s %s: body does not contain %q:\n%s", method, path, w, out)
		}
	}
	return out
}

var queueRoute = routes.Spec{Kind: routes.KindQueue, Dest: "b", Src: "a", Exchange: "amq.direct", Queue: "orders"}

func TestAdminAddListDelete(t *testing.T) {
	h := startAdmin(t)
	out := h.expect("POST", "/api/v1/routes", queueRoute, http.StatusCreated, `"state": "Waiting"`)
	var st routes.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.ID != queueRoute.ID() || st.Spec.Credit != routes.DefaultCredit {
		t.Fatalf("created %+v (%v)", st, err)
	}
	h.expect("POST", "/api/v1/routes", queueRoute, http.StatusConflict, `"error": "Duplicate route - ignoring"`)
	out = h.expect("GET", "/api/v1/routes", nil, http.StatusOK)
	var list []routes.Status
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) != 1 || list[0].ID != st.ID {
		t.Fatalf("list %s (%v)", out, err)
	}
	h.expect("POST", "/api/v1/routes/delete", queueRoute, http.StatusOK, `"deleted": 1`)
	h.expect("POST", "/api/v1/routes/delete", queueRoute, http.StatusNotFound, "no such route")
	h.expect("GET", "/api/v1/routes", nil, http.StatusOK, "[]")
	if log := h.log.String(); !strings.Contains(log, `"route":"`+st.ID+`"`) || !strings.Contains(log, `"remote":"127.0.0.1:`) || !strings.Contains(log, `"op":"add route"`) {
		t.Errorf("mutations not logged with route and remote:\n%s", log)
	}
}

func TestAdminDuplicateBodyIsQpidWording(t *testing.T) {
	h := startAdmin(t)
	h.expect("POST", "/api/v1/routes", queueRoute, http.StatusCreated)
	_, out := h.do("POST", "/api/v1/routes", testToken, queueRoute)
	var body api.ErrorBody
	if err := json.Unmarshal([]byte(out), &body); err != nil || body.Error != "Duplicate route - ignoring" || body.Code != api.CodeDuplicate {
		t.Fatalf("duplicate body %s (%v)", out, err)
	}
}

func TestAdminDeleteByIDAndConfigRoute(t *testing.T) {
	h := startAdmin(t)
	cfg := h.svc.AddConfig(routes.Spec{Kind: routes.KindExchange, Dest: "a", Src: "b", Exchange: "amq.topic", Key: "#"}, configCounters)
	h.expect("DELETE", "/api/v1/routes/"+cfg.ID, nil, http.StatusConflict, "defined in the configuration file")
	h.expect("POST", "/api/v1/routes/delete", cfg.Spec, http.StatusConflict, "edit the file")
	h.expect("DELETE", "/api/v1/routes/feedbeef", nil, http.StatusNotFound, "no such route with id feedbeef")
	h.expect("POST", "/api/v1/routes", queueRoute, http.StatusCreated)
	h.expect("DELETE", "/api/v1/routes/"+queueRoute.ID(), nil, http.StatusOK, `"deleted": 1`)
}

func TestAdminFlush(t *testing.T) {
	h := startAdmin(t)
	h.svc.AddConfig(routes.Spec{Kind: routes.KindExchange, Dest: "b", Src: "a", Exchange: "amq.topic", Key: "#"}, configCounters)
	h.expect("POST", "/api/v1/routes", queueRoute, http.StatusCreated)
	other := queueRoute
	other.Dest, other.Src = "a", "b"
	h.expect("POST", "/api/v1/routes", other, http.StatusCreated)
	h.expect("POST", "/api/v1/routes/flush?dest=b", nil, http.StatusOK, `"deleted": 1`)
	h.expect("POST", "/api/v1/routes/flush", nil, http.StatusOK, `"deleted": 1`)
	if n := len(h.svc.Routes()); n != 1 {
		t.Fatalf("%d routes left, want the configured one", n)
	}
}

func TestAdminBadRequests(t *testing.T) {
	h := startAdmin(t)
	unknown := queueRoute
	unknown.Src = "zz"
	sameBroker := queueRoute
	sameBroker.Src = "b"
	cases := []struct {
		name   string
		body   any
		status int
		want   []string
	}{
		{"unknown broker", unknown, 400, []string{`unknown broker \"zz\"`}},
		{"invalid spec", routes.Spec{Kind: "topic", Dest: "b", Src: "b"}, 400, []string{`"problems"`, `kind \"topic\": want queue, exchange or dynamic`, "the exchange is missing"}},
		{"same broker", sameBroker, 400, []string{"same broker"}},
		{"unknown field", `{"kind":"queue","colour":"red"}`, 400, []string{`unknown field \"colour\"`}},
		{"a flow's fields", `{"kind":"queue","src":"a","dest":"b","queue":"q","dest_queue":"q","max_moves":1}`, 400, []string{"dest_queue and max_moves: set only by global destinations"}},
		{"bad JSON", `{"kind":`, 400, []string{"truncated JSON"}},
		{"syntax", `{"kind" "queue"}`, 400, []string{"invalid JSON at byte"}},
		{"wrong type", `{"credit":"lots"}`, 400, []string{`field \"credit\": got JSON string, want int`}},
		{"empty", "", 400, []string{"request body is empty"}},
		{"two objects", `{} {}`, 400, []string{"data after the route spec"}},
		{"too big", `{"kind":"` + strings.Repeat("x", MaxAdminBody) + `"}`, 413, []string{"request body larger than 1048576 bytes"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h.t = t
			h.expect("POST", "/api/v1/routes", c.body, c.status, append(c.want, `"error"`)...)
		})
	}
	h.t = t
	h.expect("POST", "/api/v1/routes/delete", `{"kind":"queue","bogus":1}`, 400, `unknown field \"bogus\"`)
}

func TestAdminServiceErrors(t *testing.T) {
	h := startAdmin(t)
	h.svc.SetErr(routes.ErrStopped)
	h.expect("POST", "/api/v1/routes", queueRoute, http.StatusServiceUnavailable, "manager stopped")
	h.svc.SetErr(errors.New("disk full"))
	h.expect("POST", "/api/v1/routes/flush", nil, http.StatusInternalServerError, "disk full")
	h.svc.SetErr(fmt.Errorf("resolve: %w \"x\"", routes.ErrUnknownBroker))
	h.expect("DELETE", "/api/v1/routes/abc", nil, http.StatusBadRequest, `unknown broker \"x\"`)
}

func TestAdminUnknownPathAndMethod(t *testing.T) {
	h := startAdmin(t)
	h.expect("GET", "/api/v1/nope", nil, http.StatusNotFound, `"error": "no such endpoint: GET /api/v1/nope`)
	req, _ := http.NewRequest("PUT", h.base+"/api/v1/routes", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close() // read to the end: nothing left to fail
	if resp.StatusCode != 405 || !strings.Contains(string(body), "method PUT not allowed on /api/v1/routes") || !strings.Contains(resp.Header.Get("Allow"), "POST") {
		t.Fatalf("PUT: %d %v %s", resp.StatusCode, resp.Header, body)
	}
}

func TestAdminLinksBrokersRouter(t *testing.T) {
	h := startAdmin(t)
	h.svc.UpdateBrokers(func(bs []amqp.Status) []amqp.Status {
		return append(bs, amqp.Status{Broker: "c", State: amqp.Waiting, URL: "amqp://h3:5672",
			LastError: errors.New("dial tcp: connection refused"), LastErrorAt: time.Unix(100, 0).UTC(), Attempt: 4, RetryIn: 8 * time.Second})
	})
	h.expect("GET", "/api/v1/links", nil, http.StatusOK, `"src": "a"`, `"routes": 1`, `"state": "Operational"`)
	out := h.expect("GET", "/api/v1/brokers", nil, http.StatusOK)
	var bs []api.BrokerStatus
	if err := json.Unmarshal([]byte(out), &bs); err != nil || len(bs) != 3 {
		t.Fatalf("brokers %s (%v)", out, err)
	}
	want := api.BrokerStatus{Broker: "c", State: "Waiting", URL: "amqp://h3:5672", LastError: "dial tcp: connection refused",
		LastErrorAt: time.Unix(100, 0).UTC(), Attempt: 4, RetryIn: "8s"}
	// The connection knew its delay only: the next attempt is that far
	// from the answer.
	if bs[2].RetryAt.IsZero() || bs[2].RetryAt.After(time.Now().Add(8*time.Second)) {
		t.Errorf("broker c: retry_at %v, want within 8s", bs[2].RetryAt)
	}
	bs[2].RetryAt = time.Time{}
	if bs[2] != want {
		t.Errorf("broker c: got %+v, want %+v", bs[2], want)
	}
	if strings.Contains(out, `"last_error_at": "0001`) {
		t.Errorf("zero last_error_at not omitted:\n%s", out)
	}
	h.svc.AddConfig(queueRoute, configCounters)
	h.expect("GET", "/api/v1/router", nil, http.StatusOK, `"router_id": "test-router"`, `"routes": 1`, `"links": 1`, `"brokers": 3`)
}

func TestAdminHealthAndReady(t *testing.T) {
	h := startAdmin(t)
	h.expect("GET", "/healthz", nil, http.StatusOK, "ok")
	h.expect("GET", "/readyz", nil, http.StatusOK, "ok")
	h.svc.UpdateBrokers(func(bs []amqp.Status) []amqp.Status { bs[1].State = amqp.Connecting; return bs })
	h.expect("GET", "/readyz", nil, http.StatusServiceUnavailable, "not ready: 1 broker(s) not Operational: b (Connecting)", `"broker": "b"`)
	h.expect("GET", "/healthz", nil, http.StatusOK, "ok")
}

func TestAdminAuth(t *testing.T) {
	h := startAdmin(t)
	for _, c := range []struct {
		path, token string
		status      int
		want        string
	}{
		{"/api/v1/routes", "", 401, "missing admin token"},
		{"/api/v1/routes", "wrong", 401, "wrong admin token"},
		{"/api/v1/routes", testToken, 200, "[]"},
		{"/metrics", "", 401, "missing admin token"},
		{"/readyz", "", 401, "missing admin token"},
		{"/api/v1/nope", "", 401, "missing admin token"},
		{"/healthz", "", 200, "ok"},
		{"/metrics", testToken, 200, "fedrouter_broker_up"},
	} {
		status, out := h.do("GET", c.path, c.token, nil)
		if status != c.status || !strings.Contains(out, c.want) {
			t.Errorf("GET %s token %q: %d %s, want %d %q", c.path, c.token, status, out, c.status, c.want)
		}
	}
	if status, out := h.do("POST", "/api/v1/routes", testToken, queueRoute); status != 201 {
		t.Errorf("authorised add: %d %s", status, out)
	}
	if !strings.Contains(h.log.String(), "wrong token") {
		t.Errorf("wrong token not logged:\n%s", h.log.String())
	}
}

func TestAdminMetrics(t *testing.T) {
	h := startAdmin(t)
	st := h.svc.AddConfig(queueRoute, configCounters)
	h.svc.SetLinks([]routes.LinkStatus{{Src: "a", Dest: "b", State: routes.StateOperational, Transit: []routes.TransitStatus{
		{Broker: "a", Dest: "c", Via: "b", State: routes.StateOperational, Counters: routes.Counters{Forwarded: 11, DeadLettered: 1}}}}})
	out := h.expect("GET", "/metrics", nil, http.StatusOK)
	labels := fmt.Sprintf(`dest="b",route=%q,src="a"`, st.ID)
	// Prometheus sorts label names: outcome comes between dest and route.
	outcome := func(o string) string {
		return fmt.Sprintf(`fedrouter_route_messages_total{dest="b",outcome=%q,route=%q,src="a"}`, o, st.ID)
	}
	for _, want := range []string{
		"# TYPE fedrouter_route_messages_total counter",
		outcome("forwarded") + " 7",
		outcome("redelivered") + " 1",
		outcome("rejected") + " 2",
		outcome("dead_lettered") + " 3",
		outcome("no_outcome") + " 4",
		outcome("looped") + " 6",
		outcome("no_path") + " 8",
		outcome("rerouted") + " 9",
		`fedrouter_transit_messages_total{broker="a",dest="c",outcome="forwarded",via="b"} 11`,
		`fedrouter_transit_messages_total{broker="a",dest="c",outcome="dead_lettered",via="b"} 1`,
		`fedrouter_transit_up{broker="a",dest="c",via="b"} 1`,
		`fedrouter_route_in_flight{` + labels + `} 5`,
		`fedrouter_route_up{` + labels + `} 1`,
		`fedrouter_broker_up{broker="a"} 1`,
		`fedrouter_broker_reconnect_attempts{broker="b"} 0`,
		"go_goroutines",
		"process_start_time_seconds",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if t.Failed() {
		t.Log(out)
	}
}

func TestAdminStartErrorsAndClose(t *testing.T) {
	a := startAdmin(t)
	b := NewAdminServer(newFakeService(), AdminOptions{Listen: a.srv.Addr(), Token: testToken})
	err := b.Start()
	if err == nil || !strings.Contains(err.Error(), "admin API: listen on "+a.srv.Addr()) || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("second listener on the same port: %v", err)
	}
	if err := b.Close(context.Background()); err != nil {
		t.Fatalf("Close of an unstarted server: %v", err)
	}
	if err := a.srv.Start(); err == nil {
		t.Fatal("Start twice succeeded")
	}
	if got := NewAdminServer(newFakeService(), AdminOptions{}).opts.Listen; got != config.DefaultAdminListen {
		t.Fatalf("default listen %q", got)
	}
}

func TestAdminCloseWaitsForRequests(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	svc := &blockingService{Service: newFakeService(), entered: make(chan struct{}), release: make(chan struct{})}
	srv := NewAdminServer(svc, AdminOptions{Listen: "127.0.0.1:0", Token: testToken})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	got := make(chan int, 1)
	go func() {
		req, err := http.NewRequest("POST", "http://"+srv.Addr()+"/api/v1/routes/flush", nil)
		if err != nil {
			got <- -1
			return
		}
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			got <- -1
			return
		}
		_ = resp.Body.Close() // only the status matters here
		got <- resp.StatusCode
	}()
	<-svc.entered
	closed := make(chan error, 1)
	go func() { closed <- srv.Close(context.Background()) }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned %v with a request in progress", err)
	case <-time.After(50 * time.Millisecond): // Close must still be waiting
	}
	close(svc.release)
	if status := <-got; status != 200 {
		t.Fatalf("request in progress during Close: status %d", status)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}

// blockingService's FlushRoutes waits for release, to hold a request open.
type blockingService struct {
	*routertest.Service
	entered, release chan struct{}
}

func (b *blockingService) FlushRoutes(ctx context.Context, dest string) (int, error) {
	close(b.entered)
	<-b.release
	return 0, nil
}

// sampleSnapshot is a real node's view: one router, brokers a and b, a
// link a→b.
func sampleSnapshot(t *testing.T) *topology.Snapshot {
	t.Helper()
	cfg := topology.DefaultConfig()
	cfg.RouterID, cfg.Instance, cfg.Secret = "r1", 1, []byte("0123456789abcdef")
	n, err := topology.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	if _, err := n.SetLocal([]topology.BrokerState{{Name: "a", State: "Operational"}, {Name: "b", State: "Operational"}},
		[]topology.Link{{From: "a", To: "b", Cost: 3, Up: true}}, now); err != nil {
		t.Fatal(err)
	}
	s := n.Snapshot(now)
	return &s
}

func TestAdminTopology(t *testing.T) {
	h := startAdmin(t)
	h.expect("GET", "/api/v1/topology", nil, http.StatusNotFound, "flooding is off")
	h.svc.SetTopology(sampleSnapshot(t))
	h.expect("GET", "/api/v1/topology", nil, http.StatusOK, `"router": "r1"`, `"from": "a"`, `"cost": 3`)
	h.expect("GET", "/api/v1/topology?format=dot", nil, http.StatusOK, "digraph", `"a" -> "b"`)
	h.expect("GET", "/api/v1/topology?format=svg", nil, http.StatusBadRequest, "want json or dot")
}

func TestAdminMetricsTopology(t *testing.T) {
	h := startAdmin(t)
	h.svc.SetTopology(sampleSnapshot(t))
	h.expect("GET", "/metrics", nil, http.StatusOK, "fedrouter_topology_routers 1", `fedrouter_topology_links{state="up"} 1`,
		`fedrouter_topology_lsa_total{outcome="originated"} 1`, `fedrouter_topology_lsa_total{outcome="bad_signature"} 0`)
}

// Paging: ?limit= answers {"routes", "next"}; following next lists every
// route once; no parameter is the whole array as before; bad parameters
// are 400 with what is wrong.
func TestAdminListPaging(t *testing.T) {
	h := startAdmin(t)
	for i := 0; i < 5; i++ {
		s := queueRoute
		s.Queue = fmt.Sprintf("q%d", i)
		h.expect("POST", "/api/v1/routes", s, http.StatusCreated)
	}
	seen := map[string]bool{}
	path := "/api/v1/routes?limit=2"
	for pages := 1; ; pages++ {
		var p api.RoutePage
		if err := json.Unmarshal([]byte(h.expect("GET", path, nil, http.StatusOK)), &p); err != nil {
			t.Fatal(err)
		}
		for _, st := range p.Routes {
			if seen[st.ID] {
				t.Fatalf("route %s listed twice", st.ID)
			}
			seen[st.ID] = true
		}
		if p.Next == "" {
			if pages != 3 || len(seen) != 5 {
				t.Fatalf("%d pages, %d routes; want 3 and 5", pages, len(seen))
			}
			break
		}
		path = "/api/v1/routes?limit=2&after=" + p.Next
	}
	var list []routes.Status
	if err := json.Unmarshal([]byte(h.expect("GET", "/api/v1/routes", nil, http.StatusOK)), &list); err != nil || len(list) != 5 {
		t.Fatalf("unpaged list: %d routes, %v", len(list), err)
	}
	for q, want := range map[string]string{
		"limit=0": `limit \"0\": want a number of routes from 1 to 10000`, "limit=ten": `limit \"ten\"`,
		"limit=10001": "from 1 to 10000", "after=zzz": "bad paging cursor", "limit=2&after=": "",
	} {
		status := http.StatusBadRequest
		if want == "" {
			status = http.StatusOK // an empty after is the first page
		}
		h.expect("GET", "/api/v1/routes?"+q, nil, status, want)
	}
}

// Past metrics.route_series, routes have no series of their own — those
// not Operational keep theirs first — and every route stays in the
// per-pair and per-state aggregates; the rest is counted.
func TestAdminMetricsRouteSeriesCap(t *testing.T) {
	h := startAdmin(t, func(o *AdminOptions) { o.RouteSeries = 2 })
	for i := 0; i < 3; i++ {
		s := queueRoute
		s.Queue = fmt.Sprintf("q%d", i)
		h.svc.AddConfig(s, configCounters) // Operational, 7 forwarded, 5 in flight
	}
	waiting := queueRoute
	waiting.Queue = "w"
	h.expect("POST", "/api/v1/routes", waiting, http.StatusCreated) // Waiting
	out := h.expect("GET", "/metrics", nil, http.StatusOK,
		`fedrouter_routes_messages_total{dest="b",outcome="forwarded",src="a"} 21`,
		`fedrouter_routes_in_flight{dest="b",src="a"} 15`,
		`fedrouter_routes{state="Operational"} 3`, `fedrouter_routes{state="Waiting"} 1`, `fedrouter_routes{state="Failed"} 0`,
		"fedrouter_route_series_omitted 2",
		fmt.Sprintf(`fedrouter_route_up{dest="b",route=%q,src="a"} 0`, waiting.ID()))
	if n := strings.Count(out, "fedrouter_route_up{"); n != 2 {
		t.Errorf("%d routes with series of their own, want 2:\n%s", n, out)
	}

	none := startAdmin(t, func(o *AdminOptions) { o.RouteSeries = -1 })
	none.svc.AddConfig(queueRoute, configCounters)
	out = none.expect("GET", "/metrics", nil, http.StatusOK, "fedrouter_route_series_omitted 1", `fedrouter_routes{state="Operational"} 1`)
	if strings.Contains(out, "fedrouter_route_up{") {
		t.Errorf("per-route series with RouteSeries < 0:\n%s", out)
	}
}

package routes_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"
	"github.com/rs/zerolog"

	famqp "github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/routes"
)

// harness is a route manager over real brokers of testdata/brokers.sh.
type harness struct {
	t       *testing.T
	m       *routes.Manager
	brokers map[string]brokertest.Broker
	conns   map[string]*famqp.Conn
	opts    routes.Options
}

func newHarness(t *testing.T, names ...string) *harness {
	t.Helper()
	return newHarnessOn(t, "", names...)
}

// dataPaths are the data paths a parameterised test runs on.
var dataPaths = []string{routes.DataPathEngine}

// onEachDataPath runs test once per data path, as subtests.
func onEachDataPath(t *testing.T, test func(t *testing.T, dataPath string)) {
	for _, dp := range dataPaths {
		t.Run(dp, func(t *testing.T) { test(t, dp) })
	}
}

// newHarnessOn is newHarness with the routes on dataPath.
func newHarnessOn(t *testing.T, dataPath string, names ...string) *harness {
	t.Helper()
	as := map[string]string{}
	for _, n := range names {
		as[n] = n
	}
	return newHarnessNamed(t, dataPath, as)
}

// newHarnessNamed is newHarnessOn with the brokers under other names:
// name in the routes → registered broker.
func newHarnessNamed(t *testing.T, dataPath string, as map[string]string) *harness {
	t.Helper()
	h := &harness{t: t, brokers: map[string]brokertest.Broker{}, conns: map[string]*famqp.Conn{}}
	h.opts = routes.Options{
		RouterID: "test", Brokers: map[string]famqp.Broker{}, DataPath: dataPath,
		Log:     zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel),
		Backoff: famqp.Backoff{Min: 200 * time.Millisecond, Max: time.Second},
	}
	for name, registered := range as {
		b := brokertest.Require(t, registered)[0]
		h.brokers[name] = b
		c := brokertest.Dial(t, b.Config(), famqp.ConnOptions{Backoff: famqp.Backoff{Min: 200 * time.Millisecond, Max: time.Second}})
		h.conns[name] = c
		h.opts.Brokers[name] = famqp.Broker{Conn: c, Profile: brokertest.Profile(t, b.Config())}
	}
	h.start()
	return h
}

// start (re)creates the manager, as a router restart would.
func (h *harness) start() {
	h.m = routes.NewManager(context.Background(), h.opts) // stopped by the test's cleanup, which t.Context() would not outlive
	m := h.m
	h.t.Cleanup(func() { m.Stop(context.Background()) })
}

func (h *harness) add(spec routes.Spec) routes.Status {
	h.t.Helper()
	st, err := h.m.Add(h.t.Context(), spec)
	if err != nil {
		h.t.Fatalf("add %s: %v", spec, err)
	}
	return st
}

func (h *harness) session(name string) *famqp.Session {
	return brokertest.Session(h.t, h.conns[name])
}

func (h *harness) mgmt(name string) *famqp.RabbitManagement {
	h.t.Helper()
	m, err := famqp.NewRabbitManagement(h.brokers[name].Config())
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(m.Close)
	return m
}

// exchangeWithQueue declares, on RabbitMQ broker name, exchange ex of
// kind bound to a durable queue q with key; removed at cleanup.
func (h *harness) exchangeWithQueue(name, ex, kind, q, key string) {
	h.t.Helper()
	brokertest.DeclareExchangeQueue(h.t, h.brokers[name].Config(), ex, kind, q, key)
}

// waitState waits for the route to reach state.
func (h *harness) waitState(id string, want routes.State) routes.Status {
	h.t.Helper()
	var st routes.Status
	brokertest.Eventually(h.t, 60*time.Second, 50*time.Millisecond, func() error {
		var ok bool
		st, ok = h.m.Get(id)
		if !ok {
			return fmt.Errorf("route %s gone", id)
		}
		if st.State != want {
			return fmt.Errorf("route %s is %s (last error %q), want %s", id, st.State, st.LastError, want)
		}
		return nil
	})
	return st
}

// waitDataPath waits until route id is Operational on dataPath (route
// list's detail says so on the engine).
func (h *harness) waitDataPath(id, dataPath string) {
	h.t.Helper()
	h.waitState(id, routes.StateOperational)
	brokertest.Eventually(h.t, 10*time.Second, 20*time.Millisecond, func() error {
		st, _ := h.m.Get(id)
		if onEngine := strings.Contains(st.Detail, "engine"); onEngine != (dataPath == routes.DataPathEngine) {
			return fmt.Errorf("route %s on data path %q is %s with detail %q", id, dataPath, st.State, st.Detail)
		}
		return nil
	})
}

const streamN = 10000

func TestIntegrationQueueRouteRabbitToRabbit(t *testing.T) {
	onEachDataPath(t, queueRouteRabbitToRabbit)
}

func queueRouteRabbitToRabbit(t *testing.T, dataPath string) {
	h := newHarnessOn(t, dataPath, "rabbit1", "rabbit2")
	src, ex, dq := brokertest.UniqueName(t, "src"), brokertest.UniqueName(t, "ex"), brokertest.UniqueName(t, "dq")
	brokertest.DeclareQueue(t, h.brokers["rabbit1"].Config(), src)
	h.exchangeWithQueue("rabbit2", ex, "fanout", dq, "")
	st := h.add(routes.Spec{Kind: routes.KindQueue, Dest: "rabbit2", Src: "rabbit1", Exchange: ex, Queue: src})
	h.waitDataPath(st.ID, dataPath)
	brokertest.SendAll(t, h.session("rabbit1"), "/amq/queue/"+src, 500, streamN, brokertest.Numbered)
	got := brokertest.Collect(t, h.conns["rabbit2"], "/amq/queue/"+dq, streamN, 30*time.Second)
	brokertest.CheckInOrderOnce(t, got, streamN)
	brokertest.Eventually(t, 10*time.Second, 50*time.Millisecond, func() error {
		s, _ := h.m.Get(st.ID)
		if s.Forwarded != streamN || s.InFlight != 0 {
			return fmt.Errorf("forwarded %d in flight %d", s.Forwarded, s.InFlight)
		}
		return nil
	})
}

func TestIntegrationQueueRouteRabbitToProton(t *testing.T) {
	onEachDataPath(t, queueRouteRabbitToProton)
}

func queueRouteRabbitToProton(t *testing.T, dataPath string) {
	h := newHarnessOn(t, dataPath, "rabbit1", "proton1")
	src, addr := brokertest.UniqueName(t, "src"), brokertest.UniqueName(t, "addr")
	brokertest.DeclareQueue(t, h.brokers["rabbit1"].Config(), src)
	// Host:port names the broker, as qpid-route users write it.
	st := h.add(routes.Spec{Kind: routes.KindQueue, Dest: h.brokers["proton1"].Addr(), Src: "guest/guest@" + h.brokers["rabbit1"].Addr(), Exchange: addr, Queue: src})
	h.waitDataPath(st.ID, dataPath)
	brokertest.SendAll(t, h.session("rabbit1"), "/amq/queue/"+src, 500, streamN, brokertest.Numbered)
	got := brokertest.Collect(t, h.conns["proton1"], addr, streamN, 30*time.Second)
	brokertest.CheckInOrderOnce(t, got, streamN)
}

func TestIntegrationExchangeRouteKey(t *testing.T) {
	onEachDataPath(t, exchangeRouteKey)
}

func exchangeRouteKey(t *testing.T, dataPath string) {
	h := newHarnessOn(t, dataPath, "rabbit1", "rabbit2")
	ex, dq := brokertest.UniqueName(t, "ex"), brokertest.UniqueName(t, "dq")
	h.exchangeWithQueue("rabbit1", ex, "topic", "", "")
	h.exchangeWithQueue("rabbit2", ex, "topic", dq, "#")
	st := h.add(routes.Spec{Kind: routes.KindExchange, Dest: "rabbit2", Src: "rabbit1", Exchange: ex, Key: "eu.orders"})
	h.waitDataPath(st.ID, dataPath)
	s := h.session("rabbit1")
	for i, key := range []string{"us.orders", "eu.orders", "eu.refunds", "eu.orders"} {
		brokertest.SendAll(t, s, "/exchange/"+ex+"/"+key, 1, 1, func(int) *goamqp.Message {
			m := brokertest.Numbered(i)
			m.ApplicationProperties["key"] = key
			return m
		})
	}
	got := brokertest.Collect(t, h.conns["rabbit2"], "/amq/queue/"+dq, 2, 20*time.Second)
	if fmt.Sprint(got) != "[1 3]" {
		t.Fatalf("crossed: %v, want only the eu.orders messages [1 3]", got)
	}
	// Nothing else may follow: the non-matching keys stay behind.
	m := h.mgmt("rabbit2")
	brokertest.Eventually(t, 5*time.Second, 100*time.Millisecond, func() error {
		q, err := m.Queue(context.Background(), dq)
		if err != nil {
			return err
		}
		if q.Messages != 0 {
			return fmt.Errorf("%d more messages at the destination", q.Messages)
		}
		if g, _ := h.m.Get(st.ID); g.Forwarded != 2 || g.Sent != 2 || g.InFlight != 0 {
			return fmt.Errorf("counters %+v", g.Counters)
		}
		return nil
	})
}

func TestIntegrationDurableExchangeRouteKeepsCollecting(t *testing.T) {
	const n = 1000
	h := newHarness(t, "rabbit1", "rabbit2")
	ex, dq := brokertest.UniqueName(t, "ex"), brokertest.UniqueName(t, "dq")
	h.exchangeWithQueue("rabbit1", ex, "direct", "", "")
	h.exchangeWithQueue("rabbit2", ex, "direct", dq, "k")
	spec := routes.Spec{Kind: routes.KindExchange, Dest: "rabbit2", Src: "rabbit1", Exchange: ex, Key: "k", Durable: true}
	st := h.add(spec)
	h.waitState(st.ID, routes.StateOperational)
	h.m.Stop(context.Background()) // the router goes away; its subscription stays

	brokertest.SendAll(t, h.session("rabbit1"), "/exchange/"+ex+"/k", 500, n, brokertest.Numbered)
	h.start()
	h.add(spec)
	got := brokertest.Collect(t, h.conns["rabbit2"], "/amq/queue/"+dq, n, 30*time.Second)
	brokertest.CheckInOrderOnce(t, got, n)

	// Deleting the route removes its subscription at the source.
	if err := h.m.DeleteSpec(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	bindings, err := h.mgmt("rabbit1").Bindings(context.Background(), ex, "fedrouter.test."+st.ID)
	if err == nil && len(bindings) > 0 {
		t.Fatalf("subscription still bound after delete: %v", bindings)
	}
}

func TestIntegrationDestinationKilledMidStream(t *testing.T) {
	const n = 20000
	h := newHarness(t, "rabbit1", "rabbit2")
	src, ex, dq := brokertest.UniqueName(t, "src"), brokertest.UniqueName(t, "ex"), brokertest.UniqueName(t, "dq")
	brokertest.DeclareQueue(t, h.brokers["rabbit1"].Config(), src)
	h.exchangeWithQueue("rabbit2", ex, "fanout", dq, "")
	const credit = 200
	st := h.add(routes.Spec{Kind: routes.KindQueue, Dest: "rabbit2", Src: "rabbit1", Exchange: ex, Queue: src, Credit: credit})
	brokertest.SendAll(t, h.session("rabbit1"), "/amq/queue/"+src, 500, n, brokertest.Numbered)
	brokertest.Eventually(t, 60*time.Second, 10*time.Millisecond, func() error {
		if s, _ := h.m.Get(st.ID); s.Forwarded < n/4 {
			return fmt.Errorf("forwarded %d", s.Forwarded)
		}
		return nil
	})
	brokertest.Kill(t, "rabbit2")
	h.waitState(st.ID, routes.StateWaiting)
	brokertest.Restart(t, "rabbit2")
	h.waitState(st.ID, routes.StateOperational)
	got := brokertest.Collect(t, h.conns["rabbit2"], "/amq/queue/"+dq, n, 60*time.Second)
	dups := brokertest.CheckNoLoss(t, got, n)
	t.Logf("%d messages, %d duplicates after kill -9 of the destination (window %d)", n, dups, credit)
	if dups > credit {
		t.Fatalf("%d duplicates, more than the in-flight window %d", dups, credit)
	}
}

// sendPoison publishes a message go-amqp cannot decode, with Proton's
// Python binding (testdata/poison.py).
func sendPoison(t *testing.T, b brokertest.Broker, addr string, args ...string) {
	t.Helper()
	pyproton(t, "poison.py", b, addr, args...)
}

// pyproton runs one of testdata's Proton Python clients against b.
func pyproton(t *testing.T, script string, b brokertest.Broker, addr string, args ...string) {
	t.Helper()
	pyprotonOut(t, script, b, addr, args...)
}

// pyprotonOut is pyproton, returning what the client printed.
func pyprotonOut(t *testing.T, script string, b brokertest.Broker, addr string, args ...string) string {
	t.Helper()
	out, err := exec.Command("/usr/bin/python3", append([]string{"../testdata/" + script, b.URL, addr}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return string(out)
}

// A message go-amqp cannot decode (a decimal64 body) is no poison on the
// engine: its bytes cross as they are, in their place in the queue, and
// the route stays Operational. The destination's first message is taken
// with Proton (poison.py --take) and must be it; the rest follow in order.
func TestIntegrationUndecodableBodyCrosses(t *testing.T) {
	h := newHarness(t, "rabbit1", "rabbit2")
	src, ex, dq := brokertest.UniqueName(t, "src"), brokertest.UniqueName(t, "ex"), brokertest.UniqueName(t, "dq")
	cfg := h.brokers["rabbit1"].Config()
	brokertest.DeclareQueue(t, cfg, src)
	h.exchangeWithQueue("rabbit2", ex, "fanout", dq, "")
	sendPoison(t, h.brokers["rabbit1"], "/amq/queue/"+src)
	brokertest.SendAll(t, h.session("rabbit1"), "/amq/queue/"+src, 10, 10, brokertest.Numbered)
	st := h.add(routes.Spec{Kind: routes.KindQueue, Dest: "rabbit2", Src: "rabbit1", Exchange: ex, Queue: src})
	brokertest.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
		g, _ := h.m.Get(st.ID)
		if g.Forwarded != 11 || g.InFlight != 0 || g.State != routes.StateOperational {
			return fmt.Errorf("route %s: %+v (%s)", g.State, g.Counters, g.LastError)
		}
		return nil
	})
	if out := pyprotonOut(t, "poison.py", h.brokers["rabbit2"], "/amq/queue/"+dq, "--take"); !strings.Contains(out, "12345") {
		t.Fatalf("the destination's first message is not the decimal64 one: %q", out)
	}
	got := brokertest.Collect(t, h.conns["rabbit2"], "/amq/queue/"+dq, 10, 30*time.Second)
	brokertest.CheckInOrderOnce(t, got, 10)
}

// On the engine data path a message whose annotations do not decode (a
// binary annotation key) is no poison: the forwarder rejects it at the
// source with amqp:decode-error (counted as rejected; the route's
// on_reject policy, reject) and the messages around it cross, the route
// Operational throughout.
func TestIntegrationUndecodableOnEngine(t *testing.T) {
	h := newHarnessOn(t, routes.DataPathEngine, "rabbit1", "rabbit2")
	src, ex, dq := brokertest.UniqueName(t, "src"), brokertest.UniqueName(t, "ex"), brokertest.UniqueName(t, "dq")
	cfg := h.brokers["rabbit1"].Config()
	brokertest.DeclareQueue(t, cfg, src)
	h.exchangeWithQueue("rabbit2", ex, "fanout", dq, "")
	h.fillAroundBadKey(src)
	st := h.add(routes.Spec{Kind: routes.KindQueue, Dest: "rabbit2", Src: "rabbit1", Exchange: ex, Queue: src})
	h.waitDataPath(st.ID, routes.DataPathEngine)
	got := brokertest.Collect(t, h.conns["rabbit2"], "/amq/queue/"+dq, 10, 30*time.Second)
	brokertest.CheckInOrderOnce(t, got, 10)
	brokertest.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error {
		g, _ := h.m.Get(st.ID)
		if g.Forwarded != 10 || g.Rejected != 1 || g.InFlight != 0 || g.State != routes.StateOperational {
			return fmt.Errorf("route %s: %+v (%s)", g.State, g.Counters, g.LastError)
		}
		return nil
	})
}

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
var dataPaths = []string{routes.DataPathGoAMQP, routes.DataPathEngine}

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
	out, err := exec.Command("/usr/bin/python3", append([]string{"../testdata/" + script, b.URL, addr}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
}

// A poison message sets its route Failed with the decoder's words, and
// another route over the same brokers keeps flowing. Once the operator
// takes the poison message away, the route's next retry carries on.
//
// Duplicates, bounded (docs/delivery.md, "How many at most"): the run
// that meets the poison message loses its window — what it holds
// unsettled at the source besides the poison message itself, at most
// credit − 1 messages, come again; the probing runs after it (credit 1)
// settle each message before the next is fetched and duplicate none.
// The other route loses nothing.
func TestIntegrationPoisonMessageFailsOnlyItsRoute(t *testing.T) {
	t.Run("decimal64 body", func(t *testing.T) { poisonFailsOnlyItsRoute(t, "poison.py", "decimal") })
	// The message that made go-amqp v1.7.0 panic and take the router
	// down (amqp/keyguard.go): now a poison message like any other.
	t.Run("binary annotation key", func(t *testing.T) { poisonFailsOnlyItsRoute(t, "badkey.py", "annotation key") })
}

func poisonFailsOnlyItsRoute(t *testing.T, script, words string) {
	const (
		// The poisoned route's window, and more messages ahead of the
		// poison message than it holds: what bounds the duplicates is the
		// window, not how many came before.
		badCredit = 20
		ahead     = 50
		badBound  = badCredit - 1 // the window less the poison message's place in it
		good0     = 100           // the good route's messages: good0..good0+goodN-1
		goodN     = 100
		goodBound = 0 // its connection, sessions and links are untouched
	)
	// go-amqp's behaviour: on the engine nothing is decoded and such a
	// message is refused alone (TestIntegrationUndecodableOnEngine).
	h := newHarnessOn(t, routes.DataPathGoAMQP, "rabbit1", "rabbit2")
	h.m.Stop(context.Background())
	h.opts.FailedRetry = time.Second
	h.start()
	bad, good := brokertest.UniqueName(t, "bad"), brokertest.UniqueName(t, "good")
	ex, dq := brokertest.UniqueName(t, "ex"), brokertest.UniqueName(t, "dq")
	cfg := h.brokers["rabbit1"].Config()
	brokertest.DeclareQueue(t, cfg, bad)
	brokertest.DeclareQueue(t, cfg, good)
	h.exchangeWithQueue("rabbit2", ex, "fanout", dq, "")

	s := h.session("rabbit1")
	brokertest.SendAll(t, s, "/amq/queue/"+bad, 10, ahead, brokertest.Numbered)
	b1 := h.brokers["rabbit1"]
	if script == "badkey.py" { // it takes the credentials from the URL
		b1.URL = strings.Replace(b1.URL, "amqp://", "amqp://"+cfg.Username+":"+cfg.Password+"@", 1)
	}
	pyproton(t, script, b1, "/amq/queue/"+bad)
	badRoute := h.add(routes.Spec{Kind: routes.KindQueue, Dest: "rabbit2", Src: "rabbit1", Exchange: ex, Queue: bad, Credit: badCredit})
	goodRoute := h.add(routes.Spec{Kind: routes.KindQueue, Dest: "rabbit2", Src: "rabbit1", Exchange: ex, Queue: good})

	st := h.waitState(badRoute.ID, routes.StateFailed)
	if !strings.Contains(st.LastError, "poison message") || !strings.Contains(st.LastError, words) {
		t.Fatalf("failed route's error %q: want the poison message and the decoder's words", st.LastError)
	}
	if st.Forwarded < ahead {
		t.Fatalf("forwarded %d: the %d messages before the poison one must cross", st.Forwarded, ahead)
	}
	brokertest.SendAll(t, s, "/amq/queue/"+good, 100, goodN, func(i int) *goamqp.Message { return brokertest.Numbered(good0 + i) })
	got := brokertest.Collect(t, h.conns["rabbit2"], "/amq/queue/"+dq, ahead+goodN, 30*time.Second)
	brokertest.CheckNoLossFrom(t, got, 0, ahead)
	brokertest.CheckNoLossFrom(t, got, good0, good0+goodN)
	badDups, goodDups := duplicatesIn(got, 0, ahead), duplicatesIn(got, good0, good0+goodN)
	t.Logf("poison message: the poisoned route (credit %d) duplicated %d (bound %d), the other route %d (bound %d)",
		badCredit, badDups, badBound, goodDups, goodBound)
	if badDups > badBound {
		t.Errorf("the poisoned route duplicated %d messages, more than its window less the poison message (%d)", badDups, badBound)
	}
	if goodDups > goodBound {
		t.Errorf("the other route duplicated %d messages: the poison message touched it", goodDups)
	}
	if g, _ := h.m.Get(goodRoute.ID); g.State != routes.StateOperational {
		t.Fatalf("good route is %s: %s", g.State, g.LastError)
	}

	// The operator removes the poison message; what was behind it crosses.
	brokertest.SendAll(t, s, "/amq/queue/"+bad, 100, 1000, func(i int) *goamqp.Message { return brokertest.Numbered(1000 + i) })
	sendPoison(t, h.brokers["rabbit1"], "/amq/queue/"+bad, "--take")
	got = brokertest.Collect(t, h.conns["rabbit2"], "/amq/queue/"+dq, 1000, 30*time.Second)
	brokertest.CheckNoLossFrom(t, got, 1000, 2000)
	// Nothing fails once it is gone: the probing runs and the full-credit
	// runs after them end cleanly, and nothing comes twice.
	if n := duplicatesIn(got, 1000, 2000); n != 0 {
		t.Errorf("%d duplicates after the poison message was removed", n)
	}
	h.waitState(badRoute.ID, routes.StateOperational)
}

// duplicatesIn counts the arrivals of sequence numbers in [from,to)
// beyond the first of each.
func duplicatesIn(got []int64, from, to int64) int {
	seen := map[int64]bool{}
	dups := 0
	for _, s := range got {
		if s < from || s >= to {
			continue
		}
		if seen[s] {
			dups++
		}
		seen[s] = true
	}
	return dups
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

package routes_test

import (
	"context"
	"fmt"
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
	h := &harness{t: t, brokers: map[string]brokertest.Broker{}, conns: map[string]*famqp.Conn{}}
	h.opts = routes.Options{
		RouterID: "test", Brokers: map[string]routes.Broker{},
		Log:     zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel),
		Backoff: famqp.Backoff{Min: 200 * time.Millisecond, Max: time.Second},
	}
	for _, b := range brokertest.Require(t, names...) {
		h.brokers[b.Name] = b
		c := brokertest.Dial(t, b.Config(), famqp.ConnOptions{Backoff: famqp.Backoff{Min: 200 * time.Millisecond, Max: time.Second}})
		h.conns[b.Name] = c
		h.opts.Brokers[b.Name] = routes.Broker{Conn: c, Profile: brokertest.Profile(t, b.Config())}
	}
	h.start()
	return h
}

// start (re)creates the manager, as a router restart would.
func (h *harness) start() {
	h.m = routes.NewManager(h.opts)
	m := h.m
	h.t.Cleanup(func() { m.Stop(context.Background()) })
}

func (h *harness) add(spec routes.Spec) routes.Status {
	h.t.Helper()
	st, err := h.m.Add(spec)
	if err != nil {
		h.t.Fatalf("add %s: %v", spec, err)
	}
	return st
}

func (h *harness) session(name string) *goamqp.Session {
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

// fanout declares, on RabbitMQ broker name, exchange ex of kind bound to a
// durable queue q with key; both removed at cleanup.
func (h *harness) exchangeWithQueue(name, ex, kind, q, key string) {
	h.t.Helper()
	m := h.mgmt(name)
	ctx := context.Background()
	if err := m.DeclareExchange(ctx, ex, kind, true); err != nil {
		h.t.Fatal(err)
	}
	if q != "" {
		if err := m.DeclareQueue(ctx, q, famqp.QueueArgs{Durable: true}); err != nil {
			h.t.Fatal(err)
		}
		if err := m.Bind(ctx, ex, q, key); err != nil {
			h.t.Fatal(err)
		}
	}
	h.t.Cleanup(func() {
		_ = m.DeleteQueue(context.Background(), q)
		_ = m.DeleteExchange(context.Background(), ex)
	})
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

// numbered is message i of a test stream: every section set, with the
// sequence number in the application properties.
func numbered(i int) *goamqp.Message {
	subj := "orders.created"
	return &goamqp.Message{
		Header:                &goamqp.MessageHeader{Durable: true, Priority: 6},
		Annotations:           goamqp.Annotations{"x-opt-origin": "paris"},
		Properties:            &goamqp.MessageProperties{MessageID: fmt.Sprintf("id-%06d", i), Subject: &subj, CorrelationID: "corr"},
		ApplicationProperties: map[string]any{"seq": int64(i), "tenant": "acme"},
		Data:                  [][]byte{[]byte(fmt.Sprintf("m-%06d", i))},
	}
}

// collect receives from addr until want distinct sequence numbers arrived
// or nothing came for stall; it returns the sequence numbers in arrival
// order (duplicates included) and checks every message's sections.
func (h *harness) collect(name, addr string, want int, stall time.Duration) []int64 {
	h.t.Helper()
	r := brokertest.OpenReceiver(h.t, h.session(name), famqp.LinkSpec{Address: addr}, 500)
	var got []int64
	seen := map[int64]bool{}
	for len(seen) < want {
		ctx, cancel := context.WithTimeout(context.Background(), stall)
		msg, err := r.Receive(ctx)
		if err != nil {
			cancel()
			h.t.Fatalf("%s %s: after %d distinct of %d: %v", name, addr, len(seen), want, err)
		}
		if err := r.Accept(ctx, msg); err != nil {
			cancel()
			h.t.Fatal(err)
		}
		cancel()
		seq, ok := msg.ApplicationProperties["seq"].(int64)
		if !ok {
			h.t.Fatalf("message without seq: %+v", msg)
		}
		checkSections(h.t, seq, msg)
		got = append(got, seq)
		seen[seq] = true
	}
	return got
}

func checkSections(t *testing.T, seq int64, m *goamqp.Message) {
	t.Helper()
	want := numbered(int(seq))
	switch {
	case m.Header == nil || !m.Header.Durable || m.Header.Priority != 6:
		t.Fatalf("seq %d: header %+v", seq, m.Header)
	case m.Annotations["x-opt-origin"] != "paris":
		t.Fatalf("seq %d: annotations %v", seq, m.Annotations)
	case m.ApplicationProperties["tenant"] != "acme":
		t.Fatalf("seq %d: application properties %v", seq, m.ApplicationProperties)
	case m.Properties == nil || m.Properties.MessageID != want.Properties.MessageID || m.Properties.Subject == nil || *m.Properties.Subject != "orders.created":
		t.Fatalf("seq %d: properties %+v", seq, m.Properties)
	case string(m.GetData()) != string(want.GetData()):
		t.Fatalf("seq %d: body %q", seq, m.GetData())
	}
}

func checkInOrderOnce(t *testing.T, got []int64, n int) {
	t.Helper()
	if len(got) != n {
		t.Fatalf("received %d messages, want %d (duplicates?)", len(got), n)
	}
	for i, s := range got {
		if s != int64(i) {
			t.Fatalf("message %d has seq %d: out of order", i, s)
		}
	}
}

// checkNoLoss fails unless every seq in [0,n) arrived; it returns the
// number of duplicates.
func checkNoLoss(t *testing.T, got []int64, n int) int {
	t.Helper()
	seen := map[int64]int{}
	for _, s := range got {
		seen[s]++
	}
	for i := 0; i < n; i++ {
		if seen[int64(i)] == 0 {
			t.Fatalf("seq %d lost (%d distinct of %d)", i, len(seen), n)
		}
	}
	return len(got) - len(seen)
}

const streamN = 10000

func TestIntegrationQueueRouteRabbitToRabbit(t *testing.T) {
	h := newHarness(t, "rabbit1", "rabbit2")
	src, ex, dq := brokertest.UniqueName(t, "src"), brokertest.UniqueName(t, "ex"), brokertest.UniqueName(t, "dq")
	brokertest.DeclareQueue(t, h.brokers["rabbit1"].Config(), src)
	h.exchangeWithQueue("rabbit2", ex, "fanout", dq, "")
	st := h.add(routes.Spec{Kind: routes.KindQueue, Dest: "rabbit2", Src: "rabbit1", Exchange: ex, Queue: src})
	brokertest.SendAll(t, h.session("rabbit1"), "/amq/queue/"+src, 500, streamN, numbered)
	got := h.collect("rabbit2", "/amq/queue/"+dq, streamN, 30*time.Second)
	checkInOrderOnce(t, got, streamN)
	brokertest.Eventually(t, 10*time.Second, 50*time.Millisecond, func() error {
		s, _ := h.m.Get(st.ID)
		if s.Forwarded != streamN || s.InFlight != 0 {
			return fmt.Errorf("forwarded %d in flight %d", s.Forwarded, s.InFlight)
		}
		return nil
	})
}

func TestIntegrationQueueRouteRabbitToProton(t *testing.T) {
	h := newHarness(t, "rabbit1", "proton1")
	src, addr := brokertest.UniqueName(t, "src"), brokertest.UniqueName(t, "addr")
	brokertest.DeclareQueue(t, h.brokers["rabbit1"].Config(), src)
	// Host:port names the broker, as qpid-route users write it.
	h.add(routes.Spec{Kind: routes.KindQueue, Dest: h.brokers["proton1"].Addr(), Src: "guest/guest@" + h.brokers["rabbit1"].Addr(), Exchange: addr, Queue: src})
	brokertest.SendAll(t, h.session("rabbit1"), "/amq/queue/"+src, 500, streamN, numbered)
	got := h.collect("proton1", addr, streamN, 30*time.Second)
	checkInOrderOnce(t, got, streamN)
}

func TestIntegrationExchangeRouteKey(t *testing.T) {
	h := newHarness(t, "rabbit1", "rabbit2")
	ex, dq := brokertest.UniqueName(t, "ex"), brokertest.UniqueName(t, "dq")
	h.exchangeWithQueue("rabbit1", ex, "topic", "", "")
	h.exchangeWithQueue("rabbit2", ex, "topic", dq, "#")
	st := h.add(routes.Spec{Kind: routes.KindExchange, Dest: "rabbit2", Src: "rabbit1", Exchange: ex, Key: "eu.orders"})
	h.waitState(st.ID, routes.StateOperational)
	s := h.session("rabbit1")
	for i, key := range []string{"us.orders", "eu.orders", "eu.refunds", "eu.orders"} {
		brokertest.SendAll(t, s, "/exchange/"+ex+"/"+key, 1, 1, func(int) *goamqp.Message {
			m := numbered(i)
			m.ApplicationProperties["key"] = key
			return m
		})
	}
	got := h.collect("rabbit2", "/amq/queue/"+dq, 2, 20*time.Second)
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

	brokertest.SendAll(t, h.session("rabbit1"), "/exchange/"+ex+"/k", 500, n, numbered)
	h.start()
	h.add(spec)
	got := h.collect("rabbit2", "/amq/queue/"+dq, n, 30*time.Second)
	checkInOrderOnce(t, got, n)

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
	brokertest.SendAll(t, h.session("rabbit1"), "/amq/queue/"+src, 500, n, numbered)
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
	got := h.collect("rabbit2", "/amq/queue/"+dq, n, 60*time.Second)
	dups := checkNoLoss(t, got, n)
	t.Logf("%d messages, %d duplicates after kill -9 of the destination (window %d)", n, dups, credit)
	if dups > credit {
		t.Fatalf("%d duplicates, more than the in-flight window %d", dups, credit)
	}
}

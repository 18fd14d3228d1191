package main

// fedrouter processes routing between qpidd brokers (testdata/qpidd.sh:
// qpidd1 and qpidd2 strict) and RabbitMQ, issue 19. Skipped with -short,
// and without the shared qpidd build unless CI is set.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/routes"
)

// brokerYAML is b's entry in a router configuration, named as b.
func brokerYAML(b brokertest.Broker) string {
	if b.Kind == "rabbitmq" {
		return fmt.Sprintf("  - {name: %s, url: %q, profile: rabbitmq, username: guest, password: guest, management: {url: %q}}\n", b.Name, b.URL, b.MgmtURL)
	}
	return fmt.Sprintf("  - {name: %s, url: %q, profile: %s}\n", b.Name, b.URL, b.Kind)
}

// writeConfig writes a router configuration over bs (plus extra YAML) and
// returns its path.
func writeConfig(t *testing.T, dir, id, extra string, bs ...brokertest.Broker) string {
	t.Helper()
	var y strings.Builder
	fmt.Fprintf(&y, "router_id: %s\nbrokers:\n", id)
	for _, b := range bs {
		y.WriteString(brokerYAML(b))
	}
	y.WriteString("reconnect: {min: 100ms, max: 1s}\nadmin: {listen: \"127.0.0.1:0\"}\nlog: {level: info, format: json}\n")
	y.WriteString(extra)
	path := filepath.Join(dir, id+".yaml")
	if err := os.WriteFile(path, []byte(withAdminPort(t, y.String())), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// mustCLI runs a fedrouter command against p and fails unless it succeeds.
func (p *routerProc) mustCLI(args ...string) string {
	p.t.Helper()
	out, code := p.cli(args...)
	if code != 0 {
		p.t.Fatalf("%s: exit %d: %s", strings.Join(args, " "), code, out)
	}
	return out
}

// kill9After kills the router with SIGKILL once its only route has
// forwarded at least atLeast messages, and returns the route as last seen.
func (p *routerProc) kill9After(atLeast uint64) routes.Status {
	p.t.Helper()
	st := waitRoute(p.t, p, func(st routes.Status) error {
		if st.Forwarded < atLeast {
			return fmt.Errorf("forwarded %d", st.Forwarded)
		}
		return nil
	})
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		p.t.Fatal(err)
	}
	_ = p.cmd.Wait() // killed: the exit status says so and nothing more
	return st
}

func operational(st routes.Status) error {
	if st.State != routes.StateOperational {
		return fmt.Errorf("state %s (%s)", st.State, st.LastError)
	}
	return nil
}

// A durable exchange route with a literal key out of qpidd, to qpidd and
// to RabbitMQ, the router killed with -9 mid-stream and started again:
// nothing is lost (the subscription queue is durable and shared, its
// messages unsettled), the literal key reaches the destination (on qpidd
// as the subject; items 1 and 2 of issue 19), and deleting the route
// deletes the subscription queue.
func TestQpidDurableExchangeRouteRouterKill9(t *testing.T) {
	parallelE2E(t)
	bs := brokertest.Require(t, "qpidd1", "qpidd2", "rabbit1")
	for _, dst := range bs[1:] {
		t.Run("to "+dst.Name, func(t *testing.T) { durableRouteKill9(t, bs[0], dst) })
	}
}

func durableRouteKill9(t *testing.T, src, dst brokertest.Broker) {
	const n, credit = 20000, 200
	ex, dq := brokertest.UniqueName(t, "ex"), brokertest.UniqueName(t, "dq")
	brokertest.DeclareExchangeQueue(t, src.Config(), ex, "topic", "", "")
	brokertest.DeclareExchangeQueue(t, dst.Config(), ex, "topic", dq, "orders.created")

	id := "qk" + dst.Name // a router id each: the subtests' subscription queues apart
	config := writeConfig(t, t.TempDir(), id, "", src, dst)
	p := startRouter(t, config)
	route := []string{dst.Name, src.Name, ex, "orders.created"}
	p.mustCLI(append([]string{"route", "add", "-d", "--credit", fmt.Sprint(credit)}, route...)...)
	waitRoute(t, p, operational)

	// Sent while the router forwards: the engine keeps pace with a
	// publisher, so a stream sent before the kill would all have crossed.
	pub := brokertest.Session(t, brokertest.Dial(t, src.Config(), amqp.ConnOptions{}))
	sent := make(chan struct{})
	go func() { // ends when the send is done
		defer close(sent)
		brokertest.SendAll(t, pub, ex, 200, n, brokertest.Numbered)
	}()
	atKill := p.kill9After(n / 10)
	<-sent
	if atKill.Forwarded >= n {
		t.Fatalf("the kill came after all %d had crossed: nothing was in flight", n)
	}

	p = startRouter(t, config)
	waitRoute(t, p, operational)
	got := brokertest.Collect(t, brokertest.Dial(t, dst.Config(), amqp.ConnOptions{}), queueAddr(dst, dq), n, 60*time.Second)
	dups := brokertest.CheckNoLoss(t, got, n)
	t.Logf("%s -> %s durable exchange route, router kill -9 with %d forwarded: sent %d, received %d, lost 0, duplicates %d (credit %d)",
		src.Name, dst.Name, atKill.Forwarded, n, len(got), dups, credit)
	if dups > credit {
		t.Fatalf("%d duplicates, more than the in-flight window %d", dups, credit)
	}
	checkSubscriptionDeleted(t, p, src, id, route)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
}

// checkSubscriptionDeleted: router id's one subscription queue on qpidd
// src goes when its route is deleted.
func checkSubscriptionDeleted(t *testing.T, p *routerProc, src brokertest.Broker, id string, route []string) {
	t.Helper()
	m := brokertest.QpidManagement(t, src.Config())
	subQueues := func() []string {
		qs, err := m.Objects(t.Context(), "queue")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, q := range qs {
			if strings.HasPrefix(q.String("name"), "fedrouter."+id+".") {
				out = append(out, q.String("name"))
			}
		}
		return out
	}
	if qs := subQueues(); len(qs) != 1 {
		t.Fatalf("subscription queues at the source while the route runs: %v", qs)
	}
	p.mustCLI(append([]string{"route", "del"}, route...)...)
	brokertest.Eventually(t, 20*time.Second, 50*time.Millisecond, func() error {
		if qs := subQueues(); len(qs) != 0 {
			return fmt.Errorf("subscription queues left after route del: %v", qs)
		}
		return nil
	})
}

// routeCase is one route of TestQpidRouteKinds: the CLI arguments, where
// to publish and where the messages must arrive.
type routeCase struct {
	name    string
	add     []string
	src     brokertest.Broker
	pubAddr string
	dst     brokertest.Broker
	dstAddr string
}

// Every route kind between qpidd brokers and between qpidd and RabbitMQ,
// on strict qpidd brokers, run by one router: queue routes, exchange
// routes with a wildcard and a literal key.
func TestQpidRouteKinds(t *testing.T) {
	t.Parallel() // each data path a parallel subtest
	for _, dataPath := range []string{routes.DataPathEngine} {
		t.Run(dataPath, func(t *testing.T) {
			parallelE2E(t)
			qpidRouteKinds(t, dataPath)
		})
	}
}

// qpidRouteKinds runs every route kind between qpidd and RabbitMQ on
// dataPath. Asked for the engine, every route runs on it, the exchange
// routes with a literal key to qpidd included: the engine's sender gives
// each message that key as its subject (docs/engine.md).
func qpidRouteKinds(t *testing.T, dataPath string) {
	const n = 300
	bs := brokertest.Require(t, "qpidd1", "qpidd2", "rabbit1")
	q1, q2, r1 := bs[0], bs[1], bs[2]
	var cases []routeCase
	// queue route: source queue -> destination exchange (bound to a queue)
	for _, pair := range [][2]brokertest.Broker{{q1, q2}, {q1, r1}, {r1, q2}} {
		src, dst := pair[0], pair[1]
		sq, ex, dq := brokertest.UniqueName(t, "sq"), brokertest.UniqueName(t, "ex"), brokertest.UniqueName(t, "dq")
		brokertest.DeclareQueue(t, src.Config(), sq)
		brokertest.DeclareExchangeQueue(t, dst.Config(), ex, "fanout", dq, "")
		cases = append(cases, routeCase{name: "queue " + src.Name + "->" + dst.Name, add: []string{"queue", "add", dst.Name, src.Name, ex, sq},
			src: src, pubAddr: queueAddr(src, sq), dst: dst, dstAddr: queueAddr(dst, dq)})
	}
	// exchange routes, wildcard and literal key
	for _, key := range []string{"orders.#", "orders.created"} {
		for _, pair := range [][2]brokertest.Broker{{q1, q2}, {q1, r1}, {r1, q2}} {
			src, dst := pair[0], pair[1]
			ex, dq := brokertest.UniqueName(t, "ex"), brokertest.UniqueName(t, "dq")
			brokertest.DeclareExchangeQueue(t, src.Config(), ex, "topic", "", "")
			brokertest.DeclareExchangeQueue(t, dst.Config(), ex, "topic", dq, "orders.*")
			cases = append(cases, routeCase{name: "exchange " + key + " " + src.Name + "->" + dst.Name, add: []string{"route", "add", dst.Name, src.Name, ex, key},
				src: src, pubAddr: exchangeAddr(src, ex), dst: dst, dstAddr: queueAddr(dst, dq)})
		}
	}
	p := startRouter(t, writeConfig(t, t.TempDir(), "qkinds", "data_path: "+dataPath+"\n", bs...))
	for _, c := range cases {
		p.mustCLI(c.add...)
	}
	brokertest.Eventually(t, 60*time.Second, 100*time.Millisecond, func() error {
		for _, st := range p.routes() {
			if err := onEngine(st); err != nil {
				return fmt.Errorf("route %s: %w", st.Spec, err)
			}
		}
		return nil
	})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pub := brokertest.Session(t, brokertest.Dial(t, c.src.Config(), amqp.ConnOptions{}))
			brokertest.SendAll(t, pub, c.pubAddr, 100, n, brokertest.Numbered)
			got := brokertest.Collect(t, brokertest.Dial(t, c.dst.Config(), amqp.ConnOptions{}), c.dstAddr, n, 30*time.Second)
			brokertest.CheckInOrderOnce(t, got, n)
			t.Logf("%s: sent %d, received %d in order, lost 0, duplicates 0", c.name, n, len(got))
		})
	}
}

// queueAddr and exchangeAddr are how a test application addresses a queue
// or an exchange on b.
func queueAddr(b brokertest.Broker, q string) string {
	if b.Kind == "rabbitmq" {
		return "/amq/queue/" + q
	}
	return q
}

func exchangeAddr(b brokertest.Broker, ex string) string {
	if b.Kind == "rabbitmq" {
		return "/exchange/" + ex
	}
	return ex
}

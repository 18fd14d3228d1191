package amqp_test

// Integration tests of the qpid profile against qpidd (testdata/qpidd.sh):
// qpidd1, qpidd2 and qpidd4 are strict, qpidd3 creates queues on demand. Skipped
// with -short, and without the shared qpidd build unless CI is set.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	famqp "github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
)

// sendVia sends n messages through a famqp sender for spec (the router's
// path, where LinkSpec.Subject applies), each with subject subj.
func sendVia(t *testing.T, s *famqp.Session, spec famqp.LinkSpec, n int, subj string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	snd, err := s.NewSender(ctx, spec)
	if err != nil {
		t.Fatalf("attach sender %+v: %v", spec, err)
	}
	for i := 0; i < n; i++ {
		m := famqp.NewMessage([]byte(fmt.Sprintf("%s-%d", subj, i)))
		m.SetSubject(subj)
		r, err := snd.Send(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Wait(ctx); err != nil {
			t.Fatalf("outcome of %d: %v", i, err)
		}
	}
}

// Item 1 of issue 19: a literal key reaches qpidd as the subject of a send
// to the bare exchange (qpidd refused "amq.topic/news.eu" with not-found).
func TestIntegrationQpidExchangeLiteralKey(t *testing.T) {
	b := brokertest.Require(t, "qpidd1")[0]
	cfg := b.Config()
	p := brokertest.Profile(t, cfg)
	ex := brokertest.UniqueName(t, "ex")
	q := brokertest.UniqueName(t, "q")
	brokertest.DeclareExchangeQueue(t, cfg, ex, "topic", q, "news.eu")

	target, err := p.Target(famqp.Node{Kind: famqp.Exchange, Name: ex, Key: "news.eu"})
	if err != nil {
		t.Fatal(err)
	}
	if target.Address != ex {
		t.Fatalf("target address %q, want the bare exchange %q", target.Address, ex)
	}
	s := brokertest.Session(t, brokertest.Dial(t, cfg, famqp.ConnOptions{}))
	// Sent with another subject: the sender's key must win, or the topic
	// exchange drops them (nothing bound to "sport.eu").
	sendVia(t, s, target, 20, "sport.eu")
	src, err := p.Source(t.Context(), famqp.Node{Kind: famqp.Queue, Name: q}, famqp.Subscription{})
	if err != nil {
		t.Fatal(err)
	}
	got := brokertest.ReceiveN(t, brokertest.OpenReceiver(t, s, src, 20), 20, 20*time.Second)
	t.Logf("literal key news.eu: sent 20, received %d", len(got))
}

// Item 2 of issue 19: a durable subscription is a durable, shared queue
// that keeps collecting while its receiver is away (its connection
// closed), delivers unsettled, and goes with Unsubscribe.
func TestIntegrationQpidDurableSubscription(t *testing.T) {
	b := brokertest.Require(t, "qpidd1")[0]
	cfg := b.Config()
	p := brokertest.Profile(t, cfg)
	m := brokertest.QpidManagement(t, cfg)
	ctx := t.Context()
	node := famqp.Node{Kind: famqp.Exchange, Name: "amq.topic", Key: "news.#"}
	sub := famqp.Subscription{Name: brokertest.UniqueName(t, "fedrouter.sub"), Durable: true}
	src, err := p.Source(ctx, node, sub)
	if err != nil {
		t.Fatal(err)
	}
	c1 := brokertest.Dial(t, cfg, famqp.ConnOptions{ContainerID: "sub-1"})
	r1 := brokertest.OpenReceiver(t, brokertest.Session(t, c1), src, 10)
	q, err := m.Queue(ctx, sub.Name)
	if err != nil {
		t.Fatal(err)
	}
	if !q.Bool("durable") || q.Bool("autoDelete") || q.Bool("exclusive") {
		t.Fatalf("subscription queue durable=%v autoDelete=%v exclusive=%v, want durable, kept, shared",
			q["durable"], q["autoDelete"], q["exclusive"])
	}
	// One message taken and not settled, then the connection dies.
	pub := brokertest.Session(t, brokertest.Dial(t, cfg, famqp.ConnOptions{}))
	sendVia(t, pub, famqp.LinkSpec{Address: "amq.topic"}, 1, "news.first")
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	if _, err := r1.Receive(rctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	// Close ends the session first (sessionend.go: qpidd can crash on a
	// connection that goes with consumers attached), which detaches the
	// receiver without closing it, as a stopping router does; the queue
	// outlives it. A killed router's connection, gone with no end at
	// all: TestQpidDurableExchangeRouteRouterKill9 (cmd/fedrouter).
	_ = c1.Close()
	sendVia(t, pub, famqp.LinkSpec{Address: "amq.topic"}, 50, "news.eu")
	sendVia(t, pub, famqp.LinkSpec{Address: "amq.topic"}, 10, "sport.eu")

	c2 := brokertest.Dial(t, cfg, famqp.ConnOptions{ContainerID: "sub-2"})
	s2 := brokertest.Session(t, c2)
	got := brokertest.ReceiveN(t, brokertest.OpenReceiver(t, s2, src, 100), 51, 20*time.Second)
	if got[0] != "news.first-0" {
		t.Fatalf("the unsettled message was not redelivered first: %v", got[:3])
	}
	t.Logf("durable subscription across a lost connection: sent 51 matching (+10 not), received %d", len(got))

	// A detach keeps it (a route stopping); Unsubscribe removes it.
	famqp.CloseSessionContext(ctx, s2)
	if _, err := m.Queue(ctx, sub.Name); err != nil {
		t.Fatalf("after detach: %v", err)
	}
	if err := p.Unsubscribe(ctx, node, sub); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Queue(ctx, sub.Name); err == nil {
		t.Fatal("subscription queue still there after Unsubscribe")
	}
	if err := p.Unsubscribe(ctx, node, sub); err != nil {
		t.Fatalf("second Unsubscribe: %v", err)
	}
}

// An exchange subscription on qpidd delivers unsettled when asked: a
// released message comes back (a pre-settled one would be gone).
func TestIntegrationQpidSubscriptionUnsettled(t *testing.T) {
	b := brokertest.Require(t, "qpidd1")[0]
	cfg := b.Config()
	p := brokertest.Profile(t, cfg)
	src, err := p.Source(t.Context(), famqp.Node{Kind: famqp.Exchange, Name: "amq.topic", Key: "rel.#"},
		famqp.Subscription{Name: brokertest.UniqueName(t, "fedrouter.sub")})
	if err != nil {
		t.Fatal(err)
	}
	s := brokertest.Session(t, brokertest.Dial(t, cfg, famqp.ConnOptions{}))
	r := brokertest.OpenReceiver(t, s, src, 10)
	sendVia(t, s, famqp.LinkSpec{Address: "amq.topic"}, 1, "rel.x")
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	msg, err := r.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Release(ctx, msg); err != nil {
		t.Fatal(err)
	}
	again, err := r.Receive(ctx)
	if err != nil {
		t.Fatalf("released message not redelivered: %v", err)
	}
	if string(again.Data()) != "rel.x-0" {
		t.Fatalf("redelivered %q", again.Data())
	}
}

// Items 3 and 4 of issue 19 on a strict qpidd: fedrouter's own queues are
// created durable and lasting, and control traffic has a fanout exchange
// of its own, not amq.fanout.
func TestIntegrationQpidOwnNodesOnStrictBroker(t *testing.T) {
	for _, name := range []string{"qpidd2", "qpidd3"} { // strict, on-demand
		t.Run(name, func(t *testing.T) {
			b := brokertest.Require(t, name)[0]
			cfg := b.Config()
			p := brokertest.Profile(t, cfg)
			m := brokertest.QpidManagement(t, cfg)
			ctx := t.Context()
			transit := famqp.Node{Kind: famqp.Transit, Name: brokertest.UniqueName(t, "fedrouter.transit")}
			t.Cleanup(func() { _ = m.Delete(context.Background(), "queue", transit.Name) })
			if err := p.CheckTarget(ctx, transit); err != nil {
				t.Fatal(err)
			}
			q, err := m.Queue(ctx, transit.Name)
			if err != nil {
				t.Fatal(err)
			}
			if !q.Bool("durable") || q.Bool("autoDelete") || q.Bool("exclusive") {
				t.Fatalf("transit queue durable=%v autoDelete=%v exclusive=%v", q["durable"], q["autoDelete"], q["exclusive"])
			}
			s := brokertest.Session(t, brokertest.Dial(t, cfg, famqp.ConnOptions{}))
			tgt, err := p.Target(transit)
			if err != nil {
				t.Fatal(err)
			}
			sendVia(t, s, tgt, 10, "t")
			src, err := p.Source(ctx, transit, famqp.Subscription{})
			if err != nil {
				t.Fatal(err)
			}
			brokertest.ReceiveN(t, brokertest.OpenReceiver(t, s, src, 10), 10, 20*time.Second)

			control := famqp.Node{Kind: famqp.Control, Name: brokertest.UniqueName(t, "fedrouter.control")}
			t.Cleanup(func() { _ = m.Delete(context.Background(), "exchange", control.Name) })
			checkControlIsolated(t, cfg, p, control)
		})
	}
}

// checkControlIsolated: two routers' subscriptions to control both get a
// control message; an application queue bound to amq.fanout gets nothing,
// and what the application publishes on amq.fanout reaches no router.
func checkControlIsolated(t *testing.T, cfg famqp.BrokerConfig, p famqp.Profile, control famqp.Node) {
	t.Helper()
	ctx := t.Context()
	app := brokertest.UniqueName(t, "app")
	brokertest.DeclareExchangeQueue(t, cfg, "", "", app, "")
	m := brokertest.QpidManagement(t, cfg)
	if err := m.Create(ctx, "binding", "amq.fanout/"+app+"/", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	s := brokertest.Session(t, brokertest.Dial(t, cfg, famqp.ConnOptions{}))
	var rcvs []*famqp.Receiver
	for _, router := range []string{"ra", "rb"} {
		spec, err := p.Source(ctx, control, famqp.Subscription{Name: brokertest.UniqueName(t, router)})
		if err != nil {
			t.Fatal(err)
		}
		rcvs = append(rcvs, brokertest.OpenReceiver(t, s, spec, 10))
	}
	ex, err := m.Objects(ctx, "exchange")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range ex {
		if e.String("name") == control.Name {
			found = e.String("type") == "fanout" && e.Bool("durable")
		}
	}
	if !found {
		t.Fatalf("control exchange %s: not a durable fanout", control.Name)
	}
	tgt, err := p.Target(control)
	if err != nil {
		t.Fatal(err)
	}
	sendVia(t, s, famqp.LinkSpec{Address: "amq.fanout"}, 3, "application")
	sendVia(t, s, tgt, 1, "fedrouter.lsa")
	for i, r := range rcvs {
		got := brokertest.ReceiveN(t, r, 1, 20*time.Second)
		if got[0] != "fedrouter.lsa-0" {
			t.Fatalf("router %d got %q first: application traffic on the control exchange", i, got[0])
		}
	}
	appGot := brokertest.ReceiveN(t, brokertest.OpenReceiver(t, s, famqp.LinkSpec{Address: app}, 10), 3, 20*time.Second)
	for _, g := range appGot {
		if g == "fedrouter.lsa-0" {
			t.Fatal("control traffic reached an application queue bound to amq.fanout")
		}
	}
	q, err := m.Queue(ctx, app)
	if err != nil || q["msgDepth"] != uint64(0) {
		t.Fatalf("application queue after draining 3: %v depth %v", err, q["msgDepth"])
	}
}

// A control address that already names an exchange of another type is
// refused with a clear error rather than used (its routers might hear
// nothing).
func TestIntegrationQpidControlExchangeOfWrongType(t *testing.T) {
	b := brokertest.Require(t, "qpidd1")[0]
	cfg := b.Config()
	name := brokertest.UniqueName(t, "fedrouter.control")
	brokertest.DeclareExchangeQueue(t, cfg, name, "topic", "", "")
	_, err := brokertest.Profile(t, cfg).Source(t.Context(), famqp.Node{Kind: famqp.Control, Name: name}, famqp.Subscription{Name: "r1"})
	if !errors.Is(err, famqp.ErrUnsupported) || !strings.Contains(err.Error(), `"topic" exchange, not fanout`) {
		t.Fatalf("control on a topic exchange: %v", err)
	}
}

// CheckTarget tells a missing queue or exchange (ErrNotFound) from one
// that is there, on a strict and an on-demand broker alike.
func TestIntegrationQpidCheckTarget(t *testing.T) {
	for _, name := range []string{"qpidd1", "qpidd3"} {
		b := brokertest.Require(t, name)[0]
		p := brokertest.Profile(t, b.Config())
		q := brokertest.UniqueName(t, "q")
		brokertest.DeclareQueue(t, b.Config(), q)
		for _, c := range []struct {
			n    famqp.Node
			want error
		}{
			{famqp.Node{Kind: famqp.Queue, Name: q}, nil},
			{famqp.Node{Kind: famqp.Exchange, Name: "amq.topic", Key: "k"}, nil},
			{famqp.Node{Kind: famqp.Queue, Name: "no-such-queue-here"}, famqp.ErrNotFound},
			{famqp.Node{Kind: famqp.Exchange, Name: "no-such-exchange-here"}, famqp.ErrNotFound},
		} {
			if err := p.CheckTarget(t.Context(), c.n); !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
				t.Errorf("%s: CheckTarget(%s) = %v, want %v", name, c.n, err, c.want)
			}
		}
	}
}

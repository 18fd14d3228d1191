package routes_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"

	famqp "github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/routes"
)

// A message the destination fails on every time it is sent (it closes
// the link on it, settling nothing: testdata/nosettle.py
// --fail-on-poison) is a poison message: the messages before it cross,
// then the runs that send it settle nothing, and after PoisonRuns of
// them the route is Failed, saying so. Once the operator takes it off the
// source, the route's next retry carries on with what was behind it.
func TestIntegrationPoisonHeadMessageFailsRoute(t *testing.T) {
	const before, after = 5, 5
	_, peer := startNoSettle(t, "--fail-on-poison")
	h := newHarness(t, "rabbit1")
	h.m.Stop(context.Background())
	c := brokertest.Dial(t, peer, famqp.ConnOptions{Backoff: famqp.Backoff{Min: 200 * time.Millisecond, Max: time.Second}})
	h.opts.Brokers["nosettle"] = famqp.Broker{Conn: c, Profile: brokertest.Profile(t, peer)}
	h.opts.FailedRetry = 15 * time.Second // long enough to take the poison message off in between
	h.start()
	src := brokertest.UniqueName(t, "src")
	brokertest.DeclareQueue(t, h.brokers["rabbit1"].Config(), src)
	s := h.session("rabbit1")
	brokertest.SendAll(t, s, "/amq/queue/"+src, 10, before+1+after, func(i int) *goamqp.Message {
		m := brokertest.Numbered(i)
		if i == before {
			m.ApplicationProperties["poison"] = true
		}
		return m
	})
	st := h.add(routes.Spec{Kind: routes.KindQueue, Dest: "nosettle", Src: "rabbit1", Exchange: "sink", Queue: src, Credit: 20})
	failed := h.waitState(st.ID, routes.StateFailed)
	if !strings.Contains(failed.LastError, "poison message: the route fails on the message at the head of the source") ||
		!strings.Contains(failed.LastError, "cannot take this message") {
		t.Fatalf("failed route's error %q: want the poison message and the destination's words", failed.LastError)
	}
	if failed.Forwarded != before {
		t.Fatalf("forwarded %d before the poison message, want %d", failed.Forwarded, before)
	}

	// The operator takes it off the source before the route's retry.
	r := brokertest.OpenReceiver(t, s, famqp.LinkSpec{Address: "/amq/queue/" + src}, 1)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	msg, err := r.Receive(ctx)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := msg.GoAMQP().ApplicationProperties["poison"].(bool); !p {
		t.Fatalf("the head of the source is %v, not the poison message (the route took it?)", msg.GoAMQP().ApplicationProperties)
	}
	if err := r.Accept(t.Context(), msg); err != nil {
		t.Fatal(err)
	}
	famqp.CloseSessionContext(t.Context(), s)
	brokertest.Eventually(t, 60*time.Second, 50*time.Millisecond, func() error {
		g, _ := h.m.Get(st.ID)
		if g.State != routes.StateOperational || g.Forwarded != before+after || g.InFlight != 0 {
			return fmt.Errorf("route %s, %+v (%s)", g.State, g.Counters, g.LastError)
		}
		return nil
	})
}

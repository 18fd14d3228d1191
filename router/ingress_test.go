package router

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"
	"github.com/prometheus/client_golang/prometheus"

	famqp "github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/links"
	"github.com/fedrouter/fedrouter/routes"
)

// The ingress is no open relay (issue 17, finding 1). Two routers on
// rabbit1 and rabbit2. ingOff has the ingress off: it takes nothing from
// rabbit1's fedrouter.ingress (no consumer), and a request sent there
// waits. ingOn serves rabbit1's ingress with an allow list: the waiting
// request and a new one for an allowed exchange arrive; requests for a
// router transit queue, the dead-letter queue and a control inbox are
// refused though a rule matches them, requests no rule matches are
// refused too; each refusal is dead-lettered on rabbit1 with
// amqp:unauthorized-access and the rule, and counted in
// fedrouter_ingress_refused_total.
func TestIntegrationIngressAllowList(t *testing.T) {
	for _, dp := range []string{"engine"} {
		t.Run(dp, func(t *testing.T) { ingressAllowList(t, "data_path: "+dp+"\n") })
	}
}

func ingressAllowList(t *testing.T, dataPath string) {
	m := brokersOf(t, "rabbit1", "rabbit2")
	ex, dq := brokertest.UniqueName(t, "ingex"), brokertest.UniqueName(t, "ingdq")
	marker := brokertest.UniqueName(t, "ingress")
	r1, r2 := m.brokers["rabbit1"].Config(), m.brokers["rabbit2"].Config()
	brokertest.DeclareExchangeQueue(t, r2, ex, "fanout", dq, "")
	mg, err := famqp.NewRabbitManagement(r1)
	if err != nil {
		t.Fatal(err)
	}
	defer mg.Close()
	// The queues the routers create on first use; declared here so that a
	// request sent before any router served them is kept.
	for _, q := range []string{links.IngressQueue, links.RouterDeadLetterQueue} {
		if err := mg.DeclareQueue(t.Context(), q, famqp.QueueArgs{Durable: true}); err != nil {
			t.Fatal(err)
		}
	}
	dlq := m.deadLetters("rabbit1", marker)

	m.start("ingOff", "rabbit1", "rabbit2", dataPath+"ingress: {enabled: false}\n")
	waitTransit(t, m.routers["ingOff"], "rabbit1", "rabbit2")
	s1 := m.session("rabbit1")
	seq := 0 // each request its own: the collector counts distinct ones
	request := func(name, dest, addr string) {
		seq++
		brokertest.SendAll(t, s1, "/amq/queue/"+links.IngressQueue, 1, 1, func(int) *goamqp.Message {
			msg := brokertest.Numbered(seq)
			msg.ApplicationProperties[links.PropDestBroker] = dest
			msg.ApplicationProperties[links.PropDestAddress] = addr
			msg.ApplicationProperties["ingress-test"] = marker
			msg.ApplicationProperties["case"] = name
			return msg
		})
	}
	request("waited", "rabbit2", "exchange:"+ex)
	for _, st := range m.routers["ingOff"].routes.Transit() {
		if st.Dest == "" {
			t.Fatalf("the ingress is off, yet %s's is served: %+v", st.Broker, st)
		}
	}
	brokertest.Eventually(t, 30*time.Second, 100*time.Millisecond, func() error {
		q, err := mg.Queue(t.Context(), links.IngressQueue)
		if err != nil {
			return err
		}
		if q.Consumers != 0 || q.Messages < 1 {
			return fmt.Errorf("ingress off: %s has %d consumers and %d messages, want 0 and the request waiting", links.IngressQueue, q.Consumers, q.Messages)
		}
		return nil
	})

	m.start("ingOn", "rabbit1", "rabbit2", dataPath+fmt.Sprintf(`ingress:
  enabled: true
  allow:
    - {broker: rabbit1, to_broker: rabbit2, address: "exchange:%s"}
    - {broker: rabbit1, to_broker: rabbit2, address: "queue:*"}
`, ex))
	col := m.collect("rabbit2", dq)
	col.wait(t, 1, 60*time.Second) // the request that waited
	request("allowed", "rabbit2", "exchange:"+ex)
	refused := map[string][2]string{ // case → the address and what the reason says
		"transit":     {"queue:" + links.TransitPrefix + "rabbit1", "one of the routers' own addresses"},
		"dead-letter": {"queue:" + links.RouterDeadLetterQueue, "one of the routers' own addresses"},
		"control":     {"queue:" + m.control + ".ingOn", "one of the routers' own addresses"},
		"other-ex":    {"exchange:amq.topic", "matches no ingress.allow rule"},
	}
	for name, c := range refused {
		request(name, "rabbit2", c[0])
	}
	refused["other-broker"] = [2]string{"queue:" + dq, "matches no ingress.allow rule"}
	request("other-broker", "rabbit1", "queue:"+dq)

	got := dlq.wait(t, len(refused), 60*time.Second)
	for name, c := range refused {
		msg, ok := got[name]
		if !ok {
			t.Errorf("%s (%s): not dead-lettered", name, c[0])
			continue
		}
		cond, _ := msg.Annotations[links.AnnotationCondition].(string)
		reason, _ := msg.Annotations[links.AnnotationReason].(string)
		if cond != links.CondUnauthorized || !strings.Contains(reason, c[1]) || !strings.Contains(reason, c[0]) {
			t.Errorf("%s: dead-lettered with %s %q, want %s naming %s and %q", name, cond, reason, links.CondUnauthorized, c[0], c[1])
		}
	}
	col.wait(t, 2, 60*time.Second)
	if n := len(col.snapshot()); n != 2 {
		t.Errorf("%d messages reached %s, want the two allowed ones", n, dq)
	}

	// Only rabbit1's ingress is served (no rule names rabbit2's), and the
	// refusals are counted by reason.
	var served []string
	for _, st := range m.routers["ingOn"].routes.Transit() {
		if st.Dest == "" {
			served = append(served, st.Broker)
			if want := strings.TrimSuffix(strings.TrimPrefix(dataPath, "data_path: "), "\n"); st.DataPath != want {
				t.Errorf("%s's ingress forwards on %q, want %q", st.Broker, st.DataPath, want)
			}
		}
	}
	if strings.Join(served, ",") != "rabbit1" {
		t.Errorf("ingress served on %v, want rabbit1 only", served)
	}
	owned, notAllowed := ingressRefusedMetric(t, m.routers["ingOn"], "rabbit1")
	if owned < 3 || notAllowed < 2 { // at least ours: a request an earlier run left counts too
		t.Errorf("fedrouter_ingress_refused_total: router_owned %v, not_allowed %v; want >= 3 and >= 2", owned, notAllowed)
	}
}

// waitTransit waits until r runs the transit forwarder of from's queue for
// dest, Operational: its reconciler has acted on the table.
func waitTransit(t *testing.T, r *Router, from, dest string) {
	t.Helper()
	brokertest.Eventually(t, 60*time.Second, 20*time.Millisecond, func() error {
		for _, st := range r.routes.Transit() {
			if st.Broker == from && st.Dest == dest && st.State == routes.StateOperational {
				return nil
			}
		}
		return fmt.Errorf("no operational transit forwarder %s → %s: %+v", from, dest, r.routes.Transit())
	})
}

// ingressRefusedMetric scrapes r's collector for broker's ingress
// refusals.
func ingressRefusedMetric(t *testing.T, r *Router, broker string) (owned, notAllowed float64) {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(newServiceCollector(t.Context(), r, DefaultRouteSeries))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "fedrouter_ingress_refused_total" {
			continue
		}
		for _, mt := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range mt.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["broker"] != broker {
				continue
			}
			switch labels["reason"] {
			case links.RefusedRouterOwned:
				owned = mt.GetCounter().GetValue()
			case links.RefusedNotAllowed:
				notAllowed = mt.GetCounter().GetValue()
			}
		}
	}
	return owned, notAllowed
}

// deadLetterWatch takes what is dead-lettered to the router dead-letter
// queue on a broker and keeps this test's messages (those marked) by
// their "case"; others (an earlier run's, another test's: the queue is
// every router's on that broker) are taken and dropped, never matched.
type deadLetterWatch struct {
	m      *mesh
	rcv    *famqp.Receiver
	marker string
	got    map[string]*goamqp.Message
}

func (m *mesh) deadLetters(broker, marker string) *deadLetterWatch {
	m.t.Helper()
	s := m.session(broker)
	rcv := brokertest.OpenReceiver(m.t, s, famqp.LinkSpec{Address: m.queueAddr(broker, links.RouterDeadLetterQueue)}, 100)
	m.t.Cleanup(func() { famqp.CloseSession(s) })
	return &deadLetterWatch{m: m, rcv: rcv, marker: marker, got: map[string]*goamqp.Message{}}
}

// wait receives until n marked messages arrived, failing after timeout.
func (d *deadLetterWatch) wait(t *testing.T, n int, timeout time.Duration) map[string]*goamqp.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	for len(d.got) < n {
		msg, err := d.rcv.Receive(ctx)
		if err != nil {
			t.Fatalf("dead-letter queue: %d of %d marked messages: %v", len(d.got), n, err)
		}
		if err := d.rcv.Accept(ctx, msg); err != nil {
			t.Fatal(err)
		}
		g := msg.GoAMQP()
		if g.ApplicationProperties["ingress-test"] == d.marker {
			name, _ := g.ApplicationProperties["case"].(string)
			d.got[name] = g
		}
	}
	return d.got
}

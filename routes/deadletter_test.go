package routes_test

import (
	"bytes"
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

// on_reject dead-letter: a message the destination rejects, or gives no
// outcome for within the outcome timeout, goes to the dead-letter queue
// on the source broker with the same annotations on both data paths —
// the reason, the condition, the time and the route — its sections
// otherwise as they came, and is taken from the source only then:
// nothing is lost, nothing stays behind. The destination is
// testdata/nosettle.py (rejecting every message with --reject, settling
// none without): RabbitMQ 3.10 and qpidd give no rejection over AMQP
// 1.0 to provoke.
func TestIntegrationDeadLetterOnReject(t *testing.T) {
	const timeout = 11 * time.Second // just over the idle timeout: the shortest allowed
	cases := []struct {
		name, reason string
		args         []string
	}{
		{"rejected", "rejected by the destination: amqp:resource-limit-exceeded: queue full", []string{"--reject"}},
		{"no outcome", fmt.Sprintf("no outcome from the destination within %s (unroutable?)", timeout), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			onEachDataPath(t, func(t *testing.T, dataPath string) { deadLetterOnReject(t, dataPath, c.reason, timeout, c.args...) })
		})
	}
}

func deadLetterOnReject(t *testing.T, dataPath, reason string, timeout time.Duration, args ...string) {
	const n = 10
	_, peer := startNoSettle(t, args...)
	h := newHarnessOn(t, dataPath, "rabbit1")
	h.m.Stop(context.Background())
	c := brokertest.Dial(t, peer, famqp.ConnOptions{Backoff: famqp.Backoff{Min: 200 * time.Millisecond, Max: time.Second}})
	h.opts.Brokers["nosettle"] = famqp.Broker{Conn: c, Profile: brokertest.Profile(t, peer)}
	h.start()
	src, dlq := brokertest.UniqueName(t, "h-engdl-src"), brokertest.UniqueName(t, "h-engdl-dlq")
	cfg := h.brokers["rabbit1"].Config()
	brokertest.DeclareQueue(t, cfg, src)
	brokertest.DeclareQueue(t, cfg, dlq)
	st := h.add(routes.Spec{Kind: routes.KindQueue, Dest: "nosettle", Src: "rabbit1", Exchange: "sink", Queue: src,
		OnReject: routes.DeadLetter, DeadLetterQueue: dlq, OutcomeTimeout: timeout})
	h.waitDataPath(st.ID, dataPath)
	s := h.session("rabbit1")
	brokertest.SendAll(t, s, "/amq/queue/"+src, 10, n, brokertest.Numbered)
	r := brokertest.OpenReceiver(t, s, famqp.LinkSpec{Address: "/amq/queue/" + dlq}, 20)
	for i := 0; i < n; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		msg, err := r.Receive(ctx)
		cancel()
		if err != nil {
			got, _ := h.m.Get(st.ID)
			t.Fatalf("dead-letter %d: %v (route %s %s %+v)", i, err, got.State, got.Detail, got.Counters)
		}
		m := msg.GoAMQP()
		a := m.Annotations
		if a["x-fedrouter-reason"] != reason || a["x-fedrouter-condition"] != "amqp:not-allowed" || a["x-fedrouter-route"] != st.ID+" "+st.Spec.String() {
			t.Fatalf("dead-lettered message annotations %v", a)
		}
		if at, ok := a["x-fedrouter-time"].(time.Time); !ok || time.Since(at).Abs() > time.Minute {
			t.Fatalf("x-fedrouter-time %v (%T)", a["x-fedrouter-time"], a["x-fedrouter-time"])
		}
		if seq, _ := m.ApplicationProperties["seq"].(int64); seq != int64(i) {
			t.Fatalf("dead-letter %d carries seq %v", i, m.ApplicationProperties["seq"])
		}
		brokertest.CheckSections(t, int64(i), m)
		if err := r.Accept(context.Background(), msg); err != nil {
			t.Fatal(err)
		}
	}
	noOutcome := uint64(0)
	if len(args) == 0 {
		noOutcome = n
	}
	m := h.mgmt("rabbit1")
	brokertest.Eventually(t, 10*time.Second, 50*time.Millisecond, func() error {
		got, _ := h.m.Get(st.ID)
		if got.DeadLettered != n || got.NoOutcome != noOutcome || got.Forwarded != 0 || got.Rejected != 0 || got.InFlight != 0 {
			return fmt.Errorf("counters %+v", got.Counters)
		}
		q, err := m.Queue(context.Background(), src)
		if err != nil {
			return err
		}
		if q.Messages != 0 {
			return fmt.Errorf("%d messages left at the source", q.Messages)
		}
		return nil
	})
	if got, _ := h.m.Get(st.ID); got.State != routes.StateOperational {
		t.Fatalf("route %s after dead-lettering: %s", got.State, got.LastError)
	}
}

// On the engine, a route that dead-letters takes a message whose
// annotations do not decode (a binary annotation key) to its dead-letter
// queue too, in its turn, with amqp:decode-error and the section as it
// came kept whole under x-fedrouter-undecodable-annotations; the
// messages around it cross, the route stays Operational. (On go-amqp the
// same message stops the route: TestIntegrationPoisonMessageFailsOnlyItsRoute.)
func TestIntegrationUndecodableDeadLetteredOnEngine(t *testing.T) {
	h := newHarnessOn(t, routes.DataPathEngine, "rabbit1", "rabbit2")
	src, dlq, ex, dq := brokertest.UniqueName(t, "h-engdl-src"), brokertest.UniqueName(t, "h-engdl-dlq"), brokertest.UniqueName(t, "ex"), brokertest.UniqueName(t, "dq")
	cfg := h.brokers["rabbit1"].Config()
	brokertest.DeclareQueue(t, cfg, src)
	brokertest.DeclareQueue(t, cfg, dlq)
	h.exchangeWithQueue("rabbit2", ex, "fanout", dq, "")
	s := h.fillAroundBadKey(src)
	st := h.add(routes.Spec{Kind: routes.KindQueue, Dest: "rabbit2", Src: "rabbit1", Exchange: ex, Queue: src,
		OnReject: routes.DeadLetter, DeadLetterQueue: dlq})
	h.waitDataPath(st.ID, routes.DataPathEngine)
	got := brokertest.Collect(t, h.conns["rabbit2"], "/amq/queue/"+dq, 10, 30*time.Second)
	brokertest.CheckInOrderOnce(t, got, 10)
	r := brokertest.OpenReceiver(t, s, famqp.LinkSpec{Address: "/amq/queue/" + dlq}, 5)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	msg, err := r.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m := msg.GoAMQP()
	a := m.Annotations
	raw, _ := a["x-fedrouter-undecodable-annotations"].([]byte)
	if reason, _ := a["x-fedrouter-reason"].(string); !strings.HasPrefix(reason, "the message does not decode: ") ||
		a["x-fedrouter-condition"] != "amqp:decode-error" || !bytes.HasPrefix(raw, []byte{0x00, 0x53, 0x72}) || !bytes.Contains(raw, []byte("binkey")) {
		t.Fatalf("dead-lettered annotations %v", a)
	}
	if m.ApplicationProperties["poison"] != true || m.Value != "bad key" {
		t.Fatalf("dead-lettered message: properties %v, body %v", m.ApplicationProperties, m.Value)
	}
	if err := r.Accept(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
	brokertest.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error {
		g, _ := h.m.Get(st.ID)
		if g.Forwarded != 10 || g.DeadLettered != 1 || g.Rejected != 0 || g.InFlight != 0 || g.State != routes.StateOperational {
			return fmt.Errorf("route %s: %+v (%s)", g.State, g.Counters, g.LastError)
		}
		return nil
	})
}

// fillAroundBadKey puts into queue q at rabbit1 five numbered messages,
// one whose message annotations have a binary key (testdata/badkey.py),
// and five more; it returns the session it sent on.
func (h *harness) fillAroundBadKey(q string) *famqp.Session {
	h.t.Helper()
	s := h.session("rabbit1")
	brokertest.SendAll(h.t, s, "/amq/queue/"+q, 10, 5, brokertest.Numbered)
	b1, cfg := h.brokers["rabbit1"], h.brokers["rabbit1"].Config()
	b1.URL = strings.Replace(b1.URL, "amqp://", "amqp://"+cfg.Username+":"+cfg.Password+"@", 1) // badkey.py takes the credentials from the URL
	pyproton(h.t, "badkey.py", b1, "/amq/queue/"+q)
	brokertest.SendAll(h.t, s, "/amq/queue/"+q, 10, 5, func(i int) *goamqp.Message { return brokertest.Numbered(5 + i) })
	return s
}

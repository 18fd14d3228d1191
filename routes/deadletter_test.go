package routes_test

import (
	"context"
	"fmt"
	"testing"
	"time"

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

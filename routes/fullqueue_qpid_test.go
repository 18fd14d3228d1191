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

// A queue route on the engine between two private qpidds into an
// exchange bound to a full queue (qpid.max_count 5, qpid.policy_type
// reject), as an operator
// would set it up (default credit, outcome timeout 11 s, the shortest
// allowed): qpidd accepts four, withholds the fifth's outcome
// (enqueued; producer flow control) and releases the rest. The route
// stands still for the outcome timeout, then rejects the fifth at the
// source (no_outcome 1: it is in the destination) and sends the released
// ones again after pauses; it stays Operational. Once the destination
// is drained every message is there, none left at the source or in
// flight.
func TestIntegrationEngineRouteIntoFullQpidQueue(t *testing.T) {
	const n, maxCount, timeout = 20, 5, 11 * time.Second
	srcQ, dstQ := brokertest.StartPrivateQpidd(t), brokertest.StartPrivateQpidd(t)
	h := newHarnessNamed(t, routes.DataPathEngine, map[string]string{})
	h.m.Stop(context.Background())
	for name, q := range map[string]*brokertest.PrivateQpidd{"qsrc": srcQ, "qdst": dstQ} {
		c := brokertest.Dial(t, q.Config, famqp.ConnOptions{Backoff: famqp.Backoff{Min: 200 * time.Millisecond, Max: time.Second}})
		h.conns[name] = c
		h.opts.Brokers[name] = famqp.Broker{Conn: c, Profile: brokertest.Profile(t, q.Config)}
	}
	h.start()
	src, dst := brokertest.UniqueName(t, "h-qpidfull-src"), brokertest.UniqueName(t, "h-qpidfull-dst")
	brokertest.DeclareQueue(t, srcQ.Config, src)
	dm := brokertest.QpidManagement(t, dstQ.Config)
	if err := dm.Create(t.Context(), "queue", dst, map[string]any{"qpid.max_count": maxCount, "qpid.policy_type": "reject"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dm.Delete(context.Background(), "queue", dst) })
	ex := brokertest.UniqueName(t, "h-qpidfull-ex") // what an operator routes to: an exchange the queue is bound to
	for _, o := range []struct {
		typ, name string
		props     map[string]any
	}{{"exchange", ex, map[string]any{"exchange-type": "fanout"}}, {"binding", ex + "/" + dst + "/", map[string]any{}}} {
		if err := dm.Create(t.Context(), o.typ, o.name, o.props); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = dm.Delete(context.Background(), "exchange", ex) })
	brokertest.SendAll(t, h.session("qsrc"), src, 10, n, brokertest.Numbered)
	started := time.Now() // nothing is sent before: the expiry comes a timeout after at least
	st := h.add(routes.Spec{Kind: routes.KindQueue, Src: "qsrc", Dest: "qdst", Queue: src, Exchange: ex, OutcomeTimeout: timeout})
	h.waitDataPath(st.ID, routes.DataPathEngine)
	counters := func() routes.Status {
		got, _ := h.m.Get(st.ID)
		return got
	}
	brokertest.Eventually(t, timeout+60*time.Second, 100*time.Millisecond, func() error {
		got := counters()
		if got.Forwarded != maxCount-1 || got.NoOutcome != 1 || got.Rejected != 1 || got.Redelivered < n-maxCount {
			return fmt.Errorf("route %s, counters %+v", got.State, got.Counters)
		}
		return nil
	})
	waited := time.Since(started)
	if waited < timeout {
		t.Fatalf("the withheld message expired after %v, before the outcome timeout %v", waited, timeout)
	}
	t.Logf("the withheld message expired %v after the route was added (outcome timeout %v)", waited.Round(10*time.Millisecond), timeout)
	if got := counters(); got.State != routes.StateOperational {
		t.Fatalf("route %s (%s) with its destination full", got.State, got.LastError)
	}
	seqs := brokertest.Collect(t, h.conns["qdst"], dst, n, 60*time.Second)
	brokertest.CheckNoLoss(t, seqs, n)
	sm := brokertest.QpidManagement(t, srcQ.Config)
	brokertest.Eventually(t, 30*time.Second, 100*time.Millisecond, func() error {
		got := counters()
		if got.Forwarded+got.Rejected != n || got.Rejected != got.NoOutcome || got.InFlight != 0 {
			return fmt.Errorf("route %s, counters %+v: want %d accepted or rejected for want of an outcome, none in flight", got.State, got.Counters, n)
		}
		q, err := sm.Queue(context.Background(), src)
		if err != nil {
			return err
		}
		if d := fmt.Sprint(q["msgDepth"]); d != "0" {
			return fmt.Errorf("%s messages left at the source", d)
		}
		return nil
	})
	got := counters()
	if got.State != routes.StateOperational {
		t.Fatalf("route %s (%s) after the destination drained", got.State, got.LastError)
	}
	t.Logf("counters %+v; %d deliveries of %d messages at the destination", got.Counters, len(seqs), n)
}

package router

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"
	"github.com/prometheus/client_golang/prometheus"

	famqp "github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/topology"
)

// junk is message i of a flood of the control exchange by someone without
// the secret: garbage, unsigned or forged advertisements, and now and
// then an oversize one. reason is what the router counts it as.
func junk(t *testing.T, i int) (data []byte, reason string) {
	t.Helper()
	if i%100 == 99 {
		return bytes.Repeat([]byte("x"), topology.MaxLSASize+1), topology.ReasonTooLarge
	}
	l := topology.LSA{Router: "rB", Instance: 1, Seq: uint64(i + 1), Time: time.Now().UnixNano(),
		Brokers: []topology.BrokerState{{Name: "rabbit2", State: topology.StateOperational}}}
	switch i % 3 {
	case 0:
		return []byte(fmt.Sprintf("junk %d", i)), topology.ReasonMalformed
	case 1:
		forged, err := topology.Encode(l, []byte("a guessed secret"))
		if err != nil {
			t.Fatal(err)
		}
		return bytes.Replace(forged, []byte(`"mac":"`), []byte(`"nomac":"`), 1), topology.ReasonUnsigned
	}
	forged, err := topology.Encode(l, []byte("a guessed secret"))
	if err != nil {
		t.Fatal(err)
	}
	return forged, topology.ReasonBadSignature
}

// Issue 17, finding 4: junk published to the control exchange filled the
// router's 256-message inbound queue (pushing real advertisements out) and
// cost a warning per message. The transport now checks every message
// before it queues it, and queues in one slot per router. Here 1,000
// junk messages are published to a Control that nobody drains, with one
// real advertisement among them: it is still there, and only it; the junk
// is counted by reason.
func TestIntegrationControlJunkCannotEvict(t *testing.T) {
	bs := brokertest.Require(t, "rabbit1")
	addr := brokertest.UniqueName(t, "ctl")
	t.Cleanup(func() { removeControlObjects(bs[0], addr, "victim") })
	c := controlFor(t, "victim", addr, bs)
	ping := signedLSA(t, "ping", 1, 1, "rabbit1")
	brokertest.Eventually(t, 30*time.Second, 100*time.Millisecond, func() error {
		c.Send("rabbit1", ping, nil) // its own publish comes back once it is subscribed
		if c.Stats().Received == 0 {
			return fmt.Errorf("not subscribed yet")
		}
		return nil
	})
	received := c.Stats().Received

	real := signedLSA(t, "real", 1, 7, "rabbit1")
	const n = 1000
	want := map[string]uint64{}
	attacker := brokertest.Session(t, brokertest.Dial(t, bs[0].Config(), famqp.ConnOptions{}))
	brokertest.SendAll(t, attacker, "/exchange/"+addr, 100, n+1, func(i int) *goamqp.Message {
		if i == n/2 {
			return goamqp.NewMessage(real)
		}
		data, reason := junk(t, i)
		want[reason]++
		return goamqp.NewMessage(data)
	})
	brokertest.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error {
		if got := c.Stats().Received - received; got < n+1 {
			return fmt.Errorf("%d of %d received", got, n+1)
		}
		return nil
	})
	var taken []string
	for _, in := range drain(c) {
		l, err := topology.Decode(in.Data, []byte(controlSecret))
		if err != nil {
			t.Fatalf("junk was queued: %.60q (%v)", in.Data, err)
		}
		taken = append(taken, l.Router)
	}
	if !strings.Contains(strings.Join(taken, " "), "real") {
		t.Fatalf("the real advertisement was pushed out by the junk: queued %v", taken)
	}
	st := c.Stats()
	for reason, w := range want {
		if st.Dropped[reason] != w {
			t.Errorf("%s: %d dropped, want %d (all %v)", reason, st.Dropped[reason], w, st.Dropped)
		}
	}
}

// The same attack on a running network: two routers that know each
// other's brokers only through each other's advertisements on rabbit2,
// whose control exchange gets thousands of junk messages while they
// advertise. Their path rabbit1 → rabbit3 never drops, each keeps taking
// the other's new advertisements during the flood, the
// fedrouter_control_dropped_total metric counts every junk message by
// reason, and the log reports them in a few lines with counts, which add
// up to the metric.
func TestIntegrationControlFloodMesh(t *testing.T) {
	m := brokersOf(t, "rabbit1", "rabbit2", "rabbit3")
	m.start("rA", "rabbit1", "rabbit2", "")
	m.start("rB", "rabbit2", "rabbit3", "")
	rA, rB := m.routers["rA"], m.routers["rB"]
	for _, r := range []*Router{rA, rB} {
		waitPath(t, r, "rabbit1", "rabbit3", true)
	}
	seqBefore := waitRouter(t, rA, "rB", true).Seq

	// Watch both tables every 5 ms while the flood lasts.
	stop, watched := make(chan struct{}), make(chan error, 1)
	go func() { // joined through watched before the test goes on
		var gaps []string
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			for id, r := range map[string]*Router{"rA": rA, "rB": rB} {
				if p := r.table.Load(); p == nil || !p.Reachable("rabbit1", "rabbit3") {
					gaps = append(gaps, fmt.Sprintf("%s at %s", id, time.Now().Format("15:04:05.000")))
				}
			}
			select {
			case <-stop:
				if len(gaps) > 0 {
					watched <- fmt.Errorf("path rabbit1→rabbit3 missing %d times: %v", len(gaps), gaps[:min(len(gaps), 10)])
				}
				close(watched)
				return
			case <-tick.C:
			}
		}
	}()
	// 6,000 messages (under the control queues' bound, 10,000, so each
	// router gets every one) over 6 s, twice the max age (3 s): were the
	// real advertisements pushed out, the path would drop.
	const batches, batch = 60, 100
	const n = batches * batch
	want := map[string]uint64{}
	began := time.Now()
	attacker := brokertest.Session(t, brokertest.Dial(t, m.brokers["rabbit2"].Config(), famqp.ConnOptions{}))
	pace := time.NewTicker(100 * time.Millisecond)
	defer pace.Stop()
	for b := range batches {
		brokertest.SendAll(t, attacker, "/exchange/"+m.control, batch, batch, func(i int) *goamqp.Message {
			data, reason := junk(t, b*batch+i)
			want[reason]++
			return goamqp.NewMessage(data)
		})
		<-pace.C
	}
	for _, r := range []*Router{rA, rB} {
		brokertest.Eventually(t, 60*time.Second, 50*time.Millisecond, func() error {
			if got := sumOf(topoOf(t, r).ControlDropped, want); got < n {
				return fmt.Errorf("%d of %d junk messages counted", got, n)
			}
			return nil
		})
	}
	flood := time.Since(began)
	close(stop)
	if err := <-watched; err != nil {
		t.Fatal(err)
	}
	// Advertisements kept coming through: rB refreshes every second.
	seq := waitRouter(t, rA, "rB", true).Seq
	if seq < seqBefore+uint64(flood/time.Second)-2 {
		t.Errorf("rA took rB's advertisements up to seq %d during a %s flood (from %d)", seq, flood.Round(time.Millisecond), seqBefore)
	}
	t.Logf("%d junk messages in %s; rB's seq at rA %d → %d", n, flood.Round(time.Millisecond), seqBefore, seq)

	for _, r := range []*Router{rA, rB} {
		got := scrapeDropped(t, r)
		for reason, w := range want {
			if got[reason] != float64(w) {
				t.Errorf("fedrouter_control_dropped_total{reason=%q} = %v, want %d", reason, got[reason], w)
			}
		}
	}
	// Every drop is in rA's log, as one line or in a count, in a few
	// lines: at most a first line and a summary per 10 s and reason.
	brokertest.Eventually(t, 30*time.Second, 200*time.Millisecond, func() error {
		lines, accounted := dropLines(t, m.logs["rA"].String())
		for reason, w := range want {
			if accounted[reason] != w {
				return fmt.Errorf("%s: the log accounts for %d drops of %d (%d lines)", reason, accounted[reason], w, lines)
			}
		}
		if bound := len(want) * (2 + int(time.Since(began)/(10*time.Second))); lines > bound {
			t.Fatalf("%d log lines about dropped control messages, more than %d", lines, bound)
		}
		return nil
	})
}

func sumOf(dropped map[string]uint64, reasons map[string]uint64) uint64 {
	var n uint64
	for r := range reasons {
		n += dropped[r]
	}
	return n
}

// scrapeDropped reads fedrouter_control_dropped_total through the admin
// API's collector.
func scrapeDropped(t *testing.T, r *Router) map[string]float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(newServiceCollector(t.Context(), r, DefaultRouteSeries))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "fedrouter_control_dropped_total" {
			continue
		}
		for _, mt := range mf.GetMetric() {
			for _, lp := range mt.GetLabel() {
				if lp.GetName() == "reason" {
					out[lp.GetValue()] = mt.GetCounter().GetValue()
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no fedrouter_control_dropped_total in the scrape")
	}
	return out
}

// dropLines counts a router's log lines about dropped control messages
// and the drops they account for, by reason.
func dropLines(t *testing.T, log string) (lines int, accounted map[string]uint64) {
	accounted = map[string]uint64{}
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, "control message") {
			continue
		}
		var e struct {
			Level, Reason string
			Dropped       uint64
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		lines++
		accounted[e.Reason] += max(e.Dropped, 1) // a first line stands for one drop
	}
	return lines, accounted
}

// removeControlObjects deletes a test's control exchange and its routers'
// queues on a RabbitMQ broker (best effort: unique names, expiring anyway).
func removeControlObjects(b brokertest.Broker, addr string, routers ...string) {
	mg, err := famqp.NewRabbitManagement(b.Config())
	if err != nil {
		return
	}
	defer mg.Close()
	for _, id := range routers {
		_ = mg.DeleteQueue(context.Background(), addr+"."+id)
	}
	_ = mg.DeleteExchange(context.Background(), addr)
}

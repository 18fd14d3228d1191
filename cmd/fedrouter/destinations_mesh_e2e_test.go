package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/routes"
)

// meshDestRouter starts router id attached to brokers a and b (a link
// between them), with link state on, one destinations: entry, and its
// routes on dataPath.
func meshDestRouter(t *testing.T, id, dataPath, control, pattern string, a, b brokertest.Broker) *routerProc {
	t.Helper()
	yaml := fmt.Sprintf(`router_id: %s
data_path: %s
brokers:
  - {name: %s, url: %q, profile: rabbitmq, username: guest, password: guest, management: {url: %q}}
  - {name: %s, url: %q, profile: rabbitmq, username: guest, password: guest, management: {url: %q}}
links:
  - {between: [%s, %s]}
topology: {secret: %q, refresh: 1s, max_age: 3s, control_address: %s}
destinations:
  - {name: %q, settle: 2s, max_hops: 2}
reconnect: {min: 100ms, max: 1s}
admin: {listen: "127.0.0.1:0"}
log: {level: info, format: json}
`, id, dataPath, a.Name, a.URL, a.MgmtURL, b.Name, b.URL, b.MgmtURL, a.Name, b.Name, e2eSecret, control, pattern)
	yaml = withAdminPort(t, yaml)
	path := filepath.Join(t.TempDir(), id+".yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startRouter(t, path)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("router %s's log:\n%s", id, p.out.String())
		}
	})
	return p
}

// Two routers, A over rabbit1 and rabbit2, B over rabbit2 and rabbit3: a
// queue created at rabbit1 reaches rabbit3 through rabbit2 (each router
// propagates over its own brokers), and messages published at rabbit1
// follow the only consumer, at rabbit3 — a broker A is not attached to,
// known from B's advertisement — across the mesh, each moved once.
//
// B's flow out of rabbit2 is a consumer to rabbit2's listing and events:
// A, also attached to rabbit2, must not take it for one (before FlowsExt
// it did, at times on go-amqp and every time on the engine: each message
// moved twice, rabbit1 → rabbit2 → rabbit3). Run on both data paths.
func TestGlobalDestinationsAcrossRouters(t *testing.T) {
	for _, dp := range []string{routes.DataPathEngine} {
		t.Run(dp, func(t *testing.T) { acrossRouters(t, dp) })
	}
}

func acrossRouters(t *testing.T, dataPath string) {
	bs := brokertest.Require(t, "rabbit1", "rabbit2", "rabbit3")
	prefix := strings.ReplaceAll(brokertest.UniqueName(t, "gdm"), "Test", "")
	control := "ctl." + prefix
	a := meshDestRouter(t, "gdma", dataPath, control, prefix+".*", bs[0], bs[1])
	b := meshDestRouter(t, "gdmb", dataPath, control, prefix+".*", bs[1], bs[2])
	var mgmt []*amqp.RabbitManagement
	for _, br := range bs {
		m, err := amqp.NewRabbitManagement(br.Config())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.Close)
		mgmt = append(mgmt, m)
	}
	q := prefix + ".orders"
	t.Cleanup(func() { // the routers stopped first: nothing re-creates it
		for _, p := range []*routerProc{a, b} {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
		for _, m := range mgmt {
			_ = m.DeleteQueue(context.Background(), q)
			_ = m.DeleteExchange(context.Background(), control)
		}
	})
	ctx := context.Background()
	created := time.Now()
	if err := mgmt[0].DeclareQueue(ctx, q, amqp.QueueArgs{Durable: true}); err != nil {
		t.Fatal(err)
	}
	brokertest.Eventually(t, time.Minute, 100*time.Millisecond, func() error {
		_, err := mgmt[2].Queue(ctx, q)
		return err
	})
	propagated := time.Since(created)
	rig := &destRig{t: t, bs: bs, mgmt: mgmt, p: a}
	ty := newTally()
	seen := rig.sampleConsumers(q, "rabbit2") // B's flow, until A subtracts it
	stop := rig.consuming(2, q, ty)
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("consumer at rabbit3: %v", err)
		}
	}()
	const n = 2000
	s := brokertest.Session(t, brokertest.Dial(t, bs[0].Config(), amqp.ConnOptions{}))
	start := time.Now()
	brokertest.SendAll(t, s, "/amq/queue/"+q, 200, n, func(i int) *goamqp.Message { return brokertest.Numbered(i) })
	brokertest.Eventually(t, 3*time.Minute, 200*time.Millisecond, func() error {
		if got := ty.distinct(); got < n {
			fs, err := rig.flows(q)
			return fmt.Errorf("%d of %d consumed at rabbit3; A's flows %+v (%v)", got, n, fs, err)
		}
		return nil
	})
	all := time.Since(start)
	ty.mu.Lock()
	dups := brokertest.CheckNoLoss(t, ty.seqs, n)
	ty.mu.Unlock()
	hops, most := ty.hops()
	if most != 1 {
		t.Errorf("moves per message %s, want each moved once", hops)
	}
	if moves := flowsStarted(a.out.String(), "rabbit2"); len(moves) > 0 {
		t.Errorf("A moved messages to rabbit2, where the only consumer was B's flow:\n%s", strings.Join(moves, "\n"))
	}
	brokertest.Eventually(t, 30*time.Second, 100*time.Millisecond, func() error {
		if n := rig.consumersAt(q, "rabbit2"); n != 0 {
			return fmt.Errorf("A counts %d consumers at rabbit2, where only B's flow is", n)
		}
		return nil
	})
	window := seen()
	out, code := a.cli("destination", "list")
	if code != 0 || !strings.Contains(out, "rabbit3 (") || !strings.Contains(out, "remote") {
		t.Errorf("A's destination list does not show the flow to rabbit3 or rabbit3's consumers: exit %d\n%s", code, out)
	}
	t.Logf("%s: created at rabbit1: at rabbit3 (through A to rabbit2, B to rabbit3) %s later; %d published at rabbit1, all consumed at rabbit3 %s after the first, 0 lost, %d duplicates, moves per message %s; A counted B's flow at rabbit2 as a consumer for %s (sampled every 100 ms; settle 2s)\nA's view:\n%s", dataPath,
		propagated.Round(time.Millisecond), n, all.Round(time.Millisecond), dups, hops, window.Round(time.Millisecond), out)
}

// flowsStarted is the log lines of a router's flows started towards to.
func flowsStarted(log, to string) []string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		var e struct{ Message, To string }
		if json.Unmarshal([]byte(line), &e) == nil && e.Message == "messages follow consumers: moving" && e.To == to {
			out = append(out, line)
		}
	}
	return out
}

// consumersAt is the consumers the router's view gives q at broker (-1
// when it cannot say).
func (d *destRig) consumersAt(q, broker string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := d.p.api().Destinations(ctx)
	if err != nil {
		return -1
	}
	for _, ds := range st.Destinations {
		for _, in := range ds.Instances {
			if ds.Name == q && in.Broker == broker {
				return in.Consumers
			}
		}
	}
	return -1
}

// sampleConsumers samples the router's view of q's consumers at broker
// every 100 ms until the returned func is called, which says for how
// long in all the view gave some.
func (d *destRig) sampleConsumers(q, broker string) (stop func() time.Duration) {
	done, total := make(chan struct{}), make(chan time.Duration, 1)
	go func() {
		var sum time.Duration
		last := time.Now()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				total <- sum
				return
			case <-tick.C:
			}
			now := time.Now()
			if d.consumersAt(q, broker) > 0 {
				sum += now.Sub(last)
			}
			last = now
		}
	}()
	var once sync.Once
	var sum time.Duration
	stop = func() time.Duration {
		once.Do(func() { close(done); sum = <-total })
		return sum
	}
	d.t.Cleanup(func() { stop() }) // a test ended early
	return stop
}

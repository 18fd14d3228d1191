package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	goamqp "github.com/Azure/go-amqp"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/api"
)

// destRig is a router over rabbit1..4 with one destinations: entry, and
// each node's management API.
type destRig struct {
	t      *testing.T
	prefix string
	bs     []brokertest.Broker
	mgmt   []*amqp.RabbitManagement
	p      *routerProc
}

func newDestRig(t *testing.T, entry string) *destRig {
	t.Helper()
	return newDestRigNamed(t, "gd", entry)
}

// newDestRigNamed is newDestRig with the destinations named from prefix.
func newDestRigNamed(t *testing.T, prefix, entry string) *destRig {
	t.Helper()
	return newDestRigOn(t, "", prefix, entry)
}

// newDestRigOn is newDestRigNamed with the router's data_path ("": the
// default).
func newDestRigOn(t *testing.T, dataPath, prefix, entry string) *destRig {
	t.Helper()
	d := &destRig{t: t, bs: brokertest.Require(t, "rabbit1", "rabbit2", "rabbit3", "rabbit4")}
	d.prefix = strings.ReplaceAll(brokertest.UniqueName(t, prefix), "Test", "")
	var yaml strings.Builder
	fmt.Fprintf(&yaml, "router_id: %s\nbrokers:\n", uniqueRouterID("gd"))
	for _, b := range d.bs {
		fmt.Fprintf(&yaml, "  - {name: %s, url: %q, profile: rabbitmq, username: guest, password: guest, management: {url: %q}}\n", b.Name, b.URL, b.MgmtURL)
		m, err := amqp.NewRabbitManagement(b.Config())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.Close)
		d.mgmt = append(d.mgmt, m)
	}
	if dataPath != "" {
		fmt.Fprintf(&yaml, "data_path: %s\n", dataPath)
	}
	fmt.Fprintf(&yaml, "reconnect: {min: 100ms, max: 1s}\nadmin: {listen: \"127.0.0.1:0\"}\nlog: {level: info, format: json}\ndestinations:\n  - {name: %q, %s}\n", d.prefix+".*", entry)
	path := filepath.Join(t.TempDir(), "gd.yaml")
	if err := os.WriteFile(path, []byte(withAdminPort(t, yaml.String())), 0o600); err != nil {
		t.Fatal(err)
	}
	d.p = startRouter(t, path)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the router's log:\n%s", d.p.out.String())
		}
	})
	t.Cleanup(func() { // the router stopped first: nothing re-creates them
		_ = d.p.cmd.Process.Kill()
		_ = d.p.cmd.Wait()
		for _, m := range d.mgmt {
			for _, q := range []string{"orders", "jobs"} {
				_ = m.DeleteQueue(context.Background(), d.prefix+"."+q) // best effort
			}
		}
	})
	return d
}

// args returns queue q's arguments at node i, or an error if it is absent.
func (d *destRig) args(i int, q string) (map[string]any, error) {
	info, err := d.mgmt[i].Queue(context.Background(), q)
	if err != nil {
		return nil, err
	}
	return info.Arguments, nil
}

// waitEverywhere waits until q exists at every node with want's arguments.
func (d *destRig) waitEverywhere(q string, want map[string]any, timeout time.Duration) {
	d.t.Helper()
	brokertest.Eventually(d.t, timeout, 100*time.Millisecond, func() error {
		for i, b := range d.bs {
			got, err := d.args(i, q)
			if err != nil {
				return fmt.Errorf("%s at %s: %v", q, b.Name, err)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				return fmt.Errorf("%s at %s: arguments %v, want %v", q, b.Name, got, want)
			}
		}
		return nil
	})
}

// A queue an administrator creates at rabbit1 exists at rabbit2..4 with
// the same arguments; deleted at rabbit3 while empty, it goes everywhere;
// a queue deleted while another instance holds messages is kept there and
// reported orphaned.
func TestGlobalDestinationsPropagate(t *testing.T) {
	parallelE2E(t)
	d := newDestRig(t, "confirm_delete: 3s")
	ctx := context.Background()
	orders, jobs := d.prefix+".orders", d.prefix+".jobs"
	args := map[string]any{"x-max-length": float64(100), "x-message-ttl": float64(60000)}
	created := time.Now()
	if err := d.mgmt[0].DeclareQueue(ctx, orders, amqp.QueueArgs{Durable: true, Arguments: args}); err != nil {
		t.Fatal(err)
	}
	d.waitEverywhere(orders, args, 30*time.Second)
	propagated := time.Since(created)

	deleted := time.Now()
	if err := d.mgmt[2].DeleteQueue(ctx, orders); err != nil {
		t.Fatal(err)
	}
	brokertest.Eventually(t, 30*time.Second, 100*time.Millisecond, func() error {
		for i, b := range d.bs {
			if _, err := d.args(i, orders); !errors.Is(err, amqp.ErrNotFound) {
				return fmt.Errorf("%s still at %s (%v)", orders, b.Name, err)
			}
		}
		return nil
	})
	gone := time.Since(deleted)

	// jobs: created at rabbit2, three messages at rabbit4, deleted at rabbit1.
	if err := d.mgmt[1].DeclareQueue(ctx, jobs, amqp.QueueArgs{Durable: true}); err != nil {
		t.Fatal(err)
	}
	d.waitEverywhere(jobs, map[string]any{}, 30*time.Second)
	s := brokertest.Session(t, brokertest.Dial(t, d.bs[3].Config(), amqp.ConnOptions{}))
	brokertest.SendAll(t, s, "/amq/queue/"+jobs, 3, 3, func(i int) *goamqp.Message { return brokertest.Numbered(i) })
	brokertest.Eventually(t, 30*time.Second, 200*time.Millisecond, func() error {
		n, _, err := d.mgmt[3].QueueMessages(ctx, jobs)
		if err != nil || n != 3 {
			return fmt.Errorf("rabbit4's %s holds %d (%v)", jobs, n, err)
		}
		return nil
	})
	if err := d.mgmt[0].DeleteQueue(ctx, jobs); err != nil {
		t.Fatal(err)
	}
	var st api.Destinations
	brokertest.Eventually(t, 30*time.Second, 200*time.Millisecond, func() error {
		for i := range 3 {
			if _, err := d.args(i, jobs); !errors.Is(err, amqp.ErrNotFound) {
				return fmt.Errorf("%s still at %s (%v)", jobs, d.bs[i].Name, err)
			}
		}
		out, code := d.p.cli("destination", "list", "--json")
		if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil {
			return fmt.Errorf("destination list --json: exit %d, %v: %s", code, err, out)
		}
		for _, ds := range st.Destinations {
			if ds.Name == jobs && len(ds.Problems) == 1 && strings.Contains(ds.Problems[0], "orphaned at rabbit4") {
				return nil
			}
		}
		return fmt.Errorf("%s not reported orphaned at rabbit4: %+v", jobs, st.Destinations)
	})
	if _, err := d.args(3, jobs); err != nil {
		t.Fatalf("rabbit4's %s, holding messages, was deleted: %v", jobs, err)
	}
	out, code := d.p.cli("destination", "list")
	if code != 0 || !strings.Contains(out, jobs) || !strings.Contains(out, "orphaned at rabbit4") {
		t.Errorf("destination list: exit %d:\n%s", code, out)
	}
	t.Logf("created at rabbit1: at rabbit2..4 with its arguments %s later; deleted at rabbit3: gone everywhere %s later (confirm_delete 3s); deleted at rabbit1 while rabbit4's held 3 messages: kept there, reported; counts %+v\n%s",
		propagated.Round(time.Millisecond), gone.Round(time.Millisecond), st.Counts, out)
}

// Seed 000's auto-created destinations, for real: a non-durable queue a
// producer made stays local; a consumer attaches, and it is declared at
// the other brokers; the consumer leaves, nothing moves for the idle time
// (10 s here, the least: the management API counts consumers every 5 s),
// and it is removed everywhere — never while the consumer is there.
func TestGlobalDestinationsAutoCreatedReaped(t *testing.T) {
	parallelE2E(t)
	d := newDestRig(t, "idle: 10s")
	ctx := context.Background()
	q := d.prefix + ".orders"
	if err := d.mgmt[0].DeclareQueue(ctx, q, amqp.QueueArgs{Durable: false}); err != nil {
		t.Fatal(err)
	}
	s := brokertest.Session(t, brokertest.Dial(t, d.bs[0].Config(), amqp.ConnOptions{}))
	brokertest.SendAll(t, s, "/amq/queue/"+q, 3, 3, func(i int) *goamqp.Message { return brokertest.Numbered(i) })
	// A producer's queue (holding its messages: not idle): local, as the
	// router's own status says.
	brokertest.Eventually(t, 30*time.Second, 200*time.Millisecond, func() error {
		out, code := d.p.cli("destination", "list", "--json")
		var st api.Destinations
		if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil {
			return fmt.Errorf("destination list: exit %d, %v: %s", code, err, out)
		}
		if len(st.Destinations) != 1 || st.Destinations[0].State != "local" {
			return fmt.Errorf("want %s local: %+v", q, st.Destinations)
		}
		return nil
	})
	for i := 1; i < 4; i++ {
		if _, err := d.args(i, q); !errors.Is(err, amqp.ErrNotFound) {
			t.Fatalf("a producer's auto-created queue was propagated to %s (%v)", d.bs[i].Name, err)
		}
	}
	// A consumer at rabbit1: propagated (non-durable) with it.
	r := brokertest.OpenReceiver(t, s, amqp.LinkSpec{Address: "/amq/queue/" + q}, 10)
	attached := time.Now()
	d.waitEverywhere(q, map[string]any{}, 30*time.Second)
	propagated := time.Since(attached)
	for i := range 4 {
		if info, err := d.mgmt[i].Queue(ctx, q); err != nil || info.Durable {
			t.Fatalf("%s at %s: %+v %v, want non-durable", q, d.bs[i].Name, info, err)
		}
	}
	for range 3 { // consumed: the queue is empty when the consumer leaves
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		msg, err := r.Receive(rctx)
		if err == nil {
			err = r.Accept(rctx, msg)
		}
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.args(0, q); err != nil {
		t.Fatalf("%s reaped at rabbit1 while a consumer had it: %v", q, err)
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := r.Close(cctx); err != nil {
		t.Fatal(err)
	}
	left := time.Now()
	brokertest.Eventually(t, 60*time.Second, 200*time.Millisecond, func() error {
		for i, b := range d.bs {
			if _, err := d.args(i, q); !errors.Is(err, amqp.ErrNotFound) {
				return fmt.Errorf("%s still at %s (%v)", q, b.Name, err)
			}
		}
		return nil
	})
	t.Logf("auto-created %s: local while only a producer's; with a consumer at rabbit1, at rabbit2..4 %s later; idle 10s: after the consumer left: gone everywhere %s after it left",
		q, propagated.Round(time.Millisecond), time.Since(left).Round(time.Millisecond))
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/amqp/brokertest"
	"github.com/fedrouter/fedrouter/api"
	"github.com/fedrouter/fedrouter/cluster"
	"github.com/fedrouter/fedrouter/routes"
	"github.com/fedrouter/fedrouter/store"
	"github.com/fedrouter/fedrouter/store/pgstore"
	"github.com/fedrouter/fedrouter/store/storetest"
)

// A route whose holder stopped beating is being taken over: changes to it
// are refused (503, Retry-After, a clear CLI message) and nothing is
// deleted, until another member holds it — then they go through. The
// failed holder is a "ghost" written into the store by the test: one
// heartbeat, a route and its lease, then silence; its lease runs long
// enough for the refusals to be asked for before it ends.
func TestClusterChangeRefusedDuringTakeover(t *testing.T) {
	url := storetest.URL(t)
	bs := brokertest.Require(t, "rabbit1", "rabbit2")
	name := clusterName(t)
	src, ex, dq := brokertest.UniqueName(t, "src"), brokertest.UniqueName(t, "ex"), brokertest.UniqueName(t, "dq")
	brokertest.DeclareQueue(t, bs[0].Config(), src)
	brokertest.DeclareExchangeQueue(t, bs[1].Config(), ex, "fanout", dq, "")

	ctx := context.Background()
	st, err := pgstore.Open(ctx, url, name, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	spec := routes.Spec{Kind: routes.KindQueue, Dest: "r2", Src: "r1", Exchange: ex, Queue: src, Durable: true, Credit: 100, Cost: routes.DefaultCost}
	data, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	ghost := store.Member{ID: "ghost", Incarnation: "1", Brokers: []string{"r1", "r2"}}
	if _, err := st.Beat(ctx, ghost, nil, time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutRoute(ctx, store.RouteDef{ID: spec.ID(), Spec: data, Origin: string(routes.OriginRuntime)}); err != nil {
		t.Fatal(err)
	}
	const ghostLease = 10 * time.Second
	won, err := st.Claim(ctx, "ghost", []string{spec.ID()}, ghostLease)
	if err != nil || len(won) != 1 {
		t.Fatalf("the ghost's claim: %v, %v", won, err)
	}
	claimed := time.Now()

	m := clusterMember(t, "tk", name, url, bs, "200ms", "1s")
	// The ghost is suspect once it missed three of tk's heartbeats.
	brokertest.Eventually(t, 30*time.Second, 50*time.Millisecond, func() error {
		out, code := m.cli("cluster", "status", "--json")
		var cs api.ClusterStatus
		if err := json.Unmarshal([]byte(out), &cs); code != 0 || err != nil {
			return fmt.Errorf("cluster status: exit %d, %v: %s", code, err, out)
		}
		for _, mb := range cs.Members {
			if mb.ID == "ghost" && mb.State != string(cluster.Alive) {
				return nil
			}
		}
		return fmt.Errorf("the ghost is not suspect yet: %+v", cs.Members)
	})
	del := []string{"queue", "del", "r2", "r1", ex, src}
	for _, args := range [][]string{del, {"route", "flush"}} {
		out, code := m.cli(args...)
		if time.Since(claimed) > ghostLease {
			t.Skipf("the ghost's lease ended before %v was asked (a slow machine): nothing to test", args)
		}
		if code == 0 || !strings.Contains(out, "is being taken over: its holder ghost is") ||
			!strings.Contains(out, "; retry in ") || !strings.Contains(out, "(HTTP 503: nothing was changed)") {
			t.Fatalf("%v during the takeover: exit %d, want a 503 naming the takeover and when to retry:\n%s", args, code, out)
		}
		t.Logf("%v during the takeover: %s", args, strings.TrimSpace(out))
	}
	if _, code := m.cli("route", "list"); code != 0 {
		t.Fatal("route list failed")
	}
	snap, err := st.Snapshot(ctx)
	if err != nil || len(snap.Routes) != 1 {
		t.Fatalf("the refused changes deleted something: %v, %v", snap.Routes, err)
	}
	// The takeover ends when the ghost's lease does: tk claims the route,
	// and the same change goes through.
	brokertest.Eventually(t, ghostLease+30*time.Second, 100*time.Millisecond, func() error {
		for _, s := range m.routes() {
			if s.Holder != "tk" {
				return fmt.Errorf("route %s held by %q", s.ID, s.Holder)
			}
		}
		return nil
	})
	if out, code := m.cli(del...); code != 0 {
		t.Fatalf("queue del after the takeover: exit %d:\n%s", code, out)
	}
	if out := m.out.String(); !strings.Contains(out, "route deleted from the cluster") {
		t.Errorf("tk's log does not say the route was deleted")
	}
}

// A flush in a cluster deletes its routes from the store in one statement
// (store.DeleteRoutes): every one goes, from the store and from the
// member that held it.
func TestClusterFlushDeletesAtOnce(t *testing.T) {
	c := newClusterRig(t, []string{"fa", "fb"}, 4, 100)
	c.spread(4)
	m := c.members["fa"]
	if out, code := m.cli("route", "flush"); code != 0 || !strings.Contains(out, "4 routes deleted") {
		t.Fatalf("route flush: exit %d: %s", code, out)
	}
	st, err := pgstore.Open(context.Background(), c.url, c.name, pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if snap, err := st.Snapshot(context.Background()); err != nil || len(snap.Routes) != 0 {
		t.Fatalf("the store after the flush: %+v, %v", snap.Routes, err)
	}
	brokertest.Eventually(t, 30*time.Second, 100*time.Millisecond, func() error {
		if h := held(t, c.members); len(h) != 0 {
			return fmt.Errorf("%d routes still run", len(h))
		}
		return nil
	})
	if out := m.out.String(); !strings.Contains(out, "routes flushed from the cluster") {
		t.Errorf("fa's log does not say the routes were flushed")
	}
}

package cluster

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/fedrouter/fedrouter/store"
	"github.com/fedrouter/fedrouter/store/pgstore"
	"github.com/fedrouter/fedrouter/store/storetest"
)

// counting counts a member's store calls and the statements they cost.
type counting struct {
	store.Store
	calls, statements atomic.Int64
}

func (c *counting) add(statements int64) { c.calls.Add(1); c.statements.Add(statements) }
func (c *counting) Beat(ctx context.Context, m store.Member, held []store.Lease, d time.Duration) (store.Renewal, error) {
	c.add(1)
	return c.Store.Beat(ctx, m, held, d)
}
func (c *counting) Snapshot(ctx context.Context) (store.Snapshot, error) {
	c.add(5) // BEGIN, now(), members, routes, COMMIT
	return c.Store.Snapshot(ctx)
}
func (c *counting) Claim(ctx context.Context, m string, ids []string, d time.Duration) ([]store.Lease, error) {
	c.add(1)
	return c.Store.Claim(ctx, m, ids, d)
}
func (c *counting) Release(ctx context.Context, m string, ls []store.Lease) (int, error) {
	c.add(1)
	return c.Store.Release(ctx, m, ls)
}

// idle runs nothing: the test measures the control plane alone.
type idle struct{ running sync.Map }

func (*idle) Place(spec []byte) (string, string, bool, bool, error) {
	return "a", "b", false, false, nil
}
func (x *idle) Run(id string, _ []byte, _ int64, _ func() bool) error {
	x.running.Store(id, true)
	return nil
}
func (x *idle) Halt(_ context.Context, id string, _ HaltMode) { x.running.Delete(id) }

// Three members on 1,000 routes against real PostgreSQL: every route held
// by exactly one member, spread within the quota, and the store load per
// member measured (docs/performance.md: under 20 statements/s at the
// default 2s heartbeat, so one small PostgreSQL serves 50 routers).
func TestMembersShareThousandRoutes(t *testing.T) {
	url := storetest.Schema(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const routes, hb = 1000, 200 * time.Millisecond
	setup, err := pgstore.Open(ctx, url, "k", pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer setup.Close()
	for i := range routes {
		if _, err := setup.PutRoute(ctx, store.RouteDef{ID: fmt.Sprintf("r%04d", i), Spec: []byte(`{}`), Origin: "runtime"}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	counters := map[string]*counting{}
	runners := map[string]*idle{}
	for _, id := range []string{"A", "B", "C"} {
		st, err := pgstore.Open(ctx, url, "k", pgstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		counters[id], runners[id] = &counting{Store: st}, &idle{}
		p := Params{Self: id, Heartbeat: hb, SuspectAfter: 3, Lease: 3 * hb, Attached: []string{"a", "b"}}
		m := NewMember(p, store.Member{ID: id, Incarnation: "1", Brokers: p.Attached}, counters[id], runners[id], zerolog.Nop())
		wg.Add(1)
		go func() { defer wg.Done(); m.Run(ctx) }()
		if id == "A" { // A alone takes every route; B and C join after
			waitRunning(t, runners["A"], routes)
		}
	}
	joined := time.Now()
	deadline := joined.Add(30 * time.Second)
	var spread map[string]int
	for {
		spread = map[string]int{}
		total := 0
		for id, r := range runners {
			r.running.Range(func(any, any) bool { spread[id]++; total++; return true })
		}
		if total == routes && spread["A"] <= routes/3+2 && spread["B"] <= routes/3+2 && spread["C"] <= routes/3+2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30s: %d of %d routes running, spread %v", total, routes, spread)
		}
		time.Sleep(hb)
	}
	t.Logf("B and C joined A, which held all %d routes: even (%v) after %s (heartbeat %s, at most %d handoffs a beat)",
		routes, spread, time.Since(joined).Round(time.Millisecond), hb, MaxHandoffsPerBeat)
	// Steady state: measure for 25 heartbeats.
	before := map[string]int64{}
	for id, c := range counters {
		before[id] = c.statements.Load()
	}
	time.Sleep(25 * hb)
	for id, c := range counters {
		perBeat := float64(c.statements.Load()-before[id]) / 25
		t.Logf("member %s: %d routes, %.1f statements per heartbeat = %.1f/s at the default 2s heartbeat", id, spread[id], perBeat, perBeat/2)
		if perBeat/2 >= 20 {
			t.Errorf("member %s: %.1f statements/s at a 2s heartbeat; the aim is under 20", id, perBeat/2)
		}
	}
	cancel()
	wg.Wait()
	// Left: every lease released on the way out.
	snap, err := setup.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range snap.Routes {
		if r.Held(snap.Now) {
			t.Fatalf("route %s still held by %s after every member left", r.ID, r.Owner)
		}
	}
}

// waitRunning waits until r runs n routes.
func waitRunning(t *testing.T, r *idle, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := 0
		r.running.Range(func(any, any) bool { got++; return true })
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30s: %d of %d routes running", got, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A second process with the same member id (a copy started by mistake, a
// paused process's replacement) runs nothing while the first beats — its
// beats renew and claim nothing — and takes over once the first leaves.
func TestMemberSecondIncarnationRunsNothing(t *testing.T) {
	url := storetest.Schema(t)
	ctx := context.Background()
	const routes, hb = 10, 100 * time.Millisecond
	open := func() store.Store {
		st, err := pgstore.Open(ctx, url, "k", pgstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		return st
	}
	setup := open()
	for i := range routes {
		if _, err := setup.PutRoute(ctx, store.RouteDef{ID: fmt.Sprintf("r%d", i), Spec: []byte(`{}`), Origin: "runtime"}); err != nil {
			t.Fatal(err)
		}
	}
	p := Params{Self: "A", Heartbeat: hb, SuspectAfter: 3, Lease: 3 * hb, Attached: []string{"a", "b"}}
	start := func(inc string, st store.Store, r *idle) (stop func()) {
		mctx, cancel := context.WithCancel(ctx)
		m := NewMember(p, store.Member{ID: "A", Incarnation: inc, Brokers: p.Attached}, st, r, zerolog.Nop())
		done := make(chan struct{})
		go func() { defer close(done); m.Run(mctx) }()
		return func() { cancel(); <-done }
	}
	first, second := &idle{}, &idle{}
	stopFirst := start("1", open(), first)
	waitRunning(t, first, routes)
	beats := &counting{Store: open()}
	stopSecond := start("2", beats, second)
	defer stopSecond()
	deadline := time.Now().Add(30 * time.Second)
	for beats.calls.Load() < 10 { // ten beats or more, all refused
		n := 0
		second.running.Range(func(any, any) bool { n++; return true })
		if n != 0 {
			t.Fatalf("the second incarnation runs %d routes while the first beats", n)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the second incarnation made %d store calls in 30s", beats.calls.Load())
		}
		time.Sleep(hb / 2)
	}
	stopFirst() // leaves: hands its routes off
	waitRunning(t, second, routes)
}

package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/store"
	"github.com/fedrouter/fedrouter/store/storetest"
)

func open(t *testing.T, url, cluster string) *Store {
	t.Helper()
	s, err := Open(context.Background(), url, cluster, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func put(t *testing.T, s *Store, id string) {
	t.Helper()
	created, err := s.PutRoute(context.Background(), store.RouteDef{ID: id, Spec: []byte(`{"src":"a"}`), Origin: "runtime"})
	if err != nil || !created {
		t.Fatalf("PutRoute(%s) = %v, %v", id, created, err)
	}
}

// expire ends every lease of the cluster at once, as if its holder had
// stopped renewing long ago.
func expire(t *testing.T, s *Store) {
	t.Helper()
	if _, err := s.pool.Exec(context.Background(), `UPDATE fedrouter_leases SET until = now() - interval '1 second' WHERE cluster = $1 AND owner <> ''`, s.cluster); err != nil {
		t.Fatal(err)
	}
}

func TestMigrateOnceAndRefuseNewer(t *testing.T) {
	url := storetest.Schema(t)
	a := open(t, url, "c1")
	open(t, url, "c1") // a second member: the schema is there, nothing to do
	var v int
	if err := a.pool.QueryRow(context.Background(), `SELECT version FROM fedrouter_schema`).Scan(&v); err != nil || v != SchemaVersion {
		t.Fatalf("schema version %d, %v; want %d", v, err, SchemaVersion)
	}
	if _, err := a.pool.Exec(context.Background(), `UPDATE fedrouter_schema SET version = 99`); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), url, "c1", Options{})
	if !errors.Is(err, store.ErrSchemaNewer) || !strings.Contains(err.Error(), "version 99") {
		t.Fatalf("Open on a newer schema: %v; want ErrSchemaNewer naming version 99", err)
	}
}

func TestRouteDefinitions(t *testing.T) {
	s := open(t, storetest.Schema(t), "c1")
	other := open(t, s.pool.Config().ConnString(), "c2")
	ctx := context.Background()
	put(t, s, "r1")
	if created, err := s.PutRoute(ctx, store.RouteDef{ID: "r1", Spec: []byte(`{}`), Origin: "config"}); err != nil || created {
		t.Fatalf("second PutRoute(r1) = %v, %v; want not created", created, err)
	}
	put(t, other, "r1") // another cluster, same id: its own row
	snap, err := s.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Routes) != 1 || snap.Routes[0].ID != "r1" || snap.Routes[0].Origin != "runtime" || snap.Routes[0].Owner != "" || snap.Routes[0].Held(snap.Now) {
		t.Fatalf("snapshot routes %+v", snap.Routes)
	}
	if err := s.DeleteRoute(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRoute(ctx, "r1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleting a deleted route: %v; want ErrNotFound", err)
	}
	if snap, _ := other.Snapshot(ctx); len(snap.Routes) != 1 {
		t.Fatalf("the other cluster's route went too: %+v", snap.Routes)
	}
}

func TestDeleteRoutesAtOnce(t *testing.T) {
	s := open(t, storetest.Schema(t), "c1")
	other := open(t, s.pool.Config().ConnString(), "c2")
	ctx := context.Background()
	for _, id := range []string{"r1", "r2", "r3", "r4"} {
		put(t, s, id)
	}
	put(t, other, "r1") // another cluster, same id: not deleted with ours
	if _, err := s.Claim(ctx, "A", []string{"r1", "r4"}, 6*time.Second); err != nil {
		t.Fatal(err)
	}
	n, err := s.DeleteRoutes(ctx, []string{"r1", "r2", "r3", "gone"})
	if err != nil || n != 3 {
		t.Fatalf("DeleteRoutes = %d, %v; want 3 (an absent id is no error)", n, err)
	}
	snap, err := s.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Routes) != 1 || snap.Routes[0].ID != "r4" || snap.Routes[0].Owner != "A" {
		t.Fatalf("left after the delete: %+v; want r4, held by A", snap.Routes)
	}
	if won, _ := s.Claim(ctx, "B", []string{"r1"}, 6*time.Second); len(won) != 0 {
		t.Fatalf("a deleted route's lease was claimed: %+v", won)
	}
	if snap, _ := other.Snapshot(ctx); len(snap.Routes) != 1 {
		t.Fatalf("the other cluster's route went too: %+v", snap.Routes)
	}
	if n, err := s.DeleteRoutes(ctx, nil); err != nil || n != 0 {
		t.Fatalf("DeleteRoutes(nil) = %d, %v", n, err)
	}
}

func TestBeatRenewsAndFences(t *testing.T) {
	url := storetest.Schema(t)
	a, b := open(t, url, "c1"), open(t, url, "c1")
	ctx := context.Background()
	put(t, a, "r1")
	put(t, a, "r2")
	won, err := a.Claim(ctx, "A", []string{"r1", "r2"}, 6*time.Second)
	if err != nil || len(won) != 2 || won[0].Epoch != 1 {
		t.Fatalf("A's claim: %+v, %v", won, err)
	}
	if got, _ := b.Claim(ctx, "B", []string{"r1", "r2"}, 6*time.Second); len(got) != 0 {
		t.Fatalf("B took held leases: %+v", got)
	}
	ren, err := a.Beat(ctx, store.Member{ID: "A", Incarnation: "i1", Brokers: []string{"x"}}, won, 6*time.Second)
	if err != nil || len(ren.Held) != 2 || !ren.Held[0].Until.After(won[0].Until.Add(-time.Millisecond)) {
		t.Fatalf("A's renewal: %+v, %v", ren, err)
	}
	expire(t, a) // A stalls past its lease; B takes r1 over
	got, err := b.Claim(ctx, "B", []string{"r1"}, 6*time.Second)
	if err != nil || len(got) != 1 || got[0].Epoch != 2 {
		t.Fatalf("B's takeover: %+v, %v", got, err)
	}
	ren, err = a.Beat(ctx, store.Member{ID: "A", Incarnation: "i1"}, won, 6*time.Second)
	if err != nil || len(ren.Held) != 1 || ren.Held[0].Route != "r2" || ren.Held[0].Epoch != 1 {
		t.Fatalf("A's renewal after the takeover: %+v, %v; want r2 only (expired, but nobody took it), never r1", ren.Held, err)
	}
	if n, err := a.Release(ctx, "A", won); err != nil || n != 1 {
		t.Fatalf("A released %d (%v); want 1: r2, never B's r1", n, err)
	}
	snap, _ := a.Snapshot(ctx)
	if snap.Routes[0].Owner != "B" || snap.Routes[0].Epoch != 2 || snap.Routes[1].Owner != "" || snap.Routes[1].Epoch != 1 {
		t.Fatalf("leases after: %+v", snap.Routes)
	}
	if len(snap.Members) != 1 || snap.Members[0].ID != "A" || snap.Members[0].Left {
		t.Fatalf("members: %+v", snap.Members)
	}
	if err := a.Leave(ctx, "A"); err != nil {
		t.Fatal(err)
	}
	if snap, _ := a.Snapshot(ctx); !snap.Members[0].Left {
		t.Fatalf("A left but is not marked so: %+v", snap.Members)
	}
}

// TestTakeoverRace: two members on their own pools race for the same
// expired lease, 1,000 times; exactly one wins each round, and the epoch
// grows by exactly one.
func TestTakeoverRace(t *testing.T) {
	url := storetest.Schema(t)
	a, b := open(t, url, "c1"), open(t, url, "c1")
	ctx := context.Background()
	put(t, a, "r1")
	rounds := 1000
	if testing.Short() {
		rounds = 50
	}
	wins := map[string]int{}
	for i := 1; i <= rounds; i++ {
		expire(t, a)
		var wg sync.WaitGroup
		start := make(chan struct{})
		got := make([][]store.Lease, 2)
		errs := make([]error, 2)
		for k, s := range []*Store{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				got[k], errs[k] = s.Claim(ctx, string(rune('A'+k)), []string{"r1"}, time.Minute)
			}()
		}
		close(start)
		wg.Wait()
		if errs[0] != nil || errs[1] != nil {
			t.Fatalf("round %d: %v, %v", i, errs[0], errs[1])
		}
		if len(got[0])+len(got[1]) != 1 {
			t.Fatalf("round %d: %d winners (%+v, %+v); want exactly 1", i, len(got[0])+len(got[1]), got[0], got[1])
		}
		w := append(got[0], got[1]...)[0]
		if w.Epoch != int64(i) {
			t.Fatalf("round %d: epoch %d; want %d", i, w.Epoch, i)
		}
		wins[map[bool]string{true: "A", false: "B"}[len(got[0]) == 1]]++
	}
	t.Logf("%d rounds: A won %d, B won %d", rounds, wins["A"], wins["B"])
}

func TestBadStore(t *testing.T) {
	url := storetest.URL(t)
	ctx := context.Background()
	bad := strings.Replace(url, "fedrouter:fedrouter@", "fedrouter:wrong-Secret-42@", 1)
	_, err := Open(ctx, bad, "c1", Options{})
	if !errors.Is(err, store.ErrAuth) || Temporary(err) || strings.Contains(err.Error(), "wrong-Secret-42") {
		t.Fatalf("wrong password: %v (temporary %v); want ErrAuth, not temporary, no password", err, Temporary(err))
	}
	closed := "postgres://fedrouter:pw-Secret-43@127.0.0.1:1/fedrouter?sslmode=disable"
	_, err = Open(ctx, closed, "c1", Options{ConnectTimeout: time.Second})
	if !errors.Is(err, store.ErrUnavailable) || !Temporary(err) || strings.Contains(err.Error(), "pw-Secret-43") {
		t.Fatalf("unreachable store: %v; want ErrUnavailable, temporary, no password", err)
	}
	_, err = Open(ctx, "postgres://fedrouter:pw-Secret-44@[bad", "c1", Options{})
	if !errors.Is(err, store.ErrConfig) || strings.Contains(err.Error(), "pw-Secret-44") {
		t.Fatalf("bad URL: %v; want ErrConfig, no password", err)
	}
}

// Two processes beat as one member (one router_id twice, or a paused
// process whose replacement started): the second is refused while the
// first beats; once the first has not beaten for a lease, the second
// takes the row over, and the first, waking, renews nothing.
func TestBeatRefusesASecondIncarnation(t *testing.T) {
	url := storetest.Schema(t)
	s := open(t, url, "c1")
	ctx := context.Background()
	put(t, s, "r1")
	first, second := store.Member{ID: "A", Incarnation: "i1"}, store.Member{ID: "A", Incarnation: "i2"}
	const lease = 2 * time.Second
	if _, err := s.Beat(ctx, first, nil, lease); err != nil {
		t.Fatal(err)
	}
	won, err := s.Claim(ctx, "A", []string{"r1"}, lease)
	if err != nil || len(won) != 1 {
		t.Fatalf("claim: %+v, %v", won, err)
	}
	ren, err := s.Beat(ctx, second, won, lease)
	if !errors.Is(err, store.ErrSuperseded) || len(ren.Held) != 0 || !strings.Contains(err.Error(), "member A is incarnation i1 (this process: i2)") {
		t.Fatalf("the second incarnation's beat: %+v, %v; want ErrSuperseded naming both, nothing renewed", ren, err)
	}
	if ren, err := s.Beat(ctx, first, won, lease); err != nil || len(ren.Held) != 1 {
		t.Fatalf("the first still beats: %+v, %v", ren, err)
	}
	// The first stops beating for a lease (its row's beat moved back).
	if _, err := s.pool.Exec(ctx, `UPDATE fedrouter_members SET beat = now() - interval '3 seconds' WHERE cluster = $1`, s.cluster); err != nil {
		t.Fatal(err)
	}
	if ren, err := s.Beat(ctx, second, won, lease); err != nil || len(ren.Held) != 1 {
		t.Fatalf("the second, after the first's silence: %+v, %v; want the row and the lease", ren, err)
	}
	if ren, err := s.Beat(ctx, first, won, lease); !errors.Is(err, store.ErrSuperseded) || len(ren.Held) != 0 {
		t.Fatalf("the first, waking: %+v, %v; want ErrSuperseded, nothing renewed", ren, err)
	}
	snap, err := s.Snapshot(ctx)
	if err != nil || snap.Members[0].Incarnation != "i2" {
		t.Fatalf("members: %+v, %v", snap.Members, err)
	}
}

// A member's routes' statuses go with a beat and come back from Reports
// as written, with the store's time of that beat; a beat without them
// leaves them (and their time); the snapshot every beat reads does not
// carry them.
func TestBeatCarriesRouteStatuses(t *testing.T) {
	s := open(t, storetest.Schema(t), "c1")
	ctx := context.Background()
	report := []byte(`{"r1":{"state":"Operational","forwarded":42}}`)
	renewal, err := s.Beat(ctx, store.Member{ID: "A", Incarnation: "i1", Routes: report}, nil, 6*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Beat(ctx, store.Member{ID: "B", Incarnation: "i1"}, nil, 6*time.Second); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		reps, now, err := s.Reports(ctx)
		if err != nil || len(reps) != 1 || reps[0].Member != "A" {
			t.Fatalf("%s: reports %+v, %v; want A's only", when, reps, err)
		}
		if !reps[0].At.Equal(renewal.Now) || now.Before(reps[0].At) {
			t.Fatalf("%s: published at %s, now %s; want the first beat's time %s", when, reps[0].At, now, renewal.Now)
		}
		var got, want map[string]map[string]any
		if err := json.Unmarshal(reps[0].Routes, &got); err != nil {
			t.Fatalf("%s: routes %q: %v", when, reps[0].Routes, err)
		}
		_ = json.Unmarshal(report, &want)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: routes %s, want %s", when, reps[0].Routes, report)
		}
	}
	check("after the beat that carried them")
	if _, err := s.Beat(ctx, store.Member{ID: "A", Incarnation: "i1"}, nil, 6*time.Second); err != nil {
		t.Fatal(err)
	}
	check("after a beat without")
	snap, err := s.Snapshot(ctx)
	if err != nil || len(snap.Members) != 2 || snap.Members[0].Routes != nil {
		t.Fatalf("snapshot: %+v, %v; want two members, no statuses", snap.Members, err)
	}
}

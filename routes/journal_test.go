package routes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fedrouter/fedrouter/amqp"
)

func testSpec(i int) Spec {
	return Spec{Kind: KindQueue, Dest: "b", Src: "a", Exchange: "x", Queue: fmt.Sprintf("q%d", i), Durable: true}.WithDefaults()
}

func line(t *testing.T, l journalLine) string {
	t.Helper()
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

func ids(specs []Spec) []string {
	out := make([]string, 0, len(specs))
	for _, s := range specs {
		out = append(out, s.ID())
	}
	sort.Strings(out)
	return out
}

// Replaying: the last line for an id wins; adding what the snapshot holds
// and deleting what it lacks change nothing (a crash between a fold's two
// steps); a torn last line is dropped, a bad line before it is damage.
func TestReplayJournal(t *testing.T) {
	s0, s1, s2 := testSpec(0), testSpec(1), testSpec(2)
	s1more := s1
	s1more.Credit = 7
	add := func(s Spec) journalLine { return journalLine{Add: &s} }
	del := func(s Spec) journalLine { return journalLine{Del: s.ID()} }
	cases := []struct {
		name     string
		snapshot []Spec
		lines    []journalLine
		tail     string
		want     []Spec
		torn     bool
	}{
		{name: "empty", snapshot: []Spec{s0}, want: []Spec{s0}},
		{name: "add and delete", snapshot: []Spec{s0}, lines: []journalLine{add(s1), del(s0), add(s2)}, want: []Spec{s1, s2}},
		{name: "re-added with other options", lines: []journalLine{add(s1), del(s1), add(s1more)}, want: []Spec{s1more}},
		{name: "replayed over a fold", snapshot: []Spec{s1}, lines: []journalLine{add(s0), del(s0), add(s1)}, want: []Spec{s1}},
		{name: "torn tail", snapshot: []Spec{s0}, lines: []journalLine{del(s0)}, tail: `{"add":{"kind":"que`, want: nil, torn: true},
		{name: "bad last line", lines: []journalLine{add(s0)}, tail: "{}\n", want: []Spec{s0}, torn: true},
	}
	for _, c := range cases {
		var data strings.Builder
		for _, l := range c.lines {
			data.WriteString(line(t, l))
		}
		data.WriteString(c.tail)
		got, torn, err := replayJournal(c.snapshot, []byte(data.String()))
		if err != nil || torn != c.torn || !reflect.DeepEqual(ids(got), ids(c.want)) {
			t.Errorf("%s: got %v torn %v err %v, want %v torn %v", c.name, ids(got), torn, err, ids(c.want), c.torn)
		}
		for _, g := range got {
			if g.ID() == s1.ID() && c.name == "re-added with other options" && g.Credit != 7 {
				t.Errorf("%s: the last add's options lost: %+v", c.name, g)
			}
		}
	}
	if _, _, err := replayJournal(nil, []byte("nonsense\n"+line(t, add(s0)))); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("damaged middle line: error %v, want one naming line 1", err)
	}
}

// Concurrent changes are acknowledged once durable: after they return,
// the state file and journal hold exactly the routes, and so does a fold.
func TestStateLogGroupCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	var mu sync.Mutex
	live := map[string]Spec{}
	snapshot := func() []Spec {
		mu.Lock()
		defer mu.Unlock()
		var out []Spec
		for _, s := range live {
			out = append(out, s)
		}
		return out
	}
	l := newStateLog(path, snapshot)
	if err := l.enqueueCompact(false)(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("a fold of nothing journaled wrote the state file: %v", err)
	}
	const n = 3 * compactEvery // folds on the way
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				s := testSpec(i)
				mu.Lock() // as Manager.mu: the change and its line in one step
				var wait func() error
				if i%3 == 2 {
					delete(live, testSpec(i-1).ID())
					wait = l.enqueue(journalLine{Del: testSpec(i - 1).ID()})
				} else {
					live[s.ID()] = s
					wait = l.enqueue(journalLine{Add: &s})
				}
				mu.Unlock()
				errs <- wait()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got, torn, err := LoadJournaled(path)
	if err != nil || torn || !reflect.DeepEqual(ids(got), ids(snapshot())) {
		t.Fatalf("loaded %d routes (torn %v, %v), want %d", len(got), torn, err, len(snapshot()))
	}
	if err := l.close(); err != nil {
		t.Fatal(err)
	}
	if j, err := os.Stat(path + JournalSuffix); err != nil || j.Size() != 0 {
		t.Fatalf("journal after close: %v %v, want it empty", j, err)
	}
	if snap, err := LoadState(path); err != nil || !reflect.DeepEqual(ids(snap), ids(snapshot())) {
		t.Fatalf("snapshot after close: %d routes, %v", len(snap), err)
	}
}

// A durable route added and deleted through the Manager is in the state
// file (snapshot and journal) as soon as Add or Delete returns; a flush
// of many is one write.
func TestManagerJournalsDurableRoutes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	m := newTestManager(t, path)
	if err := m.Restore(nil); err != nil {
		t.Fatal(err)
	}
	var added []string
	for i := 0; i < 5; i++ {
		st, err := m.Add(t.Context(), testSpec(i))
		if err != nil {
			t.Fatal(err)
		}
		added = append(added, st.ID)
	}
	if _, err := m.Add(t.Context(), Spec{Kind: KindQueue, Dest: "b", Src: "a", Exchange: "x", Queue: "transient"}); err != nil {
		t.Fatal(err)
	}
	if got, _, err := LoadJournaled(path); err != nil || len(got) != 5 {
		t.Fatalf("after adds: %d routes, %v", len(got), err)
	}
	if err := m.Delete(t.Context(), added[0]); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := LoadJournaled(path); !reflect.DeepEqual(ids(got), ids(specsOf(added[1:]...))) {
		t.Fatalf("after delete: %v", ids(got))
	}
	j, _ := os.ReadFile(path + JournalSuffix)
	before := strings.Count(string(j), "\n")
	n, err := m.Flush(t.Context(), "")
	if err != nil || n != 5 {
		t.Fatalf("flush: %d %v, want 5 (four durable, one transient)", n, err)
	}
	if got, _, _ := LoadJournaled(path); len(got) != 0 {
		t.Fatalf("after flush: %v", ids(got))
	}
	j, _ = os.ReadFile(path + JournalSuffix)
	if lines := strings.Count(string(j), "\n") - before; lines != 4 {
		t.Errorf("flush wrote %d journal lines, want 4 (the durable routes)", lines)
	}
}

func specsOf(ids ...string) []Spec {
	var out []Spec
	for i := 0; i < 5; i++ {
		for _, id := range ids {
			if testSpec(i).ID() == id {
				out = append(out, testSpec(i))
			}
		}
	}
	return out
}

// A flush whose request has ended deletes nothing.
func TestFlushCancelledDeletesNothing(t *testing.T) {
	m := newTestManager(t, "")
	if _, err := m.Add(t.Context(), testSpec(0)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := contextWithCancel(t)
	cancel()
	if n, err := m.Flush(ctx, ""); n != 0 || err == nil {
		t.Fatalf("cancelled flush: %d %v", n, err)
	}
	if len(m.List()) != 1 {
		t.Fatalf("routes after a cancelled flush: %d", len(m.List()))
	}
}

// newTestManager is a manager of brokers a and b that are never reached
// (a closed port): its routes wait, which is all the state file needs.
func newTestManager(t testing.TB, statePath string) *Manager {
	t.Helper()
	brokers := map[string]amqp.Broker{}
	for _, name := range []string{"a", "b"} {
		c, err := amqp.Dial(t.Context(), amqp.BrokerConfig{Name: name, URLs: []string{"amqp://127.0.0.1:1"}, Profile: "generic"},
			amqp.ConnOptions{Backoff: amqp.Backoff{Min: time.Hour, Max: time.Hour}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		brokers[name] = amqp.Broker{Conn: c}
	}
	m := NewManager(t.Context(), Options{RouterID: "r", Brokers: brokers, StatePath: statePath})
	t.Cleanup(func() { m.Stop(context.Background()) })
	return m
}

func contextWithCancel(t *testing.T) (context.Context, context.CancelFunc) {
	return context.WithCancel(t.Context())
}

// A start replays the journal over the state file, drops a torn tail and
// folds: the journal starts empty. A start without one writes nothing.
func TestRestoreFoldsTheJournal(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	m := newTestManager(t, path)
	if err := m.Restore(nil); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("a start with no state wrote %v", entries)
	}
	s0, s1 := testSpec(0), testSpec(1)
	if err := SaveState(path, []Spec{s0}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+JournalSuffix, []byte(line(t, journalLine{Add: &s1})+`{"del":"`), 0o600); err != nil {
		t.Fatal(err)
	}
	m = newTestManager(t, path)
	if err := m.Restore(nil); err != nil {
		t.Fatal(err)
	}
	if got := idsOf(m.List()); strings.Join(got, ",") != strings.Join(ids([]Spec{s0, s1}), ",") {
		t.Fatalf("restored %v", got)
	}
	if j, err := os.Stat(path + JournalSuffix); err != nil || j.Size() != 0 {
		t.Fatalf("journal after the start: %v %v, want it folded", j, err)
	}
	if snap, err := LoadState(path); err != nil || len(snap) != 2 {
		t.Fatalf("state file after the start: %d routes, %v", len(snap), err)
	}
}

// A durable route starts only once its journal line is on disk: while the
// sync is under way it is not listed, its id is taken (a second add is a
// duplicate, a delete finds nothing), and it runs once Add returns. A
// write that fails starts nothing.
func TestAddDurableBeforeItStarts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	m := newTestManager(t, path)
	if err := m.Restore(nil); err != nil {
		t.Fatal(err)
	}
	// Another waiter "is writing": the add's sync waits for it.
	m.state.mu.Lock()
	m.state.writing = true
	m.state.mu.Unlock()
	spec := testSpec(0)
	added := make(chan error, 1)
	go func() { _, err := m.Add(t.Context(), spec); added <- err }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		m.mu.Lock()
		_, syncing := m.syncing[spec.ID()]
		m.mu.Unlock()
		if syncing {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the add never queued its journal line")
		}
		time.Sleep(time.Millisecond)
	}
	if n := len(m.List()); n != 0 {
		t.Fatalf("%d routes listed before the add's line is durable", n)
	}
	if _, err := m.Add(t.Context(), spec); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("second add while the first syncs: %v, want ErrDuplicate", err)
	}
	if err := m.Delete(t.Context(), spec.ID()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete while the add syncs: %v, want ErrNotFound", err)
	}
	// The "other writer" is done: this waiter writes the pending batch.
	m.state.mu.Lock()
	m.state.writing = false
	pending := m.state.pending
	m.state.mu.Unlock()
	if err := m.state.wait(pending); err != nil {
		t.Fatal(err)
	}
	if err := <-added; err != nil {
		t.Fatal(err)
	}
	if got, _, err := LoadJournaled(path); err != nil || len(got) != 1 {
		t.Fatalf("state file after the add: %v, %v", got, err)
	}
	if st, ok := m.Get(spec.ID()); !ok || st.Origin != OriginRuntime {
		t.Fatalf("route after the add: %+v %v", st, ok)
	}

	// A journal that cannot be written: the add fails and nothing runs.
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	bad := newTestManager(t, filepath.Join(notDir, "state.json")) // its directory is a file
	if _, err := bad.Add(t.Context(), spec); err == nil {
		t.Fatal("an add whose journal line cannot be written succeeded")
	}
	if n := len(bad.List()); n != 0 {
		t.Fatalf("%d routes after a failed durable add", n)
	}
	bad.mu.Lock()
	left := len(bad.syncing)
	bad.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d ids still taken after a failed add", left)
	}
	// A request that ended first changes nothing.
	ctx, cancel := contextWithCancel(t)
	cancel()
	if _, err := m.Add(ctx, testSpec(1)); !errors.Is(err, context.Canceled) {
		t.Fatalf("add with an ended context: %v", err)
	}
	if _, ok := m.Get(testSpec(1).ID()); ok {
		t.Fatal("an add with an ended context added its route")
	}
}

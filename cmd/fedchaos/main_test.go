package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Unit tests of the driver's pure parts; the suite itself needs brokers and
// runs with `make chaos-short`.

func TestParseFlags(t *testing.T) {
	o, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.N != 50000 || o.Rounds != 3 || o.Credit != 200 || o.Src != "rabbit3" || o.Dst != "rabbit4" ||
		!reflect.DeepEqual(o.Faults, defaultFaults) {
		t.Fatalf("defaults: %+v", o)
	}
	o, err = parseFlags([]string{"-n", "5000", "-rounds", "1", "-faults", "src-cut, dst-blackhole"}, io.Discard)
	if err != nil || o.N != 5000 || o.Rounds != 1 || !reflect.DeepEqual(o.Faults, []faultKind{srcCut, dstBlackhole}) {
		t.Fatalf("got %+v, %v", o, err)
	}
}

// flagErrorCase is a command line and what its error must say: every
// problem is reported at once.
type flagErrorCase struct {
	args []string
	want []string
}

func checkFlagErrors(t *testing.T, cases []flagErrorCase) {
	t.Helper()
	for _, tc := range cases {
		_, err := parseFlags(tc.args, io.Discard)
		if err == nil {
			t.Errorf("%v: no error", tc.args)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q does not contain %q", tc.args, err, w)
			}
		}
	}
}

func TestParseFlagsErrors(t *testing.T) {
	checkFlagErrors(t, []flagErrorCase{
		{[]string{"-faults", "meteor"}, []string{`unknown fault "meteor"`, "dst-kill"}},
		{[]string{"-faults", ","}, []string{"no faults given"}},
		{[]string{"-n", "5", "-rounds", "0", "-credit", "0"}, []string{"-n 5", "-rounds 0", "-credit 0"}},
		{[]string{"-dst", "rabbit3"}, []string{`-src and -dst are both "rabbit3"`}},
		{[]string{"-hold", "0s"}, []string{"must be positive"}},
		{[]string{"extra"}, []string{"unexpected arguments"}},
	})
}

func TestRealMainUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := realMain([]string{"-n", "1"}, &out, &errb); code != exitSetup || !strings.Contains(errb.String(), "-n 1: at least 100") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	if code := realMain([]string{"-h"}, &out, &errb); code != exitPass {
		t.Fatalf("-h: exit %d", code)
	}
}

func TestScheduleRotatesEachRound(t *testing.T) {
	got := schedule([]faultKind{dstKill, routerKill, srcCut}, 2)
	want := []scheduled{
		{dstKill, 1}, {routerKill, 1}, {srcCut, 1},
		{routerKill, 2}, {srcCut, 2}, {dstKill, 2},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("schedule: %v, want %v", got, want)
	}
}

func TestJudge(t *testing.T) {
	opt := options{N: 1000, Credit: 10}
	clean := counts{Total: 1000, Distinct: 1000}
	for _, tc := range []struct {
		name         string
		sent         int
		live, audit  counts
		audited      bool
		runErr       error
		wantFailures []string
	}{
		{name: "clean", sent: 1000, live: clean, audit: clean, audited: true},
		{name: "duplicates at the bound", sent: 1000,
			live:    counts{Total: 1045, Distinct: 1000, Duplicates: 45},
			audit:   counts{Total: 1040, Distinct: 1000, Duplicates: 40},
			audited: true},
		{name: "router duplicates over the bound", sent: 1000,
			live:         counts{Total: 1041, Distinct: 1000, Duplicates: 41},
			audit:        counts{Total: 1041, Distinct: 1000, Duplicates: 41},
			audited:      true,
			wantFailures: []string{"41 duplicates from the router, more than the bound 40"}},
		{name: "the broker's own redeliveries are not the router's", sent: 1000,
			live:    counts{Total: 1500, Distinct: 1000, Duplicates: 500},
			audit:   clean,
			audited: true},
		{name: "lost", sent: 1000,
			live:         counts{Total: 998, Distinct: 998, Missing: []int{3, 7}},
			audit:        counts{Total: 999, Distinct: 999, Missing: []int{7}},
			audited:      true,
			wantFailures: []string{"1 messages lost", "[7]", "2 messages accepted by the source broker never reached the consumer"}},
		{name: "not audited", sent: 1000, live: clean, runErr: errors.New("fault 3 src-cut: waited 2m0s"),
			wantFailures: []string{"fault 3 src-cut", "audit queue was not read"}},
		{name: "publisher short", sent: 999, live: counts{Total: 999, Distinct: 999}, audit: counts{Total: 999, Distinct: 999}, audited: true,
			wantFailures: []string{"only 999 of 1000"}},
		{name: "foreign", sent: 1000, live: counts{Total: 1001, Distinct: 1000, Foreign: 1}, audit: clean, audited: true,
			wantFailures: []string{"1 messages not of this run"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := judge(opt, tc.sent, 0, tc.live, tc.audit, tc.audited, 4, tc.runErr)
			all := strings.Join(v.Failures, "\n")
			if len(tc.wantFailures) == 0 && !v.Pass() {
				t.Fatalf("failed: %s", all)
			}
			if len(tc.wantFailures) > 0 && v.Pass() {
				t.Fatalf("passed, want failures %q", tc.wantFailures)
			}
			for _, w := range tc.wantFailures {
				if !strings.Contains(all, w) {
					t.Errorf("failures %q do not mention %q", all, w)
				}
			}
		})
	}
}

func TestLineWatcherFindsStartLineAcrossWrites(t *testing.T) {
	var sink bytes.Buffer
	w := &lineWatcher{w: &sink, re: adminLine, found: make(chan string, 1)}
	line := `{"level":"info","router":"chaos","admin":"127.0.0.1:40123","version":"dev","message":"fedrouter started"}` + "\n"
	for _, part := range []string{`{"level":"info","message":"routes started"}` + "\n" + line[:30], line[30:], line} {
		if _, err := w.Write([]byte(part)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case got := <-w.found:
		if got != "127.0.0.1:40123" {
			t.Fatalf("admin address %q", got)
		}
	default:
		t.Fatal("start line not found")
	}
	if !strings.HasSuffix(sink.String(), line+line) {
		t.Fatalf("output not passed through: %q", sink.String())
	}
}

func TestMessageIDsAreUniqueAndRecognised(t *testing.T) {
	p := newPublisher(nil, "", "chaos-1234abcd", 10, 1)
	c := newConsumer(nil, "", "chaos-1234abcd", 10, 1)
	other := newConsumer(nil, "", "chaos-ffffffff", 10, 1)
	m := p.message(7)
	if seq := c.identify(m); seq != 7 {
		t.Fatalf("identify: %d", seq)
	}
	if seq := other.identify(m); seq != -1 {
		t.Fatalf("another run's message identified as %d", seq)
	}
	m.Properties.MessageID = "changed"
	if seq := c.identify(m); seq != -1 {
		t.Fatalf("changed message-id identified as %d", seq)
	}
	if !m.Header.Durable || len(m.Data[0]) != 256 {
		t.Fatalf("message: header %+v, body %d bytes", m.Header, len(m.Data[0]))
	}
}

func TestConsumerCounts(t *testing.T) {
	c := newConsumer(nil, "", "r", 5, 1)
	for _, seq := range []int{0, 1, 1, 3, -1, 3, 3} {
		c.record(seq)
	}
	k := c.snapshot(true)
	if k.Total != 7 || k.Distinct != 3 || k.Duplicates != 3 || k.Foreign != 1 || k.MissingSeqs != 2 ||
		!reflect.DeepEqual(k.Missing, []int{2, 4}) {
		t.Fatalf("counts %+v", k)
	}
}

func TestParseFlagsCluster(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://u:p@127.0.0.1:55432/db")
	o, err := parseFlags([]string{"-cluster", "3"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.Cluster != 3 || o.Store != "postgres://u:p@127.0.0.1:55432/db" || o.Heartbeat != 500*time.Millisecond ||
		o.Lease != 2*time.Second || !reflect.DeepEqual(o.Faults, clusterFaults) {
		t.Fatalf("cluster defaults: %+v", o)
	}
	o, err = parseFlags([]string{"-cluster", "2", "-store", "postgresql://x/y", "-heartbeat", "1s", "-lease", "3s", "-faults", "router-stop,dst-cut"}, io.Discard)
	if err != nil || o.Store != "postgresql://x/y" || o.Lease != 3*time.Second || !reflect.DeepEqual(o.Faults, []faultKind{routerStop, dstCut}) {
		t.Fatalf("got %+v, %v", o, err)
	}
	// A single router ignores $DATABASE_URL.
	if o, err = parseFlags(nil, io.Discard); err != nil || o.Cluster != 0 || !reflect.DeepEqual(o.Faults, defaultFaults) {
		t.Fatalf("single: %+v, %v", o, err)
	}
}

func TestParseFlagsClusterErrors(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	checkFlagErrors(t, []flagErrorCase{
		{[]string{"-cluster", "1", "-store", "postgres://h/d"}, []string{"-cluster 1: 2 to 9 members"}},
		{[]string{"-cluster", "-2", "-store", "postgres://h/d"}, []string{"-cluster -2"}},
		{[]string{"-cluster", "3"}, []string{"no store", "DATABASE_URL"}},
		{[]string{"-cluster", "3", "-store", "mysql://h/d"}, []string{"want a postgres:// URL"}},
		{[]string{"-cluster", "3", "-store", "postgres://h/d", "-heartbeat", "1s", "-lease", "1500ms"}, []string{"-lease 1.5s: at least two heartbeats (2s)"}},
		{[]string{"-cluster", "3", "-store", "postgres://h/d", "-heartbeat", "10ms"}, []string{"-heartbeat 10ms"}},
		{[]string{"-faults", "router-stop,store-kill,dst-kill"}, []string{"-faults router-stop: needs -cluster", "-faults store-kill: needs -cluster"}},
		{[]string{"-store", "postgres://h/d", "-lease", "5s"}, []string{"-store: only with -cluster", "-lease: only with -cluster"}},
	})
}

func TestClusterScheduleHasEveryKindEveryRound(t *testing.T) {
	plan := schedule(clusterFaults, 3)
	if len(plan) != 15 {
		t.Fatalf("%d faults, want 15", len(plan))
	}
	for r := 0; r < 3; r++ {
		seen := map[faultKind]bool{}
		for _, f := range plan[r*5 : r*5+5] {
			seen[f.Kind] = true
		}
		if len(seen) != 5 {
			t.Fatalf("round %d: %v", r+1, plan[r*5:r*5+5])
		}
	}
	if plan[0].Kind != routerKill || plan[5].Kind != routerStop {
		t.Fatalf("not rotated: %v", plan)
	}
}

// The forwarded counter belongs to one run of the route: the tracker sees
// flow past the base on the same run, from zero on any other, and a
// takeover the first time another run is seen.
func TestFlowTracker(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	p1, p2 := &routerProc{}, &routerProc{}
	a1 := runRef{Member: "chaos-1", Epoch: 1, proc: p1}

	// Same run: only the counter past the base is flow; rebase at the heal.
	tr := newFlowTracker(a1, 100)
	tr.observe(a1, 100, at(10))
	tr.observe(a1, 150, at(20)) // in flight when the fault hit, settled after
	tr.rebase(a1, 150)
	if !tr.flow.IsZero() || !tr.takeover.IsZero() {
		t.Fatalf("flow %v takeover %v before anything moved after the heal", tr.flow, tr.takeover)
	}
	tr.observe(a1, 151, at(30))
	if tr.flow != at(30) || !tr.takeover.IsZero() {
		t.Fatalf("same run: flow %v takeover %v", tr.flow, tr.takeover)
	}

	// Another member under a new epoch: a takeover; it counts from zero.
	tr = newFlowTracker(a1, 100)
	b2 := runRef{Member: "chaos-2", Epoch: 2, proc: p2}
	tr.observe(b2, 0, at(10))
	tr.rebase(b2, 0) // not the base run: nothing to rebase
	tr.observe(b2, 5, at(20))
	if tr.takeover != at(10) || tr.flow != at(20) || tr.last != b2 {
		t.Fatalf("takeover: %+v", tr)
	}

	// The same member's next process, same epoch (adopted): another run.
	tr = newFlowTracker(a1, 100)
	a1next := runRef{Member: "chaos-1", Epoch: 1, proc: p2}
	tr.observe(a1next, 3, at(10))
	if tr.takeover != at(10) || tr.flow != at(10) {
		t.Fatalf("adopted: %+v", tr)
	}

	// The base run forwarding during a store outage: counted.
	tr = newFlowTracker(a1, 100)
	tr.observe(a1, 180, at(10))
	if tr.sinceBase() != 80 {
		t.Fatalf("sinceBase %d", tr.sinceBase())
	}
	tr.caughtUp(at(50))
	if tr.flow != at(10) {
		t.Fatalf("caughtUp moved an earlier flow: %v", tr.flow)
	}
}

func TestJudgeHolder(t *testing.T) {
	s := &suite{fleet: &fleet{cluster: true}}
	p1, p2 := &routerProc{}, &routerProc{}
	a1 := runRef{Member: "chaos-1", Epoch: 4, proc: p1}
	for _, tc := range []struct {
		kind    faultKind
		after   runRef
		fail    string
		note    string
		adopted bool
	}{
		{kind: routerKill, after: runRef{Member: "chaos-2", Epoch: 5, proc: p2}},
		{kind: routerKill, after: runRef{Member: "chaos-1", Epoch: 4, proc: p2}, note: "adopted", adopted: true},
		{kind: routerKill, after: runRef{Member: "chaos-2", Epoch: 4, proc: p2}, fail: "not taken over under a new epoch"},
		{kind: routerStop, after: runRef{Member: "chaos-1", Epoch: 4, proc: p1}, fail: "not taken over under a new epoch"},
		{kind: routerStop, after: runRef{Member: "chaos-3", Epoch: 5, proc: p2}},
		{kind: storeKill, after: a1},
		{kind: storeKill, after: runRef{Member: "chaos-2", Epoch: 5, proc: p2}, note: "MOVED"},
	} {
		res := faultResult{scheduled: scheduled{Kind: tc.kind}, Before: a1, After: tc.after}
		s.judgeHolder(&res)
		got := strings.Join(res.Violations, "; ")
		if (tc.fail == "") != (got == "") || !strings.Contains(got, tc.fail) || !strings.Contains(res.Note, tc.note) || res.Adopted != tc.adopted {
			t.Errorf("%s → %s: violations %q, note %q, adopted %v", tc.kind, tc.after, got, res.Note, res.Adopted)
		}
	}
}

func TestWokenLogReadsOnlyWhatFollows(t *testing.T) {
	p := t.TempDir() + "/chaos-1-1.log"
	before := `{"message":"route halted"}` + "\n"
	after := `{"message":"cluster: stopping route: lease epoch 2 not renewed in time (was this process paused?)"}` + "\n" +
		`{"error":"links: this router no longer holds the route's lease","message":"route failed"}` + "\n" +
		`{"route":"r","message":"route halted"}` + "\n"
	if err := os.WriteFile(p, []byte(before+after), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, want := wokenLog(p, int64(len(before))), "lease deadline passed ×1, a send fenced ×1, route halted ×1"; got != want {
		t.Fatalf("wokenLog: %q, want %q", got, want)
	}
	if got := wokenLog(p, int64(len(before)+len(after))); got != "nothing of the route" {
		t.Fatalf("wokenLog at the end: %q", got)
	}
	if got := wokenLog(p+".missing", 0); got != "unreadable" {
		t.Fatalf("wokenLog of no file: %q", got)
	}
}

func TestUsageDoesNotShowTheStoreURL(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://u:secret@127.0.0.1:55432/db")
	var errb bytes.Buffer
	if code := realMain([]string{"-h"}, io.Discard, &errb); code != exitPass || strings.Contains(errb.String(), "secret") {
		t.Fatalf("-h: exit %d, usage shows the store's password:\n%s", code, errb.String())
	}
}

func TestExitedAloneReportsOnlyUnexpectedExits(t *testing.T) {
	gone := &routerProc{exited: make(chan struct{}), err: errors.New("exit status 2"), logP: t.TempDir() + "/chaos-2-1.log"}
	close(gone.exited)
	f := &fleet{members: []*member{
		{id: "chaos-1", proc: &routerProc{exited: make(chan struct{})}}, // running
		{id: "chaos-2", proc: gone},
		{id: "chaos-3"}, // killed by the suite: no process
	}}
	err := f.exitedAlone()
	if err == nil || !strings.Contains(err.Error(), "chaos-2 exited by itself (exit status 2)") || strings.Contains(err.Error(), "chaos-1") {
		t.Fatalf("exitedAlone: %v", err)
	}
}

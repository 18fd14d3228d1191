package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// faultKind is one kind of fault the suite injects.
type faultKind string

const (
	// dstKill kills the destination broker with SIGKILL and restarts it
	// (same ports, same data): the router loses outcomes of messages in
	// flight; the broker keeps only what it had confirmed.
	dstKill faultKind = "dst-kill"
	// routerKill kills the router process with SIGKILL and starts it again
	// with the same configuration and state file.
	routerKill faultKind = "router-kill"
	// srcCut and dstCut reset every connection between the router and the
	// source (destination) broker at the fault proxy, refuse new ones for
	// the hold time, then let them through again.
	srcCut faultKind = "src-cut"
	dstCut faultKind = "dst-cut"
	// srcBlackhole and dstBlackhole stop every byte between the router and
	// the broker for the hold time without closing anything (a silent
	// partition), then let the held bytes through.
	srcBlackhole faultKind = "src-blackhole"
	dstBlackhole faultKind = "dst-blackhole"
	// routerStop (cluster only) pauses the route's holder with SIGSTOP for
	// a lease and two heartbeats, then wakes it with SIGCONT: a GC pause
	// or a frozen VM. Another member must have taken the route over, and
	// the woken one must send nothing more under its old epoch.
	routerStop faultKind = "router-stop"
	// storeKill (cluster only) kills the cluster's PostgreSQL with SIGKILL
	// (testdata/postgres.sh kill9) and restarts it after the hold: the
	// holder must forward throughout, and the route should not move.
	storeKill faultKind = "store-kill"
)

var (
	knownFaults   = []faultKind{dstKill, routerKill, srcCut, dstCut, srcBlackhole, dstBlackhole, routerStop, storeKill}
	defaultFaults = []faultKind{dstKill, routerKill, srcCut, dstCut}
	// clusterFaults is the default set with -cluster: the faults a cluster
	// adds (takeover after a crash and after a pause, a store crash) and
	// two of a single router's, which must behave as they do there.
	clusterFaults = []faultKind{routerKill, routerStop, storeKill, dstKill, srcCut}
	// clusterOnly are the faults that need -cluster: a single router has
	// no lease to lose and no store to crash.
	clusterOnly = []faultKind{routerStop, storeKill}
)

// defaultFaultsFor is the default -faults of a mode.
func defaultFaultsFor(cluster bool) []faultKind {
	if cluster {
		return clusterFaults
	}
	return defaultFaults
}

// parseFaults reads a comma-separated list of fault kinds.
func parseFaults(s string) ([]faultKind, error) {
	var out []faultKind
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		known := false
		for _, k := range knownFaults {
			if faultKind(f) == k {
				known = true
			}
		}
		if !known {
			return nil, fmt.Errorf("unknown fault %q (known: %s)", f, joinKinds(knownFaults))
		}
		out = append(out, faultKind(f))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no faults given (known: %s)", joinKinds(knownFaults))
	}
	return out, nil
}

func joinKinds(ks []faultKind) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// schedule is rounds × kinds, each round rotated by one so that every kind
// follows a different one from round to round.
func schedule(kinds []faultKind, rounds int) []scheduled {
	var out []scheduled
	for r := 0; r < rounds; r++ {
		for i := range kinds {
			out = append(out, scheduled{Kind: kinds[(i+r)%len(kinds)], Round: r + 1})
		}
	}
	return out
}

type scheduled struct {
	Kind  faultKind
	Round int
}

// faultResult is what one fault did, for the report.
type faultResult struct {
	scheduled
	Start   time.Time // injected
	Healed  time.Time // broker restarted, router started, proxy healed
	Resumed time.Time // the router forwarded again
	dupsAt  int       // duplicates received before the fault began
	Note    string
	Err     error
	// Before and After are the route's holder when the fault was injected
	// and when flow resumed; Takeover is when the route was first seen
	// run by another process or under another epoch (zero: never).
	Before, After runRef
	Takeover      time.Time
	Adopted       bool // router-kill: the killed member's next process took its lease back
	// Violations fail the run without stopping the schedule: a promise
	// broken (a stale epoch forwarding, no takeover) that the counts at
	// the end would not show.
	Violations []string
}

func (f faultResult) outage() time.Duration { return f.Healed.Sub(f.Start) }

// recovery is from the heal to flow; zero when the route flowed again
// before the heal (another member took it over during a pause).
func (f faultResult) recovery() time.Duration { return max(0, f.Resumed.Sub(f.Healed)) }
func (f faultResult) total() time.Duration    { return f.Resumed.Sub(f.Start) }

// violate records a broken promise of this fault.
func (f *faultResult) violate(format string, args ...any) {
	f.Violations = append(f.Violations, fmt.Sprintf(format, args...))
}

// harness runs a testdata script (brokers.sh kill NAME, postgres.sh kill9).
func harness(ctx context.Context, script string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "bash", append([]string{script}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w\n%s", filepath.Base(script), strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// runRef names one run of the route: the member and process that ran it
// and the lease's epoch (0 on a single router). The route's counters
// belong to a run: a restarted process, another member or a new epoch
// counts from zero.
type runRef struct {
	Member string
	Epoch  int64
	proc   *routerProc
}

func (r runRef) String() string {
	if r.Member == "" {
		return "-"
	}
	return fmt.Sprintf("%s (%d)", r.Member, r.Epoch)
}

// flowTracker judges, from successive looks at the route's holder,
// whether and when the route forwarded again after a fault, and when it
// was first run by another process or under another epoch. It is fed by
// the suite's polls and does no I/O.
type flowTracker struct {
	base     runRef
	baseFwd  uint64 // the base run's forwarded counter to beat
	lastFwd  uint64 // the base run's counter when last seen
	last     runRef // the run last seen
	takeover time.Time
	flow     time.Time // first seen forwarding past the base
}

func newFlowTracker(r runRef, forwarded uint64) *flowTracker {
	return &flowTracker{base: r, baseFwd: forwarded, lastFwd: forwarded, last: r}
}

// observe takes one look at the route: its run and forwarded counter.
func (t *flowTracker) observe(r runRef, forwarded uint64, now time.Time) {
	t.last = r
	if r != t.base {
		if t.takeover.IsZero() {
			t.takeover = now
		}
		if forwarded > 0 && t.flow.IsZero() {
			t.flow = now
		}
		return
	}
	t.lastFwd = forwarded
	if forwarded > t.baseFwd && t.flow.IsZero() {
		t.flow = now
	}
}

// caughtUp records flow for a route that has nothing left to forward:
// it recovered and moved the whole backlog between two looks.
func (t *flowTracker) caughtUp(now time.Time) {
	if t.flow.IsZero() {
		t.flow = now
	}
}

// rebase is called at the heal: if the base run still holds the route,
// only what it forwards from now on is flow again.
func (t *flowTracker) rebase(r runRef, forwarded uint64) {
	if r == t.base {
		t.baseFwd, t.lastFwd, t.flow = forwarded, forwarded, time.Time{}
	}
}

// sinceBase is how many messages the base run forwarded past its base,
// as last seen.
func (t *flowTracker) sinceBase() uint64 { return t.lastFwd - t.baseFwd }

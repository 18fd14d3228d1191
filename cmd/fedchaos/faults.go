package main

import (
	"context"
	"fmt"
	"os/exec"
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
)

var (
	knownFaults   = []faultKind{dstKill, routerKill, srcCut, dstCut, srcBlackhole, dstBlackhole}
	defaultFaults = []faultKind{dstKill, routerKill, srcCut, dstCut}
)

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
}

func (f faultResult) outage() time.Duration   { return f.Healed.Sub(f.Start) }
func (f faultResult) recovery() time.Duration { return f.Resumed.Sub(f.Healed) }
func (f faultResult) total() time.Duration    { return f.Resumed.Sub(f.Start) }

// harness runs testdata/brokers.sh with args (kill NAME, restart NAME).
func harness(ctx context.Context, script string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "bash", append([]string{script}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("brokers.sh %s: %w\n%s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

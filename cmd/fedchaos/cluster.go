package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// The faults of a router cluster (-cluster N): the holder paused past its
// lease, the store crashed; and what the suite checks of the route's
// holder after every fault.

// checkStore checks, in cluster mode, that the store answers, and that
// store-kill would kill the store the members use: testdata/postgres.sh's
// server, never another one.
func (s *suite) checkStore(ctx context.Context) error {
	if s.opt.Cluster == 0 {
		return nil
	}
	u, err := url.Parse(s.opt.Store)
	if err != nil {
		return fmt.Errorf("-store: not a URL") // the parse error would show the password
	}
	if !listening(u.Host) {
		return fmt.Errorf("the store does not answer on %s; start it: bash testdata/postgres.sh start", u.Host)
	}
	if !slices.Contains(s.opt.Faults, storeKill) {
		return nil
	}
	out, err := exec.CommandContext(ctx, "bash", s.pgScript, "url").Output()
	if err != nil {
		return fmt.Errorf("%s url: %w", s.pgScript, err)
	}
	pu, err := url.Parse(strings.TrimSpace(string(out)))
	if err != nil || pu.Host != u.Host || pu.Path != u.Path {
		return fmt.Errorf("store-kill kills testdata/postgres.sh's server (%s), but -store is %s%s: not killing a store the suite does not manage",
			strings.TrimSpace(string(out)), u.Host, u.Path)
	}
	return nil
}

// stopHolder pauses the route's holder (SIGSTOP) for a lease and two
// heartbeats — past its lease, which another member must see expire and
// take over — then wakes it (SIGCONT) and checks that it sends nothing
// more under its old epoch.
func (s *suite) stopHolder(ctx context.Context, res *faultResult, tr *flowTracker, before holding) error {
	m := before.m
	sent := before.st.Sent
	if st, err := m.proc.route(ctx); err == nil && st.Holder == m.id && st.Epoch == before.st.Epoch {
		sent = st.Sent // as close to the stop as the suite can read it
	}
	if err := s.fleet.pause(m); err != nil {
		return err
	}
	stopFor := s.opt.Lease + 2*s.opt.Heartbeat
	s.watch(ctx, tr, time.Now().Add(stopFor), nil) // returns early only when ctx ends
	logAt := fileSize(m.proc.logP)                 // paused: what follows is written after the wake
	if err := s.fleet.resume(m); err != nil {
		return err
	}
	woke := time.Now()
	if tr.takeover.IsZero() {
		res.violate("no other member took the route over while %s was stopped for %v (lease %v + 2 heartbeats)", m.id, stopFor, s.opt.Lease)
	}
	s.checkWoken(ctx, res, m, before.st.Epoch, sent, woke)
	res.Note += "; its log since: " + wokenLog(m.proc.logP, logAt)
	return nil
}

// wokenLog says how the woken member's log (from offset on) says it
// stopped the route: its lease deadline passed (the heartbeat's check),
// or a send met the fence (links.ErrFenced).
func wokenLog(path string, offset int64) string {
	b, err := os.ReadFile(path)
	if err != nil || offset > int64(len(b)) {
		return "unreadable"
	}
	tail := string(b[offset:])
	var says []string
	for _, m := range []struct{ marker, meaning string }{
		{"not renewed in time", "lease deadline passed"},
		{"no longer holds the route's lease", "a send fenced"},
		{`"message":"route halted"`, "route halted"},
	} {
		if n := strings.Count(tail, m.marker); n > 0 {
			says = append(says, fmt.Sprintf("%s ×%d", m.meaning, n))
		}
	}
	if len(says) == 0 {
		return "nothing of the route"
	}
	return strings.Join(says, ", ")
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// checkWoken follows the woken member until it lets the route go. While it
// still runs the route under its old epoch, its fence must hold: its sent
// counter must not move. Its counter just before the stop is compared
// too, but reported only: sends in the instant between that read and the
// SIGSTOP count there as well.
func (s *suite) checkWoken(ctx context.Context, res *faultResult, m *member, epoch int64, sentBefore uint64, woke time.Time) {
	var first, most uint64
	seen := false
	err := s.waitFor(ctx, "the woken member to let the route go", 10*time.Second, func() (bool, string) {
		st, err := m.proc.route(ctx)
		if err != nil {
			return false, err.Error()
		}
		if st.Holder != m.id || st.Epoch != epoch {
			return true, ""
		}
		if !seen {
			first, seen = st.Sent, true
		}
		most = max(most, st.Sent)
		return false, fmt.Sprintf("%s still runs the route under epoch %d: %s, sent %d, %s", m.id, epoch, st.State, st.Sent, st.Detail)
	})
	let := time.Since(woke).Round(time.Millisecond)
	switch {
	case err != nil:
		res.violate("woken, %v", err)
	case !seen:
		res.Note = fmt.Sprintf("woken, %s had let the route go when first asked (%v after SIGCONT)", m.id, let)
	default:
		res.Note = fmt.Sprintf("woken, %s ran the route under its old epoch %d for %v, sending %d (%d between the last read before SIGSTOP and the first after SIGCONT)",
			m.id, epoch, let, most-first, first-sentBefore)
	}
	if seen && most > first {
		res.violate("%s sent %d messages under its stale epoch %d after waking", m.id, most-first, epoch)
	}
}

// killStore kills the store (SIGKILL to PostgreSQL's postmaster), holds it
// down for -hold and restarts it, watching the route meanwhile: its holder
// must forward throughout (the data plane does not depend on the store).
// Whether the route moved is judged after the fault (judgeHolder).
func (s *suite) killStore(ctx context.Context, res *faultResult, tr *flowTracker) error {
	s.storeDown = true
	if err := harness(ctx, s.pgScript, "kill9"); err != nil {
		return err
	}
	s.watch(ctx, tr, res.Start.Add(s.opt.Hold), nil)
	restarted := make(chan error, 1)
	go func() { restarted <- harness(ctx, s.pgScript, "restart") }() // joined below
	var err error
	done := false
	s.watch(ctx, tr, time.Now().Add(5*time.Minute), func() bool {
		select {
		case err = <-restarted:
			done = true
		default:
		}
		return done
	})
	if !done {
		err = <-restarted
	}
	if err != nil {
		return err
	}
	s.storeDown = false
	down := time.Since(res.Start).Round(time.Millisecond)
	res.Note = fmt.Sprintf("store down %v (kill9, hold, restart); %s forwarded %d meanwhile", down, tr.base, tr.sinceBase())
	if tr.sinceBase() == 0 {
		res.violate("%s forwarded nothing in the %v the store was down", tr.base, down)
	}
	return nil
}

// judgeHolder checks, in a cluster, who ran the route after the fault. A
// pause of the holder must end in a takeover under a higher epoch; so
// must a crash, unless the killed member's next process adopted the lease
// before it expired: the same member under the same epoch (its
// predecessor is dead). Other faults should not move the route; a move is
// reported, not failed (docs/cluster.md: a slow store can cost a false
// takeover, which the duplicate bound covers).
func (s *suite) judgeHolder(res *faultResult) {
	if !s.fleet.cluster {
		return
	}
	switch res.Kind {
	case routerKill, routerStop:
		res.Adopted = res.Kind == routerKill && res.After.Member == res.Before.Member && res.After.Epoch == res.Before.Epoch
		if res.Adopted {
			res.Note = fmt.Sprintf("adopted: %s's next process runs the route under the same epoch %d", res.After.Member, res.After.Epoch)
			return
		}
		if res.After.Epoch <= res.Before.Epoch {
			res.violate("the route was not taken over under a new epoch: held by %s before, %s after", res.Before, res.After)
		}
	default:
		if res.After.Member != res.Before.Member || res.After.Epoch != res.Before.Epoch {
			res.Note += fmt.Sprintf("; the route MOVED from %s to %s", res.Before, res.After)
		}
	}
}

// holderNote is the log's word on the holder after a fault (cluster only).
func (s *suite) holderNote(res faultResult) string {
	if !s.fleet.cluster {
		return ""
	}
	out := fmt.Sprintf("; holder %s → %s", res.Before, res.After)
	if !res.Takeover.IsZero() {
		out += fmt.Sprintf(", %s %v after the fault", takeoverWord(res), res.Takeover.Sub(res.Start).Round(time.Millisecond))
	}
	return out
}

func takeoverWord(res faultResult) string {
	if res.Adopted {
		return "adopted"
	}
	return "taken over"
}

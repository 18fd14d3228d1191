package routes

import (
	"fmt"
	"strings"
	"time"
)

// This file decides whether a route is stalled: attached, holding
// messages (at its source, or received and not yet settled), and
// forwarding nothing for stall_after. It is a pure core: what the watcher
// saw of one route and the time in, the verdict and the route's track
// out; no I/O, no goroutine, no lock (stallwatch.go carries it out).

// DefaultStallAfter is stall_after's default.
const DefaultStallAfter = 60 * time.Second

// stallObs is what the watcher saw of one route.
type stallObs struct {
	// Attached: the route's links are attached (Operational or Stalled).
	Attached bool
	// Run counts the route's attaches: a higher one is a new run.
	Run uint64
	// Progress counts the messages that went where the route sends them
	// (accepted by the destination, or dropped as looped), ever: a
	// message rejected or dead-lettered did not get there.
	Progress uint64
	// InFlight: sent to the destination, outcome pending. Held: received
	// from the source and not settled there (in flight included).
	InFlight, Held int64
	// Credit is the credit the route has granted at its source and not
	// used: messages the source may send it now.
	Credit int64
	// Depth is the messages waiting at the source queue (not delivered to
	// any consumer), -1 when unknown: the profile cannot tell, or was not
	// asked, or did not answer. HasDepth: the profile can tell.
	Depth    int64
	HasDepth bool
	// HeldBack: the route's destination is a global destination's
	// instance at its limit, whose gate holds the route back on purpose.
	HeldBack bool
}

// stallTrack is the watcher's memory of one route.
type stallTrack struct {
	progress   uint64
	quietSince time.Time // attached and no progress since; zero: not attached
	// heldSince: since when the route has been seen holding messages
	// (zero: it was not, at the last look that could tell).
	heldSince  time.Time
	stalled    bool
	stalledAt  time.Time
	reattached time.Time // when this stall's one re-attach was asked; zero: not yet
	// oldRun is the run the re-attach ended; rerunAt, when a look first
	// saw the next one attached (zero: not yet; the old run may take
	// a while to settle what it has in flight).
	oldRun  uint64
	rerunAt time.Time
	gaveUp  bool   // the re-attach did not help: said once
	why     string // the last words on what it is stuck on
}

// stallVerdict is what the watcher does about one route.
type stallVerdict struct {
	// Stalled is the state the route should show while attached: Stalled,
	// else Operational. Meaningless when not attached.
	Stalled bool
	// Why says, for route list, what the route is stuck on.
	Why string
	// Reattach: end the route's run and attach its links again (once
	// per stall).
	Reattach bool
	// Log is a line to log, "" for none: one per change, never one per look.
	Log string
	// AskDepth: the route is quiet long enough that the source's depth
	// matters at the next look.
	AskDepth bool
}

// stallDecide judges one route at now. after is stall_after.
func stallDecide(after time.Duration, t stallTrack, o stallObs, now time.Time) (stallVerdict, stallTrack) {
	if !o.Attached {
		if !t.stalled {
			// A route that comes back is judged afresh: Operational for
			// stall_after before it can be stalled.
			t.quietSince, t.heldSince = time.Time{}, time.Time{}
		}
		return stallVerdict{Stalled: t.stalled, Why: t.why}, t
	}
	if t.quietSince.IsZero() {
		t.progress, t.quietSince = o.Progress, now
	}
	if t.stalled && t.rerunAt.IsZero() && o.Run > t.oldRun {
		t.rerunAt = now
	}
	if o.HeldBack {
		// Not stuck: waiting for room, as its destination's limit says.
		// The clock starts again once it may forward.
		v := stallVerdict{}
		if t.stalled {
			v.Log = "no longer stalled: held back by its destination's limit"
		}
		return v, stallTrack{progress: o.Progress, quietSince: now}
	}
	if o.Progress != t.progress {
		v := stallVerdict{}
		if t.stalled {
			v.Log = fmt.Sprintf("forwards again after being stalled for %s", now.Sub(t.stalledAt).Round(time.Second))
		}
		return v, stallTrack{progress: o.Progress, quietSince: now}
	}
	switch holds := holding(o); {
	case holds > 0 && t.heldSince.IsZero():
		t.heldSince = now
	case holds == 0 && !t.stalled:
		t.heldSince = time.Time{}
	case holds == 0 && o.HasDepth && o.Depth == 0 && (!t.stalled || !t.rerunAt.IsZero() && now.Sub(t.rerunAt) >= after/2):
		// Only a source seen empty ends a stall without progress: a
		// route that re-attached holds nothing until its messages come
		// back, which is no reason to call it well. And not while the
		// re-attach is under way, nor soon after: the messages the old
		// run held are unacknowledged at the broker, not ready, and its
		// statistics (RabbitMQ's: every 5 s) say so for a while after
		// they are back (seen in CI: a stall ended, and a second
		// re-attach announced, before the first had begun).
		return stallVerdict{Log: "no longer stalled: it holds no message and its source has none waiting"},
			stallTrack{progress: o.Progress, quietSince: now}
	}
	quiet := now.Sub(t.quietSince)
	v := stallVerdict{AskDepth: o.HasDepth && quiet >= after/2, Stalled: t.stalled, Why: t.why}
	// Held for half of stall_after at least: a message that has just
	// arrived at an idle queue is not a stall, however long the route
	// was idle before it.
	if t.heldSince.IsZero() || quiet < after || now.Sub(t.heldSince) < after/2 {
		return v, t
	}
	why := stallWhy(o, quiet)
	if why != "" {
		t.why, v.Why = why, why
	}
	switch {
	case !t.stalled && why == "":
		// Not seen holding anything at this look: wait for one that
		// can say what the route is stuck on.
	case !t.stalled:
		t.stalled, t.stalledAt, t.reattached, t.oldRun = true, now, now, o.Run
		v.Stalled, v.Reattach = true, true
		v.Log = "stalled: " + v.Why + "; re-attaching its links once"
	case !t.gaveUp && !t.rerunAt.IsZero() && now.Sub(t.rerunAt) >= after:
		t.gaveUp = true
		v.Log = "still stalled after re-attaching its links: " + v.Why +
			"; not re-attached again: the links stay attached and the route leaves Stalled as soon as it forwards"
	}
	return v, t
}

// holding is the evidence that the route has messages to move: those it
// holds, else those waiting at its source; 0 for none, -1 for unknown.
func holding(o stallObs) int64 {
	if o.Held > 0 || o.InFlight > 0 {
		return max(o.Held, o.InFlight)
	}
	if o.Depth > 0 {
		return o.Depth
	}
	if o.HasDepth && o.Depth < 0 {
		return -1
	}
	return 0
}

// stallWhy says in plain words what a stalled route is stuck on.
func stallWhy(o stallObs, quiet time.Duration) string {
	var parts []string
	if o.InFlight > 0 {
		parts = append(parts, fmt.Sprintf("%d messages sent to the destination wait for its outcome", o.InFlight))
	} else if o.Held > 0 {
		parts = append(parts, fmt.Sprintf("%d messages received wait to be sent", o.Held))
	}
	if o.Depth > 0 {
		s := fmt.Sprintf("the source holds %d messages", o.Depth)
		if o.Credit > 0 && o.Held == 0 {
			s += fmt.Sprintf(" and none arrives (%d credit granted)", o.Credit)
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "" // nothing to show now (re-attaching): the last words stand
	}
	return strings.Join(parts, "; ") + fmt.Sprintf("; nothing forwarded for %s", quiet.Round(time.Second))
}

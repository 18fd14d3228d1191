// Package cluster makes routers members of a router cluster (seed 004's
// enhanced clusters, mapped onto routers: docs/cluster.md). The members
// share route definitions and leases through a store (store.Store); each
// route is held by one member at a time, under a lease whose epoch fences
// its holder.
//
// The decisions — who is suspect or failed, which routes to claim, which
// to hand off, when a lease no longer covers its holder — are a pure core
// (Core: events and the local time in, actions out), tested from golden
// scripts in testdata/. Member (member.go) carries the actions out.
package cluster

import (
	"fmt"
	"sort"
	"time"

	"github.com/fedrouter/fedrouter/store"
)

// Params are a member's settings.
type Params struct {
	Self         string
	Heartbeat    time.Duration
	SuspectAfter int           // missed heartbeats
	Lease        time.Duration // a lease's length
	// Attached are the brokers this member is connected to; Local those
	// near it (placement).
	Attached, Local []string
}

// Margin is how long before its lease can end, by its own clock, a member
// stops acting as holder: clocks run at slightly different rates, and
// the renewal's send time is earlier than the store's. A tenth of the
// lease, at least 200ms.
func (p Params) Margin() time.Duration { return max(p.Lease/10, 200*time.Millisecond) }

// RouteView is a route of the store with what placement needs of its
// spec.
type RouteView struct {
	store.RouteRow
	Src, Dest string
	Push      bool // qpid-route's -s: the route is run near its source
	Remote    bool // Dest is reached through transit: only Src must be attached
}

// View is a snapshot of the cluster as the core reads it.
type View struct {
	Now     time.Time // the store's time
	Members []store.MemberRow
	Routes  []RouteView
}

// MemberState is what the others make of a member.
type MemberState string

// A member is alive while it beats; suspect after SuspectAfter missed
// beats; failed when its last beat is older than a lease and a heartbeat
// (confirmed: its leases expired, and it did not come back in the
// heartbeat the others took to see it); left when it said so. The routes
// move on their leases alone: a suspect's expired lease is taken too.
const (
	Alive   MemberState = "alive"
	Suspect MemberState = "suspect"
	Failed  MemberState = "failed"
	Left    MemberState = "left"
)

// State classifies m at the store's time now.
func (p Params) State(m store.MemberRow, now time.Time) MemberState {
	age := now.Sub(m.LastBeat)
	switch {
	case m.Left:
		return Left
	case age > p.Lease+p.Heartbeat:
		return Failed
	case age > time.Duration(p.SuspectAfter)*p.Heartbeat:
		return Suspect
	}
	return Alive
}

// ActionKind says what an Action asks of the member.
type ActionKind int

const (
	// Start: run route Route, now held with Epoch.
	Start ActionKind = iota
	// Stop: stop route Route at once (its lease is lost or may be).
	Stop
	// HandOff: stop taking messages on Route, settle what is in flight,
	// then release its lease (Leases): a planned move.
	HandOff
	// Claim: try to take the leases of Routes.
	Claim
	// Note: log Msg (a member's state changed, a lease was lost).
	Note
)

// Action is one thing for the member to do.
type Action struct {
	Kind   ActionKind
	Route  string
	Epoch  int64
	Routes []string      // Claim
	Leases []store.Lease // HandOff
	Msg    string        // Stop, Note: why
}

func (a Action) String() string {
	switch a.Kind {
	case Start:
		return fmt.Sprintf("start %s epoch=%d", a.Route, a.Epoch)
	case Stop:
		return fmt.Sprintf("stop %s: %s", a.Route, a.Msg)
	case HandOff:
		return fmt.Sprintf("handoff %s epoch=%d", a.Route, a.Epoch)
	case Claim:
		return fmt.Sprintf("claim %v", a.Routes)
	}
	return "note " + a.Msg
}

// held is a lease this member holds: Deadline is, by the member's own
// clock, when it must stop acting as holder unless renewed.
type held struct {
	Epoch    int64
	Deadline time.Time
	handoff  bool // being handed off: not renewed, not restarted
	stopped  bool // stopped by Tick (deadline passed); started again if renewed
}

// Core is one member's decisions. Not safe for concurrent use: one
// goroutine (Member's loop) feeds it.
type Core struct {
	p         Params
	held      map[string]*held
	freeSince map[string]time.Time   // routes seen free, by local time
	states    map[string]MemberState // the members' last known states
	// storeDown: since when (local) beats fail; zero while they succeed.
	storeDown time.Time
	degraded  bool // holding routes past their leases, the store being down
	// settleUntil: after a store outage, until then (local) the member
	// claims no lease another member let expire: every holder kept
	// forwarding through the outage and renews its leases at its first
	// beat; claiming them first would move routes for nothing.
	settleUntil time.Time
}

// NewCore returns a member's core holding nothing.
func NewCore(p Params) *Core {
	return &Core{p: p, held: map[string]*held{}, freeSince: map[string]time.Time{}, states: map[string]MemberState{}}
}

// Held returns the leases to renew (not those being handed off), sorted.
func (c *Core) Held() []store.Lease {
	out := make([]store.Lease, 0, len(c.held))
	for id, h := range c.held {
		if !h.handoff {
			out = append(out, store.Lease{Route: id, Epoch: h.Epoch})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Route < out[j].Route })
	return out
}

// Holds says whether the member holds route now (local time): the fence
// the data plane checks.
func (c *Core) Holds(route string, now time.Time) bool {
	h, ok := c.held[route]
	return ok && !h.handoff && !h.stopped && (now.Before(h.Deadline) || c.outageCovers(h))
}

// outageCovers says whether h is held past its deadline because the store
// went down while it was good (Tick's rule, applied before Tick runs).
func (c *Core) outageCovers(h *held) bool {
	return !c.storeDown.IsZero() && c.storeDown.Before(h.Deadline)
}

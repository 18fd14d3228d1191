package cluster

import (
	"fmt"
	"slices"
	"time"

	"github.com/fedrouter/fedrouter/store"
)

// Observe reads a snapshot of the cluster at the local time now: it notes
// the members' state changes, stops routes deleted from the store, adopts
// leases the store says are this member's (a restart with the same id),
// claims free routes and hands off the excess.
//
// Placement: each member aims at quota = ceil(routes / live members). A
// free route is claimed at once by a member the route prefers (qpid-route:
// a pull route runs near its destination, a push route near its source)
// or when no live member is preferred; by any member after it has been
// free for two heartbeats, and beyond the quota after four (so that a
// route nobody prefers or fits is never left behind). A member over the
// quota hands one route a beat to a member under it that can run it.
// After a store outage, the leases other members let expire are left to
// them for a lease (settleUntil): they renew them at their first beat.
func (c *Core) Observe(now time.Time, v View) []Action {
	out := c.noteMembers(v)
	live := c.liveMembers(v)
	counts := map[string]int{}
	exists := map[string]bool{}
	for _, r := range v.Routes {
		exists[r.ID] = true
		if r.Held(v.Now) {
			counts[r.Owner]++
		}
	}
	for _, id := range c.sortedHeld() {
		if !exists[id] {
			delete(c.held, id)
			out = append(out, Action{Kind: Stop, Route: id, Msg: msgDeleted})
		}
	}
	out = append(out, c.adopt(now, v)...)
	quota := (len(v.Routes) + len(live) - 1) / max(len(live), 1)
	mine := len(c.held)
	var claims []string
	for _, r := range v.Routes {
		if r.Held(v.Now) || !c.fits(r, c.p.Attached) || (r.Owner != "" && now.Before(c.settleUntil)) {
			delete(c.freeSince, r.ID)
			continue
		}
		since, seen := c.freeSince[r.ID]
		if !seen {
			since = now
			c.freeSince[r.ID] = now
		}
		free := now.Sub(since)
		switch {
		case mine+len(claims) < quota && (c.preferred(r, live) || free >= 2*c.p.Heartbeat):
		case free >= 4*c.p.Heartbeat:
		default:
			continue
		}
		claims = append(claims, r.ID)
	}
	if len(claims) > 0 {
		out = append(out, Action{Kind: Claim, Routes: claims})
	}
	return append(out, c.balance(v, live, counts, quota)...)
}

// noteMembers notes each member whose state changed since the last view.
func (c *Core) noteMembers(v View) []Action {
	var out []Action
	for _, m := range v.Members {
		if m.ID == c.p.Self {
			continue
		}
		st := c.p.State(m, v.Now)
		if was, ok := c.states[m.ID]; (ok && was != st) || (!ok && st != Alive && st != Left) {
			out = append(out, Action{Kind: Note, Msg: fmt.Sprintf("member %s: %s (last heartbeat %s ago)", m.ID, st, v.Now.Sub(m.LastBeat).Round(time.Millisecond))})
		}
		c.states[m.ID] = st
	}
	return out
}

// liveMembers are the members placement counts on: the alive ones and
// this one (a suspect is probably gone: nothing is left or handed to it).
func (c *Core) liveMembers(v View) map[string][]string {
	live := map[string][]string{c.p.Self: c.p.Local}
	for _, m := range v.Members {
		if m.ID != c.p.Self && c.p.State(m, v.Now) == Alive {
			live[m.ID] = m.Local
		}
	}
	return live
}

// adopt takes back the leases the store says are this member's but the
// core does not hold: after a restart under the same id, before they
// expire.
func (c *Core) adopt(now time.Time, v View) []Action {
	var out []Action
	for _, r := range v.Routes {
		if r.Owner != c.p.Self || !r.Held(v.Now) || c.held[r.ID] != nil || !c.fits(r, c.p.Attached) {
			continue
		}
		left := r.Until.Sub(v.Now) - c.p.Margin()
		if left <= 0 {
			continue
		}
		c.held[r.ID] = &held{Epoch: r.Epoch, Deadline: now.Add(left)}
		out = append(out, Action{Kind: Start, Route: r.ID, Epoch: r.Epoch})
	}
	return out
}

// fits says whether a member attached to brokers can run r.
func (c *Core) fits(r RouteView, brokers []string) bool {
	return slices.Contains(brokers, r.Src) && (r.Remote || slices.Contains(brokers, r.Dest))
}

// preferred says whether this member is one r prefers, or no live member
// is.
func (c *Core) preferred(r RouteView, live map[string][]string) bool {
	near := r.Dest
	if r.Push || r.Remote {
		near = r.Src
	}
	if slices.Contains(c.p.Local, near) {
		return true
	}
	for _, local := range live {
		if slices.Contains(local, near) {
			return false
		}
	}
	return true
}

// MaxHandoffsPerBeat bounds the routes one member hands off in one
// heartbeat: a thousand routes even out in a few beats, and a member
// joining does not see everything move at once.
const MaxHandoffsPerBeat = 128

// balance hands off routes while this member holds more than quota and
// live members that can run them hold fewer: as many as the others lack,
// at most MaxHandoffsPerBeat a beat.
func (c *Core) balance(v View, live map[string][]string, counts map[string]int, quota int) []Action {
	excess := 0
	for _, h := range c.held {
		if !h.handoff {
			excess++
		}
	}
	excess -= quota
	if excess <= 0 {
		return nil
	}
	brokers := map[string][]string{}
	for _, m := range v.Members {
		brokers[m.ID] = m.Brokers
	}
	lack := map[string]int{}
	for id := range live {
		if id != c.p.Self && counts[id] < quota {
			lack[id] = quota - counts[id]
		}
	}
	var out []Action
	for _, r := range v.Routes {
		h := c.held[r.ID]
		if len(out) >= min(excess, MaxHandoffsPerBeat) {
			break
		}
		if h == nil || h.handoff || h.stopped || r.Owner != c.p.Self {
			continue
		}
		for _, id := range sortedKeys(lack) {
			if lack[id] > 0 && c.fits(r, brokers[id]) {
				lack[id]--
				h.handoff = true
				out = append(out, Action{Kind: HandOff, Route: r.ID, Epoch: h.Epoch, Leases: []store.Lease{{Route: r.ID, Epoch: h.Epoch}}})
				break
			}
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

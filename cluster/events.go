package cluster

import (
	"fmt"
	"sort"
	"time"

	"github.com/fedrouter/fedrouter/store"
)

// Beaten: a beat sent at sent (local time) came back: r.Held are the
// leases still this member's, renewed. A lease it asked to renew and did
// not get back was taken over (it expired first): its route stops now. A
// route stopped by Tick whose lease came back is started again.
func (c *Core) Beaten(sent time.Time, r store.Renewal) []Action {
	var out []Action
	if !c.storeDown.IsZero() {
		out = append(out, Action{Kind: Note, Msg: fmt.Sprintf("store reachable again after %s: leases renewed where nobody took them", sent.Sub(c.storeDown).Round(time.Millisecond))})
		c.settleUntil = sent.Add(c.p.Lease)
	}
	c.storeDown, c.degraded = time.Time{}, false
	kept := map[string]int64{}
	for _, l := range r.Held {
		kept[l.Route] = l.Epoch
	}
	for _, id := range c.sortedHeld() {
		h := c.held[id]
		if h.handoff {
			continue
		}
		if _, ok := kept[id]; !ok {
			delete(c.held, id)
			if !h.stopped {
				out = append(out, Action{Kind: Stop, Route: id, Msg: fmt.Sprintf("lease lost: epoch %d is stale (another member took the route over)", h.Epoch)})
			}
			continue
		}
		h.Deadline = sent.Add(c.p.Lease - c.p.Margin())
		if h.stopped {
			h.stopped = false
			out = append(out, Action{Kind: Start, Route: id, Epoch: h.Epoch})
		}
	}
	return out
}

// BeatFailed: a beat failed at now (the store is unreachable, or failed
// mid-call).
func (c *Core) BeatFailed(now time.Time, err error) []Action {
	if !c.storeDown.IsZero() {
		return nil
	}
	c.storeDown = now
	return []Action{{Kind: Note, Msg: fmt.Sprintf("store unreachable: %v", err)}}
}

// Tick: the local time is now. A held lease past its deadline stops its
// route — unless the member saw the store go down while the lease was
// still good: then nobody can take the route over (the store is down for
// everyone) or whoever can is a competing consumer of the same queue
// (a split between this member and the store), and the route goes on
// (docs/cluster.md, "The store unreachable").
func (c *Core) Tick(now time.Time) []Action {
	var out []Action
	for _, id := range c.sortedHeld() {
		h := c.held[id]
		if h.handoff || h.stopped || now.Before(h.Deadline) {
			continue
		}
		if c.outageCovers(h) {
			if !c.degraded {
				c.degraded = true
				out = append(out, Action{Kind: Note, Msg: fmt.Sprintf("store unreachable since %s: holding %d routes past their leases", c.storeDown.Format(time.TimeOnly), len(c.held))})
			}
			continue
		}
		h.stopped = true
		out = append(out, Action{Kind: Stop, Route: id, Msg: fmt.Sprintf("lease epoch %d not renewed in time (was this process paused?): stopped until a renewal succeeds", h.Epoch)})
	}
	return out
}

// Claimed: a claim sent at sent won leases.
func (c *Core) Claimed(sent time.Time, leases []store.Lease) []Action {
	out := make([]Action, 0, len(leases))
	for _, l := range leases {
		c.held[l.Route] = &held{Epoch: l.Epoch, Deadline: sent.Add(c.p.Lease - c.p.Margin())}
		delete(c.freeSince, l.Route)
		out = append(out, Action{Kind: Start, Route: l.Route, Epoch: l.Epoch})
	}
	return out
}

// Released: a handed-off route's lease was given back (or the release
// failed and the lease will expire): either way it is no longer held.
func (c *Core) Released(route string) { delete(c.held, route) }

// Leaving: the member leaves (SIGTERM): every route is handed off.
func (c *Core) Leaving() []Action {
	var out []Action
	for _, id := range c.sortedHeld() {
		h := c.held[id]
		if !h.handoff {
			h.handoff = true
			out = append(out, Action{Kind: HandOff, Route: id, Epoch: h.Epoch, Leases: []store.Lease{{Route: id, Epoch: h.Epoch}}})
		}
	}
	return out
}

func (c *Core) sortedHeld() []string {
	ids := make([]string, 0, len(c.held))
	for id := range c.held {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

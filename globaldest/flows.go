package globaldest

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"
)

// Messages follow consumers (seed 000: a producer at one broker reaches
// consumers at another). An instance with no consumer sends what it holds
// to one instance that has consumers — a flow, which the router runs as a
// route moving the destination's messages, each at most MaxHops times in
// its life (the route counts the moves on the message and leaves one at
// its limit where it is).
//
// No ping-pong: an instance with consumers is never a flow's source and
// one without is never a target, so two instances never send to each
// other. Other routers' flows are no consumers (others.go). Hysteresis: a flow starts only once its source has had no
// consumer for the entry's Settle at every listing (its first target may
// have had its consumers for less: seen as it happens, issue 29); a flow
// changes its target only to one that has had consumers for Settle, and
// keeps its target while that target has consumers, or lost them less
// than Settle ago — consumers hopping between brokers faster than that
// move nothing back and forth.

// flow is where one instance's messages move.
type flow struct {
	to    string
	since time.Time
}

// consumersSeen records a listing's consumer count for the hysteresis:
// busySince and freeSince say since when the count has been above zero,
// at zero, at every listing.
func (in *inst) consumersSeen(wasPresent bool, consumers int, now time.Time) {
	switch {
	case consumers > 0 && (!wasPresent || in.consumers == 0 || in.busySince.IsZero()):
		in.busySince, in.freeSince = now, time.Time{}
		// Seen arriving between two listings, not found after a gap in
		// which consumers may have come and gone unseen.
		in.arrived = wasPresent
	case consumers == 0 && (!wasPresent || in.consumers > 0 || in.freeSince.IsZero()):
		in.busySince, in.freeSince = time.Time{}, now
	}
}

// follow decides d's flows at now: Move and Stop actions for the changes.
func (c *Core) follow(d *dest, now time.Time) []Action {
	e := c.entries[d.entry]
	want := map[string]string{}
	why := map[string]string{}
	if e.Follow && d.deleting == nil && !d.deleted && c.propagates(d) {
		for _, s := range d.present() {
			if to, because := c.target(d, s, now); to != "" {
				want[s], why[s] = to, because
			}
		}
	}
	sources := make([]string, 0, len(d.flows)+len(want))
	for s := range d.flows {
		sources = append(sources, s)
	}
	for s := range want {
		if d.flows[s] == nil {
			sources = append(sources, s)
		}
	}
	sort.Strings(sources)
	var out []Action
	for _, s := range sources {
		cur := d.flows[s]
		if cur != nil && cur.to == want[s] {
			continue
		}
		if cur != nil {
			out = append(out, Action{Kind: Stop, Broker: s, Name: d.name, To: cur.to, Msg: c.stopWhy(d, s, cur.to, want[s])})
			delete(d.flows, s)
		}
		if to := want[s]; to != "" {
			d.flows[s] = &flow{to: to, since: now}
			out = append(out, Action{Kind: Move, Broker: s, Name: d.name, To: to, MaxHops: e.MaxHops, Msg: why[s]})
		}
	}
	return out
}

// target is where s's messages should move now ("" for nowhere), and why.
func (c *Core) target(d *dest, s string, now time.Time) (string, string) {
	settle := c.entries[d.entry].Settle
	cur := d.flows[s]
	in := d.inst[s]
	switch {
	case !c.brokers[s].up() && cur != nil:
		return cur.to, "" // nothing concluded from a broker not listed
	case !c.brokers[s].up(), in.consumers > 0:
		return "", ""
	case now.Sub(in.freeSince) < settle && cur == nil:
		return "", "" // its consumer may be back in a moment
	case cur != nil && c.holds(d, cur.to, now):
		return cur.to, ""
	}
	// A broker of this router's first (its listing is fresh, the path
	// direct), else one another router advertises.
	best, n := "", 0
	for _, t := range d.present() {
		ti := d.inst[t]
		// A flow's first target need not have had its consumers for
		// settle if they were seen arriving: the messages wait for
		// nobody; changing a flow's target does (consumers hopping
		// between brokers), and so do consumers found after a gap.
		// At a broker another router is attached to, a consumer seen
		// arriving may be that router's flow (others.go): it waits too.
		if t == s || !c.brokers[t].up() || ti.consumers == 0 || ((cur != nil || !ti.arrived || c.shared(t)) && now.Sub(ti.busySince) < settle) {
			continue
		}
		if best == "" || ti.consumers > n {
			best, n = t, ti.consumers
		}
	}
	where := ""
	if best == "" {
		for _, t := range slices.Sorted(maps.Keys(d.remote)) {
			if ti := d.remote[t]; ti.consumers > 0 && now.Sub(ti.busySince) >= settle && ti.consumers > n {
				best, n, where = t, ti.consumers, " (advertised by its router)"
			}
		}
	}
	if best == "" {
		return "", ""
	}
	return best, fmt.Sprintf("no consumer at %s for %s; %d at %s%s", s, settle, n, best, where)
}

// holds says whether t is still a good target: present, listed, and with
// consumers or without them for less than Settle.
func (c *Core) holds(d *dest, t string, now time.Time) bool {
	settle := c.entries[d.entry].Settle
	if ti := d.remote[t]; ti != nil {
		return ti.consumers > 0 || now.Sub(ti.freeSince) < settle
	}
	ti := d.inst[t]
	return ti != nil && ti.present && c.brokers[t].up() && (ti.consumers > 0 || now.Sub(ti.freeSince) < settle)
}

// stopWhy says why the flow s → to stops (for another, when next is set).
func (c *Core) stopWhy(d *dest, s, to, next string) string {
	in, ti := d.inst[s], d.inst[to]
	switch {
	case d.deleting != nil || d.deleted:
		return "the destination is being deleted"
	case !c.propagates(d) || !c.entries[d.entry].Follow:
		return "the destination is no longer global"
	case in == nil || !in.present:
		return fmt.Sprintf("gone from %s", s)
	case in.consumers > 0:
		return fmt.Sprintf("%d consumers at %s", in.consumers, s)
	case d.remote[to] != nil && next != "":
		return fmt.Sprintf("no consumer advertised at %s for %s; moving to %s instead", to, c.entries[d.entry].Settle, next)
	case d.remote[to] != nil:
		return fmt.Sprintf("no consumer advertised at %s for %s", to, c.entries[d.entry].Settle)
	case ti == nil || !ti.present:
		return fmt.Sprintf("gone from %s", to)
	case !c.brokers[to].up():
		return fmt.Sprintf("%s cannot be listed", to)
	case next != "":
		return fmt.Sprintf("no consumer at %s for %s; moving to %s instead", to, c.entries[d.entry].Settle, next)
	}
	return fmt.Sprintf("no consumer at %s for %s", to, c.entries[d.entry].Settle)
}

// moveResult: a Move the router could not start is forgotten, so the next
// tick asks again.
func (d *dest) moveResult(a Action, err error) {
	if f := d.flows[a.Broker]; err != nil && f != nil && f.to == a.To {
		delete(d.flows, a.Broker)
	}
}

// Flow is one flow as `destination list` shows it. The core says where;
// the router adds the route that runs it and its counts.
type Flow struct {
	From  string    `json:"from"`
	To    string    `json:"to"`
	Since time.Time `json:"since"`
	Route string    `json:"route,omitempty"` // the route's id
	State string    `json:"state,omitempty"` // the route's state
	// Moved: messages moved so far; Parked: messages left at From after
	// their max_hops-th move.
	Moved  uint64 `json:"moved"`
	Parked uint64 `json:"parked"`
}

// flowsOf lists d's flows by source.
func (d *dest) flowsOf() []Flow {
	var out []Flow
	for s, f := range d.flows {
		out = append(out, Flow{From: s, To: f.to, Since: f.since})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].From < out[j].From })
	return out
}

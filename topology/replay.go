package topology

import (
	"cmp"
	"strings"
	"time"
)

// This file holds the replay protection. Every LSA is signed with its
// router's instance, its sequence number and its origination time, so an
// attacker who can only copy bytes (no secret) can replay an LSA but not
// change it. Two rules make a replay harmless:
//   - window: an LSA older than MaxAge + MaxSkew by its own signed time, or
//     signed more than MaxSkew in the future, is refused, whatever the
//     node remembers;
//   - memory: the last LSA of a router whose LSA expired is remembered
//     (gone), so within the window a replay of it, or of anything older,
//     is refused too. The memory is bounded (MaxRemembered, the oldest
//     forgotten first) and forgets what the window refuses anyway.

// remembered is the last LSA of an expired router: its origin and signed
// time.
type remembered struct {
	Origin
	time int64
}

// window checks an LSA's signed time against now: 0 if inside the window,
// else the event that refuses it.
func (n *Node) window(l LSA, now time.Time) EventKind {
	signed := time.Unix(0, l.Time)
	switch {
	case !now.Before(n.windowEnd(l.Time)):
		return EventTooOld
	case signed.After(now.Add(n.cfg.MaxSkew)):
		return EventFuture
	}
	return 0
}

// refuseOutOfWindow drops an LSA outside the window, counted and reported.
func (n *Node) refuseOutOfWindow(kind EventKind, l LSA, from string, r *Ready) {
	if kind == EventTooOld {
		n.counters.TooOld++
	} else {
		n.counters.Future++
	}
	r.event(Event{Kind: kind, Router: l.Router, Instance: l.Instance, Seq: l.Seq, From: from, Time: l.Time})
}

// deadline is when a held LSA expires: MaxAge after we received it, or
// when its signed time leaves the window, whichever comes first.
func (n *Node) deadline(e *entry) time.Time {
	byArrival := e.at.Add(n.cfg.MaxAge)
	bySigned := n.windowEnd(e.lsa.Time)
	if bySigned.Before(byArrival) {
		return bySigned
	}
	return byArrival
}

// remember keeps the last LSA of a router that expired; at the bound, the
// remembered router with the oldest signed time (the nearest to leaving
// the window anyway) is forgotten first.
func (n *Node) remember(l LSA) {
	if _, ok := n.gone[l.Router]; !ok && len(n.gone) >= n.cfg.MaxRemembered {
		oldest := ""
		for id, g := range n.gone {
			if oldest == "" || cmp.Or(cmp.Compare(g.time, n.gone[oldest].time), strings.Compare(id, oldest)) < 0 {
				oldest = id
			}
		}
		delete(n.gone, oldest)
	}
	g := remembered{l.Origin(), l.Time}
	n.gone[l.Router] = g
	if end := n.windowEnd(g.time); n.forgetAt.IsZero() || end.Before(n.forgetAt) {
		n.forgetAt = end
	}
}

// windowEnd is when an LSA signed at t leaves the window.
func (n *Node) windowEnd(t int64) time.Time { return time.Unix(0, t).Add(n.cfg.MaxAge + n.cfg.MaxSkew) }

// forget drops the remembered routers whose last LSA the window refuses
// by now: nothing of theirs up to it can come in again. It looks at the
// memory only when the earliest of them is due (forgetAt).
func (n *Node) forget(now time.Time) {
	if n.forgetAt.IsZero() || now.Before(n.forgetAt) {
		return
	}
	n.forgetAt = time.Time{}
	for id, g := range n.gone {
		end := n.windowEnd(g.time)
		switch {
		case !now.Before(end):
			delete(n.gone, id)
		case n.forgetAt.IsZero() || end.Before(n.forgetAt):
			n.forgetAt = end
		}
	}
}

// last is what the node knows of a router's newest LSA: held, or
// remembered after it expired.
func (n *Node) last(router string) (o Origin, held, known bool) {
	if e, ok := n.db[router]; ok {
		return e.lsa.Origin(), true, true
	}
	if g, ok := n.gone[router]; ok {
		return g.Origin, false, true
	}
	return Origin{}, false, false
}

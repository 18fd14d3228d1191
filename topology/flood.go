package topology

import (
	"maps"
	"slices"
	"time"
)

// This file holds the flooding rules: what is accepted, what is passed on
// and where, what is dropped, and our own originations.

// apply runs one received LSA through the rules. data is its wire form if
// it came off the wire (re-flooded as is, so fields this version does not
// know survive), nil if the caller decoded it.
func (n *Node) apply(l LSA, data []byte, from string, now time.Time, r *Ready) {
	if l.Version != 0 && l.Version != ProtocolVersion {
		n.unknownVersion(l.Version, from, r)
		return
	}
	l.Version = ProtocolVersion
	if err := l.validate(); err != nil {
		n.counters.Malformed++
		r.event(Event{Kind: EventRejected, From: from, Err: err})
		return
	}
	if kind := n.window(l, now); kind != 0 {
		n.refuseOutOfWindow(kind, l, from, r)
		return
	}
	ev := Event{Router: l.Router, Instance: l.Instance, Seq: l.Seq, From: from}
	if l.Router == n.cfg.RouterID {
		n.applyOwn(l, ev, now, r)
		return
	}
	last, held, known := n.last(l.Router)
	switch {
	case !known || l.Origin().Newer(last):
		n.accept(l, data, from, now, r)
	case !held: // expired, and this is its last LSA or an older one
		n.drop(EventReplayed, ev, r)
	case l.Origin() == last:
		n.drop(EventDuplicate, ev, r)
	default:
		n.drop(EventStale, ev, r)
		if l.Instance < last.Instance {
			n.olderInstance(l, ev, last.Instance, now, r)
		}
	}
}

// applyOwn handles an LSA bearing our router id: normally our own flood
// coming back; from another instance, another router with our id (or our
// previous run, whose LSAs are still travelling).
func (n *Node) applyOwn(l LSA, ev Event, now time.Time, r *Ready) {
	mine := LSA{Instance: n.cfg.Instance, Seq: n.seq}
	switch {
	case l.newer(mine):
		n.duplicateID(ev, n.cfg.Instance, r)
	case l.Instance == mine.Instance:
		n.drop(EventDuplicate, ev, r)
	default:
		n.drop(EventStale, ev, r)
		n.olderInstance(l, ev, n.cfg.Instance, now, r)
	}
}

// accept stores a new or newer LSA, floods it on, and, if it comes from a
// router new to us and attached to the arrival broker, answers with our
// database: that router has just started (or rejoined) and knows nothing.
func (n *Node) accept(l LSA, data []byte, from string, now time.Time, r *Ready) {
	if data == nil {
		var err error
		if data, err = Encode(l, n.cfg.Secret); err != nil {
			n.counters.count(err)
			r.event(Event{Kind: EventRejected, From: from, Err: err})
			return
		}
	}
	cur, held := n.db[l.Router]
	if held && l.Instance != cur.lsa.Instance {
		n.counters.Restarts++
		r.event(Event{Kind: EventRestart, Router: l.Router, Instance: l.Instance, Seq: l.Seq, From: from, Prev: cur.lsa.Instance})
		n.prev[l.Router] = prevInstance{cur.lsa.Instance, cur.lsa.Seq, now}
	}
	// The caller keeps its LSA; the database must not change under us.
	l.Brokers, l.Links, l.Ext = slices.Clone(l.Brokers), slices.Clone(l.Links), maps.Clone(l.Ext)
	n.db[l.Router] = &entry{lsa: l, data: data, at: now, from: from}
	n.noteNamed(l.Brokers, l.Links, r)
	delete(n.gone, l.Router)
	n.counters.Accepted++
	n.graphDirty = true
	if to := n.upBrokers(from); len(to) > 0 {
		n.counters.Reflooded++
		r.flood(l, data, to)
	}
	if (!held || l.Instance != cur.lsa.Instance) && l.attached(from) {
		n.requestSync(from, now)
	}
}

func (n *Node) drop(kind EventKind, ev Event, r *Ready) {
	switch kind {
	case EventDuplicate:
		n.counters.Duplicate++
	case EventReplayed:
		n.counters.Replayed++
	default:
		n.counters.Stale++
	}
	ev.Kind = kind
	r.event(ev)
}

// olderInstance watches an instance that has been superseded. Copies of
// its last LSA may still be travelling (harmless), but if it advertises a
// higher sequence than before, it is alive: two routers share the id.
func (n *Node) olderInstance(l LSA, ev Event, current int64, now time.Time, r *Ready) {
	p, ok := n.prev[l.Router]
	if !ok || p.instance != l.Instance {
		n.prev[l.Router] = prevInstance{l.Instance, l.Seq, now}
		return
	}
	if l.Seq > p.seq {
		n.duplicateID(ev, current, r)
		p.seq = l.Seq
	}
	p.at = now
	n.prev[l.Router] = p
}

func (n *Node) duplicateID(ev Event, other int64, r *Ready) {
	n.counters.DuplicateID++
	ev.Kind, ev.Prev = EventDuplicateID, other
	r.event(ev)
}

// unknownVersion drops an LSA of a version we do not speak, reporting each
// version once: a newer router in the network is normal during an upgrade
// and must not flood the logs.
func (n *Node) unknownVersion(v int, from string, r *Ready) {
	n.counters.Version++
	if n.versions[v] || len(n.versions) >= maxVersionsReported {
		return
	}
	n.versions[v] = true
	r.event(Event{Kind: EventVersionUnknown, Version: v, From: from})
}

// expire forgets originators not heard from for MaxAge (or whose LSA left
// the window of its signed time): that is how a dead router (or one cut
// off from us) disappears from the graph. Its last LSA is remembered, so
// that a copy of it cannot bring it back.
func (n *Node) expire(now time.Time, r *Ready) {
	n.forget(now)
	for _, id := range sortedKeys(n.db) {
		e := n.db[id]
		if now.Before(n.deadline(e)) {
			continue
		}
		delete(n.db, id)
		n.remember(e.lsa)
		n.counters.Expired++
		n.graphDirty = true
		r.event(Event{Kind: EventExpired, Router: id, Instance: e.lsa.Instance, Seq: e.lsa.Seq})
	}
	for id, p := range n.prev {
		if now.Sub(p.at) >= n.cfg.MaxAge {
			delete(n.prev, id)
		}
	}
}

func (n *Node) originationDue(now time.Time) bool {
	if !n.started {
		return false
	}
	if n.dirty && (n.seq == 0 || !now.Before(n.lastOrig.Add(n.cfg.MinOriginate))) {
		return true
	}
	return !now.Before(n.nextRefresh)
}

// originate advertises the local state with the next sequence number on
// every Operational local broker, and schedules the next refresh.
func (n *Node) originate(now time.Time, r *Ready) {
	n.seq++
	l := LSA{
		Version: ProtocolVersion, Router: n.cfg.RouterID, Instance: n.cfg.Instance, Seq: n.seq, Time: now.UnixNano(),
		Brokers: slices.Clone(n.brokers), Links: slices.Clone(n.links), Ext: maps.Clone(n.ext),
	}
	n.lastOrig, n.dirty = now, false
	n.nextRefresh = now.Add(n.refreshInterval())
	data, err := Encode(l, n.cfg.Secret)
	if err != nil {
		r.event(Event{Kind: EventOriginateFailed, Router: l.Router, Instance: l.Instance, Seq: l.Seq, Err: err})
		return
	}
	n.own, n.ownData = l, data
	n.counters.Originated++
	if to := n.upBrokers(""); len(to) > 0 {
		r.flood(l, data, to)
	}
}

func (n *Node) refreshInterval() time.Duration {
	d := n.cfg.Refresh
	if n.cfg.Rand != nil {
		d -= time.Duration(n.cfg.Jitter * float64(d) * n.cfg.Rand())
	}
	return d
}

// requestSync schedules our database for a broker, at once unless a sync
// went there within MinOriginate: several newcomers at once get one sync.
func (n *Node) requestSync(broker string, now time.Time) {
	if _, pending := n.syncDue[broker]; pending {
		return
	}
	due := now
	if last, ok := n.lastSync[broker]; ok && now.Before(last.Add(n.cfg.MinOriginate)) {
		due = last.Add(n.cfg.MinOriginate)
	}
	n.syncDue[broker] = due
}

// sync sends our LSA and the ones we hold on each broker whose sync is due,
// but not those of routers Operational on that broker: each of them
// answers for itself, so a newcomer gets every LSA about once.
func (n *Node) sync(now time.Time, r *Ready) {
	for _, b := range sortedKeys(n.syncDue) {
		if now.Before(n.syncDue[b]) {
			continue
		}
		delete(n.syncDue, b)
		if !n.localUp(b) {
			continue
		}
		n.lastSync[b] = now
		n.counters.Synced++
		if n.own.Seq > 0 {
			r.flood(n.own, n.ownData, []string{b})
		}
		for _, id := range sortedKeys(n.db) {
			if e := n.db[id]; !operational(e.lsa.Brokers, b) {
				r.flood(e.lsa, e.data, []string{b})
			}
		}
	}
}

// upBrokers lists the Operational local brokers but one, sorted.
func (n *Node) upBrokers(except string) []string {
	var out []string
	for _, b := range n.brokers {
		if b.Operational() && b.Name != except {
			out = append(out, b.Name)
		}
	}
	return out
}

func (n *Node) localUp(broker string) bool {
	for _, b := range n.brokers {
		if b.Name == broker {
			return b.Operational()
		}
	}
	return false
}

// attached reports whether the LSA's router is attached to the broker.
func (l LSA) attached(broker string) bool {
	for _, b := range l.Brokers {
		if b.Name == broker {
			return true
		}
	}
	return false
}

// flood adds an LSA to send, merging destinations with an earlier entry
// for the same LSA so that one Ready never sends one LSA twice on a broker.
func (r *Ready) flood(l LSA, data []byte, to []string) {
	for i := range r.Flood {
		o := &r.Flood[i]
		if o.LSA.Router == l.Router && o.LSA.Instance == l.Instance && o.LSA.Seq == l.Seq {
			o.To = union(o.To, to)
			return
		}
	}
	r.Flood = append(r.Flood, Outgoing{LSA: l, Data: data, To: slices.Clone(to)})
}

func (r *Ready) event(e Event) { r.Events = append(r.Events, e) }

func union(a, b []string) []string {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

package topology

import (
	"slices"
	"strings"
	"time"
)

// Destinations decides which destinations (queues, addresses) a router
// advertises, following Open MQ's cluster rules for propagating
// destinations:
//   - a configured (admin-created) destination is advertised when it is
//     created and withdrawn when it is deleted;
//   - one auto-created by a producer stays local until a consumer appears;
//   - one created with a consumer is advertised with it;
//   - a temporary destination is withdrawn when its consumers are gone;
//   - an auto-created destination with no consumers and no messages for
//     IdleTime is withdrawn (a consumer or a message brings it back).
//
// Like the rest of this package it is a pure state machine: observations
// and the time go in, the advertised set comes out.
type Destinations struct {
	idle time.Duration
	m    map[destKey]*destState
}

// DestKind is how a destination came to exist.
type DestKind int

const (
	DestConfigured  DestKind = iota // created by an administrator
	DestAutoCreated                 // created by a producer or consumer on first use
	DestTemporary                   // lives as long as its creator's connection
)

func (k DestKind) String() string {
	return [...]string{"configured", "auto-created", "temporary"}[k]
}

// DestObservation is what a broker says about one destination now.
type DestObservation struct {
	Broker, Name string
	Kind         DestKind
	Consumers    int
	Messages     int
	Deleted      bool
}

type destKey struct{ broker, name string }

type destState struct {
	kind       DestKind
	advertised bool
	idleSince  time.Time // auto-created: when it last became idle; zero if busy
}

// DefaultDestIdle is Open MQ's idle time for auto-created destinations.
const DefaultDestIdle = 2 * time.Minute

// NewDestinations returns an empty table; idle <= 0 means DefaultDestIdle.
func NewDestinations(idle time.Duration) *Destinations {
	if idle <= 0 {
		idle = DefaultDestIdle
	}
	return &Destinations{idle: idle, m: map[destKey]*destState{}}
}

// Observe records o at now and reports whether the advertised set changed.
func (d *Destinations) Observe(o DestObservation, now time.Time) bool {
	k := destKey{o.Broker, o.Name}
	st, known := d.m[k]
	if o.Deleted {
		if !known {
			return false
		}
		delete(d.m, k)
		return st.advertised
	}
	if !known {
		st = &destState{kind: o.Kind}
		d.m[k] = st
	}
	before := st.advertised
	busy := o.Consumers > 0 || o.Messages > 0
	switch o.Kind {
	case DestConfigured:
		st.advertised = true
	case DestTemporary:
		st.advertised = o.Consumers > 0
	case DestAutoCreated:
		switch {
		case o.Consumers > 0:
			st.advertised, st.idleSince = true, time.Time{}
		case busy:
			st.idleSince = time.Time{} // messages but no consumer: stays as it is
		case st.idleSince.IsZero():
			st.idleSince = now
		}
		if st.advertised && !st.idleSince.IsZero() && !now.Before(st.idleSince.Add(d.idle)) {
			st.advertised = false
		}
	}
	st.kind = o.Kind
	return st.advertised != before
}

// Tick withdraws auto-created destinations idle for IdleTime; it reports
// whether the advertised set changed.
func (d *Destinations) Tick(now time.Time) bool {
	changed := false
	for _, st := range d.m {
		if st.kind == DestAutoCreated && st.advertised && !st.idleSince.IsZero() && !now.Before(st.idleSince.Add(d.idle)) {
			st.advertised, changed = false, true
		}
	}
	return changed
}

// NextTick is when Tick next has something to do (zero: nothing pending).
func (d *Destinations) NextTick() time.Time {
	var next time.Time
	for _, st := range d.m {
		if st.kind == DestAutoCreated && st.advertised && !st.idleSince.IsZero() {
			if t := st.idleSince.Add(d.idle); next.IsZero() || t.Before(next) {
				next = t
			}
		}
	}
	return next
}

// Advertised returns broker → the destinations advertised there, sorted.
func (d *Destinations) Advertised() map[string][]string {
	out := map[string][]string{}
	for k, st := range d.m {
		if st.advertised {
			out[k.broker] = append(out[k.broker], k.name)
		}
	}
	for b := range out {
		slices.SortFunc(out[b], strings.Compare)
	}
	return out
}

package router

import (
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/fedrouter/fedrouter/globaldest"
)

// Several routers over one span agree on the shares of a limited
// destination through their advertisements (docs/destinations.md,
// "Several routers over one span"; the rules: globaldest.Agree). Each
// router advertises, in extension SharesExt, an ad per limited
// destination it sees; the decider's carries the shares. The topology
// driver stores the other routers' ads here (checked); the global
// destinations' goroutine reads them each round.

// SharesExt is the advertisement extension carrying the limited
// destinations' ads (globaldest.EncodeAds).
const SharesExt = "shares"

// remoteShares holds what the other routers advertise in SharesExt.
type remoteShares struct {
	mu      sync.Mutex
	raw     map[string]string                   // guarded by mu: router id → the value last parsed
	ads     map[string]map[string]globaldest.Ad // guarded by mu: router id → destination → ad
	refused uint64                              // guarded by mu: values refused since the start
}

// store takes every router's SharesExt value (nil: none; a router gone
// from ext: its advertisement expired). A value that fails
// globaldest.DecodeAds is refused whole, naming the router and why, and
// that router's previous one is dropped: it takes no part until it
// advertises a sound one.
func (rs *remoteShares) store(self string, ext map[string]json.RawMessage, attached func(router, broker string) bool) error {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.raw == nil {
		rs.raw, rs.ads = map[string]string{}, map[string]map[string]globaldest.Ad{}
	}
	for id := range rs.raw {
		if _, ok := ext[id]; !ok {
			delete(rs.ads, id)
			delete(rs.raw, id)
		}
	}
	var bad []error
	for id, v := range ext {
		if id == self || rs.raw[id] == string(v) {
			continue
		}
		rs.raw[id] = string(v)
		delete(rs.ads, id)
		if v == nil {
			continue
		}
		ads, err := globaldest.DecodeAds(id, v, func(b string) bool { return attached(id, b) })
		if err != nil {
			rs.refused++
			bad = append(bad, err)
			continue
		}
		rs.ads[id] = ads
	}
	return errors.Join(bad...)
}

// of returns the other routers' ads for destination name.
func (rs *remoteShares) of(name string) []globaldest.Ad {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var out []globaldest.Ad
	for _, ads := range rs.ads {
		if a, ok := ads[name]; ok {
			out = append(out, a)
		}
	}
	return out
}

// limitsElsewhere says whether another live router limits queue at
// broker (its span names the broker): its policy there is not stale.
func (rs *remoteShares) limitsElsewhere(queue, broker string) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, ads := range rs.ads {
		if a, ok := ads[queue]; ok && slices.Contains(a.Span, broker) {
			return true
		}
	}
	return false
}

func (rs *remoteShares) refusals() uint64 {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.refused
}

// sharesGrace is how long a router with link state neither decides the
// shares of a destination after it first saw it limited, nor removes
// stale policies after its start: long enough to hear the ads of the
// routers already running or seeing it too (their listing, an
// origination, the flood; at the latest they refresh), so that it does
// not put policies over a lower-id decider's or remove a live router's.
func sharesGrace(refresh time.Duration) time.Duration {
	return min(refresh, 10*time.Second) + globalDestPoll
}

// advertisedShares encodes this router's ads, for SharesExt (called by
// the topology driver).
func (g *globalDests) advertisedShares() json.RawMessage {
	g.mu.Lock()
	ads := g.ads
	g.mu.Unlock()
	v, left := globaldest.EncodeAds(ads)
	if left > 0 {
		g.sharesTruncOnce.Do(func() {
			g.log.Warn().Int("destinations", len(ads)).Int("left_out", left).
				Msg("more limited destinations than one advertisement carries: those left out are decided by each router alone")
		})
	}
	return v
}

// role is this router's role for d's limits now: alone (no link state)
// it decides over its own span; with link state it waits for the grace
// after it first saw d limited (globaldest.Agree) — to hear the ads of
// the routers that saw d too.
func (g *globalDests) role(d string, self globaldest.Ad, seen time.Time) globaldest.Role {
	if g.shares == nil {
		return globaldest.Agree(self, nil, false)
	}
	return globaldest.Agree(self, g.shares.of(d), time.Since(seen) < g.grace)
}

// waiting: within the grace after the start (sharesGrace).
func (g *globalDests) waiting() bool {
	return g.shares != nil && time.Since(g.started) < g.grace
}

// warnSharesAlone: a cluster member without link state decides the
// shares of its limited destinations alone, as every other member does.
func (g *globalDests) warnSharesAlone() {
	if g.limits != nil {
		g.log.Warn().Msg("destinations with limits in a router cluster without topology.secret: each member decides their shares alone and puts its own policies (they fight); give the cluster a topology.secret so that the lowest router id decides")
	}
}

package router

import (
	"context"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/fedrouter/fedrouter/amqp"
	"github.com/fedrouter/fedrouter/globaldest"
	"github.com/fedrouter/fedrouter/internal/glob"
	"github.com/fedrouter/fedrouter/links"
)

// Limits over the sum of a global destination's instances
// (docs/destinations.md, "Limits"). After each round of listings the
// shares are decided (globaldest.Decide, pure) and carried out: at each
// broker of the span a policy bounds the instance to its share
// (amqp.QueueLimiter), decreases before increases so that the shares in
// force never add up to more than the limit; the gates of the routes
// feeding the destination close while the total is at the limit or their
// instance near its share. Owned by the globalDests' goroutine, but for
// the gates (limitGates has its own lock: routes ask for theirs).
type destLimits struct {
	limiters map[string]amqp.QueueLimiter // by broker
	gates    *limitGates
	prev     map[string]globaldest.Shares      // by destination
	views    map[string]*globaldest.LimitsView // by destination
	applied  map[[2]string]amqp.QueueLimit     // (broker, queue) → the policy in force
	swept    map[string]bool                   // brokers whose stale policies are gone
}

// limitGates are the gates of the limited destinations' instances, made
// when a route asks (routes.Gates): one per (broker, queue) a route feeds,
// so as many as routes at most.
type limitGates struct {
	entries []globaldest.Entry

	mu     sync.Mutex
	gates  map[[2]string]*links.Gate // guarded by mu
	closed map[[2]string]bool        // guarded by mu: what a new gate starts as
}

// newLimitGates returns the gates when an entry has limits the brokers
// enforce, else nil.
func newLimitGates(entries []globaldest.Entry) *limitGates {
	if !slices.ContainsFunc(entries, func(e globaldest.Entry) bool { return e.Limits != nil && e.Limits.Enforced() }) {
		return nil
	}
	return &limitGates{entries: entries, gates: map[[2]string]*links.Gate{}, closed: map[[2]string]bool{}}
}

// limited is the limits of queue at broker: those of the first entry
// matching it (as the core decides which entry a queue belongs to), nil
// when none or none the brokers enforce.
func limited(entries []globaldest.Entry, broker, queue string) *globaldest.Limits {
	for _, e := range entries {
		if glob.Match(e.Pattern, queue) && slices.Contains(e.Brokers, broker) {
			if e.Limits != nil && e.Limits.Enforced() {
				return e.Limits
			}
			return nil
		}
	}
	return nil
}

// Gate is queue's gate at broker, nil when no limit holds there.
func (lg *limitGates) Gate(broker, queue string) *links.Gate {
	if limited(lg.entries, broker, queue) == nil {
		return nil
	}
	k := [2]string{broker, queue}
	lg.mu.Lock()
	defer lg.mu.Unlock()
	g := lg.gates[k]
	if g == nil {
		g = links.NewGate()
		g.Set(lg.closed[k])
		lg.gates[k] = g
	}
	return g
}

// set closes or opens queue's gate at broker.
func (lg *limitGates) set(broker, queue string, closed bool) {
	k := [2]string{broker, queue}
	lg.mu.Lock()
	g := lg.gates[k]
	if closed {
		lg.closed[k] = true
	} else {
		delete(lg.closed, k)
	}
	lg.mu.Unlock()
	if g != nil {
		g.Set(closed)
	}
}

// refusals counts what the limited instances refused the routes.
func (lg *limitGates) refusals() uint64 {
	lg.mu.Lock()
	defer lg.mu.Unlock()
	var n uint64
	for _, g := range lg.gates {
		n += g.Refusals()
	}
	return n
}

// newDestLimits returns the limits' state when an entry has limits the
// brokers enforce, else nil; every broker of their spans must be a
// QueueLimiter (config checks the profiles).
func newDestLimits(entries []globaldest.Entry, brokers map[string]amqp.Broker, gates *limitGates) *destLimits {
	if gates == nil {
		return nil
	}
	dl := &destLimits{limiters: map[string]amqp.QueueLimiter{}, gates: gates, prev: map[string]globaldest.Shares{},
		views: map[string]*globaldest.LimitsView{}, applied: map[[2]string]amqp.QueueLimit{}, swept: map[string]bool{}}
	for _, e := range entries {
		if e.Limits == nil || !e.Limits.Enforced() {
			continue
		}
		for _, b := range e.Brokers {
			if ql, ok := brokers[b].Profile.(amqp.QueueLimiter); ok {
				dl.limiters[b] = ql
			}
		}
	}
	if len(dl.limiters) == 0 {
		return nil
	}
	return dl
}

// enforce decides and carries out the shares of every limited destination
// in st (the round's status), adding each one's view.
func (g *globalDests) enforce(ctx context.Context, st []globaldest.Status) {
	dl := g.limits
	if dl == nil {
		return
	}
	wanted := map[[2]string]bool{}
	for i := range st {
		d := &st[i]
		lim := g.entryLimits(d)
		if lim == nil || (d.State != "global" && d.State != "local") {
			continue
		}
		dec, ok := dl.decide(d, *lim)
		if !ok {
			continue
		}
		for _, b := range dec.spanOrder {
			wanted[[2]string{b, d.Name}] = true
		}
		g.applyShares(ctx, d, *lim, dec)
		d.Limits = dl.views[d.Name]
	}
	g.clearShares(ctx, wanted)
	g.sweep(ctx)
}

// entryLimits is d's entry's limits, when the brokers enforce them.
func (g *globalDests) entryLimits(d *globaldest.Status) *globaldest.Limits {
	for _, e := range g.entries {
		if e.Pattern == d.Entry && e.Limits != nil && e.Limits.Enforced() {
			return e.Limits
		}
	}
	return nil
}

// shareDecision is a decision with the span's brokers in the order their
// policies are put: those whose shares shrink first.
type shareDecision struct {
	globaldest.Decision
	spanOrder []string
}

// decide makes d's shares; false while a broker of the span is not listed
// (its depth unknown: the shares in force stay, and so do the gates).
func (dl *destLimits) decide(d *globaldest.Status, lim globaldest.Limits) (shareDecision, bool) {
	var use []globaldest.Use
	for _, in := range d.Instances {
		switch in.State {
		case "remote":
			continue
		case "not listed":
			if v := dl.views[d.Name]; v != nil {
				d.Limits = v
			}
			return shareDecision{}, false
		}
		use = append(use, globaldest.Use{Broker: in.Broker, Messages: int64(in.Messages), Bytes: in.Bytes, Consumers: in.Consumers})
	}
	prev := dl.prev[d.Name]
	dec := shareDecision{Decision: globaldest.Decide(lim, use, prev, time.Now())}
	for _, u := range use {
		dec.spanOrder = append(dec.spanOrder, u.Broker)
	}
	shrinks := func(b string) bool {
		return dec.Shares.Messages[b] < prev.Messages[b] || dec.Shares.Bytes[b] < prev.Bytes[b]
	}
	sort.SliceStable(dec.spanOrder, func(i, j int) bool { return shrinks(dec.spanOrder[i]) && !shrinks(dec.spanOrder[j]) })
	dl.prev[d.Name] = dec.Shares
	v := &globaldest.LimitsView{Limits: lim.String(), Withhold: dec.Withhold, Changed: dec.Shares.At, Why: dec.Why}
	if old := dl.views[d.Name]; old != nil && !dec.Changed {
		v.Why = old.Why
	}
	for _, u := range use {
		v.Messages += u.Messages
		v.Bytes += u.Bytes
		v.Brokers = append(v.Brokers, globaldest.ShareView{Broker: u.Broker, Messages: u.Messages, Bytes: u.Bytes,
			ShareMessages: dec.Shares.Messages[u.Broker], ShareBytes: dec.Shares.Bytes[u.Broker],
			Held: dec.Withhold || slices.Contains(dec.Full, u.Broker)})
	}
	dl.views[d.Name] = v
	return dec, true
}

// applyShares puts each broker's policy where it differs from the one in
// force, shrinking ones first; a shrink that fails stops the growing ones
// (the shares in force must not add up to more than the limit), and the
// next round tries again. Then the gates.
func (g *globalDests) applyShares(ctx context.Context, d *globaldest.Status, lim globaldest.Limits, dec shareDecision) {
	dl := g.limits
	v := dl.views[d.Name]
	failedShrink := false
	for i, b := range dec.spanOrder {
		k := [2]string{b, d.Name}
		want := amqp.QueueLimit{MaxLength: dec.Shares.Messages[b], MaxLengthBytes: dec.Shares.Bytes[b], Overflow: lim.Overflow}
		old, ok := dl.applied[k]
		grows := !ok || want.MaxLength > old.MaxLength || want.MaxLengthBytes > old.MaxLengthBytes
		switch {
		case ok && old == want:
			continue
		case failedShrink && grows:
			v.Brokers[shareIndex(v, b)].Policy = "not set yet: a smaller share elsewhere could not be set first"
			continue
		}
		call, cancel := context.WithTimeout(ctx, globalDestCall)
		err := dl.limiters[b].SetQueueLimit(call, d.Name, want)
		cancel()
		if err != nil {
			failedShrink = failedShrink || !grows
			v.Brokers[shareIndex(v, b)].Policy = "not set: " + err.Error()
			g.log.Warn().Err(err).Str("destination", d.Name).Str("broker", b).Msg("cannot set the share of the destination's limits: tried again next round")
			continue
		}
		dl.applied[k] = want
		g.log.Debug().Str("destination", d.Name).Str("broker", b).Int64("max_length", want.MaxLength).Int64("max_length_bytes", want.MaxLengthBytes).
			Int("order", i).Str("why", dec.Why).Msg("share set")
	}
	if dec.Changed {
		g.log.Info().Str("destination", d.Name).Interface("messages", dec.Shares.Messages).Interface("bytes", dec.Shares.Bytes).Str("why", dec.Why).
			Msg("limits: shares changed")
	}
	for _, s := range v.Brokers {
		dl.gates.set(s.Broker, d.Name, s.Held)
	}
}

func shareIndex(v *globaldest.LimitsView, b string) int {
	for i, s := range v.Brokers {
		if s.Broker == b {
			return i
		}
	}
	return 0
}

// clearShares removes the policies of destinations no longer limited
// (gone, deleted, their limits removed).
func (g *globalDests) clearShares(ctx context.Context, wanted map[[2]string]bool) {
	dl := g.limits
	for _, k := range sortedPairs(dl.applied) {
		if wanted[k] {
			continue
		}
		call, cancel := context.WithTimeout(ctx, globalDestCall)
		err := dl.limiters[k[0]].ClearQueueLimit(call, k[1])
		cancel()
		if err != nil {
			g.log.Warn().Err(err).Str("destination", k[1]).Str("broker", k[0]).Msg("cannot remove the share of a destination no longer limited: tried again next round")
			continue
		}
		delete(dl.applied, k)
		delete(dl.prev, k[1])
		delete(dl.views, k[1])
		dl.gates.set(k[0], k[1], false)
		g.log.Info().Str("destination", k[1]).Str("broker", k[0]).Msg("limits: share removed")
	}
}

// sweep removes, once per broker, the policies an earlier configuration
// left: those naming a queue no entry limits now.
func (g *globalDests) sweep(ctx context.Context) {
	dl := g.limits
	for _, b := range slices.Sorted(maps.Keys(dl.limiters)) {
		if dl.swept[b] {
			continue
		}
		call, cancel := context.WithTimeout(ctx, globalDestCall)
		qs, err := dl.limiters[b].QueueLimits(call)
		cancel()
		if err != nil {
			continue // next round
		}
		for _, q := range qs {
			if limited(g.entries, b, q) != nil {
				continue
			}
			call, cancel := context.WithTimeout(ctx, globalDestCall)
			err := dl.limiters[b].ClearQueueLimit(call, q)
			cancel()
			g.log.Info().AnErr("error", err).Str("destination", q).Str("broker", b).Msg("limits: a share an earlier configuration set removed")
		}
		dl.swept[b] = true
	}
}

func sortedPairs(m map[[2]string]amqp.QueueLimit) [][2]string {
	out := make([][2]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i][1] < out[j][1] || (out[i][1] == out[j][1] && out[i][0] < out[j][0]) })
	return out
}

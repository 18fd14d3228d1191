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
	differs  map[string]string                 // by destination: the routers' disagreement last logged
	seen     map[string]time.Time              // by destination: when this router first saw it limited
	mine     map[string]bool                   // by destination: the shares in prev are this router's decision
	putAt    map[[2]string]time.Time           // (broker, queue) → when its policy was last put
}

// repairEvery is how often a router puts the policies it is in charge of
// again, unchanged: a policy another router (two deciders for a moment:
// a partition, simultaneous starts) or an operator changed is repaired.
const repairEvery = 30 * time.Second

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
		views: map[string]*globaldest.LimitsView{}, applied: map[[2]string]amqp.QueueLimit{}, swept: map[string]bool{}, differs: map[string]string{},
		seen: map[string]time.Time{}, mine: map[string]bool{}, putAt: map[[2]string]time.Time{}}
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

// enforce decides (or takes from the decider) and carries out the shares
// of every limited destination in st (the round's status), adding each
// one's view, and makes this router's ads for SharesExt.
func (g *globalDests) enforce(ctx context.Context, st []globaldest.Status) {
	dl := g.limits
	if dl == nil {
		return
	}
	wanted := map[[2]string]bool{} // the policies this router puts
	handed := map[[2]string]bool{} // the policies another router puts now
	ads := map[string]globaldest.Ad{}
	for i := range st {
		d := &st[i]
		e := g.entryOf(d)
		if e == nil || (d.State != "global" && d.State != "local") {
			continue
		}
		self := globaldest.Ad{Router: g.routerID, Limits: *e.Limits, Span: slices.Sorted(slices.Values(e.Brokers))}
		if _, ok := dl.seen[d.Name]; !ok {
			dl.seen[d.Name] = time.Now()
		}
		role := g.role(d.Name, self, dl.seen[d.Name])
		if role.Differs != dl.differs[d.Name] {
			if role.Differs != "" {
				g.log.Warn().Str("destination", d.Name).Str("limits", role.Limits.String()).Msg("limits: " + role.Differs)
			}
			dl.differs[d.Name] = role.Differs
		}
		for _, b := range self.Span {
			if slices.Contains(role.Put, b) {
				wanted[[2]string{b, d.Name}] = true
			} else {
				handed[[2]string{b, d.Name}] = true
			}
		}
		own, listed := ownUse(d)
		for _, u := range own {
			if !slices.Contains(role.DeciderSpan, u.Broker) {
				self.Use = append(self.Use, u)
			}
		}
		dec, ok := dl.decide(d, role, own, listed)
		switch {
		case role.Deciding && ok:
			dl.mine[d.Name] = true
		case role.Shares != nil:
			dl.mine[d.Name] = false
		}
		// The decider advertises its shares; a router that decided before
		// goes on advertising its last ones while the decider waits.
		// Only shares made for the limits in force: others refuse a value
		// whose shares do not sum to their limits (all of it).
		if p := dl.prev[d.Name]; dl.mine[d.Name] && (role.Deciding || role.Shares == nil) && sumsTo(p, role.Limits) {
			self.Shares = &globaldest.AdShares{Limits: role.Limits, Messages: p.Messages, Bytes: p.Bytes, Withhold: ok && dec.Withhold}
		}
		ads[d.Name] = self
		if v := dl.views[d.Name]; v != nil {
			d.Limits = v
		}
		if ok {
			g.applyShares(ctx, d, role.Limits, dec)
		}
	}
	g.mu.Lock()
	g.ads = ads
	g.mu.Unlock()
	g.clearShares(ctx, wanted, handed)
	g.sweep(ctx)
}

// sumsTo says whether s are shares of lim: each unit limited has shares
// summing to it, the others none.
func sumsTo(s globaldest.Shares, lim globaldest.Limits) bool {
	sum := func(m map[string]int64) int64 {
		var n int64
		for _, v := range m {
			n += v
		}
		return n
	}
	return (s.Messages != nil || s.Bytes != nil) && sum(s.Messages) == lim.MaxMessages && sum(s.Bytes) == lim.MaxBytes &&
		(s.Messages != nil) == (lim.MaxMessages > 0) && (s.Bytes != nil) == (lim.MaxBytes > 0)
}

// entryOf is d's entry, when the brokers enforce its limits.
func (g *globalDests) entryOf(d *globaldest.Status) *globaldest.Entry {
	for i, e := range g.entries {
		if e.Pattern == d.Entry && e.Limits != nil && e.Limits.Enforced() {
			return &g.entries[i]
		}
	}
	return nil
}

// ownUse is d's instances at this router's brokers; listed false when
// one of them is not listed (its depth unknown).
func ownUse(d *globaldest.Status) ([]globaldest.Use, bool) {
	var use []globaldest.Use
	for _, in := range d.Instances {
		switch in.State {
		case "remote":
			continue
		case "not listed":
			return nil, false
		}
		use = append(use, globaldest.Use{Broker: in.Broker, Messages: int64(in.Messages), Bytes: in.Bytes, Consumers: in.Consumers})
	}
	return use, true
}

// shareDecision is a decision with the brokers whose policies this router
// puts, in the order they are put: those whose shares shrink first.
type shareDecision struct {
	globaldest.Decision
	spanOrder []string
	// growAfter: a share grows only once the other routers have had the
	// new shares advertised (a decider that dies after it put a larger
	// share leaves it where its successor may not reach, and its successor
	// keeps the share it knows for it: it must not know a smaller one).
	growAfter time.Time
}

// growDelay is how long a decider advertises new shares before it grows
// any: the driver reads the ads every localEvery, an origination waits
// up to MinOriginate (1 s), and the flood crosses the brokers.
const growDelay = 3 * time.Second

// decide makes d's shares (the decider) or takes the decider's (the
// others); false while a broker is not listed, its depth unknown (the
// shares in force stay, and so do the gates).
func (dl *destLimits) decide(d *globaldest.Status, role globaldest.Role, own []globaldest.Use, listed bool) (shareDecision, bool) {
	if !listed {
		return shareDecision{}, false
	}
	use := append(slices.Clone(own), role.Remote...)
	prev := dl.prev[d.Name]
	var dec shareDecision
	switch {
	case role.Deciding:
		for _, b := range role.Span {
			if !slices.ContainsFunc(use, func(u globaldest.Use) bool { return u.Broker == b }) {
				return shareDecision{}, false // a broker no router has listed yet
			}
		}
		dec.Decision = globaldest.DecideKeeping(role.Limits, use, globaldest.Orphans(prev, role.Span), prev, time.Now())
		if len(role.Routers) > 1 {
			dec.growAfter = dec.Shares.At.Add(growDelay)
		}
	default:
		dec.Decision = followed(role, use, prev)
	}
	if role.Deciding || role.Shares != nil {
		dec.spanOrder = slices.Clone(role.Put)
	}
	shrinks := func(b string) bool {
		return dec.Shares.Messages[b] < prev.Messages[b] || dec.Shares.Bytes[b] < prev.Bytes[b]
	}
	sort.SliceStable(dec.spanOrder, func(i, j int) bool { return shrinks(dec.spanOrder[i]) && !shrinks(dec.spanOrder[j]) })
	dl.prev[d.Name] = dec.Shares
	dl.views[d.Name] = limitsView(role, use, dec, dl.views[d.Name])
	d.Limits = dl.views[d.Name]
	return dec, true
}

// followed is the decision of a router that does not decide: the
// decider's shares when it advertises sound ones (the routes withhold
// credit when it says the total is at the limit, or the listings here
// say so), else none — every route feeding the destination here
// withholds credit until the decider's shares are known.
func followed(role globaldest.Role, use []globaldest.Use, prev globaldest.Shares) globaldest.Decision {
	s := role.Shares
	if s == nil {
		out := globaldest.Decision{Shares: prev, Withhold: true, Why: "no shares from the decider yet"}
		switch {
		case role.Waiting:
			out.Why = "waiting to hear the other routers' ads (just seen)"
		case role.Refused != "":
			out.Why = "the decider's shares refused: " + role.Refused
		}
		return out
	}
	next := globaldest.Shares{Messages: s.Messages, Bytes: s.Bytes, Busy: prev.Busy, At: prev.At}
	out := globaldest.Decision{Shares: next}
	if !maps.Equal(s.Messages, prev.Messages) || !maps.Equal(s.Bytes, prev.Bytes) {
		out.Shares.At, out.Changed, out.Why = time.Now(), true, "decided by "+role.Decider
	}
	out.Withhold, out.Full = globaldest.Gates(role.Limits, use, out.Shares)
	out.Withhold = out.Withhold || s.Withhold
	return out
}

// limitsView is d's limits as `destination list` shows them: each broker
// of the shares (this router's, the others', those kept) with its use
// where known, who decides, who puts each policy.
func limitsView(role globaldest.Role, use []globaldest.Use, dec shareDecision, old *globaldest.LimitsView) *globaldest.LimitsView {
	l := role.Limits
	v := &globaldest.LimitsView{Limits: l.String(), MaxMessages: l.MaxMessages, MaxBytes: l.MaxBytes, MaxProducers: l.MaxProducers, Overflow: l.Overflow, Withhold: dec.Withhold, Changed: dec.Shares.At, Why: dec.Why,
		Decider: role.Decider, Routers: role.Routers, Differs: role.Differs, Refused: role.Refused}
	if old != nil && !dec.Changed && dec.Why == "" {
		v.Why = old.Why
	}
	brokers := map[string]bool{}
	for _, u := range use {
		brokers[u.Broker] = true
	}
	for b := range dec.Shares.Messages {
		brokers[b] = true
	}
	for b := range dec.Shares.Bytes {
		brokers[b] = true
	}
	for _, b := range slices.Sorted(maps.Keys(brokers)) {
		s := globaldest.ShareView{Broker: b, ShareMessages: dec.Shares.Messages[b], ShareBytes: dec.Shares.Bytes[b],
			Held: dec.Withhold || slices.Contains(dec.Full, b), By: putBy(role, b)}
		if i := slices.IndexFunc(use, func(u globaldest.Use) bool { return u.Broker == b }); i >= 0 {
			s.Messages, s.Bytes = use[i].Messages, use[i].Bytes
			v.Messages += s.Messages
			v.Bytes += s.Bytes
		} else if !slices.Contains(role.Span, b) {
			s.Policy = "kept as put: no live router is attached to this broker"
		}
		v.Brokers = append(v.Brokers, s)
	}
	return v
}

// putBy is the router that puts b's policy ("" for a broker no live
// router is attached to).
func putBy(role globaldest.Role, b string) string {
	return role.Putters[b]
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
		case ok && old == want && time.Since(dl.putAt[k]) < repairEvery:
			continue
		case failedShrink && grows:
			v.Brokers[shareIndex(v, b)].Policy = "not set yet: a smaller share elsewhere could not be set first"
			continue
		case grows && time.Now().Before(dec.growAfter):
			v.Brokers[shareIndex(v, b)].Policy = "not set yet: a larger share is put once advertised"
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
		dl.putAt[k] = time.Now()
		g.log.Info().Str("destination", d.Name).Str("broker", b).Int64("max_length", want.MaxLength).Int64("max_length_bytes", want.MaxLengthBytes).
			Int("order", i).Str("why", dec.Why).Msg("limits: share put")
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

// clearShares removes the policies this router put that no one wants
// now (destinations gone, deleted, their limits removed); those another
// router puts now (handed: a lower id decides, or puts there) are only
// forgotten — it overwrites them.
func (g *globalDests) clearShares(ctx context.Context, wanted, handed map[[2]string]bool) {
	dl := g.limits
	for _, k := range sortedPairs(dl.applied) {
		switch {
		case wanted[k]:
			continue
		case handed[k]:
			delete(dl.applied, k)
			delete(dl.putAt, k)
			g.log.Info().Str("destination", k[1]).Str("broker", k[0]).Msg("limits: share handed to the router that decides")
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
		delete(dl.putAt, k)
		delete(dl.prev, k[1])
		delete(dl.views, k[1])
		delete(dl.seen, k[1])
		delete(dl.mine, k[1])
		dl.gates.set(k[0], k[1], false)
		g.log.Info().Str("destination", k[1]).Str("broker", k[0]).Msg("limits: share removed")
	}
}

// sweep removes, once per broker, the policies an earlier configuration
// left: those naming a queue no entry limits now — unless another live
// router's ad limits that queue at that broker. With link state it waits
// for the grace after the start, to have heard the other routers.
func (g *globalDests) sweep(ctx context.Context) {
	dl := g.limits
	if g.waiting() {
		return
	}
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
			if g.shares != nil && g.shares.limitsElsewhere(q, b) {
				g.log.Info().Str("destination", q).Str("broker", b).Msg("limits: a share this router does not limit kept: another live router limits it")
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

package globaldest

import (
	"fmt"
	"slices"
	"strings"
)

// Several routers over one span agree on the shares of a destination's
// limits (docs/destinations.md, "Several routers over one span") through
// their signed link-state advertisements, not a shared store: routers over
// one span need not be one cluster. Each router attached to a limited
// destination's brokers advertises an Ad for it: its configured limits,
// its span, and — for the decider — the shares. Agree, a pure function
// (this router's ad and the others' in; its role out), says:
//
//   - who takes part: the routers whose spans overlap this one's,
//     transitively (a connected group of spans: the same group, hence the
//     same decider, at every member); their spans' union is the span the
//     shares are made over;
//   - who decides: the lowest router id among them, once it has waited
//     to hear the others (Agree's waiting). A decider that stops
//     advertising is dropped with its advertisement (max_age), and the
//     next lowest decides, starting from the shares it advertised last;
//   - which limits hold: the smallest of each unit any of them configures
//     (a unit one of them limits is limited), reject-publish unless all say
//     drop-head — what the routers disagree on is reported;
//   - who puts the policy at each broker: the decider where it is
//     attached, else the lowest id attached there (a broker only other
//     routers reach gets the decider's share through them).

// Ad is one router's advertised view of one limited destination.
type Ad struct {
	Router string
	Limits Limits   // as that router's entry says
	Span   []string // the brokers of its entry's span (it is attached to each), sorted
	// Use: its latest listing of the brokers of its span the decider is
	// not attached to (the decider lists the others itself).
	Use []Use
	// Shares: set by the decider only.
	Shares *AdShares
}

// AdShares are the shares a decider advertises: over the group's span
// (and the brokers no live router lists any more, which keep their last
// share), summing to Limits, the limits in force.
type AdShares struct {
	Limits   Limits
	Messages map[string]int64
	Bytes    map[string]int64
	// Withhold: the total is at a limit (the routes feeding the
	// destination withhold credit, at every router).
	Withhold bool
}

// Role is what Agree says for this router and one destination.
type Role struct {
	Routers []string // the routers taking part, sorted
	Decider string   // the lowest of them
	// DeciderSpan: the brokers the decider is attached to (the others
	// advertise the use of the rest).
	DeciderSpan []string
	Deciding    bool     // this router decides
	Limits      Limits   // the limits in force: the smallest
	Span        []string // the union of their spans, sorted
	Differs     string   // "" when they configure the same limits, else who says what
	// Put: the brokers where this router puts the policies; Putters: who
	// puts each broker's of the span.
	Put     []string
	Putters map[string]string
	// Remote: the use of the group's brokers this router is not attached
	// to, as the others advertise it (the largest depth when several do).
	Remote []Use
	// Shares: the decider's, when another decides and they are sound;
	// nil otherwise, with Refused saying why when they are not.
	Shares  *AdShares
	Refused string
	// Waiting: this router neither decides nor puts yet (Agree's waiting).
	Waiting bool
}

// Agree gives self's role among others (the other routers' ads for the
// same destination, checked by DecodeAds). A router waiting (it has just
// seen the destination, and may not have heard the other routers' ads
// for it yet) takes part but does not decide nor put: when it is the
// lowest id, nobody decides meanwhile and the shares in force stay; it
// follows the shares of the lowest router advertising any (the one that
// decided before), and so starts from them. Pure.
func Agree(self Ad, others []Ad, waiting bool) Role {
	group := []Ad{self}
	span := slices.Clone(self.Span)
	for grown := true; grown; {
		grown = false
		for _, o := range others {
			if o.Router == self.Router || !o.Limits.Enforced() || slices.ContainsFunc(group, func(a Ad) bool { return a.Router == o.Router }) {
				continue
			}
			if slices.ContainsFunc(o.Span, func(b string) bool { return slices.Contains(span, b) }) {
				group = append(group, o)
				span = union(span, o.Span)
				grown = true
			}
		}
	}
	slices.SortFunc(group, func(a, b Ad) int { return strings.Compare(a.Router, b.Router) })
	r := Role{Span: span, Limits: smallest(group), Differs: differing(group), Waiting: waiting,
		Decider: group[0].Router, DeciderSpan: group[0].Span}
	for _, a := range group {
		r.Routers = append(r.Routers, a.Router)
	}
	r.Remote = remoteUse(group, self.Span, span)
	r.Deciding = r.Decider == self.Router && !waiting
	if !r.Deciding {
		// The decider's shares; while it has none (it waits), those of
		// the router that decided before it.
		i := slices.IndexFunc(group, func(a Ad) bool { return a.Router != self.Router && a.Shares != nil })
		if i >= 0 {
			r.Shares, r.Refused = checkShares(group[i], r)
		}
	}
	r.Putters = map[string]string{}
	for _, b := range span {
		if p := putter(group, b); p != self.Router || !waiting {
			r.Putters[b] = p
		}
	}
	if waiting {
		return r
	}
	for _, b := range self.Span {
		if r.Putters[b] == self.Router {
			r.Put = append(r.Put, b)
		}
	}
	return r
}

func union(a, b []string) []string {
	for _, x := range b {
		if !slices.Contains(a, x) {
			a = append(a, x)
		}
	}
	slices.Sort(a)
	return a
}

// smallest: per unit the smallest limit any router of group sets;
// reject-publish unless every one says drop-head (a refusal loses
// nothing; a dropped head is lost).
func smallest(group []Ad) Limits {
	out := Limits{Overflow: DropHead}
	low := func(cur, v int64) int64 {
		if v > 0 && (cur == 0 || v < cur) {
			return v
		}
		return cur
	}
	for _, a := range group {
		out.MaxMessages = low(out.MaxMessages, a.Limits.MaxMessages)
		out.MaxBytes = low(out.MaxBytes, a.Limits.MaxBytes)
		out.MaxProducers = low(out.MaxProducers, a.Limits.MaxProducers)
		if a.Limits.Overflow != DropHead {
			out.Overflow = RejectPublish
		}
	}
	return out
}

// differing says who configures what, when the group's routers differ.
func differing(group []Ad) string {
	same := func(a, b Limits) bool {
		return a.MaxMessages == b.MaxMessages && a.MaxBytes == b.MaxBytes && a.Overflow == b.Overflow
	}
	if !slices.ContainsFunc(group, func(a Ad) bool { return !same(a.Limits, group[0].Limits) }) {
		return ""
	}
	parts := make([]string, 0, len(group))
	for _, a := range group {
		parts = append(parts, a.Router+": "+a.Limits.String())
	}
	return "the routers over its span configure different limits (" + strings.Join(parts, "; ") + "): the smallest hold"
}

// putter is the router that puts b's policy: the decider (group[0]) if
// attached, else the lowest id attached.
func putter(group []Ad, b string) string {
	for _, a := range group {
		if slices.Contains(a.Span, b) {
			return a.Router
		}
	}
	return ""
}

// remoteUse: for each broker of span outside own, the advertised use
// with the most messages (the safer side of a limit).
func remoteUse(group []Ad, own, span []string) []Use {
	var out []Use
	for _, b := range span {
		if slices.Contains(own, b) {
			continue
		}
		var best *Use
		for _, a := range group {
			for i, u := range a.Use {
				if u.Broker == b && (best == nil || u.Messages > best.Messages || (u.Messages == best.Messages && u.Bytes > best.Bytes)) {
					best = &a.Use[i]
				}
			}
		}
		if best != nil {
			out = append(out, *best)
		}
	}
	return out
}

// checkShares takes the decider's shares when they are sound for r:
// made for the limits in force, a share for every broker of the span,
// none negative, each unit summing to its limit.
func checkShares(d Ad, r Role) (*AdShares, string) {
	s := d.Shares
	switch {
	case s == nil:
		return nil, ""
	case s.Limits.MaxMessages != r.Limits.MaxMessages || s.Limits.MaxBytes != r.Limits.MaxBytes:
		return nil, fmt.Sprintf("router %s's shares are for %s, the limits in force are %s", d.Router, s.Limits, r.Limits)
	}
	for _, u := range []struct {
		name   string
		limit  int64
		shares map[string]int64
	}{{"messages", r.Limits.MaxMessages, s.Messages}, {"bytes", r.Limits.MaxBytes, s.Bytes}} {
		if u.limit == 0 {
			continue
		}
		var sum int64
		for _, v := range u.shares {
			sum += v
		}
		if sum != u.limit {
			return nil, fmt.Sprintf("router %s's shares of %s sum to %d, not %d", d.Router, u.name, sum, u.limit)
		}
		for _, b := range r.Span {
			if u.shares[b] < 1 {
				return nil, fmt.Sprintf("router %s gives %s no share of %s", d.Router, b, u.name)
			}
		}
	}
	return s, ""
}

// Orphans are the brokers of prev's shares outside span: no live router of
// the group is attached to them, their policy stays as it was put, and
// their share is kept out of what the others share.
func Orphans(prev Shares, span []string) Shares {
	var out Shares
	pick := func(m map[string]int64) map[string]int64 {
		var o map[string]int64
		for b, v := range m {
			if !slices.Contains(span, b) {
				if o == nil {
					o = map[string]int64{}
				}
				o[b] = v
			}
		}
		return o
	}
	out.Messages, out.Bytes = pick(prev.Messages), pick(prev.Bytes)
	return out
}

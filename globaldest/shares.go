package globaldest

import (
	"fmt"
	"math/bits"
	"slices"
	"sort"
	"strings"
	"time"
)

// Limits that add up across the brokers (seed 000: "distributing producers
// across a cluster results in cumulative cluster-wide limits"): a
// destination's limit holds for the sum over its instances. The brokers
// enforce it themselves, each on its share (RabbitMQ: a policy with
// max-length, max-length-bytes and overflow); Shares decides the shares
// from the depths the listings show, and says when the routes feeding the
// destination should withhold credit.
//
// The shares of a limit L over n brokers always sum to L, so the sum of
// the depths can pass L only by what a broker's own limit lets through
// (none with reject-publish) plus what is in flight when a share shrinks.
//
// How the shares are made (ideal):
//   - each broker first gets what it holds, at least 1 — when the depths
//     add up to more than L (the limit was lowered), L is split in
//     proportion to them instead, each at least 1;
//   - of what is left, half is split equally (producers anywhere can
//     publish), half among the brokers with consumers by their number
//     of consumers (what they take in leaves soon) — among all equally
//     when none has any;
//   - rounding by largest remainder, ties by broker name.
//
// Hysteresis (no flapping): the previous shares are kept unless the limit
// or the span changed (new shares at once), or — at least RebalanceEvery
// after the last change — a broker is pressed (its room, share minus
// depth, is under a tenth of its share while the others have room to
// give) or the brokers with consumers are not those of the last change;
// and even then only when the ideal differs from the previous by more than
// a twentieth of L (at least 2) at some broker.

// RebalanceEvery is the least time between two changes of the shares
// made for the depths (a limit or span change is not held back): about
// a listing period, so one listing's noise cannot flip them back.
const RebalanceEvery = 2 * time.Second

// Overflow behaviours of a limit (RabbitMQ's names).
const (
	RejectPublish = "reject-publish"
	DropHead      = "drop-head"
)

// Limits are a destination's limits over all its instances; 0: none.
type Limits struct {
	MaxMessages int64
	MaxBytes    int64
	// MaxProducers is carried for the report only: no profile enforces it.
	MaxProducers int64
	// Overflow is what a broker does at its share: RejectPublish (the
	// publisher gets a refusal) or DropHead (the oldest message goes).
	Overflow string
}

// Enforced says whether the brokers enforce any of l.
func (l Limits) Enforced() bool { return l.MaxMessages > 0 || l.MaxBytes > 0 }

func (l Limits) String() string {
	var parts []string
	if l.MaxMessages > 0 {
		parts = append(parts, fmt.Sprintf("max_messages=%d", l.MaxMessages))
	}
	if l.MaxBytes > 0 {
		parts = append(parts, fmt.Sprintf("max_bytes=%d", l.MaxBytes))
	}
	if l.MaxProducers > 0 {
		parts = append(parts, fmt.Sprintf("max_producers=%d (not enforced)", l.MaxProducers))
	}
	return strings.Join(append(parts, "overflow="+l.Overflow), " ")
}

// Use is one instance as the shares see it: what it holds, its
// consumers.
type Use struct {
	Broker    string
	Messages  int64
	Bytes     int64
	Consumers int
}

// Shares are each broker's part of a destination's limits.
type Shares struct {
	Messages map[string]int64 // by broker; nil without max_messages
	Bytes    map[string]int64 // by broker; nil without max_bytes
	// Busy are the brokers that had consumers when the shares changed.
	Busy []string
	At   time.Time // when they changed
}

// Decision is what Decide says.
type Decision struct {
	Shares  Shares
	Changed bool
	Why     string // why they changed
	// Withhold: the sum of the depths is at a limit — routes feeding the
	// destination withhold credit. Full: the brokers near their own share,
	// with room under a tenth of it (routes into their instance withhold
	// credit too: the listings lag, and RabbitMQ 3.10's AMQP 1.0 plugin
	// answers a refusal by closing the connection).
	Withhold bool
	Full     []string
}

// Decide makes the shares of lim over the instances use (one per broker
// of the span, sorted or not) from prev, at now. Pure.
func Decide(lim Limits, use []Use, prev Shares, now time.Time) Decision {
	use = slices.Clone(use)
	sort.Slice(use, func(i, j int) bool { return use[i].Broker < use[j].Broker })
	busy := busyBrokers(use)
	ideal := Shares{Busy: busy, At: now}
	if lim.MaxMessages > 0 {
		ideal.Messages = split(lim.MaxMessages, use, func(u Use) int64 { return u.Messages })
	}
	if lim.MaxBytes > 0 {
		ideal.Bytes = split(lim.MaxBytes, use, func(u Use) int64 { return u.Bytes })
	}
	out := Decision{Shares: prev}
	switch why := rebalance(lim, use, prev, ideal, now); {
	case why == "":
	case !differs(prev.Messages, ideal.Messages, lim.MaxMessages) && !differs(prev.Bytes, ideal.Bytes, lim.MaxBytes) && !strings.HasPrefix(why, "new"):
		out.Shares.Busy = busy // the same shares suit the consumers as they are
	default:
		out.Shares, out.Changed, out.Why = ideal, true, why
	}
	out.Withhold, out.Full = Gates(lim, use, out.Shares)
	return out
}

// Gates says, for shares and the instances use, whether the sum of the
// depths is at a limit (withhold) and which brokers are near their share
// (full): the gates of the routes feeding the destination.
func Gates(lim Limits, use []Use, shares Shares) (withhold bool, full []string) {
	var msgs, bytes int64
	for _, u := range use {
		msgs += u.Messages
		bytes += u.Bytes
		if near(shares.Messages, u.Broker, u.Messages) || near(shares.Bytes, u.Broker, u.Bytes) {
			full = append(full, u.Broker)
		}
	}
	withhold = (lim.MaxMessages > 0 && msgs >= lim.MaxMessages) || (lim.MaxBytes > 0 && bytes >= lim.MaxBytes)
	return withhold, full
}

// DecideKeeping is Decide over use (the brokers some live router lists)
// while the brokers of fixed (Orphans: no live router is attached to
// them, their policies stay as put) keep their shares, out of what the
// others share; their depths count as their whole share. Fixed shares
// that would leave less than one per listed broker are not kept. Pure.
func DecideKeeping(lim Limits, use []Use, fixed, prev Shares, now time.Time) Decision {
	rest := lim
	keep := func(limit int64, m map[string]int64) (int64, bool) {
		var sum int64
		for _, v := range m {
			sum += v
		}
		return limit - sum, limit == 0 || limit-sum >= int64(len(use))
	}
	var okM, okB bool
	rest.MaxMessages, okM = keep(lim.MaxMessages, fixed.Messages)
	rest.MaxBytes, okB = keep(lim.MaxBytes, fixed.Bytes)
	if !okM || !okB || (len(fixed.Messages) == 0 && len(fixed.Bytes) == 0) {
		return Decide(lim, use, prev, now)
	}
	strip := func(m, f map[string]int64) map[string]int64 {
		if m == nil {
			return nil
		}
		out := make(map[string]int64, len(m))
		for b, v := range m {
			if _, ok := f[b]; !ok {
				out[b] = v
			}
		}
		return out
	}
	p := prev
	p.Messages, p.Bytes = strip(prev.Messages, fixed.Messages), strip(prev.Bytes, fixed.Bytes)
	dec := Decide(rest, use, p, now)
	add := func(m, f map[string]int64) map[string]int64 {
		if m == nil {
			return nil
		}
		out := make(map[string]int64, len(m)+len(f))
		for b, v := range m {
			out[b] = v
		}
		for b, v := range f {
			out[b] = v
		}
		return out
	}
	dec.Shares.Messages, dec.Shares.Bytes = add(dec.Shares.Messages, fixed.Messages), add(dec.Shares.Bytes, fixed.Bytes)
	return dec
}

// rebalance says why the shares should change ("" for no change); a
// reason starting with "new" is not subject to the difference threshold.
func rebalance(lim Limits, use []Use, prev, ideal Shares, now time.Time) string {
	switch {
	case !sameSpan(prev.Messages, ideal.Messages, lim.MaxMessages) || !sameSpan(prev.Bytes, ideal.Bytes, lim.MaxBytes):
		return "new limit or span"
	case now.Sub(prev.At) < RebalanceEvery:
		return ""
	case !slices.Equal(prev.Busy, ideal.Busy):
		return fmt.Sprintf("consumers at %s (were at %s)", names(ideal.Busy), names(prev.Busy))
	}
	if b := pressed(prev.Messages, use, func(u Use) int64 { return u.Messages }); b != "" {
		return fmt.Sprintf("%s is near its share of messages (%d)", b, prev.Messages[b])
	}
	if b := pressed(prev.Bytes, use, func(u Use) int64 { return u.Bytes }); b != "" {
		return fmt.Sprintf("%s is near its share of bytes (%d)", b, prev.Bytes[b])
	}
	return ""
}

func names(bs []string) string {
	if len(bs) == 0 {
		return "none"
	}
	return strings.Join(bs, ",")
}

func busyBrokers(use []Use) []string {
	var out []string
	for _, u := range use {
		if u.Consumers > 0 {
			out = append(out, u.Broker)
		}
	}
	return out
}

// sameSpan: prev shares the same brokers as ideal and sums to limit.
func sameSpan(prev, ideal map[string]int64, limit int64) bool {
	if (prev == nil) != (ideal == nil) || len(prev) != len(ideal) {
		return false
	}
	var sum int64
	for b, v := range prev {
		if _, ok := ideal[b]; !ok {
			return false
		}
		sum += v
	}
	return ideal == nil || sum == limit
}

// differs: some broker's share moves by more than a twentieth of limit
// (at least 2).
func differs(prev, ideal map[string]int64, limit int64) bool {
	th := max(2, limit/20)
	for b, v := range ideal {
		if d := v - prev[b]; d > th || -d > th {
			return true
		}
	}
	return false
}

// near: depth leaves b less than a tenth of its share (at least 1).
func near(shares map[string]int64, b string, depth int64) bool {
	return shares != nil && shares[b]-depth < max(1, shares[b]/10)
}

// pressed is the first broker whose room is under a tenth of its share
// (at least 1) while the others together have at least that much room.
func pressed(shares map[string]int64, use []Use, depth func(Use) int64) string {
	if shares == nil {
		return ""
	}
	var room int64
	for _, u := range use {
		room += max(0, shares[u.Broker]-depth(u))
	}
	for _, u := range use {
		r := max(0, shares[u.Broker]-depth(u))
		if need := max(1, shares[u.Broker]/10); near(shares, u.Broker, depth(u)) && room-r >= need {
			return u.Broker
		}
	}
	return ""
}

// split makes the ideal shares of limit over use (sorted by broker).
func split(limit int64, use []Use, depth func(Use) int64) map[string]int64 {
	n := int64(len(use))
	out := make(map[string]int64, n)
	if n == 0 {
		return out
	}
	var held int64
	for _, u := range use {
		held += max(1, depth(u))
	}
	if held > limit {
		// More than the limit is held already: in proportion to it.
		w := make([]int64, n)
		for i, u := range use {
			w[i] = max(0, depth(u))
		}
		for i, v := range apportion(limit-n, w) {
			out[use[i].Broker] = 1 + v
		}
		return out
	}
	for _, u := range use {
		out[u.Broker] = max(1, depth(u))
	}
	spare := limit - held
	even := make([]int64, n)
	byConsumers := make([]int64, n)
	for i, u := range use {
		even[i] = 1
		byConsumers[i] = int64(u.Consumers)
	}
	half := spare / 2
	for i, v := range apportion(half, even) {
		out[use[i].Broker] += v
	}
	if !slices.ContainsFunc(byConsumers, func(c int64) bool { return c > 0 }) {
		byConsumers = even
	}
	for i, v := range apportion(spare-half, byConsumers) {
		out[use[i].Broker] += v
	}
	return out
}

// apportion splits total in proportion to weights (not all zero: then
// equally), by largest remainder, ties to the lower index; the parts sum
// to total.
func apportion(total int64, weights []int64) []int64 {
	out := make([]int64, len(weights))
	var sum int64
	for _, w := range weights {
		sum += w
	}
	if total <= 0 || len(weights) == 0 {
		return out
	}
	if sum == 0 {
		weights = slices.Repeat([]int64{1}, len(weights))
		sum = int64(len(weights))
	}
	rem := make([]int64, len(weights))
	var given int64
	for i, w := range weights {
		// total*w may pass 2^63 (bytes): in 128 bits; w <= sum, so the
		// quotient fits.
		hi, lo := bits.Mul64(uint64(total), uint64(w))
		q, r := bits.Div64(hi, lo, uint64(sum))
		out[i], rem[i] = int64(q), int64(r)
		given += out[i]
	}
	order := make([]int, len(weights))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return rem[order[a]] > rem[order[b]] })
	for k := 0; given < total; k++ {
		out[order[k%len(order)]]++
		given++
	}
	return out
}

// LimitsView is a destination's limits as `destination list` shows them:
// the limits, the sum of the depths, and each broker's share and use.
// The core does not keep the shares: the router fills this in.
type LimitsView struct {
	Limits string `json:"limits"` // Limits.String()
	// The same limits one by one (0: none), for a client to print or
	// compare: bytes as numbers.
	MaxMessages  int64       `json:"max_messages,omitempty"`
	MaxBytes     int64       `json:"max_bytes,omitempty"`
	MaxProducers int64       `json:"max_producers,omitempty"`
	Overflow     string      `json:"overflow,omitempty"`
	Messages     int64       `json:"messages"`
	Bytes        int64       `json:"bytes"`
	Withhold     bool        `json:"withhold"` // the routes feeding it withhold credit
	Brokers      []ShareView `json:"brokers"`
	Changed      time.Time   `json:"changed"` // when the shares last changed
	Why          string      `json:"why,omitempty"`
	// Several routers over one span (agree.go): the one that decides the
	// shares, all that take part, what they disagree on, why the
	// decider's shares were refused.
	Decider string   `json:"decider,omitempty"`
	Routers []string `json:"routers,omitempty"`
	Differs string   `json:"differs,omitempty"`
	Refused string   `json:"refused,omitempty"`
}

// ShareView is one broker's share and use.
type ShareView struct {
	Broker        string `json:"broker"`
	Messages      int64  `json:"messages"`
	Bytes         int64  `json:"bytes"`
	ShareMessages int64  `json:"share_messages,omitempty"`
	ShareBytes    int64  `json:"share_bytes,omitempty"`
	Held          bool   `json:"held"`             // routes into it withhold credit
	By            string `json:"by,omitempty"`     // the router that puts its policy
	Policy        string `json:"policy,omitempty"` // why its share is not set at the broker, if so
}

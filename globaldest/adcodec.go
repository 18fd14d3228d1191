package globaldest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
)

// The wire form of the Ads one router advertises (the advertisement
// extension "shares"): {"<queue>": {"limits": {...}, "span": [...],
// "use": {"<broker>": {"m":, "b":, "c":}}, "shares": {...}}}. What
// another router advertises is untrusted: DecodeAds bounds and checks it
// all, and refuses the whole value with the reason.

// Bounds of one router's value.
const (
	MaxAdDests   = 64       // destinations
	MaxAdBrokers = 64       // brokers of one destination's span
	MaxAdSize    = 32 << 10 // bytes, of the advertisement's 64 KiB
	maxAdName    = 255      // a queue or broker name
	maxAdLimit   = 1 << 53  // as config accepts
)

// ErrBadAd: a router's advertised shares are refused (the error says
// which router and why).
var ErrBadAd = errors.New("globaldest: advertised shares refused")

type wireLimits struct {
	Messages int64  `json:"max_messages,omitempty"`
	Bytes    int64  `json:"max_bytes,omitempty"`
	Overflow string `json:"overflow"`
}

type wireUse struct {
	M int64 `json:"m"`
	B int64 `json:"b"`
	C int   `json:"c"`
}

type wireShares struct {
	Limits   wireLimits       `json:"limits"`
	Messages map[string]int64 `json:"messages,omitempty"`
	Bytes    map[string]int64 `json:"bytes,omitempty"`
	Withhold bool             `json:"withhold,omitempty"`
}

type wireAd struct {
	Limits wireLimits         `json:"limits"`
	Span   []string           `json:"span"`
	Use    map[string]wireUse `json:"use,omitempty"`
	Shares *wireShares        `json:"shares,omitempty"`
}

func toWire(l Limits) wireLimits { return wireLimits{l.MaxMessages, l.MaxBytes, l.Overflow} }

func fromWire(w wireLimits) Limits {
	return Limits{MaxMessages: w.Messages, MaxBytes: w.Bytes, Overflow: w.Overflow}
}

// EncodeAds encodes this router's ads by destination: at most
// MaxAdDests, in name order, and as many as fit MaxAdSize; it says how
// many were left out. nil when there are none.
func EncodeAds(ads map[string]Ad) (json.RawMessage, int) {
	names := make([]string, 0, len(ads))
	for n := range ads {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) > MaxAdDests {
		names = names[:MaxAdDests]
	}
	for keep := len(names); keep > 0; keep-- {
		out := make(map[string]wireAd, keep)
		for _, n := range names[:keep] {
			out[n] = adToWire(ads[n])
		}
		b, err := json.Marshal(out)
		if err == nil && len(b) <= MaxAdSize {
			return b, len(ads) - keep
		}
	}
	return nil, len(ads)
}

func adToWire(a Ad) wireAd {
	w := wireAd{Limits: toWire(a.Limits), Span: a.Span}
	for _, u := range a.Use {
		if w.Use == nil {
			w.Use = map[string]wireUse{}
		}
		w.Use[u.Broker] = wireUse{u.Messages, u.Bytes, u.Consumers}
	}
	if s := a.Shares; s != nil {
		w.Shares = &wireShares{Limits: toWire(s.Limits), Messages: s.Messages, Bytes: s.Bytes, Withhold: s.Withhold}
	}
	return w
}

// DecodeAds reads router's value, bounded and checked: attached says
// whether router's advertisement says it is attached to a broker (a span
// may name only those). Any fault refuses the whole value.
func DecodeAds(router string, v json.RawMessage, attached func(broker string) bool) (map[string]Ad, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: router %s: %s", ErrBadAd, router, fmt.Sprintf(format, a...))
	}
	if len(v) > MaxAdSize {
		return nil, bad("%d bytes, at most %d", len(v), MaxAdSize)
	}
	var m map[string]wireAd
	if err := json.Unmarshal(v, &m); err != nil {
		return nil, bad("%v", err)
	}
	if len(m) > MaxAdDests {
		return nil, bad("%d destinations, at most %d", len(m), MaxAdDests)
	}
	out := make(map[string]Ad, len(m))
	for name, w := range m {
		if name == "" || len(name) > maxAdName {
			return nil, bad("a destination name of %d bytes", len(name))
		}
		a, err := checkAd(router, w, attached)
		if err != nil {
			return nil, bad("%s: %v", name, err)
		}
		out[name] = a
	}
	return out, nil
}

func checkAd(router string, w wireAd, attached func(string) bool) (Ad, error) {
	a := Ad{Router: router, Limits: fromWire(w.Limits), Span: w.Span}
	if len(w.Span) == 0 || len(w.Span) > MaxAdBrokers {
		return a, fmt.Errorf("a span of %d brokers (1 to %d)", len(w.Span), MaxAdBrokers)
	}
	if !slices.IsSorted(w.Span) || len(slices.Compact(slices.Clone(w.Span))) != len(w.Span) {
		return a, fmt.Errorf("span %v not sorted or repeated", w.Span)
	}
	for _, b := range w.Span {
		if b == "" || len(b) > maxAdName || !attached(b) {
			return a, fmt.Errorf("span broker %.40q: not one it is attached to", b)
		}
	}
	if err := checkLimits(a.Limits, len(w.Span)); err != nil {
		return a, err
	}
	for _, b := range sortedKeys(w.Use) {
		u := w.Use[b]
		if !slices.Contains(w.Span, b) || u.M < 0 || u.B < 0 || u.C < 0 {
			return a, fmt.Errorf("use at %.40q: %d messages, %d bytes, %d consumers (a broker of its span, none negative)", b, u.M, u.B, u.C)
		}
		a.Use = append(a.Use, Use{Broker: b, Messages: u.M, Bytes: u.B, Consumers: u.C})
	}
	if w.Shares == nil {
		return a, nil
	}
	s := &AdShares{Limits: fromWire(w.Shares.Limits), Messages: w.Shares.Messages, Bytes: w.Shares.Bytes, Withhold: w.Shares.Withhold}
	if err := checkLimits(s.Limits, 1); err != nil {
		return a, fmt.Errorf("shares: %w", err)
	}
	for _, u := range []struct {
		name   string
		limit  int64
		shares map[string]int64
	}{{"messages", s.Limits.MaxMessages, s.Messages}, {"bytes", s.Limits.MaxBytes, s.Bytes}} {
		if err := checkUnit(u.name, u.limit, u.shares); err != nil {
			return a, err
		}
	}
	a.Shares = s
	return a, nil
}

// checkLimits: whole numbers up to 2^53, at least one per broker, one
// enforced, a known overflow.
func checkLimits(l Limits, brokers int) error {
	for _, v := range []int64{l.MaxMessages, l.MaxBytes} {
		if v < 0 || v > maxAdLimit || (v > 0 && v < int64(brokers)) {
			return fmt.Errorf("limit %d: 0, or %d to 2^53", v, brokers)
		}
	}
	if !l.Enforced() {
		return fmt.Errorf("no limit")
	}
	if l.Overflow != RejectPublish && l.Overflow != DropHead {
		return fmt.Errorf("overflow %.40q", l.Overflow)
	}
	return nil
}

// checkUnit: shares of one unit, present exactly when limited, at most
// 2*MaxAdBrokers brokers (the span and those kept), none negative,
// summing to the limit.
func checkUnit(name string, limit int64, shares map[string]int64) error {
	if (limit == 0) != (shares == nil) || len(shares) > 2*MaxAdBrokers {
		return fmt.Errorf("shares of %s: %d brokers for a limit of %d", name, len(shares), limit)
	}
	var sum int64
	for b, v := range shares {
		if b == "" || len(b) > maxAdName || v < 0 || v > maxAdLimit {
			return fmt.Errorf("shares of %s: %.40q=%d", name, b, v)
		}
		sum += v
	}
	if sum != limit {
		return fmt.Errorf("shares of %s sum to %d, not %d", name, sum, limit)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

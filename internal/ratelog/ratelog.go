// Package ratelog keeps repeated log lines down during an outage or a
// flood: the first occurrence of a key is logged at once, the next ones
// are counted and reported at most once per interval (nats'
// RateLimitWarnf, with counts). Every occurrence ends up in a line or a
// count. The router's control plane and a cluster member use it.
package ratelog

import (
	"slices"
	"strings"
	"sync"
	"time"
)

// Limiter decides, per key, whether to log now. Keys are a fixed set
// (reasons, event kinds), so it stays small. Safe for concurrent use; its
// lock covers map updates only: the caller logs after.
type Limiter struct {
	every time.Duration
	mu    sync.Mutex
	keys  map[string]*state // guarded by mu
}

type state struct {
	since      time.Time // of the last line logged for the key
	suppressed uint64    // occurrences since, not logged yet
}

// Summary is what a key held back over an interval.
type Summary struct {
	Key   string
	Count uint64
	Over  time.Duration
}

// New returns a Limiter that reports a key at most once per every.
func New(every time.Duration) *Limiter {
	return &Limiter{every: every, keys: map[string]*state{}}
}

// Allow reports whether to log this occurrence now; if not, it is counted
// for the key's next Summary.
func (l *Limiter) Allow(key string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.keys[key]
	if !ok {
		l.keys[key] = &state{since: now}
		return true
	}
	if s.suppressed == 0 && !now.Before(s.since.Add(l.every)) {
		s.since = now
		return true
	}
	s.suppressed++
	return false
}

// Due returns, sorted by key, the summaries whose interval is over, and
// starts a new interval for each. Call it periodically, so that the
// counts of a flood that stopped are reported too, or after each Allow
// that said no.
func (l *Limiter) Due(now time.Time) []Summary {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Summary
	for key, s := range l.keys {
		if s.suppressed > 0 && !now.Before(s.since.Add(l.every)) {
			out = append(out, Summary{key, s.suppressed, now.Sub(s.since)})
			s.since, s.suppressed = now, 0
		}
	}
	slices.SortFunc(out, func(a, b Summary) int { return strings.Compare(a.Key, b.Key) })
	return out
}
